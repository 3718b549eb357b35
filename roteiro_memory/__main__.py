"""``python -m roteiro_memory`` is the ``roteiro-memory`` command."""

from __future__ import annotations

from roteiro_memory.cli import console

console()
