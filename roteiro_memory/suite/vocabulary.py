"""The protocol's vocabulary as the suite knows it: capabilities, ops and the
capability each needs, error kinds.

The suite judges any implementation, so it keeps its own copy of what
PROTOCOL names rather than importing the library's; ``tests/test_vocabulary.py``
checks that this copy, the library's (:data:`roteiro_memory.store.CAPABILITIES`,
:data:`roteiro_memory.protocol.OPS`, :data:`roteiro_memory.errors.ERROR_KINDS`)
and the case schemas agree.

This module does not import pytest.
"""

from __future__ import annotations

__all__ = [
    "CAPABILITIES",
    "CORE",
    "ERROR_KINDS",
    "OP_CAPABILITY",
    "PURE_OPS",
    "READS",
    "SESSION_END",
    "STORE_ENV",
]

CAPABILITIES: tuple[str, ...] = (
    "episodic",
    "cache",
    "graph",
    "snapshot",
    "budget",
    "durable",
    "search",
    "shared",
    "crash",
)
"""Every capability PROTOCOL names.  ``shared`` and ``crash`` have no ops of
their own: the suite checks them by starting several instances of a ``cmd:``
backend on one store, and by killing one (:mod:`.durability`)."""

CORE = "core"
"""The pseudo-capability of invariants every backend must keep (the session ops)."""

OP_CAPABILITY: dict[str, str | None] = {
    "hello": None,
    "reset": None,
    "graph.put_nodes": "graph",
    "graph.remove_nodes": "graph",
    "graph.set_tree": "graph",
    "graph.rebuild": "graph",
    "graph.export": "graph",
    "memory.record": "episodic",
    "memory.get": "episodic",
    "memory.list": "episodic",
    "memory.recall": "episodic",
    "memory.search": "search",
    "memory.forget": "episodic",
    "cache.put": "cache",
    "cache.get": "cache",
    "cache.entries": "cache",
    "cache.forget": "cache",
    "cache.stats": "cache",
    "cache.sweep": "cache",
    "cache.budget": "budget",
    "store.snapshot": "snapshot",
    "store.reopen": "durable",
}
"""The ops a case may use (all of PROTOCOL but :data:`SESSION_END`) and the
capability each needs."""

READS = frozenset(
    {
        "memory.get",
        "memory.list",
        "memory.recall",
        "memory.search",
        "cache.entries",
        "cache.stats",
        "graph.export",
    }
)
"""The reads PROTOCOL [P-reads-pure] says change nothing (``store.snapshot``
aside; ``cache.get`` writes its own bookkeeping)."""

PURE_OPS = READS | {"hello", "cache.budget", "store.snapshot"}
"""The ops that change nothing: the reads, ``store.snapshot``, and ``hello`` and
``cache.budget``, which touch no store.  A case goes on past one that answered
wrongly, as the store is still as its later steps assume."""

STORE_ENV = "ROTEIRO_CONFORMANCE_STORE"
"""The variable naming the store of a ``cmd:`` instance the suite starts for a
durability entry (PROTOCOL [P-store-env]); the library's
:mod:`roteiro_memory.stores.naming` reads it on the other side."""

SESSION_END = "shutdown"
"""The op that ends a session: the drivers send it, a case never does."""

ERROR_KINDS: tuple[str, ...] = (
    "InvalidKind",
    "InvalidScope",
    "InvalidBody",
    "InvalidConfidence",
    "InvalidDecay",
    "InvalidBudget",
    "NotFound",
    "AlreadySuperseded",
    "Corrupt",
    "Unsupported",
    "BadRequest",
    "Unavailable",
)
"""Every error kind PROTOCOL names, in its order: what a step's ``error`` may expect."""
