"""``roteiro-memory recall``: live records ranked, the most relevant to your
words first, or every one ranked by evidence."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common, add_filters, add_touched, add_unfolded, selection

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "recall live records: the most relevant to your words, or all, ranked by evidence"
EXAMPLE = (
    "roteiro-memory recall why does the retry give up --applicable-only --limit 5\n"
    "  roteiro-memory recall --filter retry backoff  # every word, as a substring\n"
    "  roteiro-memory recall --rev main          # is it valid on main?\n"
    "  roteiro-memory recall --touched           # about what this change touches"
)

LIMIT = 20
"""How many records ``recall`` prints unless told otherwise: recall is ranked,
and what a reader (or an agent's context) needs is the top of it."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "query",
        nargs="*",
        help="what you are looking for, in any words: records holding any of them, ranked by "
        "relevance (BM25) times confidence, anchor state and age",
    )
    parser.add_argument(
        "--filter",
        action="store_true",
        help="match the words exactly instead: only records containing every one of them "
        "(body or anchor), ranked by confidence, anchor state and age",
    )
    add_filters(parser, limit=LIMIT)
    parser.add_argument(
        "--decay",
        default="none",
        help="none (default), linear, linear:N, exponential or exponential:N generations",
    )
    parser.add_argument(
        "--applicable-only",
        action="store_true",
        help="only records whose anchor is valid here, or that have none",
    )
    add_unfolded(parser)
    add_touched(parser)
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import records, shown
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.exitcodes import ExitCode

    recall = records.ranked(
        session,
        selection(args),
        query=" ".join(args.query) if args.query else None,
        exact=args.filter,
        decay=args.decay,
        applicable_only=args.applicable_only,
        limit=args.limit,
        touched=args.touched,
    )
    view = shown.ranked(session, recall, every=args.all)
    if args.json:
        emit(shown.ranked_json(recall, view))
    else:
        from roteiro_memory.cli import render

        say(render.recall_table(recall, view))
    return ExitCode.OK if recall.results else ExitCode.NOTHING
