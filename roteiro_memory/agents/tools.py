"""The MCP tools: what each says to an agent, what it takes, and what it does.

No MCP SDK here: :mod:`roteiro_memory.agents.server` turns :data:`TOOLS` into
the SDK's types, so the tools can be read, and run, without it.

What holds:

* Every argument is checked -- type, range, unknown names -- before the store
  is touched, and a refused call changes nothing stored.
* Reads sync the code graph first, as the CLI does, so anchor states are those
  of the working tree now.
* Nothing here erases more than the one record ``forget`` names; there is no
  ``reset``, no bulk delete.
* Errors are :class:`ToolError`: the PROTOCOL kind, the message naming the
  value and what is allowed, and what to do next.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roteiro_memory import semantics as sem
from roteiro_memory.agents import answers, schemas
from roteiro_memory.app import records
from roteiro_memory.app.timestamps import zone
from roteiro_memory.errors import BadRequest, RoteiroError, excerpt, given_excerpt
from roteiro_memory.valueclass import valueclass

if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

__all__ = [
    "LIST_LIMIT",
    "SEARCH_LIMIT",
    "TOOLS",
    "Answer",
    "Tool",
    "ToolError",
    "UnknownTool",
    "call",
    "spell",
]

JSON = Any
Schema = dict[str, Any]

SEARCH_LIMIT = 8
"""Results ``search`` and ``touched`` return unless told otherwise: measured
(``bench/answers.py``), the most that keeps a default search over 200
records under 6,000 bytes, structured content included."""

LIST_LIMIT = 8
"""Records ``list`` returns unless told otherwise, measured likewise."""

_ADVICE = {
    "NotFound": "call list or search to see which ids exist",
    "AlreadySuperseded": "supersede the newest record of the chain instead "
    "(`get` shows its superseded_by)",
    "Corrupt": "the store cannot be read or opened; run `roteiro-memory check` in a shell",
    "Unavailable": "the store is sound but cannot be used right now (busy, its server "
    "down, its file moved or read-only); the message says what, and whether anything was "
    "stored; retry once that is resolved",
    "Unsupported": "this store does not offer that operation",
    "Internal": "the server is still running; retry, and report it if it persists",
}
_FIX_INPUT = "correct that argument and call again; nothing was stored"


class ToolError(Exception):
    """A tool call that failed; ``kind`` is the PROTOCOL error kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    @property
    def advice(self) -> str:
        return _ADVICE.get(self.kind, _FIX_INPUT)

    def text(self) -> str:
        return f"{self.kind}: {self.message}. What to do: {self.advice}."

    def to_json(self) -> JSON:
        return {"error": {"kind": self.kind, "message": self.message, "advice": self.advice}}


class UnknownTool(ToolError):
    """A call naming no tool of the server.  MCP counts it a protocol error,
    not a failed call the model reads: the server answers it as JSON-RPC's
    invalid params (-32602)."""


# --- Reading arguments --------------------------------------------------------


class Arguments:
    """A call's arguments, checked against the tool's input schema for
    unknown and missing names, then read one by one; every fault names the
    argument, the value given and what is allowed."""

    def __init__(self, tool: str, given: Mapping[str, JSON] | None, allowed: Schema) -> None:
        self.tool = tool
        given = dict(given or {})
        unknown = sorted(set(given) - set(allowed["properties"]))
        if unknown:
            raise BadRequest(
                f"{tool}: unknown argument {excerpt(unknown[0])}; expected only "
                f"{', '.join(allowed['properties'])}"
            )
        for name in allowed.get("required", ()):
            if name not in given:
                raise BadRequest(f"{tool}: argument {name!r} is required")
            if given[name] is None:
                raise BadRequest(f"{tool}: argument {name!r} is null: it is required")
        # An optional argument given as null is absent: clients send null for
        # "not given", and the input schemas say so (type [X, "null"]).
        self.given = {name: value for name, value in given.items() if value is not None}

    def _bad(self, name: str, expected: str) -> BadRequest:
        value = self.given[name]
        return BadRequest(
            f"{self.tool}: argument {name!r} is {given_excerpt(value)}: expected {expected}"
        )

    def text(self, name: str) -> str | None:
        value = self.given.get(name)
        if value is not None and not isinstance(value, str):
            raise self._bad(name, "a string")
        return value

    def flag(self, name: str) -> bool:
        value = self.given.get(name, False)
        if not isinstance(value, bool):
            raise self._bad(name, "true or false")
        return value

    def number(self, name: str, default: JSON = None) -> JSON:
        """A number as given (``default`` when absent or null): the use case
        reads it (:mod:`roteiro_memory.app.values`)."""
        value = self.given.get(name)
        if isinstance(value, str):
            raise self._bad(name, "a number, not a string")
        return default if value is None else value

    def ids(self, name: str) -> tuple[object, ...]:
        """Record ids as given (none when absent): the use case reads each.
        An id is a number here, as ``get``'s is: the command line's pasted
        ``#12`` is for typing, and no input schema allows it."""
        value = self.given.get(name)
        if value is None:
            return ()
        if not isinstance(value, list) or any(isinstance(item, str) for item in value):
            raise self._bad(name, "an array of record ids (numbers, not strings)")
        return tuple(value)

    def kind(self) -> str | None:
        """The kind, spelt as the input schema's enum spells it: the command
        line's any-case ``Lesson`` is for typing."""
        value = self.text("kind")
        if value is not None:
            sem.parse_kind(value)  # InvalidKind, as for a kind that names none
        return value

    def kinds(self) -> tuple[str, ...]:
        value = self.kind()
        return () if value is None else (value,)


_ARGUMENT = {"touched": "rev"}
"""Inputs of the use cases that a tool takes under another name (``touched``
takes the revision as ``rev``)."""


def spell(name: str) -> str:
    """How a tool call names an input in a refusal: by its argument name."""
    return f"argument {_ARGUMENT.get(name, name)!r}"


@valueclass
class Answer:
    """What a tool answers: ``structured``, the PROTOCOL shape (timestamps
    in ISO 8601, as on every surface), and ``text``, the compact lines an
    agent reads (:mod:`roteiro_memory.agents.answers`), which do not repeat
    the structure."""

    structured: JSON
    text: str


# --- The tools ----------------------------------------------------------------


def _selection(args: Arguments) -> records.Selection:
    anchor = args.text("anchor")
    if anchor == "":  # as remember refuses it: no filter is said by leaving it out
        raise args._bad("anchor", "a path or PATH::QUALNAME; leave it out for no filter")
    return records.Selection(
        kinds=args.kinds(), scope=args.text("scope"), anchors=(anchor,) if anchor else ()
    )


def _or(value: str | None, default: str) -> str:
    """``value``, or ``default`` when absent (an empty one is the use case's to refuse)."""
    return default if value is None else value


def _ranked(session: Session, args: Arguments, *, query: str | None, touched: str | None) -> Answer:
    from roteiro_memory.app import shown

    every = args.flag("all")
    found = records.ranked(
        session,
        _selection(args),
        query=query,
        decay=_or(args.text("decay"), "none"),  # given empty, refused as the CLI refuses it
        applicable_only=args.flag("applicable_only"),
        limit=args.number("limit", SEARCH_LIMIT),
        touched=touched,
    )
    view = shown.ranked(session, found, every=every)
    return Answer(shown.ranked_json(found, view), answers.ranked(found, view))


def _remember(session: Session, args: Arguments) -> Answer:
    scope = args.text("scope")  # given empty, it is refused as the CLI refuses it
    remembered = records.remember(
        session,
        args.kind() or "",
        args.text("body") or "",
        scope=sem.DEFAULT_SCOPE if scope is None else scope,
        anchor=args.text("anchor"),
        confidence=args.number("confidence"),
        supersedes=args.number("supersedes"),
        allow_duplicate=args.flag("allow_duplicate"),
    )
    return Answer(remembered.to_json(), answers.remembered(remembered))


def _search(session: Session, args: Arguments) -> Answer:
    return _ranked(session, args, query=args.text("query"), touched=None)


def _touched(session: Session, args: Arguments) -> Answer:
    rev = args.text("rev")  # given empty, it is refused as the command line refuses it
    return _ranked(session, args, query=None, touched="HEAD" if rev is None else rev)


def _get(session: Session, args: Arguments) -> Answer:
    record = records.get(session, args.number("id"))
    return Answer(record.to_json(), answers.detail(record))


def _list(session: Session, args: Arguments) -> Answer:
    from roteiro_memory.app import shown

    if args.flag("conflicts"):
        other = [n for n in args.given if n not in ("conflicts", "scope")]
        if other:
            raise BadRequest(
                f"list: argument {other[0]!r} does not go with 'conflicts', which takes only "
                "'scope'"
            )
        found = shown.listing(session, scope=args.text("scope"))
        return Answer(found.to_json(), answers.conflicts(found))
    every = args.flag("all")
    listing = records.listing(
        session,
        _selection(args),
        include_superseded=args.flag("include_superseded"),
        limit=args.number("limit", LIST_LIMIT),
    )
    view = shown.listed(session, listing, every=every)
    return Answer(shown.listed_json(listing, view), answers.listed(listing, view))


def _reanchor(session: Session, args: Arguments) -> Answer:
    from roteiro_memory.app import reanchor

    ids = args.ids("ids")
    if args.flag("apply") or args.flag("all_certain"):
        done = reanchor.apply(session, ids, all_certain=args.flag("all_certain"))
        return Answer(done.to_json(), answers.rewritten(done))
    found = reanchor.proposals(session, ids)
    return Answer(found.to_json(), answers.proposed(found))


def _confirm(session: Session, args: Arguments) -> Answer:
    from roteiro_memory.app import reanchor

    done = reanchor.confirm(session, args.ids("ids"))
    return Answer(done.to_json(), answers.rewritten(done))


def _forget(session: Session, args: Arguments) -> Answer:
    forgotten = records.forget(session, args.number("id"))
    return Answer(forgotten.to_json(), answers.forgotten(forgotten))


# --- Descriptions and input schemas -------------------------------------------
#
# A schema allows no value its tool refuses for its form: lengths, ranges,
# formats, white space and control characters, arguments that do not go
# together (a value naming nothing -- an id, a path, a revision -- is the
# tool's to refuse).  Every optional argument may be null, meaning absent.
# The patterns read alike in Python's re and ECMA-262: classes spelt out in
# escapes from semantics' own sets (not \s, which differs between the two
# and from Unicode White_Space), and no $ that Python lets a final newline
# pass.  What no schema can say is the tool's alone (docs/cli.md lists it, as
# the KNOWN of tests/test_agents_schemas.py does): the limits are UTF-8 bytes
# and maxLength counts characters, as each description says; a decay's N
# past 2^64-1, as decay's says; a lone surrogate, which a pattern without
# ECMA-262's u flag cannot tell from half of a pair; an anchor's path; a
# revision; a query's count of distinct terms.

_ESCAPES = {0x09: "\\t", 0x0A: "\\n", 0x0B: "\\v", 0x0C: "\\f", 0x0D: "\\r", 0x20: " "}


def _escape(code: int) -> str:
    """One character of a class, as both dialects read it."""
    return _ESCAPES.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def _class(chars: Iterable[str]) -> str:
    """A character class's body naming exactly ``chars``: each in an escape
    both dialects read alike, a run of three or more as a range."""
    codes = sorted(map(ord, chars))
    parts: list[str] = []
    start = 0
    for end, code in enumerate(codes):
        if end + 1 < len(codes) and codes[end + 1] == code + 1:
            continue
        run = codes[start : end + 1]
        ends = (_escape(run[0]), _escape(run[-1]))
        parts.append("-".join(ends) if len(run) > 2 else "".join(map(_escape, run)))
        start = end + 1
    return "".join(parts)


_NOT_BLANK: Schema = {"pattern": f"[^{_class(sem.WHITE_SPACE)}]"}
"""Holds a character that is not white space, as :func:`sem.strip_white_space`
judges it: not blank."""
_EDGE = _class(c for c in sem.WHITE_SPACE if not re.fullmatch(sem.CONTROL, c))
_SCOPE_RULE: Schema = {"not": {"type": "string", "pattern": f"{sem.CONTROL}|^[{_EDGE}]|[{_EDGE}]$"}}
"""No control character, no white space at either end (the white space that
is no control character: the rest is refused anywhere): what
:func:`sem.validate_scope` holds besides the length.  (Python's ``$`` also
matches before a final newline, a control character.)"""


def _optional(schema: Schema) -> Schema:
    """``schema`` also allowing null (absent)."""
    if "enum" in schema:
        return {**schema, "enum": [*schema["enum"], None]}
    return {**schema, "type": [schema["type"], "null"]}


def _text(limit: int, description: str, rule: Schema) -> Schema:
    """A string of 1 to ``limit`` UTF-8 bytes that holds to ``rule``."""
    said = f"{description} At most {limit:,} UTF-8 bytes."
    least = {} if "pattern" in rule else {"minLength": 1}  # a pattern needs a character
    return {"type": "string", **least, "maxLength": limit, **rule, "description": said}


_INT64: Schema = {"type": "integer", "maximum": sem.INT64_MAX}
_SCOPE = _text(
    sem.MAX_SCOPE_BYTES, "No surrounding white space or control characters.", _SCOPE_RULE
)
_KIND: Schema = {"enum": list(sem.KIND_TOKENS)}
_ANCHOR_TEXT = (
    "A path from the repository root, or PATH::QUALNAME for a function, class or method "
    "(Python, TypeScript, JavaScript, Go, Rust, Java)"
)
_FILTERS: Schema = {
    "kind": _optional({**_KIND, "description": "Only this kind."}),
    "scope": _optional(_text(sem.MAX_SCOPE_BYTES, "Only this scope.", _SCOPE_RULE)),
    "anchor": _optional(
        _text(
            sem.MAX_ANCHOR_BYTES, "Only this PATH (and its symbols) or PATH::QUALNAME.", _NOT_BLANK
        )
    ),
}
_ALL: Schema = {
    "all": {
        "type": ["boolean", "null"],
        "description": "Near-duplicates too, unfolded.",
    }
}
_RANKING: Schema = {
    "applicable_only": {
        "type": ["boolean", "null"],
        "description": "Only records that apply: valid or unanchored.",
    },
    "decay": {
        "type": ["string", "null"],
        "pattern": "^(none|(linear|exponential)(:\\+?[0-9]+)?)$",
        "default": "none",
        "description": "N: generations, at most 2^64-1.",
    },
    "limit": _optional(
        {**_INT64, "minimum": 0, "default": SEARCH_LIMIT, "description": "0 = all."}
    ),
    **_ALL,
}
_ID: Schema = {**_INT64, "minimum": 1}
_IDS: Schema = {"type": "array", "items": _ID, "uniqueItems": True}


def _input(properties: Schema, *required: str, only: Schema | None = None) -> Schema:
    """An input schema (``only``: a rule on which arguments go together)."""
    return {
        "type": "object",
        "properties": properties,
        **({"required": list(required)} if required else {}),
        "additionalProperties": False,
        **(only or {}),
    }


def _given(flag: str, then: Schema, otherwise: Schema | None = None) -> Schema:
    """``then`` holds when ``flag`` is true, else ``otherwise``."""
    rule = {"if": {"properties": {flag: {"const": True}}, "required": [flag]}, "then": then}
    return rule if otherwise is None else {**rule, "else": otherwise}


_CONFLICTS_TAKE_ONLY_SCOPE = _given(
    "conflicts",
    {"properties": {"conflicts": {}, "scope": {}}, "additionalProperties": {"type": "null"}},
)
"""``list`` with ``conflicts: true`` takes ``scope``; every other argument
is absent or null."""

_IDS_OR_ALL_CERTAIN = _given(
    "all_certain",
    {"properties": {"ids": {"maxItems": 0}}},
    _given("apply", {"properties": {"ids": {"type": "array", "minItems": 1}}, "required": ["ids"]}),
)
"""``reanchor`` with ``all_certain`` takes no ids; with ``apply`` alone, some."""


@dataclass(frozen=True)
class Tool:
    """One MCP tool: its contract as the client sees it, and what runs it.

    ``output_schema`` is the JSON Schema of the structured content (the
    PROTOCOL shape); it is not sent in ``tools/list``, which it would double
    (an agent reads the text), and the tests check every result against it."""

    name: str
    title: str
    description: str
    input_schema: Schema
    output_schema: Schema
    read_only: bool
    destructive: bool
    idempotent: bool
    run: Callable[[Session, Arguments], Answer]


_LINES = (
    " One line a record: id, kind, anchor state, score, anchor, body (`get` has all). "
    "Drifted or vanished: its code changed since; check it."
)

TOOLS: tuple[Tool, ...] = (
    Tool(
        "remember",
        "Remember a lesson, failed attempt or decision",
        "Store a durable record for future sessions: a `lesson` learned about this code, an "
        "`attempt` that failed (what and why), a `decision` and its reason, a `pattern` to "
        "follow, an `outcome`. Anchor it to the file or function it is about, so it is marked "
        "drifted when that code changes. To correct one, remember the new one with "
        "`supersedes` (not forget). Saying the same again answers the existing record.",
        _input(
            {
                "kind": _KIND,
                "body": _text(
                    sem.MAX_BODY_BYTES, "A sentence or a short paragraph, not blank.", _NOT_BLANK
                ),
                "anchor": _optional(_text(sem.MAX_ANCHOR_BYTES, _ANCHOR_TEXT + ".", _NOT_BLANK)),
                "confidence": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
                "supersedes": _optional(
                    {**_INT64, "minimum": 1, "description": "The id this one replaces."}
                ),
                "scope": _optional({**_SCOPE, "default": sem.DEFAULT_SCOPE}),
                "allow_duplicate": {
                    "type": ["boolean", "null"],
                    "description": "Write even if an equal live record exists.",
                },
            },
            "kind",
            "body",
        ),
        schemas.REMEMBERED,
        read_only=False,
        destructive=False,
        idempotent=False,
        run=_remember,
    ),
    Tool(
        "search",
        "Search memory",
        "Find what earlier sessions recorded. Call it before changing code you have not "
        "worked on. With a query, records holding any of its words rank by relevance times "
        "evidence (confidence x anchor state); without, all rank by evidence." + _LINES,
        _input(
            {"query": {"type": ["string", "null"]}, **_FILTERS, **_RANKING},
        ),
        schemas.RECALL,
        read_only=True,
        destructive=False,
        idempotent=True,
        run=_search,
    ),
    Tool(
        "touched",
        "What do we know about this change",
        "Records anchored to the files and symbols the working tree changed since `rev` "
        "(default HEAD), ranked like search: call it before committing or reviewing." + _LINES,
        _input(
            {
                "rev": {"type": ["string", "null"], "minLength": 1, "default": "HEAD"},
                **_FILTERS,
                **_RANKING,
            }
        ),
        schemas.RECALL,
        read_only=True,
        destructive=False,
        idempotent=True,
        run=_touched,
    ),
    Tool(
        "get",
        "Get one record",
        "One record in full by id, superseded or not, with its anchor state now.",
        _input({"id": _ID}, "id"),
        schemas.RECORD,
        read_only=True,
        destructive=False,
        idempotent=True,
        run=_get,
    ),
    Tool(
        "list",
        "List records",
        "Records newest first, unranked." + _LINES,
        _input(
            {
                **_FILTERS,
                "include_superseded": {"type": ["boolean", "null"]},
                "limit": _optional(
                    {**_INT64, "minimum": 0, "default": LIST_LIMIT, "description": "0 = all."}
                ),
                **_ALL,
                "conflicts": {
                    "type": ["boolean", "null"],
                    "description": "Only unresolved conflicts; takes only scope.",
                },
            },
            only=_CONFLICTS_TAKE_ONLY_SCOPE,
        ),
        {"oneOf": [schemas.LISTING, schemas.CONFLICTS]},
        read_only=True,
        destructive=False,
        idempotent=True,
        run=_list,
    ),
    Tool(
        "reanchor",
        "Where stale records' code is now",
        "For live records whose code drifted or vanished (or those `ids`): where their code "
        "is now -- the same code elsewhere, git's rename, the same name in the renamed file -- "
        "and how sure. Changes nothing unless `apply` (the `ids` given) or `all_certain`: "
        "then each is written again anchored there, superseding the old one.",
        _input(
            {
                "ids": _optional(_IDS),
                "apply": {"type": ["boolean", "null"]},
                "all_certain": {"type": ["boolean", "null"]},
            },
            only=_IDS_OR_ALL_CERTAIN,
        ),
        {"oneOf": [schemas.PROPOSALS, schemas.REWRITTEN]},
        read_only=False,
        destructive=False,
        idempotent=False,
        run=_reanchor,
    ),
    Tool(
        "confirm",
        "Confirm drifted records still hold",
        "After reading the changed code: say that the drifted records `ids` still hold for it "
        "as it is now. Each is written again anchored at the code now (valid), superseding "
        "the old one. Only for drifted records; a vanished one is `reanchor`'s.",
        _input({"ids": {**_IDS, "minItems": 1}}, "ids"),
        schemas.REWRITTEN,
        read_only=False,
        destructive=False,
        idempotent=False,
        run=_confirm,
    ),
    Tool(
        "forget",
        "Forget one record",
        "Delete one record for good (what it superseded is live again). Only for a record "
        "that should never have been stored; to correct one, remember with `supersedes`.",
        _input({"id": _ID}, "id"),
        schemas.FORGOTTEN,
        read_only=False,
        destructive=True,
        idempotent=False,
        run=_forget,
    ),
)
"""Every tool, in the order ``tools/list`` gives them."""

_BY_NAME = {tool.name: tool for tool in TOOLS}


def call(session: Session, name: str, arguments: Mapping[str, JSON] | None) -> Answer:
    """Run tool ``name``; its answer, or :class:`ToolError`."""
    from roteiro_memory.stores.failures import from_database

    tool = _BY_NAME.get(name)
    if tool is None:
        raise UnknownTool(
            "BadRequest", f"no tool {excerpt(name)}; expected one of {', '.join(_BY_NAME)}"
        )
    try:
        answer = tool.run(session, Arguments(name, arguments, tool.input_schema))
        zone(answer.structured)
        return answer
    except RoteiroError as error:
        raise ToolError(error.kind, str(error)) from None
    except Exception as error:
        failed = from_database(error)  # mapped once per store family, as everywhere
        if failed is None:
            raise  # a bug: the server answers it as Internal and keeps serving
        raise ToolError(failed.kind, str(failed)) from None
