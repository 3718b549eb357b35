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

__version__ = "0.1.0"

from roteiro_memory.backends import open_store
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
from roteiro_memory.model import ModelStore
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
from roteiro_memory.sqlite import SQLiteStore
from roteiro_memory.store import MemoryWrite, Store

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
