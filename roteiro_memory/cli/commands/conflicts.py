"""``roteiro-memory conflicts``: every pair of live decisions about the same
code that nothing orders, and the commands that settle them."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "list live decisions about the same code that disagree, and how to settle each"
EXAMPLE = "roteiro-memory conflicts --scope repo"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scope", help="only decisions of this scope")
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import shown
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.exitcodes import ExitCode

    found = shown.listing(session, scope=args.scope)
    if args.json:
        emit(found.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.conflicts_text(found))
    return ExitCode.OK if found.conflicts else ExitCode.NOTHING
