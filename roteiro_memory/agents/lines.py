"""What one line a client sends over stdio is, before the MCP SDK sees it.

MCP over stdio is JSON-RPC 2.0, one message a line.  The SDK's own reader
drops a line it cannot read (not JSON, an array, no ``jsonrpc``, an object as
id, deep nesting, a lone surrogate it will not decode) with nothing said, so
the client waits for its own timeout.  :func:`classify` reads the line
first, and every line the SDK would drop is answered here, as the JSON-RPC
2.0 specification asks:

* a line that is not JSON text (not UTF-8, not JSON, empty, behind a
  byte-order mark, nested deeper than the reader goes) -- ``-32700`` parse
  error, id ``null``;
* JSON that is not a request object (a number, a string, ``[]``, no
  ``"jsonrpc": "2.0"``, a method that is not a string, an id that is not a
  string or an integer (a request's null too), a request whose params are
  neither an object nor an array, a method beside ``result`` or ``error``
  (two messages in one), nesting deeper than :data:`MAX_DEPTH`, an object
  naming a member twice (a tool's arguments among them: which value counts
  is undefined), a shape the SDK refuses) -- ``-32600`` invalid request,
  with the request's id when it has a usable one; so is JSON holding an integer of more than
  :data:`MAX_DIGITS` digits, which Python will not read;
* an id holding a lone surrogate: no answer could carry it back exactly
  (UTF-8 cannot, and a strict parser refuses its escape), and writing it
  any other way makes it another request's id -- ``-32600``, id ``null``;
* a batch (an array of messages): handed back as a :class:`Batch`, served
  when the session negotiated a revision that has batches
  (:data:`BATCH_REVISIONS`), else refused by :func:`refuse_batch`.

Pure: no I/O, no SDK.  A line that is a message is handed back parsed, for
the SDK to validate (:mod:`roteiro_memory.agents.wire`).
"""

from __future__ import annotations

import json
from typing import Any

from roteiro_memory.errors import byte_order_mark, json_excerpt, lone_surrogate, strict_json
from roteiro_memory.valueclass import valueclass

__all__ = [
    "BATCH_REVISIONS",
    "INVALID_REQUEST",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_LINE_BYTES",
    "PARSE_ERROR",
    "Batch",
    "Forward",
    "Reply",
    "classify",
    "error_line",
    "json_line",
    "refuse_batch",
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

BATCH_REVISIONS = frozenset({"2025-03-26"})
"""The MCP revisions whose servers MUST receive JSON-RPC batches.  2024-11-05
defines none (its messages are one request, notification or response; the
next revision says it "does not explicitly support" batches) and 2025-06-18
removed them, so a session that negotiated any other revision is refused a
batch."""


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


@valueclass
class Batch:
    """A line holding a JSON-RPC batch: the messages in it, for the SDK, and
    the error objects owed for the elements that are not messages."""

    messages: tuple[Forward, ...]
    refused: tuple[dict[str, JSON], ...]


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
    """Whether ``value`` is an id an answer can carry back exactly (a string
    UTF-8 can carry, or an integer, not a boolean), and the id."""
    if isinstance(value, str) and lone_surrogate(value) is None:
        return True, value
    if isinstance(value, int) and not isinstance(value, bool):
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
    if isinstance(message.get("id"), str) and (surrogate := lone_surrogate(message["id"])):
        return (
            f'"id" holds {surrogate}: no answer can carry it back as sent (UTF-8 cannot, '
            "and strict JSON parsers refuse its escape); send an id that is Unicode text"
        )
    if "id" in message and message["id"] is not None and not request_id(message["id"])[0]:
        return f'"id" is {json_excerpt(message["id"])}: an id is a string or an integer'
    if "method" in message and not isinstance(message["method"], str):
        return f'"method" is {json_excerpt(message["method"])}, expected a string'
    if "method" not in message and "result" not in message and "error" not in message:
        return 'neither "method" (a request) nor "result" or "error" (a response)'
    if "method" in message and ("result" in message or "error" in message):
        member = "result" if "result" in message else "error"
        return f'"method" beside "{member}": a message is a request or a response, not both'
    params = message.get("params", {})
    if "method" in message and "id" in message and not isinstance(params, (dict, list)):
        return (
            f'"params" is {json_excerpt(params)}: params are an object or an array '
            "(MCP's are an object)"
        )
    return None


class _Repeated(dict[str, JSON]):
    """A JSON object that names a member more than once, as the parser built
    it (the last value kept); ``twice`` is the first name repeated, and
    ``ambiguous_id`` whether ``id`` is one of those repeated."""

    twice = ""
    ambiguous_id = False


def _members(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
    """A JSON object of a line: a :class:`_Repeated` when a name repeats."""
    built = dict(pairs)
    if len(built) == len(pairs):
        return built
    seen: set[str] = set()
    repeated = _Repeated(built)
    for name, _ in pairs:
        if name in seen:
            repeated.twice = repeated.twice or name
            repeated.ambiguous_id = repeated.ambiguous_id or name == "id"
        seen.add(name)
    return repeated


_Where = tuple["_Where", "str | int"] | None
"""Where a value is in a message, from its parent's place and its member's
name or index: made in constant time a value, shown (:func:`_shown_where`)
only for the object refused."""


def _repeated(message: dict[str, JSON]) -> str | None:
    """Why ``message`` is refused when one of its objects names a member
    twice: which one is meant is JSON's to leave undefined (RFC 8259), and
    taking the last, as the parser does, would serve a call its sender may
    not have meant (``{"kind": "lesson", "kind": "decision"}``).  None when
    every member is named once.  Linear in the message's size: the place of
    a value is written out only for the object refused."""
    stack: list[tuple[JSON, _Where]] = [(message, None)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, _Repeated):
            path = _shown_where(at)
            where = json_excerpt(path, 80) if path else "the message"
            return (
                f"the member {json_excerpt(item.twice)} appears twice in {where}; JSON leaves "
                "which one counts undefined, so send each member once"
            )
        if isinstance(item, dict):
            named: list[tuple[JSON, _Where]] = [(value, (at, name)) for name, value in item.items()]
        elif isinstance(item, list):
            named = [(value, (at, index)) for index, value in enumerate(item)]
        else:
            continue
        stack.extend(reversed(named))
    return None


def _shown_where(at: _Where) -> str:
    """``params.arguments``, ``params.items[2]``: where a value is, as the
    refusal names it ("" for the message itself)."""
    steps: list[str | int] = []
    while at is not None:
        at, step = at
        steps.append(step)
    parts: list[str] = []
    for step in reversed(steps):
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}" if parts else step)
    return "".join(parts)


def _one(item: JSON, *, repeats: bool = False) -> Forward | bytes:
    """One parsed element: a message to forward, or the error line owed;
    ``repeats``: whether the line it came from named a member twice."""
    if not isinstance(item, dict):
        kind = "an array" if isinstance(item, list) else f"{json_excerpt(item, 40)}"
        return error_line(INVALID_REQUEST, f"Invalid Request: {kind}, not a JSON-RPC object")
    usable, rid = request_id(item.get("id"))
    if isinstance(item, _Repeated) and item.ambiguous_id:
        usable = False  # which id is meant is unknown, whatever else is wrong: answered as null
    problem = _invalid(item)
    if problem is None and _depth_over(item, MAX_DEPTH):
        problem = f"nested more than {MAX_DEPTH} levels deep"
    if problem is None and repeats:
        problem = _repeated(item)
    if problem is not None:
        return error_line(INVALID_REQUEST, f"Invalid Request: {problem}", rid if usable else None)
    is_request = "method" in item and usable
    return Forward(item, rid if is_request else None)


def classify(line: bytes) -> Forward | Reply | Batch:
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
    marked = byte_order_mark(text)
    if marked is not None:
        return Reply(error_line(PARSE_ERROR, f"Parse error: the line {marked}"))
    repeated: list[_Repeated] = []

    def members(pairs: list[tuple[str, JSON]]) -> dict[str, JSON]:
        built = _members(pairs)
        if isinstance(built, _Repeated):
            repeated.append(built)
        return built

    try:
        parsed = json.loads(text, parse_int=_integer, object_pairs_hook=members)
    except _LongNumber as long:
        return Reply(_long_number(text, long.digits))
    except RecursionError:
        return Reply(error_line(PARSE_ERROR, "Parse error: nested too deeply to read"))
    except ValueError as error:
        return Reply(error_line(PARSE_ERROR, f"Parse error: {error}"))
    repeats = bool(repeated)
    if isinstance(parsed, list):
        return _batch(parsed, repeats=repeats)
    outcome = _one(parsed, repeats=repeats)
    return outcome if isinstance(outcome, Forward) else Reply(outcome)


MAX_DIGITS = 4_300
"""The most digits an integer of a message may have: Python's own limit for
reading one (``sys.get_int_max_str_digits``), far past any id or argument's
(an id is at most 19 digits)."""


class _LongNumber(Exception):
    """An integer of more than :data:`MAX_DIGITS` digits, met while parsing."""

    def __init__(self, digits: int) -> None:
        super().__init__(digits)
        self.digits = digits


def _integer(text: str) -> int:
    """An integer of a message, as JSON writes it (``-`` and digits)."""
    digits = len(text) - text.startswith("-")
    if digits > MAX_DIGITS:
        raise _LongNumber(digits)
    return int(text)


def _long_number(text: str, digits: int) -> bytes:
    """The answer to a line that is JSON but holds an integer too long to
    read: invalid request, with the request's id when it has a usable one,
    for it is JSON text (a parse error would answer no request)."""
    try:
        # Read again, each long number as null, for the request's id.
        parsed = json.loads(text, parse_int=lambda n: int(n) if len(n) <= MAX_DIGITS else None)
    except (ValueError, RecursionError):
        parsed = None
    usable, rid = request_id(parsed.get("id")) if isinstance(parsed, dict) else (False, None)
    return error_line(
        INVALID_REQUEST,
        f"Invalid Request: it holds a number of {digits:,} digits; a message holds none of "
        f"more than {MAX_DIGITS:,} (an id or argument takes at most 19)",
        rid if usable else None,
    )


def _batch(items: list[JSON], *, repeats: bool = False) -> Reply | Batch:
    """A JSON-RPC batch: its messages, and the errors owed for the rest;
    ``repeats``: whether the line named a member twice in some object."""
    if not items:
        return Reply(error_line(INVALID_REQUEST, "Invalid Request: an empty batch"))
    messages: list[Forward] = []
    refused: list[dict[str, JSON]] = []
    for item in items:
        outcome = _one(item, repeats=repeats)
        if isinstance(outcome, bytes):
            refused.append(json.loads(outcome))
        else:
            messages.append(outcome)
    return Batch(tuple(messages), tuple(refused))


def refuse_batch(batch: Batch, revision: str | None) -> Reply:
    """A batch refused whole, as JSON-RPC answers a batch: one error for each
    request in it, in one array; nothing when it holds no request."""
    why = (
        "batches are not part of MCP before initialize"
        if revision is None
        else f"this session's MCP revision ({revision}) has no batches"
    )
    answers = list(batch.refused) + [
        _error(
            INVALID_REQUEST,
            f"Invalid Request: {why}; send each message on a line of its own",
            message.id,
        )
        for message in batch.messages
        if message.id is not None
    ]
    return Reply(json_line(answers) if answers else None)
