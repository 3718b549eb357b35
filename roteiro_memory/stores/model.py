"""The in-memory model: the store contract over plain Python structures.

Written for obviousness rather than speed -- every rule is the one in
:mod:`roteiro_memory.semantics`, applied in a loop over every row -- so it can
serve as the oracle other backends are compared with.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from roteiro_memory import arguments, eviction, lexical
from roteiro_memory import semantics as sem
from roteiro_memory.errors import NotFound
from roteiro_memory.fields import TIMESTAMP_FORMAT
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
    check_graph,
)
from roteiro_memory.semantics import DEFAULT_SCOPE, Decay, MemoryKind
from roteiro_memory.store import STORE_CAPABILITIES, Graph, MemoryWrite, Store
from roteiro_memory.valueclass import replace

if TYPE_CHECKING:
    from roteiro_memory.store import KindFilter

__all__ = ["ModelStore"]


def utc_now() -> str:
    """The current UTC time as ``YYYY-MM-DD HH:MM:SS`` -- for humans only."""
    return time.strftime(TIMESTAMP_FORMAT, time.gmtime())


@dataclass
class _Row:
    id: int
    scope: str
    kind: MemoryKind
    anchor_key: str | None
    anchor_blob: str | None
    anchor_path: str | None
    body: str
    confidence: float | None
    tree: str | None
    created_at: str
    superseded_by: int | None = None
    superseded_at: str | None = None


@dataclass
class _Entry:
    key: str
    fingerprint: str
    json: str
    bytes: int
    generation: int
    last_used: int
    hits: int
    anchor_key: str | None
    anchor_blob: str | None


@dataclass
class _State:
    records: dict[int, _Row]
    last_id: int
    cache: dict[str, _Entry]
    ticks: int
    generation: int
    nodes: dict[str, GraphNode]
    tree: str | None


def _fresh() -> _State:
    return _State({}, 0, {}, 0, 0, {}, None)


class ModelStore(Store):
    """The reference model: nothing persisted beyond this object's lifetime."""

    name = "memory"
    capabilities = STORE_CAPABILITIES

    def __init__(self, tokenizer: lexical.Tokenizer = lexical.TOKENIZER) -> None:
        """``tokenizer`` other than the default is for measuring variants
        (``roteiro_memory.evaluation``) only: PROTOCOL fixes the default."""
        self._state = _fresh()
        self._tokenizer = tokenizer
        self._in_block = False

    _live: _State | None = None
    """The store's state; None once it is closed."""

    @property
    def _state(self) -> _State:
        """The store's state, which every operation goes through: refused
        once the store is closed, as every backend refuses it."""
        if self._live is None:
            raise self._closed_error()
        return self._live

    @_state.setter
    def _state(self, state: _State) -> None:
        self._live = state

    # --- rows as results -------------------------------------------------

    def _anchor_state(
        self, anchor_key: str | None, anchor_blob: str | None, graph: Graph | None = None
    ) -> sem.AnchorState:
        if graph is not None:
            present = anchor_key is not None and anchor_key in graph
            blob = graph[anchor_key] if anchor_key is not None and present else None
            return sem.resolve_anchor(anchor_key, anchor_blob, present, blob)
        node = self._state.nodes.get(anchor_key) if anchor_key is not None else None
        return sem.resolve_anchor(
            anchor_key, anchor_blob, node is not None, node.blob if node else None
        )

    def _record(self, row: _Row, graph: Graph | None = None) -> MemoryRecord:
        anchor = (
            MemoryAnchor(row.anchor_key, row.anchor_blob, row.anchor_path)
            if row.anchor_key is not None
            else None
        )
        return MemoryRecord(
            id=row.id,
            scope=row.scope,
            kind=row.kind,
            anchor=anchor,
            anchor_state=self._anchor_state(row.anchor_key, row.anchor_blob, graph),
            body=row.body,
            confidence=row.confidence,
            tree=row.tree,
            created_at=row.created_at,
            superseded_by=row.superseded_by,
            superseded_at=row.superseded_at,
        )

    def _entry(self, entry: _Entry) -> CacheEntry:
        return CacheEntry(
            key=entry.key,
            fingerprint=entry.fingerprint,
            json=entry.json,
            bytes=entry.bytes,
            generation=entry.generation,
            last_used=entry.last_used,
            hits=entry.hits,
            anchor=entry.anchor_key,
            anchor_state=self._anchor_state(entry.anchor_key, entry.anchor_blob),
        )

    def _counts(self) -> tuple[int, int]:
        live = sum(1 for r in self._state.records.values() if r.superseded_by is None)
        return live, len(self._state.records) - live

    def _matching(
        self,
        scope: str | None,
        kind: KindFilter,
        anchor_key: str | None,
        include_superseded: bool,
        anchors: sem.AnchorFilter | None = None,
    ) -> builtins.list[_Row]:
        wanted_kinds = sem.parse_filters(scope, kind, anchor_key, include_superseded, anchors)
        rows = [
            row
            for row in self._state.records.values()
            if (scope is None or row.scope == scope)
            and (wanted_kinds is None or row.kind in wanted_kinds)
            and (anchor_key is None or row.anchor_key == anchor_key)
            and (anchors is None or anchors.matches(row.anchor_key))
            and (include_superseded or row.superseded_by is None)
        ]
        rows.sort(key=lambda r: r.id, reverse=True)
        return rows

    # --- episodic tier ---------------------------------------------------

    def _write(self, state: _State, write: MemoryWrite, valid: sem.ValidWrite) -> int:
        """Write one record :func:`~.semantics.check_batch` found ``valid``."""
        node = state.nodes.get(write.anchor) if write.anchor is not None else None
        state.last_id += 1
        now = utc_now()
        state.records[state.last_id] = _Row(
            id=state.last_id,
            scope=valid.scope,
            kind=valid.kind,
            anchor_key=write.anchor,
            anchor_blob=node.blob if node else None,
            anchor_path=node.path if node else None,
            body=valid.body,
            confidence=valid.confidence,
            tree=state.tree,
            created_at=now,
        )
        if write.supersedes is not None:
            target = state.records[write.supersedes]
            target.superseded_by = state.last_id
            target.superseded_at = now
        return state.last_id

    def record(
        self,
        kind: MemoryKind | str,
        body: str,
        *,
        scope: str = DEFAULT_SCOPE,
        anchor: str | None = None,
        confidence: float | None = None,
        supersedes: int | None = None,
    ) -> int:
        return self.record_many([MemoryWrite(kind, body, scope, anchor, confidence, supersedes)])[0]

    def record_many(self, writes: Iterable[MemoryWrite]) -> builtins.list[int]:
        batch = arguments.items(writes, "writes", "MemoryWrite")
        base = self._state.last_id
        records = self._state.records
        targets = sem.stored_targets(batch, base)
        stored = {t: records[t].superseded_by for t in targets if t in records}
        valid = sem.check_batch(batch, base, stored)
        # Work on a copy and swap it in at the end: all or nothing.
        state = copy.deepcopy(self._state)
        ids = [self._write(state, *pair) for pair in zip(batch, valid, strict=True)]
        self._state = state
        return ids

    def get(self, id: int, *, graph: Graph | None = None) -> MemoryRecord | None:
        row = self._state.records.get(arguments.integer(id, "id"))
        return self._record(row, graph) if row is not None else None

    def list(
        self,
        *,
        scope: str | None = None,
        kind: KindFilter = None,
        anchor_key: str | None = None,
        include_superseded: bool = False,
        limit: int | None = None,
        graph: Graph | None = None,
        anchors: sem.AnchorFilter | None = None,
    ) -> MemoryListing:
        rows = self._matching(scope, kind, anchor_key, include_superseded, anchors)
        live, superseded = self._counts()
        records = [self._record(row, graph) for row in sem.apply_limit(rows, limit)]
        return MemoryListing(records=records, live=live, superseded=superseded)

    def recall(
        self,
        query: str | None = None,
        *,
        scope: str | None = None,
        kind: KindFilter = None,
        anchor_key: str | None = None,
        decay: Decay | str = "none",
        applicable_only: bool = False,
        limit: int | None = None,
        graph: Graph | None = None,
        anchors: sem.AnchorFilter | None = None,
        stale_only: bool = False,
    ) -> Recall:
        parsed_decay = Decay.parse(decay)
        rows = self._matching(scope, kind, anchor_key, False, anchors)
        tokens = sem.query_tokens(query)
        generation = max(self._state.records, default=0)
        ranked: builtins.list[Recalled] = []
        for row in rows:
            record = self._record(row, graph)
            if (applicable_only and not record.applies) or (stale_only and record.applies):
                continue
            text = sem.search_text(row.body, row.anchor_key, row.anchor_path)
            if not sem.matches_query(text, tokens):
                continue
            ranked.append(Recalled.rank(record, generation, parsed_decay))
        ranked.sort(key=lambda r: sem.rank_key(r.score, r.record.id))
        live, superseded = self._counts()
        return Recall(
            generation=generation,
            decay=parsed_decay,
            results=sem.apply_limit(ranked, limit),
            live=live,
            superseded=superseded,
        )

    def search(
        self,
        query: str,
        *,
        scope: str | None = None,
        kind: KindFilter = None,
        anchor_key: str | None = None,
        decay: Decay | str = "none",
        applicable_only: bool = False,
        limit: int | None = None,
        graph: Graph | None = None,
        anchors: sem.AnchorFilter | None = None,
    ) -> Recall:
        # A query beyond the terms cap is BadRequest, which wins over a bad
        # decay or kind [P-bad-request-first]; then decay before kind.
        terms = lexical.query_terms(query, self._tokenizer)
        parsed_decay = Decay.parse(decay)
        # Liveness is the corpus's to decide; the filters only narrow it.
        wanted = {row.id for row in self._matching(scope, kind, anchor_key, True, anchors)}
        corpus = self._search_corpus()
        documents = self._documents(corpus)
        stats = self._statistics(documents.values(), wanted)
        generation = max(self._state.records, default=0)
        ranked: builtins.list[Recalled] = []
        for row in corpus:
            if row.id not in wanted:
                continue
            relevance = self._relevance(terms, documents[row.id], stats)
            if relevance <= 0.0:
                continue
            record = self._record(row, graph)
            if applicable_only and not record.applies:
                continue
            ranked.append(Recalled.found(record, generation, parsed_decay, relevance))
        ranked.sort(key=lambda r: lexical.search_key(r.score, r.record.id))
        counts = self._counts()
        return Recall(
            generation=generation,
            decay=parsed_decay,
            results=sem.apply_limit(ranked, limit),
            live=counts[0],
            superseded=counts[1],
            schema=lexical.SEARCH_SCHEMA,
            terms=list(terms),
        )

    def _search_corpus(self) -> builtins.list[_Row]:
        """The records search ranks and counts: every live one, newest first."""
        return self._matching(None, None, None, include_superseded=False)

    def _documents(self, corpus: Iterable[_Row]) -> dict[int, lexical.Document]:
        """Each record of ``corpus`` as the ranking sees it, by id."""
        return {
            row.id: lexical.Document(
                row.id,
                lexical.document_terms(row.body, row.anchor_key, row.anchor_path, self._tokenizer),
            )
            for row in corpus
        }

    def _statistics(
        self, documents: Iterable[lexical.Document], wanted: set[int]
    ) -> lexical.CorpusStats:
        """Statistics over the whole corpus; ``wanted`` (the filtered ids) is
        deliberately unused -- filters never change a record's relevance."""
        return lexical.CorpusStats.of(documents)

    def _relevance(
        self, terms: tuple[str, ...], document: lexical.Document, stats: lexical.CorpusStats
    ) -> float:
        return lexical.relevance(terms, document, stats)

    @contextlib.contextmanager
    def atomically(self) -> Iterator[None]:
        # One object in one thread: nothing comes between the body's
        # operations.  A raise puts back a copy of the state as it was.
        if self._in_block:
            yield  # a block inside a block is the one block
            return
        kept = copy.deepcopy(self._state)
        self._in_block = True
        try:
            yield
        except BaseException:
            if self._live is not None:  # a store the body closed stays closed
                self._state = kept
            raise
        finally:
            self._in_block = False
        if self._live is None:
            raise self._closed_inside()

    def forget(self, id: int) -> MemoryForgotten:
        if arguments.integer(id, "id") not in self._state.records:
            raise NotFound(f"no memory record with id {id} to forget")
        restored = []
        for row in sorted(self._state.records.values(), key=lambda r: r.id):
            if row.superseded_by == id:
                row.superseded_by = None
                row.superseded_at = None
                restored.append(row.id)
        del self._state.records[id]
        return MemoryForgotten(id=id, restored=restored)

    # --- cache tier ------------------------------------------------------

    def cache_put(self, key: str, fingerprint: str, json: str, anchor: str | None = None) -> None:
        sem.check_anchor(anchor)
        size = eviction.cache_entry_bytes(key, fingerprint, json)  # refuses before a tick
        state = self._state
        node = state.nodes.get(anchor) if anchor is not None else None
        state.ticks = eviction.advanced("ticks", state.ticks)
        previous = state.cache.get(key)
        state.cache[key] = _Entry(
            key=key,
            fingerprint=fingerprint,
            json=json,
            bytes=size,
            generation=state.generation,
            last_used=state.ticks,
            hits=previous.hits if previous else 0,
            anchor_key=anchor,
            anchor_blob=node.blob if node else None,
        )

    def cache_get(self, key: str) -> CacheEntry | None:
        entry = self._state.cache.get(arguments.text(key, "cache key"))
        if entry is None:
            return None
        before = self._entry(entry)
        self._state.ticks = eviction.advanced("ticks", self._state.ticks)
        entry.hits += 1
        entry.last_used = self._state.ticks
        return before

    def cache_entries(self) -> builtins.list[CacheEntry]:
        return [self._entry(self._state.cache[key]) for key in sorted(self._state.cache)]

    def cache_forget(self, key: str) -> bool:
        return self._state.cache.pop(arguments.text(key, "cache key"), None) is not None

    def cache_stats(self, budget_bytes: int) -> CacheStats:
        arguments.count(budget_bytes, "budget_bytes")
        return CacheStats(
            entries=len(self._state.cache),
            bytes=sum(e.bytes for e in self._state.cache.values()),
            budget_bytes=budget_bytes,
            generation=self._state.generation,
        )

    def cache_sweep(self, budget_bytes: int) -> CacheSweep:
        # Refused before anything changes, the generation included.
        arguments.count(budget_bytes, "budget_bytes")
        state = self._state
        advanced = eviction.advanced("generation", state.generation)  # refuses before evicting
        entries = self.cache_entries()
        mru = max(entries, key=lambda e: (e.last_used, e.key), default=None)
        pinned_bytes = 0
        candidates: builtins.list[CacheEntry] = []
        for entry in entries:
            if eviction.is_pinned(
                entry is mru, entry.generation, state.generation, entry.anchor_state.applies
            ):
                pinned_bytes += entry.bytes
            else:
                candidates.append(entry)
        candidates.sort(
            key=lambda e: eviction.eviction_key(e.anchor_state.applies, e.last_used, e.key)
        )
        evict = eviction.evict_count([e.bytes for e in candidates], pinned_bytes, budget_bytes)
        freed = 0
        for entry in candidates[:evict]:
            del state.cache[entry.key]
            freed += entry.bytes
        retained = sum(e.bytes for e in entries) - freed
        state.generation = advanced
        return CacheSweep(
            budget_bytes=budget_bytes,
            scanned=len(entries),
            pinned=len(entries) - len(candidates),
            evicted=evict,
            freed_bytes=freed,
            retained_bytes=retained,
            over_budget=retained > budget_bytes,
            generation=state.generation,
        )

    # --- graph -----------------------------------------------------------

    def put_nodes(self, nodes: Iterable[GraphNode]) -> None:
        held = self._state.nodes  # refused first once closed, as on every backend
        for node in check_graph(nodes):
            held[node.key] = replace(node)

    def remove_nodes(self, keys: Iterable[str]) -> None:
        held = self._state.nodes
        for key in keys:
            held.pop(key, None)

    def set_tree(self, tree: str | None) -> None:
        check_graph((), tree)
        self._state.tree = tree

    def tree(self) -> str | None:
        return self._state.tree

    def rebuild(self) -> None:
        self._state.nodes.clear()

    def export_graph(self) -> builtins.list[GraphNode]:
        return [self._state.nodes[key] for key in sorted(self._state.nodes)]

    # --- store -----------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        state = self._state
        return {
            "records": [
                {**vars(row), "kind": row.kind.value}
                for row in sorted(state.records.values(), key=lambda r: r.id)
            ],
            "last_id": state.last_id,
            "cache": [vars(state.cache[key]).copy() for key in sorted(state.cache)],
            "clock": {"ticks": state.ticks, "generation": state.generation},
            "nodes": [state.nodes[key].to_json() for key in sorted(state.nodes)],
            "tree": state.tree,
        }

    def reopen(self) -> None:
        # What a restart keeps is what the snapshot holds; rebuild from it.
        image = self.snapshot()
        self._state = _State(
            records={
                r["id"]: _Row(**{**r, "kind": MemoryKind(r["kind"])}) for r in image["records"]
            },
            last_id=image["last_id"],
            cache={e["key"]: _Entry(**e) for e in image["cache"]},
            ticks=image["clock"]["ticks"],
            generation=image["clock"]["generation"],
            nodes={n["key"]: GraphNode(**n) for n in image["nodes"]},
            tree=image["tree"],
        )

    def reset(self) -> None:
        if self._live is None:
            raise self._closed_error()
        self._state = _fresh()

    def close(self) -> None:
        self._live = None
