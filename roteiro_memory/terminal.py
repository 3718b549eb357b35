"""What reaches a terminal: its width, and text made safe to show there.

The width is found as :func:`shutil.get_terminal_size` finds it but without
importing :mod:`shutil` (and with it bz2, lzma and zlib), which argparse
would otherwise do on every start-up of the command line and the hooks: it
makes a help formatter, which asks for the width, for every option it adds.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re
    from typing import TextIO

__all__ = ["columns", "discard", "printable", "to_stderr"]

_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
"""C0 and C1 controls (escape sequences start with one), DEL, and the Unicode
bidirectional overrides that reorder what is shown; tab and newline pass.  A
pattern, compiled when first used (start-up compiles nothing it may not need)."""
_CONTROL_OR_BREAK = "[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
"""The same, and tab and newline too: for what must stay on one line."""


def _escape(match: re.Match[str]) -> str:
    code = ord(match[0])
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` with every control character shown as an escape (``\\x1b``)
    instead of sent to the terminal; tabs and newlines are kept, unless
    ``one_line`` (a finding, a file name in a report) escapes them too."""
    if text.isprintable():
        return text  # the common case: every character escaped is unprintable
    import re  # here: a hook that prints nothing never loads it

    return re.sub(_CONTROL_OR_BREAK if one_line else _CONTROL, _escape, text)


def columns() -> int:
    """``COLUMNS`` when set to a positive number, else the width of the
    terminal on stdout, else 80."""
    given = os.environ.get("COLUMNS", "")
    # ASCII digits (isdigit takes "²", which int() does not), and few: int()
    # refuses 4,301 digits, and no terminal is a billion columns wide.
    if given.isascii() and given.isdigit() and len(given) < 10 and int(given) > 0:
        return int(given)
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80


def discard(stream: TextIO) -> None:
    """Send what ``stream`` (standard output or error) still holds, and
    anything after, nowhere: it cannot be written (its reader went, the disk
    is full), and the flush at exit would report it again -- on stderr, which
    may be the stream that failed, and with exit status 120.

    A stream with no descriptor to point elsewhere (a test's, or one closed
    already: :class:`OSError` or :class:`ValueError` from ``fileno``) is left
    as it is: nothing flushes such a stream at exit, so there is nothing to
    send nowhere."""
    import contextlib  # loaded at start-up already, by the standard library

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def to_stderr(text: str) -> None:
    """Write ``text`` to standard error, flushed; given up when stderr is
    closed (``2>&-``: Python gives no stream) or cannot take it (``2>/dev/full``,
    a stream closed already).  Stderr is where a failure is told, so nothing
    is left to tell this one on: the exit status still says what happened,
    and the command goes on to it rather than failing anew."""
    stream = sys.stderr
    if stream is None:
        return
    try:
        stream.write(text)
        stream.flush()
    except (OSError, ValueError):  # ValueError: a stream closed already
        discard(stream)
