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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roteiro_memory import semantics as sem
from roteiro_memory.agents import schemas
from roteiro_memory.app import records
from roteiro_memory.errors import BadRequest, RoteiroError, excerpt

if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

__all__ = ["SEARCH_LIMIT", "TOOLS", "Tool", "ToolError", "call", "spell"]

JSON = Any
Schema = dict[str, Any]

SEARCH_LIMIT = 20
"""Results ``search`` and ``touched`` return unless told otherwise, as ``recall``."""

LIST_LIMIT = 50

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


# --- Reading arguments --------------------------------------------------------


class Arguments:
    """A call's arguments, checked against the tool's input schema for
    unknown and missing names, then read one by one; every fault names the
    argument, the value given and what is allowed."""

    def __init__(self, tool: str, given: Mapping[str, JSON] | None, allowed: Schema) -> None:
        self.tool = tool
        self.given = dict(given or {})
        unknown = sorted(set(self.given) - set(allowed["properties"]))
        if unknown:
            raise BadRequest(
                f"{tool}: unknown argument {excerpt(unknown[0])}; expected only "
                f"{', '.join(allowed['properties'])}"
            )
        for name in allowed.get("required", ()):
            if self.given.get(name) is None:
                raise BadRequest(f"{tool}: argument {name!r} is required")

    def _bad(self, name: str, expected: str) -> BadRequest:
        value = self.given[name]
        return BadRequest(
            f"{self.tool}: argument {name!r} is {excerpt(value)}: expected {expected}"
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

    def kinds(self, name: str = "kind") -> tuple[str, ...]:
        value = self.text(name)
        return () if value is None else (value,)


def spell(name: str) -> str:
    """How a tool call names an input in a refusal: by its argument name."""
    return f"argument {name!r}"


# --- The tools ----------------------------------------------------------------


def _selection(args: Arguments) -> records.Selection:
    anchor = args.text("anchor")
    return records.Selection(
        kinds=args.kinds(), scope=args.text("scope"), anchors=(anchor,) if anchor else ()
    )


def _ranked(session: Session, args: Arguments, *, query: str | None, touched: str | None) -> JSON:
    selection = _selection(args)
    return records.ranked(
        session,
        selection,
        query=query,
        decay=args.text("decay") or "none",
        applicable_only=args.flag("applicable_only"),
        limit=args.number("limit", SEARCH_LIMIT),
        touched=touched,
    ).to_json()


def _remember(session: Session, args: Arguments) -> JSON:
    scope = args.text("scope")  # given empty, it is refused as the CLI refuses it
    record = records.remember(
        session,
        args.text("kind") or "",
        args.text("body") or "",
        scope=sem.DEFAULT_SCOPE if scope is None else scope,
        anchor=args.text("anchor"),
        confidence=args.number("confidence"),
        supersedes=args.number("supersedes"),
    )
    return {"id": record.id, "record": record.to_json()}


def _search(session: Session, args: Arguments) -> JSON:
    return _ranked(session, args, query=args.text("query"), touched=None)


def _touched(session: Session, args: Arguments) -> JSON:
    return _ranked(session, args, query=None, touched=args.text("rev") or "HEAD")


def _get(session: Session, args: Arguments) -> JSON:
    return records.get(session, args.number("id")).to_json()


def _list(session: Session, args: Arguments) -> JSON:
    return records.listing(
        session,
        _selection(args),
        include_superseded=args.flag("include_superseded"),
        limit=args.number("limit", LIST_LIMIT),
    ).to_json()


def _forget(session: Session, args: Arguments) -> JSON:
    return records.forget(session, args.number("id")).to_json()


# --- Descriptions and input schemas -------------------------------------------

_KIND: Schema = {"enum": list(sem.KIND_TOKENS)}
_ANCHOR_TEXT = (
    "A repository path relative to the repository root (src/app/retry.py), or "
    "PATH::QUALNAME for a function, class or method in a Python, TypeScript, JavaScript, "
    "Go, Rust or Java file (src/app/retry.py::Retry.run, web/cart.ts::Cart.total)"
)
_FILTERS: Schema = {
    "kind": {**_KIND, "description": "Only records of this kind."},
    "scope": {"type": "string", "description": "Only records of this scope (default: all)."},
    "anchor": {
        "type": "string",
        "description": _ANCHOR_TEXT + "; only records anchored there (a path also takes the "
        "functions and classes in it).",
    },
}
_RANKING: Schema = {
    "applicable_only": {
        "type": "boolean",
        "default": False,
        "description": "Only records whose code is unchanged since they were written "
        "(anchor_state valid) or that have no anchor.",
    },
    "decay": {
        "type": "string",
        "default": "none",
        "description": "How age lowers the score: none, linear, linear:N, exponential or "
        "exponential:N (N generations).",
    },
    "limit": {
        "type": "integer",
        "minimum": 0,
        "default": SEARCH_LIMIT,
        "description": "At most this many results, best first (0 = all).",
    },
}
_ID_ARG: Schema = {"id": {"type": "integer", "minimum": 1, "description": "The record's id."}}


def _input(properties: Schema, *required: str) -> Schema:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class Tool:
    """One MCP tool: its contract as the client sees it, and what runs it."""

    name: str
    title: str
    description: str
    input_schema: Schema
    output_schema: Schema
    read_only: bool
    destructive: bool
    idempotent: bool
    run: Callable[[Session, Arguments], JSON]


TOOLS: tuple[Tool, ...] = (
    Tool(
        "remember",
        "Remember a lesson, failed attempt or decision",
        "Store one durable memory record for future sessions. Record a `lesson` when you "
        "learn something non-obvious about this code, an `attempt` when an approach failed "
        "(say what and why, so nobody repeats it), a `decision` when a choice is made and "
        "why, a `pattern` for a convention to follow, an `outcome` for what happened. "
        "Anchor it to the file or function it is about, so it is marked drifted when that "
        "code changes. To correct a record, remember the new one with `supersedes` set to "
        "the old id rather than forgetting it. Returns the id and the stored record.",
        _input(
            {
                "kind": {**_KIND, "description": "What sort of memory this is."},
                "body": {
                    "type": "string",
                    "description": "What was learned, in a sentence or a short paragraph "
                    "(at most 64 KiB of UTF-8).",
                },
                "anchor": {"type": "string", "description": _ANCHOR_TEXT + "."},
                "confidence": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "How sure you are, 0 to 1 (default: unstated, ranked as 0.5).",
                },
                "supersedes": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "The id of a record this one replaces; it leaves search "
                    "and list at once.",
                },
                "scope": {
                    "type": "string",
                    "default": sem.DEFAULT_SCOPE,
                    "description": "A namespace label (default: repo).",
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
        "Find what earlier sessions recorded, ranked by evidence: confidence times an anchor "
        "penalty (valid 1.0, unanchored 0.9, unverifiable 0.5, vanished 0.35, drifted 0.25). "
        "Call it before changing code you have not worked on. Each result carries the "
        "record's anchor_state: `drifted` or `vanished` means the code changed since it was "
        "written, so check it still holds. With a query, records holding any of its words "
        "(body or anchor; folded and stemmed) are ranked by BM25 relevance times that "
        "evidence; omit the query to rank everything.",
        _input(
            {
                "query": {"type": "string", "description": "Words to look for (optional)."},
                **_FILTERS,
                **_RANKING,
            }
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
        "Records anchored to the files, functions and classes the working tree changed since "
        "`rev` (default HEAD), ranked like search. Call it before committing or reviewing a "
        "change, to see the lessons and failed attempts about exactly the code you touched.",
        _input(
            {
                "rev": {
                    "type": "string",
                    "default": "HEAD",
                    "description": "The revision to compare the working tree with.",
                },
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
        "One record by id, superseded or not, with its anchor state now.",
        _input(_ID_ARG, "id"),
        schemas.RECORD,
        read_only=True,
        destructive=False,
        idempotent=True,
        run=_get,
    ),
    Tool(
        "list",
        "List records",
        "Records newest first, without ranking; `include_superseded` shows replaced ones too.",
        _input(
            {
                **_FILTERS,
                "include_superseded": {"type": "boolean", "default": False},
                "limit": {
                    "type": "integer",
                    "minimum": 0,
                    "default": LIST_LIMIT,
                    "description": "At most this many, newest first (0 = all).",
                },
            }
        ),
        schemas.LISTING,
        read_only=True,
        destructive=False,
        idempotent=True,
        run=_list,
    ),
    Tool(
        "forget",
        "Forget one record",
        "Delete the one record named by id, for good; whatever it superseded is live again "
        "(listed in `restored`). Only for a record that is wrong or should never have been "
        "stored: to correct one, `remember` a replacement with `supersedes` instead.",
        _input(_ID_ARG, "id"),
        schemas.FORGOTTEN,
        read_only=False,
        destructive=True,
        idempotent=True,
        run=_forget,
    ),
)
"""Every tool, in the order ``tools/list`` gives them."""

_BY_NAME = {tool.name: tool for tool in TOOLS}


def call(session: Session, name: str, arguments: Mapping[str, JSON] | None) -> JSON:
    """Run tool ``name``; its structured result, or :class:`ToolError`."""
    from roteiro_memory.stores.failures import from_database

    tool = _BY_NAME.get(name)
    if tool is None:
        raise ToolError(
            "BadRequest", f"no tool {excerpt(name)}; expected one of {', '.join(_BY_NAME)}"
        )
    try:
        return tool.run(session, Arguments(name, arguments, tool.input_schema))
    except RoteiroError as error:
        raise ToolError(error.kind, str(error)) from None
    except Exception as error:
        failed = from_database(error)  # mapped once per store family, as everywhere
        if failed is None:
            raise  # a bug: the server answers it as Internal and keeps serving
        raise ToolError(failed.kind, str(failed)) from None
