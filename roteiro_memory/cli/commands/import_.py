"""``roteiro-memory import``: load an export into an empty store, all or nothing."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "load an export into an empty store"
EXAMPLE = "roteiro-memory import memory.jsonl"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a file written by export (- for stdin)")
    add_common(parser)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import maintenance
    from roteiro_memory.cli.output import emit, read_stdin, say, warn
    from roteiro_memory.errors import UsageError
    from roteiro_memory.exitcodes import ExitCode

    if args.file == "-":
        lines = read_stdin("the export").splitlines()
    else:
        from pathlib import Path

        try:
            lines = Path(args.file).read_text(encoding="utf-8").splitlines()
        except (OSError, ValueError) as error:  # ValueError: not UTF-8, or a NUL in the path
            reason = getattr(error, "strerror", None) or str(error)
            raise UsageError(f"cannot read {args.file}: {reason}") from None
    counts = maintenance.import_lines(session, lines, args.file, warn)
    if args.json:
        emit(counts)
    else:
        say(f"imported {counts['records']} records and {counts['cache']} cache entries")
    return ExitCode.OK
