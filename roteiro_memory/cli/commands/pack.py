"""``roteiro-memory pack``: the digest of what applies here, for the start of
an agent session (:mod:`roteiro_memory.app.pack`)."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_budget, add_common, add_touched, add_unfolded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "print a digest of what applies here, for the start of an agent session"
EXAMPLE = "roteiro-memory pack --budget 1500\n  roteiro-memory pack --touched --json"


def configure(parser: argparse.ArgumentParser) -> None:
    add_budget(parser, json=True)
    add_touched(parser)
    add_unfolded(parser)
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    """Print the digest; 0 even when there is nothing to digest, so a
    session-start hook never fails a first session."""
    import sys

    from roteiro_memory.app.pack import digest
    from roteiro_memory.cli.output import emit
    from roteiro_memory.exitcodes import ExitCode

    pack = digest(session, args.budget, args.touched, every=args.all)
    if args.json:
        emit(pack.to_json())
    else:
        sys.stdout.write(pack.markdown())
    return ExitCode.OK
