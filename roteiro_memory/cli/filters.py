"""The graph's key prefixes, as anchors are written from ``--anchor``."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    pass

__all__ = ["FILE_PREFIX", "PY_PREFIX"]

FILE_PREFIX = "file:"
PY_PREFIX = "py:"
"""The graph's key prefixes (kept here rather than imported from
:mod:`roteiro_memory.repo.graph`, so a command that never syncs does not load
git machinery; a test keeps them in step)."""
