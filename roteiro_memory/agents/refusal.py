"""A server that cannot start tells the client why, in the client's terms.

Said only on stderr, a refusal reaches a person who reads the host's logs;
the host itself sees a closed connection.  So before exiting, the server
reads the client's first line and, when it is a request (``initialize``),
answers it with a JSON-RPC error carrying the same one-line message: the
host reports a failed ``initialize`` with the server's own words.

Standard library only: the refusal of a missing MCP SDK uses it too.
"""

from __future__ import annotations

import json
import os
import sys
import threading

from roteiro_memory.agents.lines import error_line, request_id
from roteiro_memory.errors import byte_order_mark

__all__ = ["FIRST_LINE_WAIT", "START_FAILED", "answer_first_request"]

START_FAILED = -32000
"""The JSON-RPC server-error code of a server that could not start."""

FIRST_LINE_WAIT = 5.0
"""Seconds to wait for the client's first line: a host sends ``initialize``
as soon as it has started the server."""


def _first_line(limit: int = 1 << 20) -> bytes:
    """The first line on stdin, within :data:`FIRST_LINE_WAIT` seconds, or b""."""
    got: list[bytes] = []

    def read() -> None:
        got.append(sys.stdin.buffer.readline(limit))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(FIRST_LINE_WAIT)
    return got[0] if got else b""


def answer_first_request(message: str) -> None:
    """Answer the client's first request, if it sends one, with ``message``
    as a JSON-RPC error.  Nothing is read from a terminal (a person ran the
    command, and reads stderr) nor from a closed or absent stdin."""
    if sys.stdin is None or sys.stdout is None or sys.stdin.isatty():
        return
    try:
        # Read as the server reads a line (agents.lines): UTF-8 JSON text with
        # no byte-order mark -- json.loads given bytes drops a mark, and reads
        # UTF-16 and UTF-8's encoding of a lone surrogate, all lines the
        # server answers only with a parse error.
        text = _first_line().decode("utf-8")
        if byte_order_mark(text) is not None:
            return  # not a request the server would read: nothing to answer
        parsed = json.loads(text)
    except (ValueError, RecursionError, OSError):
        return  # not a request: there is nothing to answer, and stderr says why
    if not isinstance(parsed, dict) or "method" not in parsed:
        return
    usable, request = request_id(parsed.get("id"))
    if not usable and not isinstance(parsed.get("id"), str):
        return  # a notification, or no id: nothing is owed
    # An id no answer can carry back (a lone surrogate) is answered as null.
    try:
        os.write(sys.stdout.fileno(), error_line(START_FAILED, message, request))
    except OSError:
        return  # the client is gone; stderr still says why
