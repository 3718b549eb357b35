"""``roteiro-memory import``: load an export into an empty store, all or nothing."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

    from roteiro_memory.app.session import Session

SUMMARY = "load an export into an empty store"
EXAMPLE = "roteiro-memory import memory.jsonl"

MAX_LINE_CHARS = 256 * 1024 * 1024
"""Longest line read, in characters, its end not counted: past every record
line an export can hold (a 65,536-byte body written as JSON escapes is
under 400 Ki characters), and past any cache value short of a quarter of a
giga-character.  A longer line is refused when that much is read, so an
input that never ends is refused too, having taken about twice this many
bytes of memory."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a file written by export (- for stdin)")
    add_common(parser)


def run(args: argparse.Namespace, session: Session) -> int:
    import contextlib
    import sys

    from roteiro_memory.app import maintenance
    from roteiro_memory.cli.output import emit, read_lines, say
    from roteiro_memory.errors import StreamClosed, UsageError
    from roteiro_memory.exitcodes import ExitCode

    source: contextlib.AbstractContextManager[BinaryIO]
    if args.file == "-":
        if sys.stdin is None:
            raise StreamClosed("standard input is closed, but the export is read from it (-)")
        source, what = contextlib.nullcontext(sys.stdin.buffer), "the export from standard input"
    else:
        try:
            source, what = open(args.file, "rb"), args.file  # noqa: SIM115 -- entered below
        except (OSError, ValueError) as error:  # ValueError: a NUL in the path
            reason = getattr(error, "strerror", None) or str(error)
            raise UsageError(f"cannot read {args.file}: {reason}") from None
    # The lines are closed before the file, whatever ends the import.
    with source as stream, contextlib.closing(read_lines(stream, what, MAX_LINE_CHARS)) as lines:
        counts = maintenance.import_lines(session, lines, args.file, session.warn)
    if args.json:
        emit(counts)
    else:
        from roteiro_memory.app.brief import counted

        entries = counted(counts["cache"], "cache entry", "cache entries")
        say(f"imported {counted(counts['records'], 'record')} and {entries}")
    return ExitCode.OK
