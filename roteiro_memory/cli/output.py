"""What the command line prints besides tables: one JSON value a line on
stdout, plain lines, and warnings on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any

__all__ = ["emit", "say", "warn"]


def emit(value: Any) -> None:
    """Print a JSON value on one line (ASCII-escaped, so any locale prints it)."""
    sys.stdout.write(json.dumps(value) + "\n")


def say(text: str) -> None:
    sys.stdout.write(text + "\n")


def warn(text: str) -> None:
    sys.stderr.write(f"roteiro-memory: warning: {text}\n")
