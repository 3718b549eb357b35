"""What the command line prints besides tables: a command's result (the
``--json`` envelope, :mod:`roteiro_memory.cli.envelope`), plain lines, and
warnings and refusals on stderr -- or, under ``--json``, in the envelope."""

from __future__ import annotations

import argparse
import os
import re
import sys

from roteiro_memory.exitcodes import ExitCode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["emit", "fail", "missing", "printable", "refuse", "say", "warn"]

_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
"""C0 and C1 controls (escape sequences start with one), DEL, and the Unicode
bidirectional overrides that reorder what is shown; tab and newline pass.  A
pattern, compiled when first used (start-up compiles nothing it may not need)."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``)
    instead of sent to the terminal; tabs and newlines are kept."""
    return re.sub(_CONTROL, _escape, text)


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


def refuse(args: argparse.Namespace, kind: str, message: str, code: ExitCode) -> int:
    """Report a refusal: under ``--json`` an envelope of ``kind``, else a line
    on stderr; returns the exit status ``code``."""
    fail(getattr(args, "json", False), kind, message, f"roteiro-memory: {message}")
    return code


def missing(args: argparse.Namespace, message: str) -> int:
    """Report that the record or entry a command names is not there: exit
    status 1, and under ``--json`` an envelope of kind ``NotFound``."""
    return refuse(args, "NotFound", message, ExitCode.NOTHING)


def say(text: str) -> None:
    sys.stdout.write(text + "\n")


def warn(text: str) -> None:
    """A warning on stderr, control characters escaped (it may quote a name)."""
    sys.stderr.write(f"roteiro-memory: warning: {printable(text)}\n")
