"""roteiro-memory: durable agent memory, anchored to code and ranked by evidence.

Two tiers with opposite rules (ADR-0013): an episodic tier that is never
silently evicted, and a cache tier bounded by a byte budget.  Anchors are
resolved on every read; drift demotes and never deletes; supersession is an
explicit pointer; recall ranks at read time and reads never write.

    >>> from roteiro_memory import open_store
    >>> store = open_store("memory")
    >>> store.record("lesson", "CI runs on Ubuntu only")
    1
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up

DISTRIBUTION = "roteiro-memory"
"""The name this package is installed under, whose metadata holds the version."""

if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.errors import (
        AlreadySuperseded,
        BadRequest,
        Corrupt,
        InvalidBody,
        InvalidBudget,
        InvalidConfidence,
        InvalidDecay,
        InvalidKind,
        InvalidScope,
        NotFound,
        RoteiroError,
        StoreUnavailable,
        Unsupported,
    )
    from roteiro_memory.results import (
        CacheEntry,
        CacheStats,
        CacheSweep,
        GraphNode,
        MemoryAnchor,
        MemoryForgotten,
        MemoryListing,
        MemoryRecord,
        Recall,
        Recalled,
    )
    from roteiro_memory.semantics import AnchorState, Decay, MemoryKind, parse_cache_budget
    from roteiro_memory.store import MemoryWrite, Store
    from roteiro_memory.stores.model import ModelStore
    from roteiro_memory.stores.naming import open_store
    from roteiro_memory.stores.sqlite.store import SQLiteStore

# Where each public name lives.  Imported on first use, so the command line
# starts without loading what a command does not need.
_EXPORTS = {
    "open_store": "roteiro_memory.stores.naming",
    **dict.fromkeys(
        [
            "AlreadySuperseded",
            "BadRequest",
            "Corrupt",
            "InvalidBody",
            "InvalidBudget",
            "InvalidConfidence",
            "InvalidDecay",
            "InvalidKind",
            "InvalidScope",
            "NotFound",
            "RoteiroError",
            "StoreUnavailable",
            "Unsupported",
        ],
        "roteiro_memory.errors",
    ),
    "ModelStore": "roteiro_memory.stores.model",
    **dict.fromkeys(
        [
            "CacheEntry",
            "CacheStats",
            "CacheSweep",
            "GraphNode",
            "MemoryAnchor",
            "MemoryForgotten",
            "MemoryListing",
            "MemoryRecord",
            "Recall",
            "Recalled",
        ],
        "roteiro_memory.results",
    ),
    **dict.fromkeys(
        ["AnchorState", "Decay", "MemoryKind", "parse_cache_budget"], "roteiro_memory.semantics"
    ),
    "SQLiteStore": "roteiro_memory.stores.sqlite.store",
    "MemoryWrite": "roteiro_memory.store",
    "Store": "roteiro_memory.store",
}


_VERSION: list[str] = []  # the version once read (no functools.cache at start-up)


def _version() -> str:
    """The installed version, from the package metadata (``pyproject.toml`` is
    its one source); read on first use, so start-up does not pay for it."""
    if not _VERSION:
        from importlib.metadata import PackageNotFoundError, version

        try:
            _VERSION.append(version(DISTRIBUTION))
        except PackageNotFoundError:  # a source checkout that was never installed
            _VERSION.append("0+unknown")
    return _VERSION[0]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        return _version()
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'roteiro_memory' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


__all__ = [
    "AlreadySuperseded",
    "AnchorState",
    "BadRequest",
    "CacheEntry",
    "CacheStats",
    "CacheSweep",
    "Corrupt",
    "Decay",
    "GraphNode",
    "InvalidBody",
    "InvalidBudget",
    "InvalidConfidence",
    "InvalidDecay",
    "InvalidKind",
    "InvalidScope",
    "MemoryAnchor",
    "MemoryForgotten",
    "MemoryKind",
    "MemoryListing",
    "MemoryRecord",
    "MemoryWrite",
    "ModelStore",
    "NotFound",
    "Recall",
    "Recalled",
    "RoteiroError",
    "SQLiteStore",
    "Store",
    "StoreUnavailable",
    "Unsupported",
    "__version__",
    "open_store",
    "parse_cache_budget",
]
