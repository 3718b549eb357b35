"""``roteiro-memory mcp``: serve this memory to a coding agent over MCP (stdio),
with the tools of :mod:`roteiro_memory.agents.tools`."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "serve this memory to a coding agent over MCP (stdio)"
EXAMPLE = "claude mcp add roteiro-memory -- roteiro-memory mcp"

MISSING_SDK = "roteiro-memory mcp needs the MCP SDK: pip install 'roteiro-memory[mcp]'"


def configure(parser: argparse.ArgumentParser) -> None:
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    """Serve MCP on stdin/stdout until the client closes it."""
    try:
        from roteiro_memory.agents.server import serve
    except ImportError as error:
        if error.name is None or not error.name.startswith("mcp"):
            raise
        from roteiro_memory.errors import Unsupported

        raise Unsupported(MISSING_SDK) from None
    return serve(session)
