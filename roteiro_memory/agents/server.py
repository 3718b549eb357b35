"""``roteiro-memory mcp``: the tools of :mod:`roteiro_memory.agents.tools`
served over stdio with the official MCP SDK's low-level server.

The only module that imports the SDK, so the rest of the CLI starts without
it.  The low-level server is used because the tools already carry their own
input schemas, sent as they are.  A result's text is the compact lines an
agent reads (:mod:`.answers`); its structured content is the PROTOCOL shape,
whose schema (:mod:`.schemas`) is left out of ``tools/list`` to keep it
small -- the tests check every result against it.  The stdio transport is
our own line handling (:mod:`.wire`), so every line gets an answer.

What holds:

* A tool's failure is a result with ``isError`` set, naming the error kind
  and what to do -- never a protocol error, never a crashed server.
* A request's answer, where the SDK's would leak its own conventions:
  a method the server does not serve is ``-32601`` whatever its params;
  a request other than ``ping`` before ``initialize`` is ``-32600`` saying
  initialize must come first (MCP names no code for it; the SDK answered
  ``-32602``, naming nothing); params that do not fit the method are
  ``-32602`` naming the member and what it should be.
* ``initialize`` is taken once: another is ``-32600``, and the revision the
  first negotiated holds for the session (one refused may be sent again).
* Only a first request carrying the whole per-request envelope of a revision
  the SDK serves without a handshake (2026-07-28) opens that era, as the SDK
  has it; a partial or foreign envelope is no envelope, and cannot fix the
  connection in an era whose requests it does not make.
* A notification (or a response) is never answered: one whose params the
  SDK refuses is dropped, and stderr says so.  Every line on stderr names
  the server, the SDK's log records too (:class:`_Said`): one line each.
* Each MCP client starts its own server process; they share the store, whose
  transactions keep concurrent writes whole and ids unique.
* Tool calls run one at a time, in the order read, to completion, off the
  event loop, on the thread that opened the store (:mod:`.calls`): the
  store's connection is used by that thread only, and the loop goes on
  reading meanwhile -- ``ping`` is answered at once, and a call the client
  cancels is not answered (one not yet started never runs).
* At the end of the input the calls already read are answered before the
  server exits; Ctrl-C ends it without waiting for the loop.
* Every line written is UTF-8 JSON a strict parser reads: a lone surrogate
  quoted back from a request shows as the six characters of its escape.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import typing
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from roteiro_memory.agents.calls import Calls
from roteiro_memory.agents.lines import (
    INVALID_REQUEST,
    Forward,
    error_line,
    json_line,
    request_id,
)
from roteiro_memory.agents.tools import TOOLS, Tool, ToolError, UnknownTool, call, spell
from roteiro_memory.agents.wire import Wire
from roteiro_memory.errors import excerpt
from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.terminal import to_stderr
from roteiro_memory.version import version

if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

__all__ = ["INSTRUCTIONS", "build", "serve"]

INSTRUCTIONS = (
    "Durable memory for this repository, kept across sessions and shared by every agent "
    "working in this clone. Before changing unfamiliar code, `search` (or `touched` for the "
    "current change) for lessons and failed attempts about it. When you learn something "
    "non-obvious, an approach fails, or a decision is made, `remember` it, anchored to the "
    "file or function it is about. Records whose anchor_state is `drifted` or `vanished` "
    "describe code that has since changed: verify before relying on them, and supersede them "
    "when they no longer hold."
)


def _tool(spec: Tool) -> types.Tool:
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def build(session: Session, calls: Calls) -> Server[Any]:
    """The server, its tools running in ``session``, each handed to ``calls``
    (whose thread owns the session) and awaited."""
    listed = types.ListToolsResult(tools=[_tool(spec) for spec in TOOLS])

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            answer = await calls.run(partial(call, session, params.name, params.arguments))
        except UnknownTool as error:
            raise MCPError(types.INVALID_PARAMS, error.message) from None
        except ToolError as error:
            return _result(error.to_json(), error.text(), is_error=True)
        except Exception as error:  # a bug must not take the agent's server down
            failed = ToolError("Internal", f"{type(error).__name__}: {excerpt(str(error))}")
            return _result(failed.to_json(), failed.text(), is_error=True)
        return _result(answer.structured, answer.text, is_error=False)

    return Server(
        "roteiro-memory",
        version=version(),
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _result(structured: Any, text: str, *, is_error: bool) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=is_error,
    )


def _encode(message: Any) -> bytes:
    """One outgoing message as its line.  The SDK cannot write a text
    holding a lone surrogate (an id, a method or a value quoted back from a
    request), so that message is written as :func:`~.lines.json_line`
    writes one: strict UTF-8 JSON, the surrogate shown as its escape's six
    characters."""
    try:
        text: str = message.model_dump_json(by_alias=True, exclude_unset=True)
        return (text + "\n").encode("utf-8")
    except (ValueError, UnicodeError):
        return json_line(message.model_dump(mode="json", by_alias=True, exclude_unset=True))


def _refusal(forward: Forward, error: ValidationError) -> str:
    """What the SDK's validator found wrong, for the member of the message
    union the line has the shape of (a request, a notification, a response)."""
    member = "JSONRPCRequest" if forward.id is not None else "JSONRPCNotification"
    if "method" not in forward.message:
        member = "JSONRPCError" if "error" in forward.message else "JSONRPCResponse"
    found = [e for e in error.errors() if e["loc"][:1] == (member,)] or error.errors()
    return "; ".join(
        f"{'.'.join(str(part) for part in e['loc'][1:]) or 'message'}: {e['msg']}"
        for e in found[:3]
    )


INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601

_CHECKED = (
    types.InitializeRequest,
    types.PingRequest,
    types.ListToolsRequest,
    types.CallToolRequest,
)
"""The requests this server answers, whose params are checked here first:
the SDK refuses bad ones as "Invalid request parameters", naming nothing."""

_CHECKED_BY_METHOD = {
    method: model
    for model in _CHECKED
    for method in typing.get_args(model.model_fields["method"].annotation)
}

_BEFORE_INITIALIZE = frozenset({"initialize", "ping"})
"""What is answered before ``initialize``: MCP lets a client ping first."""


def _meta(message: dict[str, Any]) -> dict[str, Any] | None:
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta if isinstance(meta, dict) else None


def _enveloped(message: dict[str, Any]) -> bool:
    """Whether a request carries the whole per-request envelope of the
    handshake-free era, naming a revision the SDK serves without
    ``initialize`` (2026-07-28): the SDK then answers it as that era has it.
    The SDK takes the version key alone for the envelope, and its first
    request fixes the connection's era for good, so a request with a
    partial envelope, or one naming another revision, is no such request:
    it is served as a handshake-era client's."""
    meta = _meta(message)
    if meta is None or message.get("method") == "initialize":
        return False
    return meta.get(types.PROTOCOL_VERSION_META_KEY) in MODERN_PROTOCOL_VERSIONS and isinstance(
        meta.get(types.CLIENT_CAPABILITIES_META_KEY), dict
    )


def _unenveloped(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` without the envelope's version key, which would open the
    SDK's handshake-free era whatever its value (see :func:`_enveloped`)."""
    meta = _meta(message)
    if meta is None or types.PROTOCOL_VERSION_META_KEY not in meta:
        return message
    kept = {key: value for key, value in meta.items() if key != types.PROTOCOL_VERSION_META_KEY}
    return {**message, "params": {**message["params"], "_meta": kept}}


@dataclass
class _Handshake:
    """Where the session stands with ``initialize``."""

    sent: bool = False
    """An ``initialize`` was handed on and not refused: no other is taken."""
    era: str | None = None
    """The era the SDK's first request opened ("handshake" or "enveloped"),
    None before it: the SDK fixes it once."""


def _request_refused(
    message: dict[str, Any], handshake: _Handshake, revision: str | None
) -> tuple[int, str] | None:
    """Why a request is refused before the SDK sees it (code, message), or
    None: JSON-RPC's order -- the method, then the params."""
    method = message["method"]
    if method not in _CHECKED_BY_METHOD:
        served = ", ".join(_CHECKED_BY_METHOD)
        return (
            METHOD_NOT_FOUND,
            f"Method not found: {excerpt(method)}; this server answers {served}",
        )
    if handshake.era == "enveloped":
        pass  # no handshake in that era: the SDK answers as it has it
    elif method == "initialize" and handshake.sent:
        agreed = f"MCP revision {revision}" if revision else "its MCP revision being negotiated"
        return (
            INVALID_REQUEST,
            f"Invalid Request: the session is already initialized ({agreed}); "
            "initialize is sent once, and the revision it negotiates holds for the session",
        )
    elif not handshake.sent and method not in _BEFORE_INITIALIZE and not _enveloped(message):
        return (
            INVALID_REQUEST,
            f"Invalid Request: {method} before initialize; initialize must come first "
            "(before it, only initialize and ping are answered)",
        )
    if isinstance(message.get("params"), list):
        return (
            INVALID_PARAMS,
            f"Invalid params: params is an array; {method} takes an object of named members",
        )
    return None


def _params_refused(message: dict[str, Any]) -> str | None:
    """What is wrong with the params of a request this server answers
    (``params.name: Input should be a valid string``), or None."""
    model = _CHECKED_BY_METHOD.get(message.get("method"))
    if model is None:
        return None
    shape = {name: message[name] for name in ("method", "params") if name in message}
    try:
        model.model_validate(shape, by_name=False)
    except ValidationError as error:
        return "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or 'message'}: {e['msg']}"
            for e in error.errors()[:3]
        )
    return None


def _admitted(
    forward: Forward, handshake: _Handshake, revision: str | None
) -> types.JSONRPCRequest | tuple[int, str]:
    """A request as the SDK reads it, or why it is refused (code, message).
    A line :func:`~.lines.classify` took for a request that the SDK reads
    as something else is refused, not handed on: the SDK would answer it
    with nothing, and the wire would wait for that answer for ever."""
    refused = _request_refused(forward.message, handshake, revision)
    if refused is not None:
        return refused
    try:
        message = types.jsonrpc_message_adapter.validate_python(forward.message, by_name=False)
    except ValidationError as error:
        return INVALID_REQUEST, f"Invalid Request: {_refusal(forward, error)}"
    if not isinstance(message, types.JSONRPCRequest):
        return INVALID_REQUEST, "Invalid Request: not a request as MCP reads it"
    wrong = _params_refused(forward.message)
    if wrong is not None:
        return INVALID_PARAMS, f"Invalid params: {wrong}"
    return message


def _answered(message: Any) -> str | int | None:
    """The id of the request an outgoing message answers (None for a
    notification or a request of the server's own)."""
    if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
        usable, request = request_id(message.id)
        return request if usable else None
    return None


async def _serve(server: Server[Any], wire: Wire) -> None:
    """Serve ``wire`` until the client's input ends and every request read
    is answered, or until the client goes away."""
    inbox, sdk_in = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
    sdk_out, outbox = anyio.create_memory_object_stream[SessionMessage](0)

    handshake = _Handshake()
    initializing: set[str | int] = set()

    async def deliver(forward: Forward) -> None:
        if forward.id is None:  # a notification or a response: never answered
            try:
                other = types.jsonrpc_message_adapter.validate_python(
                    forward.message, by_name=False
                )
            except ValidationError as error:
                what = excerpt(str(forward.message.get("method", "a response")))
                to_stderr(f"roteiro-memory: mcp: dropped {what}: {_refusal(forward, error)}\n")
                return
            await inbox.send(SessionMessage(other))
            return
        if handshake.era != "enveloped" and not _enveloped(forward.message):
            forward = Forward(_unenveloped(forward.message), forward.id)
        message = _admitted(forward, handshake, wire.revision)
        if isinstance(message, tuple):
            wire.write(error_line(*message, forward.id), answers=forward.id)
            return
        request: str | int = message.id
        if handshake.era is None:
            handshake.era = "enveloped" if _enveloped(forward.message) else "handshake"
        if message.method == "initialize" and handshake.era == "handshake":
            handshake.sent = True
            initializing.add(request)

        async def unanswered() -> None:
            wire.settle(request)

        wire.owe(request)  # the SDK answers it, or settles it unanswered
        await inbox.send(
            SessionMessage(message, ServerMessageMetadata(on_request_unanswered=unanswered))
        )

    async def answer() -> None:
        async with outbox:
            async for item in outbox:
                sent = item.message
                if isinstance(sent, types.JSONRPCResponse | types.JSONRPCError):
                    if sent.id in initializing:
                        if isinstance(sent, types.JSONRPCResponse):
                            wire.revision = str(sent.result.get("protocolVersion"))
                        else:  # refused: nothing was negotiated, and it may be sent again
                            handshake.sent = False
                    initializing.discard(sent.id)
                wire.write(_encode(sent), answers=_answered(sent))
                if wire.gone:
                    group.cancel_scope.cancel()

    async with anyio.create_task_group() as group:
        group.start_soon(server.run, sdk_in, sdk_out, server.create_initialization_options())
        group.start_soon(answer)
        await wire.pump(deliver)
        await inbox.aclose()  # the client's input ended, and what it asked is answered
        if wire.gone:
            group.cancel_scope.cancel()


class _Said(logging.Handler):
    """The SDK's log records, said as the server's own lines are: one line
    each, named ``roteiro-memory: mcp:``, an exception as its type and words
    (Python's last resort would print a bare record, and a traceback)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            said = record.getMessage()
        except (TypeError, ValueError):  # arguments that do not fit the format
            said = str(record.msg)
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            said = f"{said} ({type(error).__name__}: {error})"
        said = " ".join(said.split())
        to_stderr(f"roteiro-memory: mcp: {said[:300]}{'...' if len(said) > 300 else ''}\n")


def _say_sdk_records() -> None:
    """Have the SDK's warnings and errors said by :class:`_Said` (once)."""
    logger = logging.getLogger("mcp")
    if not any(isinstance(handler, _Said) for handler in logger.handlers):
        logger.addHandler(_Said(logging.WARNING))


def serve(session: Session) -> int:
    """Serve until the client closes stdin (every request read answered) or
    goes away; the exit status."""
    # Refusals name a tool's arguments, not the command line's options.
    session.spell = spell
    _say_sdk_records()
    # Open a store file before anything else, so a relative --db or
    # ROTEIRO_MEMORY_DB means what it meant where the server was started
    # (a database server is connected to by the first call that finds it up) ...
    if session.dsn() is None:
        session.store()
    # ... and then work from the repository root, whichever folder the client
    # started the server in (anchors are read from it on every surface).
    if session.repo is not None:
        os.chdir(session.repo.root)
    calls = Calls()
    server = build(session, calls)
    wire = Wire()
    failed: list[BaseException] = []

    def loop() -> None:
        try:
            anyio.run(_serve, server, wire)
        except BaseException as error:  # said on the main thread
            failed.append(error)
        finally:
            calls.close()

    # The event loop runs beside; this thread, which opened the store, runs
    # the calls (and alone gets Ctrl-C).
    reader = threading.Thread(target=loop, name="roteiro-memory mcp", daemon=True)
    try:
        reader.start()
        calls.serve()
        reader.join()
    except KeyboardInterrupt:
        wire.gone = True  # the loop may still be running: it writes nothing more
        to_stderr("roteiro-memory: mcp: interrupted\n")
        return ExitCode.INTERRUPTED
    finally:
        wire.close()
    if failed:
        raise failed[0]
    return ExitCode.OK
