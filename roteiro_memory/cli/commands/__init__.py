"""The commands of ``roteiro-memory``, one module each.

A command's module holds everything about it: ``SUMMARY`` (one line, for the
help index), ``EXAMPLE`` (its ``--help`` epilog), ``configure(parser)`` (its
options) and ``run(args, session) -> int`` (what it does: it turns its
arguments into a use case's call, :mod:`roteiro_memory.app`, and renders the
answer).  ``SYNCS = False`` marks a command that refuses a global
``--no-sync`` (it would contradict it, or there is nothing to sync).
``NEVER_FAILS = True`` marks one that exits 0 whatever happens (``hook``),
whose ``refused(line)`` tells its host of a failure; ``BUSY_WAIT_MS``, how
long a command waits for another process's lock on the store, when that is
not the command line's minute (:class:`~roteiro_memory.app.session.Session`),
and ``CONNECT_WAIT_S``, how long it waits to connect to a PostgreSQL store.
``STDOUT_IS_WIRE = True`` marks one whose stdout carries a protocol's
messages only (``mcp``, ``protocol``): its failures are said on stderr, whatever ``--json``
says.

The registry is this folder: a command is named by its module (``import_``
for ``import``, a Python keyword), so adding one is adding a module, and the
help index, completion and the docs' command table are derived from them.
Only the invoked command's module is imported.
"""

from __future__ import annotations

import importlib
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Protocol

    from roteiro_memory.app.session import Session

    class Command(Protocol):
        """What a command's module provides."""

        SUMMARY: str
        EXAMPLE: str

        def configure(self, parser: argparse.ArgumentParser) -> None: ...
        def run(self, args: argparse.Namespace, session: Session) -> int: ...


__all__ = ["load", "names", "syncs"]

_KEYWORDS = frozenset({"import"})
"""Command names that are Python keywords: their modules end in ``_``."""


def names() -> tuple[str, ...]:
    """Every command, in the order the help index lists them."""
    found = []
    for entry in os.listdir(os.path.dirname(__file__)):
        stem, dot, suffix = entry.partition(".")
        if suffix == "py" and dot and not stem.startswith("_"):
            found.append(stem.removesuffix("_") if stem.removesuffix("_") in _KEYWORDS else stem)
    return tuple(sorted(found))


def load(name: str) -> Command:
    """The module of command ``name`` (one of :func:`names`)."""
    module = name + "_" if name in _KEYWORDS else name
    loaded: Command = importlib.import_module(f"{__name__}.{module}")
    return loaded


def syncs(command: Command) -> bool:
    """Whether a global ``--no-sync`` applies to ``command``."""
    return bool(getattr(command, "SYNCS", True))
