"""``roteiro-memory show``: one record in full, superseded or not."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "show one record in full"
EXAMPLE = "roteiro-memory show 12 --rev main"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", help="the record's id")
    parser.add_argument("--rev", metavar="REV", help="resolve the anchor against this commit")
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import records
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.exitcodes import ExitCode

    record = records.get(session, args.id, rev=args.rev)
    if args.json:
        emit(record.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.record_detail(record))
    return ExitCode.OK
