"""roteiro.conformance/v1: the operations of PROTOCOL over a :class:`Store`.

:class:`Ops` is the in-process form -- ``call(op, args)`` checks the arguments,
runs the op and returns its JSON result, raising the error kinds of
:mod:`roteiro_memory.errors`.  :func:`serve` is the wire form: one JSON request
per line in, one response per line out.  ``BadRequest`` is decided before any
other error, so a malformed request never reaches the store.
"""

from __future__ import annotations

import io
import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import IO, Any, TextIO

from roteiro_memory import eviction
from roteiro_memory import semantics as sem
from roteiro_memory.arguments import is_integer
from roteiro_memory.errors import (
    BadRequest,
    InvalidAnchor,
    ResetRefused,
    RoteiroError,
    StreamClosed,
    Unsupported,
    bounded_line,
    byte_order_mark,
    excerpt,
    json_excerpt,
    lone_surrogate,
    strict_json,
)
from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.results import GraphNode
from roteiro_memory.semantics import U64_MAX
from roteiro_memory.store import Store

__all__ = ["MAX_LINE_BYTES", "OPS", "PROTOCOL", "Ops", "reset_refusal", "serve"]

PROTOCOL = "roteiro.conformance/v1"

JSON = Any

_STR = "string"
_STR_OR_NULL = "string or null"
_INT = "integer"
_INT_OR_NULL = "integer or null"
_NUMBER_OR_NULL = "number or null"
_BOOL = "boolean"
_STR_LIST = "array of strings"
_NODES = "array of nodes"


@dataclass(frozen=True)
class Arg:
    """One argument of an op: its JSON type, and its default when absent."""

    name: str
    type: str
    required: bool = False
    default: JSON = None


@dataclass(frozen=True)
class Op:
    """One PROTOCOL operation: the capability it needs and its arguments."""

    capability: str | None
    args: tuple[Arg, ...]


_FILTERS = (Arg("scope", _STR_OR_NULL), Arg("kind", _STR_OR_NULL), Arg("anchor_key", _STR_OR_NULL))

OPS: dict[str, Op] = {
    "hello": Op(None, ()),
    "reset": Op(None, ()),
    "shutdown": Op(None, ()),
    "graph.put_nodes": Op("graph", (Arg("nodes", _NODES, required=True),)),
    "graph.remove_nodes": Op("graph", (Arg("keys", _STR_LIST, required=True),)),
    "graph.set_tree": Op("graph", (Arg("tree", _STR_OR_NULL, required=True),)),
    "graph.rebuild": Op("graph", ()),
    "graph.export": Op("graph", ()),
    "memory.record": Op(
        "episodic",
        (
            Arg("kind", _STR, required=True),
            Arg("body", _STR, required=True),
            Arg("scope", _STR, default=sem.DEFAULT_SCOPE),
            Arg("anchor", _STR_OR_NULL),
            Arg("confidence", _NUMBER_OR_NULL),
            Arg("supersedes", _INT_OR_NULL),
        ),
    ),
    "memory.get": Op("episodic", (Arg("id", _INT, required=True),)),
    "memory.list": Op(
        "episodic",
        (*_FILTERS, Arg("include_superseded", _BOOL, default=False), Arg("limit", _INT_OR_NULL)),
    ),
    "memory.recall": Op(
        "episodic",
        (
            *_FILTERS,
            Arg("query", _STR_OR_NULL),
            Arg("decay", _STR, default="none"),
            Arg("applicable_only", _BOOL, default=False),
            Arg("limit", _INT_OR_NULL),
        ),
    ),
    "memory.search": Op(
        "search",
        (
            *_FILTERS,
            Arg("query", _STR, required=True),
            Arg("decay", _STR, default="none"),
            Arg("applicable_only", _BOOL, default=False),
            Arg("limit", _INT_OR_NULL),
        ),
    ),
    "memory.forget": Op("episodic", (Arg("id", _INT, required=True),)),
    "cache.put": Op(
        "cache",
        (
            Arg("key", _STR, required=True),
            Arg("fingerprint", _STR, required=True),
            Arg("json", _STR, required=True),
            Arg("anchor", _STR_OR_NULL),
        ),
    ),
    "cache.get": Op("cache", (Arg("key", _STR, required=True),)),
    "cache.entries": Op("cache", ()),
    "cache.forget": Op("cache", (Arg("key", _STR, required=True),)),
    "cache.stats": Op("cache", (Arg("budget_bytes", _INT, required=True),)),
    "cache.sweep": Op("cache", (Arg("budget_bytes", _INT, required=True),)),
    "cache.budget": Op("budget", (Arg("env", _STR_OR_NULL, required=True),)),
    "store.snapshot": Op("snapshot", ()),
    "store.reopen": Op("durable", ()),
}
"""Every operation PROTOCOL defines, with its arguments."""

_NON_NEGATIVE = frozenset({"limit", "id", "budget_bytes"})
_RANGES: dict[str, tuple[int, int]] = {
    "id": (0, U64_MAX),
    "limit": (0, U64_MAX),
    "budget_bytes": (0, U64_MAX),
    "supersedes": (-sem.INT64_MAX - 1, U64_MAX),
}
"""PROTOCOL [P-args-ranges]: the integers each argument may hold."""
_NODE_FIELDS = {"key": _STR, "kind": _STR_OR_NULL, "name": _STR_OR_NULL, "path": _STR_OR_NULL}


def _is_text(value: object) -> bool:
    """A JSON string that is valid Unicode (no lone surrogates)."""
    return isinstance(value, str) and sem.is_utf8(value)


def _not_of_type(type_name: str, value: object) -> str:
    """Why a value is not of ``type_name``, showing it as JSON writes it
    (``null``, ``true``, ``Infinity``): text that is the wrong type only for
    a lone surrogate (in it, or in one of a list's) says so."""
    article = "an" if type_name[0] in "aeiou" else "a"
    items = value if isinstance(value, list) else [value]
    for item in items:
        lone = lone_surrogate(item) if isinstance(item, str) else None
        if lone is not None:
            return (
                f"must be {article} {type_name}, not {excerpt(value)}, which holds {lone} "
                "and is not Unicode text"
            )
    return f"must be {article} {type_name}, not {json_excerpt(value)}"


def _has_type(value: object, type_name: str) -> bool:
    if value is None:
        return type_name.endswith("or null")
    if type_name in (_STR, _STR_OR_NULL):
        return _is_text(value)
    if type_name in (_INT, _INT_OR_NULL):
        return is_integer(value)
    if type_name == _NUMBER_OR_NULL:
        # NaN is no JSON number (an infinity is: 1e400 overflows a double).
        is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return is_number and not (isinstance(value, float) and math.isnan(value))
    if type_name == _BOOL:
        return isinstance(value, bool)
    if type_name == _STR_LIST:
        return isinstance(value, list) and all(_is_text(v) for v in value)
    if type_name == _NODES:
        return isinstance(value, list)
    raise AssertionError(type_name)  # pragma: no cover


def _check_node(op: str, index: int, node: object) -> GraphNode:
    where = f"{op}: nodes[{index}]"
    if not isinstance(node, dict):
        raise BadRequest(f"{where} must be an object with a string 'key'")
    unknown = sorted(set(node) - {*_NODE_FIELDS, "blob"})
    if unknown:
        raise BadRequest(f"{where} has unknown field(s) {', '.join(unknown)}")
    if "key" not in node:
        raise BadRequest(f"{where} lacks the required field 'key'")
    for field, type_name in (*_NODE_FIELDS.items(), ("blob", _STR_OR_NULL)):
        if field in node and not _has_type(node[field], type_name):
            raise BadRequest(f"{where}.{field} {_not_of_type(type_name, node[field])}")
    return GraphNode(
        key=node["key"],
        kind=node.get("kind"),
        name=node.get("name"),
        path=node.get("path"),
        blob=node.get("blob"),
    )


def check_args(op: str, args: object) -> dict[str, JSON]:
    """The arguments of a request with defaults filled in, or BadRequest."""
    spec = OPS.get(op)
    if spec is None:
        raise BadRequest(f"unknown op {excerpt(op)}: expected one of {', '.join(sorted(OPS))}")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise BadRequest(f"{op}: 'args' must be an object, not {excerpt(args)}")
    known = {arg.name for arg in spec.args}
    unknown = sorted(set(args) - known)
    if unknown:
        allowed = ", ".join(sorted(known)) or "none"
        raise BadRequest(f"{op}: unknown argument(s) {', '.join(unknown)}; allowed: {allowed}")
    checked: dict[str, JSON] = {}
    for arg in spec.args:
        if arg.name not in args:
            if arg.required:
                raise BadRequest(f"{op}: missing required argument {arg.name!r} ({arg.type})")
            checked[arg.name] = arg.default
            continue
        value = args[arg.name]
        if not _has_type(value, arg.type):
            raise BadRequest(f"{op}: argument {arg.name!r} {_not_of_type(arg.type, value)}")
        if arg.name in _NON_NEGATIVE and value is not None and value < 0:
            raise BadRequest(f"{op}: argument {arg.name!r} must not be negative, got {value}")
        bounds = _RANGES.get(arg.name)
        if bounds is not None and value is not None and not bounds[0] <= value <= bounds[1]:
            low, high = bounds
            raise BadRequest(
                f"{op}: argument {arg.name!r} must fit 64 bits ({low} to {high}), got {value}"
            )
        if arg.name == "anchor":
            try:
                sem.check_anchor(value)
            except InvalidAnchor as error:
                raise BadRequest(f"{op}: argument 'anchor': {error}") from None
        checked[arg.name] = value
    if op == "graph.put_nodes":
        checked["nodes"] = [_check_node(op, i, n) for i, n in enumerate(checked["nodes"])]
    return checked


def _json(value: Any) -> JSON:
    return value.to_json() if hasattr(value, "to_json") else value


def _json_list(values: Iterable[Any]) -> JSON:
    return [value.to_json() for value in values]


class Ops:
    """PROTOCOL operations by name over one store."""

    def __init__(
        self,
        store: Store,
        implementation: str | None = None,
        *,
        server_capabilities: Iterable[str] = (),
        refuse_reset: str | None = None,
    ) -> None:
        self.store = store
        self.implementation = implementation or f"roteiro-memory ({store.name})"
        self.server_capabilities = tuple(server_capabilities)
        """Declared beside the store's own: ``shared`` and ``crash`` when the
        suite named the store (:mod:`roteiro_memory.stores.naming`)."""
        self.refuse_reset = refuse_reset
        """Why ``reset`` is refused (see :func:`reset_refusal`), or None."""
        self._handlers: Mapping[str, Callable[[dict[str, JSON]], JSON]] = {
            "hello": lambda a: self.hello(),
            "reset": lambda a: self._reset(),
            "shutdown": lambda a: None,
            "graph.put_nodes": lambda a: store.put_nodes(a["nodes"]),
            "graph.remove_nodes": lambda a: store.remove_nodes(a["keys"]),
            "graph.set_tree": lambda a: store.set_tree(a["tree"]),
            "graph.rebuild": lambda a: store.rebuild(),
            "graph.export": lambda a: {"nodes": _json_list(store.export_graph())},
            "memory.record": lambda a: {"id": store.record(**a)},
            "memory.get": lambda a: _json(store.get(a["id"])),
            "memory.list": lambda a: store.list(**a).to_json(),
            "memory.recall": lambda a: store.recall(**a).to_json(),
            "memory.search": lambda a: store.search(**a).to_json(),
            "memory.forget": lambda a: store.forget(a["id"]).to_json(),
            "cache.put": lambda a: store.cache_put(**a),
            "cache.get": lambda a: _json(store.cache_get(a["key"])),
            "cache.entries": lambda a: _json_list(store.cache_entries()),
            "cache.forget": lambda a: store.cache_forget(a["key"]),
            "cache.stats": lambda a: store.cache_stats(a["budget_bytes"]).to_json(),
            "cache.sweep": lambda a: store.cache_sweep(a["budget_bytes"]).to_json(),
            "cache.budget": lambda a: eviction.parse_cache_budget(a["env"]),
            "store.snapshot": lambda a: store.snapshot(),
            "store.reopen": lambda a: store.reopen(),
        }

    def _reset(self) -> None:
        if self.refuse_reset is not None:
            raise ResetRefused(self.refuse_reset)
        self.store.reset()

    def hello(self) -> JSON:
        from roteiro_memory.version import version

        return {
            "protocol": PROTOCOL,
            "implementation": {"name": self.implementation, "version": version()},
            "capabilities": [*self.store.capabilities, *self.server_capabilities],
        }

    def call(self, op: str, args: object = None) -> JSON:
        """Run one op; its JSON result, or a :class:`RoteiroError`."""
        checked = check_args(op, args)
        capability = OPS[op].capability
        if capability is not None and capability not in self.store.capabilities:
            raise Unsupported(f"{op}: this backend does not declare the {capability!r} capability")
        return self._handlers[op](checked)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _integer(literal: str) -> int | float:
    """A JSON integer literal's value; one of more digits than Python
    converts (``sys.get_int_max_str_digits``: the conversion is quadratic),
    beyond every range an argument has, as the infinity of its sign: a JSON
    number still, out of range as a confidence (``InvalidConfidence``) and no
    integer where one is wanted (``BadRequest``)."""
    most = sys.get_int_max_str_digits()
    return int(literal) if not most or len(literal.lstrip("-")) <= most else float(literal)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as the parser builds it, the last of a repeated name
    winning; a value it drops for a later one is still checked for a lone
    surrogate, which is not Unicode wherever in the request it appears."""
    built: dict[str, Any] = {}
    for name, value in pairs:
        if name in built and not _all_text(built[name]):
            raise ValueError(
                f"{name!r} is given twice, and its first value holds a lone surrogate, "
                "which is not Unicode"
            )
        built[name] = value
    return built


def _all_text(value: object) -> bool:
    """Whether every string in a parsed JSON value is valid Unicode (the
    names of its objects were checked as they were built)."""
    if isinstance(value, str):
        return _is_text(value)
    if isinstance(value, dict):
        return all(_is_text(name) and _all_text(item) for name, item in value.items())
    if isinstance(value, list):
        return all(_all_text(item) for item in value)
    return True


def _response(
    request_id: int | None, result: JSON = None, error: RoteiroError | None = None
) -> str:
    if error is None:
        body: dict[str, JSON] = {"id": request_id, "ok": True, "result": result}
    else:
        body = {"id": request_id, "ok": False, "error": {"kind": error.kind, "message": str(error)}}
    # A message may quote a name from the request (an object key may hold a
    # lone surrogate): strict_json shows it as the six characters of its escape.
    return strict_json(json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":")))


def handle_line(ops: Ops, line: bytes) -> tuple[str, bool]:
    """The response to one request line, and whether the session should end."""
    try:
        text = line.decode("utf-8")
        marked = byte_order_mark(text)
        if marked is not None:
            return _response(None, error=BadRequest(f"the request {marked}")), False
        request = json.loads(
            text,
            parse_constant=_reject_constant,
            parse_int=_integer,
            object_pairs_hook=_object,
        )
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        return _response(None, error=BadRequest(f"the request is not valid JSON: {error}")), False
    request_id = request.get("id") if isinstance(request, dict) else None
    if not is_integer(request_id):
        why = "must be a JSON object" if not isinstance(request, dict) else "needs an integer 'id'"
        return _response(None, error=BadRequest(f"the request {why}")), False
    op = request.get("op")
    if not _is_text(op):
        return _response(request_id, error=BadRequest("the request needs a string 'op'")), False
    unknown = sorted(set(request) - {"id", "op", "args"})
    if unknown:
        message = f"the request has unknown field(s) {', '.join(unknown)}"
        return _response(request_id, error=BadRequest(message)), False
    try:
        result = ops.call(op, request.get("args"))
    except RoteiroError as error:
        return _response(request_id, error=error), False
    except Exception as error:  # the last resort: every request is answered
        return _response(request_id, error=ops.store.failure(error)), False
    return _response(request_id, result), op == "shutdown"


def reset_refusal(store: Store, where: str) -> str | None:
    """Why a server must not reset ``store`` (at ``where``): it already holds
    records, cache entries or nodes that this session did not put there.
    None for an empty store, which the server may reset at will."""
    held = []
    try:
        if "episodic" in store.capabilities:
            listing = store.list(include_superseded=True, limit=1)  # the counts are whole-store
            if listing.live or listing.superseded:
                held.append(f"{listing.live + listing.superseded} record(s)")
        if "cache" in store.capabilities and store.cache_entries():
            held.append("cache entries")
        if "graph" in store.capabilities and store.export_graph():
            held.append("graph nodes")
    except Exception as error:  # any failure to read is reported, never raised
        # Rows it cannot read are data too; the requests will report them.
        failure = error if isinstance(error, RoteiroError) else store.failure(error)
        held.append(f"data it cannot read ({failure.kind})")
    if not held:
        return None
    return (
        f"reset refused: {where} held {', '.join(held)} when this server started, and reset "
        "would erase them; start the server with --allow-reset to let it"
    )


MAX_LINE_BYTES = 256 * 1024 * 1024
"""The longest request line read, its end counted: past any request an
argument's limits allow but a cache entry's payload short of a quarter of a
gibibyte, as ``import`` reads its lines.  A longer line is refused (id null)
once that much is read, the rest of it dropped, so an input that never ends
a line fills no memory past it."""


def serve(
    store: Store,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    *,
    server_capabilities: Iterable[str] = (),
    refuse_reset: str | None = None,
) -> int:
    """Answer requests on ``stdin`` until end of input or ``shutdown``; exit 0.

    ``server_capabilities`` are declared in ``hello`` beside the store's own;
    ``reset`` is refused with ``refuse_reset`` when it is given."""
    source = stdin if stdin is not None else _standard("input", sys.stdin).buffer
    sink = stdout if stdout is not None else _standard("output", sys.stdout)
    if stdout is None and isinstance(sink, io.TextIOWrapper):
        # The wire is UTF-8 whatever the locale says.
        sink.reconfigure(encoding="utf-8", errors="strict")
    ops = Ops(store, server_capabilities=server_capabilities, refuse_reset=refuse_reset)
    while line := bounded_line(source.readline, MAX_LINE_BYTES):
        if len(line) > MAX_LINE_BYTES:
            overlong = (
                f"the request is a line of over {MAX_LINE_BYTES:,} bytes, the most one may be; "
                "the rest of that line was dropped"
            )
            response, done = _response(None, error=BadRequest(overlong)), False
        else:
            response, done = handle_line(ops, line.rstrip(b"\r\n"))
        try:
            sink.write(response + "\n")
            sink.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise StreamClosed(
                f"cannot write a response to standard output ({error.strerror or error}); "
                "the protocol server answers there"
            ) from None
        if done:
            break
    return ExitCode.OK


def _standard(name: str, stream: TextIO | None) -> TextIO:
    """``sys.stdin`` or ``sys.stdout``, which is None when the file descriptor
    was closed before start (``<&-``, ``>&-``)."""
    if stream is None:
        raise StreamClosed(
            f"standard {name} is closed: the protocol server reads requests from standard "
            "input and answers on standard output; run it with both open"
        )
    return stream
