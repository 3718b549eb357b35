"""Where coding agents meet the memory: the MCP server and the session digest.

``server`` is the only module that imports the MCP SDK; ``tools`` describes
the tools and runs them without it, ``pack`` selects and renders the digest
without any I/O, and ``options``/``commands`` wire both into the CLI.
"""

from __future__ import annotations

__all__ = ["DEFAULT_PACK_BUDGET", "MIN_BUDGET"]

# The digest's budget bounds, here rather than in ``pack`` so the command
# line declares ``pack --budget`` without importing the digest at start-up.

DEFAULT_PACK_BUDGET = 2000
"""Tokens the session digest may take unless told otherwise: enough for a few
dozen short records, small next to any agent's context window."""

MIN_BUDGET = 100
"""The smallest budget accepted.  The title, summary and footer fit in it
unless a very long ``--touched`` revision name makes them longer, which
:func:`~roteiro_memory.agents.pack.select` refuses by name rather than overflow."""
