"""The command line's streams: what it reads from standard input, and what
it prints besides tables -- a command's result (the ``--json`` envelope,
:mod:`roteiro_memory.cli.envelope`), plain lines, and warnings and refusals
on stderr (or, under ``--json``, in the envelope)."""

from __future__ import annotations

import os
import sys

from roteiro_memory.errors import StreamClosed, UsageError
from roteiro_memory.terminal import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["emit", "fail", "printable", "read_stdin", "say", "warn"]

def emit(value: Any) -> None:
    """Print a command's result in the envelope, on one line."""
    from roteiro_memory.cli.envelope import success, write

    write(success(value))


def fail(as_json: bool, kind: str, message: str, line: str) -> None:
    """Report a failure once: under ``--json`` the envelope of ``kind`` on
    stdout; else -- or when stdout is closed, or its reader has gone -- ``line``
    on stderr, control characters escaped."""
    if as_json and sys.stdout is not None:
        from roteiro_memory.cli.envelope import failure, write

        try:
            write(failure(kind, message))
            return
        except BrokenPipeError:
            # Nothing more reaches that reader, not even the flush at exit.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
    sys.stderr.write(printable(line) + "\n")


def say(text: str) -> None:
    sys.stdout.write(text + "\n")


def warn(text: str) -> None:
    """A warning on stderr, control characters escaped (it may quote a name)."""
    sys.stderr.write(f"roteiro-memory: warning: {printable(text)}\n")


def read_stdin(what: str) -> str:
    """All of standard input as UTF-8 text, ``what`` naming it in errors: a
    closed descriptor (``<&-``), a read error or bytes that are not UTF-8 are
    one-line errors, before anything is written."""
    if sys.stdin is None:
        raise StreamClosed(f"standard input is closed, but {what} is read from it (-)")
    try:
        data = sys.stdin.buffer.read()
    except OSError as error:
        reason = error.strerror or error
        raise StreamClosed(f"cannot read {what} from standard input ({reason})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{what} on standard input is not valid UTF-8: byte {data[error.start]:#04x} "
            f"at offset {error.start}; only UTF-8 text can be stored"
        ) from None
