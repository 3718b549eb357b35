"""``roteiro-memory add``: record one lesson, attempt, decision, pattern or outcome."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import ANCHOR_HELP, KINDS_HELP, add_common, once

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "record a lesson, attempt, decision, pattern or outcome"
EXAMPLE = (
    "roteiro-memory add 'Retry.run must cap its backoff at 30 s' "
    "--anchor src/app/retry.py::Retry.run --confidence 0.8"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("body", help="what was learned (- reads it from stdin)")
    parser.add_argument(
        "--kind",
        default="lesson",
        action=once("a record has one kind"),
        help=f"{KINDS_HELP} (default: lesson)",
    )
    parser.add_argument(
        "--anchor",
        metavar="ANCHOR",
        action=once("a record has one anchor"),
        help=f"what the record is about: {ANCHOR_HELP}",
    )
    parser.add_argument("--confidence", metavar="X", help="how sure, from 0 to 1 (default: none)")
    parser.add_argument("--supersedes", metavar="ID", help="the record this one replaces")
    parser.add_argument("--scope", default="repo", help="a namespace label (default: repo)")
    parser.add_argument(
        "--allow-duplicate",
        action="store_true",
        help="write even when a live record of this kind, scope and anchor says the same "
        "(case and white space aside); else that record is answered and nothing is written",
    )
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import records
    from roteiro_memory.cli.output import emit, read_stdin, say
    from roteiro_memory.exitcodes import ExitCode
    from roteiro_memory.semantics import MAX_BODY_BYTES

    body = read_stdin("the body", MAX_BODY_BYTES) if args.body == "-" else args.body
    remembered = records.remember(
        session,
        args.kind,
        body,
        scope=args.scope,
        anchor=args.anchor,
        confidence=args.confidence,
        supersedes=args.supersedes,
        allow_duplicate=args.allow_duplicate,
    )
    if args.json:
        emit(remembered.to_json())
        return ExitCode.OK
    record = remembered.record
    from roteiro_memory.cli import render

    where = (
        f", anchored to {render.anchor_label(record.anchor.key)} "
        f"({render.state_label(record.anchor_state)})"
        if record.anchor is not None
        else ""
    )
    if remembered.existing:
        say(
            f"already recorded as {record.id} ({record.kind.value}{where}); nothing written "
            "(--allow-duplicate writes another)"
        )
    else:
        from roteiro_memory.app.values import superseded_id

        target = superseded_id(args.supersedes)
        replaced = f", superseding {target}" if target is not None else ""
        say(f"recorded {record.id} ({record.kind.value}{where}{replaced})")
    if remembered.against:
        from roteiro_memory.app.brief import ids_text

        say(
            f"unresolved: conflicts with {ids_text(remembered.against)}, live decisions about the "
            "same code (roteiro-memory conflicts shows how to settle it)"
        )
    return ExitCode.OK
