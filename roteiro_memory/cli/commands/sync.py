"""``roteiro-memory sync``: bring the code graph up to the working tree."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "update the code graph from the working tree"
EXAMPLE = "roteiro-memory sync"
SYNCS = False
"""A global ``--no-sync`` would contradict the command."""


def configure(parser: argparse.ArgumentParser) -> None:
    add_common(parser, no_sync=False)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app.brief import counted
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.exitcodes import ExitCode

    # The store first: with no repository to find it in, that is the failure,
    # exit 3 as for every command that uses a store (docs/cli.md).
    session.store()
    session.require_repo("sync")
    report = session.sync(full=True)
    assert report is not None
    if args.json:
        emit(report.to_json())
    elif report.up_to_date:
        say(f"up to date: {counted(report.files, 'file')}, tree {report.tree[:12]}")
    else:
        say(
            f"synced {counted(report.files, 'file')} and {counted(report.symbols, 'symbol')} "
            f"({counted(len(report.parsed), 'file')} parsed, "
            f"{counted(report.written, 'node')} written, {report.removed} removed); "
            f"tree {report.tree[:12]}"
        )
    return ExitCode.OK
