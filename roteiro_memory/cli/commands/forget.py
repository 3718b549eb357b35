"""``roteiro-memory forget``: delete one record for good, restoring what it superseded."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "delete a record, restoring what it superseded"
EXAMPLE = "roteiro-memory forget 12"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", help="the record's id")
    add_common(parser)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import records
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.exitcodes import ExitCode

    forgotten = records.forget(session, args.id)
    if args.json:
        emit(forgotten.to_json())
    else:
        restored = ", ".join(str(i) for i in forgotten.restored)
        again = f"; live again: {restored}" if restored else ""
        say(f"forgot {forgotten.id}{again}")
    return ExitCode.OK
