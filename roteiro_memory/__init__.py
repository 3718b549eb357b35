"""roteiro-memory: durable agent memory, anchored to code and ranked by evidence.

Two tiers with opposite rules (ADR-0013): an episodic tier that is never
silently evicted, and a cache tier bounded by a byte budget.  Anchors are
resolved on every read; drift demotes and never deletes; supersession is an
explicit pointer; recall ranks at read time and reads never write.

    >>> from roteiro_memory import open_store
    >>> store = open_store("memory")
    >>> store.record("lesson", "CI runs on Ubuntu only")
    1

The public names are listed once, as the re-exports (``import X as X``) of
the ``TYPE_CHECKING`` block below: type checkers read them as written, and at
run time :func:`__getattr__` reads the same block and imports each name on
first use, so the command line starts without loading what it does not need.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing at start-up

if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.errors import AlreadySuperseded as AlreadySuperseded
    from roteiro_memory.errors import BadRequest as BadRequest
    from roteiro_memory.errors import Corrupt as Corrupt
    from roteiro_memory.errors import ImportRefused as ImportRefused
    from roteiro_memory.errors import InvalidAnchor as InvalidAnchor
    from roteiro_memory.errors import InvalidBody as InvalidBody
    from roteiro_memory.errors import InvalidBudget as InvalidBudget
    from roteiro_memory.errors import InvalidConfidence as InvalidConfidence
    from roteiro_memory.errors import InvalidDecay as InvalidDecay
    from roteiro_memory.errors import InvalidKind as InvalidKind
    from roteiro_memory.errors import InvalidScope as InvalidScope
    from roteiro_memory.errors import InvalidStoreName as InvalidStoreName
    from roteiro_memory.errors import NotFound as NotFound
    from roteiro_memory.errors import RoteiroError as RoteiroError
    from roteiro_memory.errors import StoreUnavailable as StoreUnavailable
    from roteiro_memory.errors import Unsupported as Unsupported
    from roteiro_memory.eviction import parse_cache_budget as parse_cache_budget
    from roteiro_memory.results import CacheEntry as CacheEntry
    from roteiro_memory.results import CacheStats as CacheStats
    from roteiro_memory.results import CacheSweep as CacheSweep
    from roteiro_memory.results import GraphNode as GraphNode
    from roteiro_memory.results import MemoryAnchor as MemoryAnchor
    from roteiro_memory.results import MemoryForgotten as MemoryForgotten
    from roteiro_memory.results import MemoryListing as MemoryListing
    from roteiro_memory.results import MemoryRecord as MemoryRecord
    from roteiro_memory.results import Recall as Recall
    from roteiro_memory.results import Recalled as Recalled
    from roteiro_memory.semantics import AnchorFilter as AnchorFilter
    from roteiro_memory.semantics import AnchorState as AnchorState
    from roteiro_memory.semantics import Decay as Decay
    from roteiro_memory.semantics import MemoryKind as MemoryKind
    from roteiro_memory.store import MemoryWrite as MemoryWrite
    from roteiro_memory.store import Store as Store
    from roteiro_memory.stores.model import ModelStore as ModelStore
    from roteiro_memory.stores.naming import open_store as open_store
    from roteiro_memory.stores.sqlite.store import SQLiteStore as SQLiteStore

    __version__: str


_PUBLIC: dict[str, str] = {}
"""Each public name and the module it lives in, read from the block above."""


def _public() -> dict[str, str]:
    if not _PUBLIC:
        import ast

        with open(__file__, encoding="utf-8") as source:
            tree = ast.parse(source.read())
        block = next(
            node
            for node in tree.body
            if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
        )
        for node in block.body:
            if isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    if alias.asname == alias.name:
                        _PUBLIC[alias.name] = node.module
    return _PUBLIC


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from roteiro_memory.version import version

        return version()
    if name == "__all__":
        return sorted([*_public(), "__version__"])
    import os

    here = os.path.dirname(__file__)
    if os.path.exists(os.path.join(here, name + ".py")) or os.path.isdir(os.path.join(here, name)):
        # ``from roteiro_memory import semantics`` asks here before importing
        # the submodule: answered without reading the public names.
        raise AttributeError(name)
    module = _public().get(name)
    if module is None:
        raise AttributeError(f"module 'roteiro_memory' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_public(), "__version__"})
