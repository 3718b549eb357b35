"""The terminal's width, found as :func:`shutil.get_terminal_size` finds it
but without importing :mod:`shutil` (and with it bz2, lzma and zlib), which
argparse would otherwise do on every start-up of the command line and the
hooks: it makes a help formatter, which asks for the width, for every option
it adds."""

from __future__ import annotations

import os
import sys

__all__ = ["columns"]


def columns() -> int:
    """``COLUMNS`` when set to a positive number, else the width of the
    terminal on stdout, else 80."""
    given = os.environ.get("COLUMNS", "")
    if given.isdigit() and int(given) > 0:
        return int(given)
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80
