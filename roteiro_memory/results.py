"""Typed results whose ``to_json()`` is exactly the PROTOCOL shape.

Optional fields marked "omitted when none" (a record's or entry's ``anchor``)
are absent rather than null; every other field is always present.
"""

from __future__ import annotations

from roteiro_memory import arguments
from roteiro_memory import semantics as sem
from roteiro_memory.errors import BadRequest, excerpt
from roteiro_memory.semantics import AnchorState, Decay, MemoryKind
from roteiro_memory.valueclass import field, valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    JSON = Any

__all__ = [
    "CACHE_SCHEMA",
    "MEMORY_SCHEMA",
    "RECALL_SCHEMA",
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
    "check_graph",
]

MEMORY_SCHEMA = "roteiro.memory/v1"
RECALL_SCHEMA = "roteiro.recall/v1"
CACHE_SCHEMA = "roteiro.cache/v1"


@valueclass
class GraphNode:
    """A node of the tree anchors are resolved against."""

    key: str
    kind: str | None = None
    name: str | None = None
    path: str | None = None
    blob: str | None = None

    def to_json(self) -> JSON:
        return {
            "key": self.key,
            "kind": self.kind,
            "name": self.name,
            "path": self.path,
            "blob": self.blob,
        }


def check_graph(nodes: Iterable[GraphNode], tree: str | None = None) -> list[GraphNode]:
    """``nodes`` as a list, once each is a :class:`GraphNode` whose ``key``
    is text and whose other fields are text or None, and none of them, nor
    the witness ``tree``, is text UTF-8 cannot carry
    (:func:`~.semantics.check_utf8` refuses it, naming the field): every
    store keeps them as text, and a write checks them all before it keeps
    any.  What is refused is BadRequest."""
    checked = arguments.items(nodes, "nodes", "GraphNode")
    for node in checked:
        if not isinstance(node, GraphNode):
            raise BadRequest(f"invalid node {excerpt(node)}: expected a GraphNode")
        for name in ("key", "kind", "name", "path", "blob"):
            value = getattr(node, name)
            if value is None and name != "key":
                continue
            if not (isinstance(value, str) and value.isascii()):  # ASCII is UTF-8
                sem.check_utf8(value, f"node {name}")  # refuses what is not text too
    if tree is not None:
        sem.check_utf8(tree, "tree")
    return checked


@valueclass
class MemoryAnchor:
    """An anchor as captured at write time: the key, and the node's blob and
    path then -- evidence, not a live view."""

    key: str
    blob: str | None
    path: str | None

    def to_json(self) -> JSON:
        return {"key": self.key, "blob": self.blob, "path": self.path}


@valueclass
class MemoryRecord:
    """One stored record, its anchor resolved against the current tree."""

    id: int
    scope: str
    kind: MemoryKind
    anchor: MemoryAnchor | None
    anchor_state: AnchorState
    body: str
    confidence: float | None
    tree: str | None
    created_at: str
    superseded_by: int | None
    superseded_at: str | None

    @property
    def applies(self) -> bool:
        """Whether the record applies to the tree it was read against."""
        return self.anchor_state.applies

    @property
    def is_live(self) -> bool:
        """Whether nothing supersedes this record."""
        return self.superseded_by is None

    def to_json(self) -> JSON:
        out: dict[str, JSON] = {
            "id": self.id,
            "scope": self.scope,
            "kind": self.kind.value,
        }
        if self.anchor is not None:
            out["anchor"] = self.anchor.to_json()
        out.update(
            {
                "anchor_state": self.anchor_state.value,
                "applies": self.applies,
                "body": self.body,
                "confidence": self.confidence,
                "tree": self.tree,
                "created_at": self.created_at,
                "superseded_by": self.superseded_by,
                "superseded_at": self.superseded_at,
            }
        )
        return out


@valueclass
class MemoryListing:
    """Records matching a filter, newest first, with whole-store counts."""

    records: list[MemoryRecord]
    live: int
    superseded: int
    schema: str = field(default=MEMORY_SCHEMA)

    def to_json(self) -> JSON:
        return {
            "schema": self.schema,
            "records": [r.to_json() for r in self.records],
            "live": self.live,
            "superseded": self.superseded,
        }


@valueclass
class Recalled:
    """One recalled record and every term of the arithmetic that ranked it."""

    score: float
    base_confidence: float
    anchor_penalty: float
    decay_factor: float
    age: int
    record: MemoryRecord
    relevance: float | None = None
    """The lexical relevance of a ``memory.search`` result (omitted when none:
    ``memory.recall`` has no relevance term)."""

    @classmethod
    def rank(cls, record: MemoryRecord, generation: int, decay: Decay) -> Recalled:
        """``record`` scored at ``generation``: every term from the semantics."""
        base, penalty, factor, age, score = sem.evidence(
            record.confidence, record.anchor_state, generation, record.id, decay
        )
        return cls(score, base, penalty, factor, age, record)

    @classmethod
    def found(
        cls, record: MemoryRecord, generation: int, decay: Decay, relevance: float
    ) -> Recalled:
        """``record`` as a ``memory.search`` result: the evidence terms of
        :meth:`rank`, its score ``relevance`` times their search evidence
        (:func:`~roteiro_memory.lexical.search_evidence`, every store's one rule)."""
        from roteiro_memory import lexical

        base, penalty, factor, age, _ = sem.evidence(
            record.confidence, record.anchor_state, generation, record.id, decay
        )
        score = lexical.combine(relevance, lexical.search_evidence(base, penalty, factor))
        return cls(score, base, penalty, factor, age, record, relevance)

    def to_json(self) -> JSON:
        out: dict[str, JSON] = {} if self.relevance is None else {"relevance": self.relevance}
        return {
            **out,
            "score": self.score,
            "base_confidence": self.base_confidence,
            "anchor_penalty": self.anchor_penalty,
            "decay_factor": self.decay_factor,
            "age": self.age,
            "record": self.record.to_json(),
        }


@valueclass
class Recall:
    """A ranked recall and the generation it was computed at."""

    generation: int
    decay: Decay
    results: list[Recalled]
    live: int
    superseded: int
    schema: str = field(default=RECALL_SCHEMA)
    terms: list[str] | None = None
    """The distinct query terms a ``memory.search`` ranked by, in the order
    relevance sums them (omitted when none: ``memory.recall`` has none)."""

    @property
    def reproducible(self) -> bool:
        return self.decay.is_reproducible

    def to_json(self) -> JSON:
        out: dict[str, JSON] = {
            "schema": self.schema,
            "generation": self.generation,
            "decay": self.decay.to_json(),
            "reproducible": self.reproducible,
        }
        if self.terms is not None:
            out["terms"] = list(self.terms)
        out.update(
            {
                "results": [r.to_json() for r in self.results],
                "live": self.live,
                "superseded": self.superseded,
            }
        )
        return out


@valueclass
class MemoryForgotten:
    """What a forget removed, and the predecessors it made live again."""

    id: int
    restored: list[int]

    def to_json(self) -> JSON:
        return {"id": self.id, "restored": list(self.restored)}


@valueclass
class CacheEntry:
    """One cache entry, its anchor resolved against the current tree."""

    key: str
    fingerprint: str
    json: str
    bytes: int
    generation: int
    last_used: int
    hits: int
    anchor: str | None
    anchor_state: AnchorState

    def to_json(self) -> JSON:
        out: dict[str, JSON] = {
            "key": self.key,
            "fingerprint": self.fingerprint,
            "json": self.json,
            "bytes": self.bytes,
            "generation": self.generation,
            "last_used": self.last_used,
            "hits": self.hits,
        }
        if self.anchor is not None:
            out["anchor"] = self.anchor
        out["anchor_state"] = self.anchor_state.value
        return out


@valueclass
class CacheStats:
    """What the cache tier holds against a budget."""

    entries: int
    bytes: int
    budget_bytes: int
    generation: int
    schema: str = field(default=CACHE_SCHEMA)

    def to_json(self) -> JSON:
        return {
            "schema": self.schema,
            "entries": self.entries,
            "bytes": self.bytes,
            "budget_bytes": self.budget_bytes,
            "generation": self.generation,
        }


@valueclass
class CacheSweep:
    """What one sweep did, including what it kept and whether the tier is still
    over budget: a bound that fails to bind says so."""

    budget_bytes: int
    scanned: int
    pinned: int
    evicted: int
    freed_bytes: int
    retained_bytes: int
    over_budget: bool
    generation: int
    schema: str = field(default=CACHE_SCHEMA)

    def to_json(self) -> JSON:
        return {
            "schema": self.schema,
            "budget_bytes": self.budget_bytes,
            "scanned": self.scanned,
            "pinned": self.pinned,
            "evicted": self.evicted,
            "freed_bytes": self.freed_bytes,
            "retained_bytes": self.retained_bytes,
            "over_budget": self.over_budget,
            "generation": self.generation,
        }
