"""Refusing to erase a store the suite did not fill.

Every case and every property example starts with ``reset``, which empties
the store.  Pointed at a store that holds real data -- a team's PostgreSQL
schema, a ``--db`` file -- the suite would erase it, so before its first reset
it asks what the store holds, through reads only: ``memory.list`` with
``include_superseded`` (``episodic``), ``cache.entries`` (``cache``) and
``graph.export`` (``graph``), as far as the backend declares them.  Anything
there was not put there by this run, and the run is refused unless the user
says the store may be erased (``--roteiro-allow-reset``).

A read the backend refuses (an :class:`OpError`) tells nothing and is passed
over: the cases will show what is wrong with it.  A backend that cannot answer
at all (:class:`BackendFailure`) is left to the caller.

This module does not import pytest.
"""

from __future__ import annotations

from typing import Any

from roteiro_memory.suite.errors import OpError
from roteiro_memory.suite.runner import Backend

__all__ = ["ALLOW_RESET_HINT", "held_data", "refusal"]

ALLOW_RESET_HINT = (
    "point the suite at an empty store (the default backends make their own), "
    "or pass --roteiro-allow-reset (ini: roteiro_allow_reset = true) to let it erase the store"
)


def _count(value: Any, key: str | None = None) -> int:
    if key is not None:
        value = value.get(key) if isinstance(value, dict) else None
    return len(value) if isinstance(value, list) else 0


def held_data(backend: Backend) -> list[str]:
    """What ``backend``'s store holds, as phrases (``3 record(s)``); empty
    when it holds nothing the reads can see."""
    declared = backend.capabilities()
    found: list[str] = []
    probes: tuple[tuple[str, str, dict[str, Any], str | None, str], ...] = (
        ("episodic", "memory.list", {"include_superseded": True}, "records", "record(s)"),
        ("cache", "cache.entries", {}, None, "cache entr(y/ies)"),
        ("graph", "graph.export", {}, "nodes", "graph node(s)"),
    )
    for capability, op, args, key, what in probes:
        if capability not in declared:
            continue
        try:
            result = backend.call(op, args)
        except OpError:
            continue
        count = _count(result, key)
        if count:
            found.append(f"{count} {what}")
    return found


def refusal(backend: Backend) -> str | None:
    """Why the suite must not reset ``backend``, or None when its store is empty."""
    found = held_data(backend)
    if not found:
        return None
    return (
        f"backend {backend.name!r}: its store already holds {', '.join(found)}, which this "
        "run did not create, and every case starts with reset, which would erase them; "
        + ALLOW_RESET_HINT
    )
