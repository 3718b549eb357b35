"""What one line a client sends over stdio is, before the MCP SDK sees it.

MCP over stdio is JSON-RPC 2.0, one message a line.  The SDK's own reader
drops a line it cannot read (not JSON, an array, no ``jsonrpc``, an object as
id, deep nesting, a lone surrogate it will not decode) with nothing said, so
the client waits for its own timeout.  :func:`classify` reads the line
first, and every line the SDK would drop is answered here, as the JSON-RPC
2.0 specification asks:

* a line that is not JSON text (not UTF-8, not JSON, empty, nested deeper
  than the reader goes) -- ``-32700`` parse error, id ``null``;
* JSON that is not a request object (a number, a string, ``[]``, no
  ``"jsonrpc": "2.0"``, a method that is not a string, an id that is not a
  string or an integer (a request's null too), nesting deeper than :data:`MAX_DEPTH`, a shape the
  SDK refuses) -- ``-32600`` invalid request, with the request's id when it
  has a usable one;
* a batch (an array of messages): MCP has no batches since its 2025-06-18
  revision, so each request in it is answered ``-32600`` in one array, as
  the specification answers a batch; notifications in it get nothing.

Pure: no I/O, no SDK.  A line that is a message is handed back parsed, for
the SDK to validate (:mod:`roteiro_memory.agents.wire`).
"""

from __future__ import annotations

import json
from typing import Any

from roteiro_memory.errors import json_excerpt, strict_json
from roteiro_memory.valueclass import valueclass

__all__ = [
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "MAX_LINE_BYTES",
    "PARSE_ERROR",
    "Forward",
    "Reply",
    "classify",
    "error_line",
    "json_line",
    "request_id",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

MAX_LINE_BYTES = 4 * 1024 * 1024
"""The longest line read: a record's body is at most 64 KiB, so a request
past this is refused (``-32600``) rather than held in memory."""

MAX_DEPTH = 64
"""How deeply a message may nest arrays and objects.  No tool's arguments
nest more than three levels; a deeper message is refused before it reaches
the SDK, whose validator would otherwise be walked for nothing."""

JSON = Any


@valueclass
class Forward:
    """A line holding one JSON-RPC message, parsed: for the SDK."""

    message: dict[str, JSON]
    id: str | int | None
    """The id of a request (None for a notification or a response)."""


@valueclass
class Reply:
    """A line answered here: the bytes to write back (one line, newline
    included), or None when nothing is owed (a batch of notifications)."""

    line: bytes | None


def json_line(message: JSON) -> bytes:
    """One outgoing message as the line that carries it, newline included:
    UTF-8 JSON a strict parser reads whatever it quotes from a request -- a
    lone surrogate (in an id, a method, a value) shows as the six characters
    of its escape (:func:`~roteiro_memory.errors.strict_json`)."""
    return (strict_json(json.dumps(message, ensure_ascii=False)) + "\n").encode("utf-8")


def error_line(code: int, message: str, request: str | int | None = None) -> bytes:
    """One JSON-RPC error response, as the line that carries it."""
    return json_line(_error(code, message, request))


def _error(code: int, message: str, request: str | int | None) -> dict[str, JSON]:
    return {"jsonrpc": "2.0", "id": request, "error": {"code": code, "message": message}}


def request_id(value: JSON) -> tuple[bool, str | int | None]:
    """Whether ``value`` is an id MCP allows (a string or an integer, not a
    boolean), and the id."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return True, value
    return False, None


def _depth_over(value: JSON, limit: int) -> bool:
    """Whether ``value`` nests arrays and objects more than ``limit`` deep
    (walked with a stack, so any depth json.loads returned is measured)."""
    stack: list[tuple[JSON, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, (dict, list)):
            continue
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children)
    return False


def _invalid(message: dict[str, JSON]) -> str | None:
    """What makes a parsed object not a JSON-RPC 2.0 message, or None."""
    if message.get("jsonrpc") != "2.0":
        if "jsonrpc" not in message:
            return 'no "jsonrpc" member: a JSON-RPC 2.0 message has "jsonrpc": "2.0"'
        return f'"jsonrpc" is {json_excerpt(message["jsonrpc"])}, expected "2.0"'
    if "id" in message and message["id"] is None and "method" in message:
        return '"id" is null: a request\'s id is a string or an integer (MCP allows no null)'
    if "id" in message and message["id"] is not None and not request_id(message["id"])[0]:
        return f'"id" is {json_excerpt(message["id"])}: an id is a string or an integer'
    if "method" in message and not isinstance(message["method"], str):
        return f'"method" is {json_excerpt(message["method"])}, expected a string'
    if "method" not in message and "result" not in message and "error" not in message:
        return 'neither "method" (a request) nor "result" or "error" (a response)'
    return None


def _one(item: JSON) -> Forward | bytes:
    """One parsed element: a message to forward, or the error line owed."""
    if not isinstance(item, dict):
        kind = "an array" if isinstance(item, list) else f"{json_excerpt(item, 40)}"
        return error_line(INVALID_REQUEST, f"Invalid Request: {kind}, not a JSON-RPC object")
    usable, rid = request_id(item.get("id"))
    problem = _invalid(item)
    if problem is None and _depth_over(item, MAX_DEPTH):
        problem = f"nested more than {MAX_DEPTH} levels deep"
    if problem is not None:
        return error_line(INVALID_REQUEST, f"Invalid Request: {problem}", rid if usable else None)
    is_request = "method" in item and usable
    return Forward(item, rid if is_request else None)


def classify(line: bytes) -> Forward | Reply:
    """What ``line`` (one line read, its newline included or not) is."""
    if len(line) > MAX_LINE_BYTES:
        return Reply(
            error_line(
                INVALID_REQUEST,
                f"Invalid Request: a line of over {MAX_LINE_BYTES} bytes; "
                "a message is at most that long",
            )
        )
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as error:
        return Reply(
            error_line(
                PARSE_ERROR,
                f"Parse error: byte {line[error.start]:#04x} at offset {error.start} is not "
                "UTF-8; a message is UTF-8 JSON text",
            )
        )
    if not text.strip():
        return Reply(error_line(PARSE_ERROR, "Parse error: an empty line; expected a JSON object"))
    try:
        parsed = json.loads(text)
    except RecursionError:
        return Reply(error_line(PARSE_ERROR, "Parse error: nested too deeply to read"))
    except ValueError as error:
        return Reply(error_line(PARSE_ERROR, f"Parse error: {error}"))
    if isinstance(parsed, list):
        return _batch(parsed)
    outcome = _one(parsed)
    return outcome if isinstance(outcome, Forward) else Reply(outcome)


def _batch(items: list[JSON]) -> Reply:
    """A JSON-RPC batch, refused as MCP refuses it: one error per request."""
    if not items:
        return Reply(error_line(INVALID_REQUEST, "Invalid Request: an empty batch"))
    answers: list[dict[str, JSON]] = []
    for item in items:
        outcome = _one(item)
        if isinstance(outcome, bytes):
            answers.append(json.loads(outcome))
        elif outcome.id is not None:
            answers.append(
                _error(
                    INVALID_REQUEST,
                    "Invalid Request: batches are not part of MCP (since 2025-06-18); "
                    "send each message on a line of its own",
                    outcome.id,
                )
            )
    if not answers:
        return Reply(None)
    return Reply(json_line(answers))
