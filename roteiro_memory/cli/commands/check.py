"""``roteiro-memory check``: a store's integrity and invariants, read-only."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session
    from roteiro_memory.check import Finding

SUMMARY = "check a store's integrity and invariants"
EXAMPLE = "roteiro-memory check --db backup.db"


def configure(parser: argparse.ArgumentParser) -> None:
    add_common(parser)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import maintenance
    from roteiro_memory.exitcodes import ExitCode

    where, report = maintenance.check(session)
    findings, migrates = report.findings, report.migrates
    try:
        _say(args.json, session, where, findings, migrates)
    except BrokenPipeError:
        if not findings:
            raise  # nothing found, and nothing more to say to a reader that went
        # The reader went away (``| head -1``): the findings it did not read
        # are not printed, and the status is still the verdict.
        import sys

        from roteiro_memory.terminal import discard

        discard(sys.stdout)
        return ExitCode.NOTHING
    return ExitCode.NOTHING if findings else ExitCode.OK


def _say(
    as_json: bool,
    session: Session,
    where: str,
    findings: list[Finding],
    migrates: tuple[int, int] | None,
) -> None:
    from roteiro_memory.cli.output import emit, printable, say

    if as_json:
        moves = None if migrates is None else {"from": migrates[0], "to": migrates[1]}
        emit({"store": where, "findings": [f.to_json() for f in findings], "migrates": moves})
        return
    # One line each, whatever a finding quotes (stored text) or the store's
    # path holds (a line break, an escape sequence for the terminal).
    for finding in findings:
        say(printable(str(finding), one_line=True))
    shown = printable(where, one_line=True)
    if migrates is not None:
        # Not a finding: opening any older store migrates it.
        how = "in a transaction rolled back" if session.dsn() else "on a private copy"
        say(
            f"{shown}: schema {migrates[0]}, an earlier version's; the next command that "
            f"opens it migrates it to schema {migrates[1]} (checked here as migrated, {how})"
        )
    noun = "problem" if len(findings) == 1 else "problems"
    say(f"{shown}: {len(findings)} {noun}" if findings else f"{shown}: ok")
