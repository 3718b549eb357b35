"""``roteiro-memory confirm``: a reviewer says a drifted record still holds
for its code as it is now."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "say that drifted records still hold for their code as it is now"
EXAMPLE = "roteiro-memory confirm 12 15"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", nargs="+", help="the drifted records' ids")
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import reanchor
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.exitcodes import ExitCode

    written = reanchor.confirm(session, args.id)
    if args.json:
        emit(written.to_json())
    else:
        from roteiro_memory.cli.commands.reanchor import written_text

        say(written_text(written, ""))
    return ExitCode.OK
