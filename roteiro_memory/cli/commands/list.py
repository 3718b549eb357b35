"""``roteiro-memory list``: records newest first, without ranking."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common, add_filters, selection

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "list records, newest first"
EXAMPLE = "roteiro-memory list --kind decision --limit 20"


def configure(parser: argparse.ArgumentParser) -> None:
    add_filters(parser)
    parser.add_argument("--all", action="store_true", help="include superseded records")
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import records
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.exitcodes import ExitCode

    listing = records.listing(
        session,
        selection(args),
        include_superseded=args.all,
        limit=args.limit,
    )
    if args.json:
        emit(listing.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.listing_table(listing))
    return ExitCode.OK if listing.records else ExitCode.NOTHING
