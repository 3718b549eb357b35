"""``roteiro-memory mcp``: the tools of :mod:`roteiro_memory.agents.tools`
served over stdio with the official MCP SDK's low-level server.

The only module that imports the SDK, so the rest of the CLI starts without
it.  The low-level server is used because the tools already carry their own
input and output schemas (the PROTOCOL shapes); the SDK sends them as they
are, and its client validates every structured result against them.

What holds:

* A tool's failure is a result with ``isError`` set, naming the error kind
  and what to do -- never a protocol error, never a crashed server.
* Each MCP client starts its own server process; they share the store, whose
  transactions keep concurrent writes whole and ids unique.
* Calls run one at a time, to completion, on the event loop's thread: the
  store connection is used by that thread only.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from roteiro_memory.agents.tools import TOOLS, Tool, ToolError, call, spell
from roteiro_memory.errors import excerpt
from roteiro_memory.exitcodes import ExitCode
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
        output_schema=spec.output_schema,
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=spec.destructive,
            idempotent_hint=spec.idempotent,
            open_world_hint=False,
        ),
    )


def build(session: Session) -> Server[Any]:
    """The server, its tools running in ``session``."""
    listed = types.ListToolsResult(tools=[_tool(spec) for spec in TOOLS])

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return listed

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            result = call(session, params.name, params.arguments)
        except ToolError as error:
            return _result(error.to_json(), error.text(), is_error=True)
        except Exception as error:  # a bug must not take the agent's server down
            failed = ToolError("Internal", f"{type(error).__name__}: {excerpt(str(error))}")
            return _result(failed.to_json(), failed.text(), is_error=True)
        return _result(result, json.dumps(result, ensure_ascii=False), is_error=False)

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


def serve(session: Session) -> int:
    """Serve until the client closes stdin; the exit status."""
    # Refusals name a tool's arguments, not the command line's options.
    session.spell = spell
    # Open the store before anything else, so a relative --db or
    # ROTEIRO_MEMORY_DB means what it meant where the server was started ...
    session.store()
    # ... and then work from the repository root, so anchors are paths from it,
    # whichever folder the client started the server in.
    if session.repo is not None:
        os.chdir(session.repo.root)
    server = build(session)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        sys.stderr.write("roteiro-memory: mcp: interrupted\n")
        return ExitCode.INTERRUPTED
    return ExitCode.OK
