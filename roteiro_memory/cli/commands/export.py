"""``roteiro-memory export``: every record and cache entry as JSON Lines."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_no_sync
from roteiro_memory.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "write every record and cache entry as JSON Lines"
EXAMPLE = "roteiro-memory export -o memory.jsonl"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    parser.add_argument("--db", metavar="PATH", help="the store file (see `add --help`)")
    parser.add_argument(
        "--json",
        action="store_true",
        help="with -o: print the envelope saying what was written (the export itself is "
        "always JSON Lines)",
    )
    add_no_sync(parser, syncs=False)


def run(args: argparse.Namespace, session: Session) -> int:
    import sys

    from roteiro_memory.app import maintenance
    from roteiro_memory.cli.output import emit, reader_gone
    from roteiro_memory.exitcodes import ExitCode

    if args.output in (None, "-"):
        if args.json:
            raise UsageError(
                "export --json needs -o FILE: the export itself is JSON Lines on stdout, and "
                "--json prints the envelope saying what was written to FILE"
            )
        lines = maintenance.export_lines(session)
        _warn_if_stdout_is_shared(session)
        written = 0
        try:
            for line in lines:
                sys.stdout.write(line + "\n")
                written += 1
            sys.stdout.flush()
        except BrokenPipeError:
            # Unlike a listing cut short by ``| head``, a cut export is no
            # export: whoever reads it must be told.
            raise reader_gone(f"after {written:,} lines of the export") from None
        return ExitCode.OK
    written = maintenance.export_to(session, args.output)
    if args.json:
        emit({"output": args.output, "lines": written})
    return ExitCode.OK


def _warn_if_stdout_is_shared(session: Session) -> None:
    """Warn when the export goes to a regular file others may read (the shell
    created it with the umask's mode): it holds every record, unredacted."""
    import os
    import stat
    import sys

    try:
        info = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return
    if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
        session.warn(
            f"standard output is a file others can read (mode {stat.S_IMODE(info.st_mode):04o}) "
            "and an export holds every record unredacted; chmod 600 it, or write with "
            "-o FILE, which is created 0600"
        )
