"""The command-line options of ``roteiro-memory mcp`` and ``pack``.

Imported by the CLI at start-up, so it imports argparse only; the options
every command shares come from :mod:`roteiro_memory.cli` when a parser is
built, by which time that module is fully loaded.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["AGENT_COMMANDS", "DEFAULT_PACK_BUDGET"]

DEFAULT_PACK_BUDGET = 2000
"""Tokens the session digest may take unless told otherwise: enough for a few
dozen short records, small next to any agent's context window."""


def _add_mcp(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="the store file (default: $ROTEIRO_MEMORY_DB, else roteiro/memory.db in the "
        "repository's git common directory)",
    )
    parser.add_argument(
        "--no-sync",
        action="store_true",
        help="resolve anchors against the graph as last synced, without syncing first",
    )


def _add_pack(parser: argparse.ArgumentParser) -> None:
    from roteiro_memory.cli import _common  # the shared --db/--json/--no-sync

    parser.add_argument(
        "--budget",
        metavar="TOKENS",
        default=str(DEFAULT_PACK_BUDGET),
        help=f"at most this many tokens, counted as ceil(UTF-8 bytes / 4) of the Markdown "
        f"(default {DEFAULT_PACK_BUDGET}, at least 100)",
    )
    parser.add_argument(
        "--touched",
        nargs="?",
        const="HEAD",
        metavar="REV",
        help="only records anchored to files or symbols that differ between REV "
        "(default HEAD) and the working tree",
    )
    _common(parser, syncs=True)


AGENT_COMMANDS: tuple[tuple[str, str, str, Callable[[argparse.ArgumentParser], None]], ...] = (
    (
        "mcp",
        "serve this memory to a coding agent over MCP (stdio)",
        "claude mcp add roteiro-memory -- roteiro-memory mcp",
        _add_mcp,
    ),
    (
        "pack",
        "print a digest of what applies here, for the start of an agent session",
        "roteiro-memory pack --budget 1500\n  roteiro-memory pack --touched --json",
        _add_pack,
    ),
)
"""The agent commands, in the CLI's ``(name, summary, example, configure)`` form."""
