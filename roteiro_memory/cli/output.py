"""What the command line prints besides tables: a command's result (the
``--json`` envelope, :mod:`roteiro_memory.cli.envelope`), plain lines, and
warnings and refusals on stderr -- or, under ``--json``, in the envelope."""

from __future__ import annotations

import argparse
import sys

from roteiro_memory.exitcodes import ExitCode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["emit", "missing", "refuse", "say", "warn"]


def emit(value: Any) -> None:
    """Print a command's result in the envelope, on one line."""
    from roteiro_memory.cli.envelope import success, write

    write(success(value))


def refuse(args: argparse.Namespace, kind: str, message: str, code: ExitCode) -> int:
    """Report a refusal: under ``--json`` an envelope of ``kind``, else a line
    on stderr; returns the exit status ``code``."""
    if getattr(args, "json", False):
        from roteiro_memory.cli.envelope import failure, write

        write(failure(kind, message))
    else:
        sys.stderr.write(f"roteiro-memory: {message}\n")
    return code


def missing(args: argparse.Namespace, message: str) -> int:
    """Report that the record or entry a command names is not there: exit
    status 1, and under ``--json`` an envelope of kind ``NotFound``."""
    return refuse(args, "NotFound", message, ExitCode.NOTHING)


def say(text: str) -> None:
    sys.stdout.write(text + "\n")


def warn(text: str) -> None:
    sys.stderr.write(f"roteiro-memory: warning: {text}\n")
