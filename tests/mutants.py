"""Deliberately broken backends: each breaks exactly one ADR-0013 rule.

They exist to show that the conformance suite has teeth: every mutant must be
caught, and caught by a case of the invariant it breaks
(``tests/test_mutants.py``).  Each class is its own factory, so the whole
pytest suite can be pointed at one, from the repository root (``python -m``
puts it on the import path)::

    python -m pytest --roteiro-conformance --roteiro-backend tests.mutants:ZeroVanishedPenalty

Most mutants bend :class:`ModelStore`, the in-memory oracle, by one override;
a few bend :class:`SQLiteStore` with one extra SQL statement, so both kinds of
backend are shown to be checkable.  Nothing here is used by the library.
"""

from __future__ import annotations

import builtins
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roteiro_memory import eviction, lexical
from roteiro_memory import semantics as sem
from roteiro_memory.errors import BadRequest, Corrupt, InvalidBody, InvalidBudget, NotFound
from roteiro_memory.protocol import OPS, Ops, check_args
from roteiro_memory.results import (
    CacheEntry,
    CacheSweep,
    MemoryAnchor,
    MemoryForgotten,
    MemoryListing,
    Recall,
    Recalled,
)
from roteiro_memory.semantics import AnchorState, MemoryKind
from roteiro_memory.store import Graph, MemoryWrite
from roteiro_memory.stores.model import ModelStore, _Row
from roteiro_memory.stores.sqlite.store import SQLiteStore
from roteiro_memory.valueclass import replace


@dataclass(frozen=True)
class Mutant:
    """One broken backend: its factory, the invariant it breaks, and how."""

    name: str
    invariant: str
    flaw: str
    factory: Callable[[], object]


MUTANTS: dict[str, Mutant] = {}


def mutant(invariant: str, flaw: str) -> Callable[[type], type]:
    """Register a class as a mutant breaking ``invariant``."""

    def register(cls: type) -> type:
        MUTANTS[cls.__name__] = Mutant(cls.__name__, invariant, flaw, cls)
        return cls

    return register


# --- Helpers for recall mutants ----------------------------------------------


def _rescored(
    item: Recalled, *, base: float | None = None, penalty: float | None = None
) -> Recalled:
    base = item.base_confidence if base is None else base
    penalty = item.anchor_penalty if penalty is None else penalty
    score = sem.score(base, penalty, item.decay_factor)
    return replace(item, score=score, base_confidence=base, anchor_penalty=penalty)


class _RerankingModel(ModelStore):
    """A model whose recall results pass through :meth:`adjust` before the
    (possibly also altered) ranking and limit are applied."""

    def adjust(self, item: Recalled) -> Recalled:
        return item

    def order(self, items: builtins.list[Recalled]) -> builtins.list[Recalled]:
        return sorted(items, key=lambda r: sem.rank_key(r.score, r.record.id))

    def recall(self, query: str | None = None, *, limit: int | None = None, **kw: Any) -> Recall:
        full = super().recall(query, limit=None, **kw)
        ranked = self.order([self.adjust(item) for item in full.results])
        return replace(full, results=sem.apply_limit(ranked, limit))


# --- Ranking -------------------------------------------------------------------


@mutant("penalty-never-zero", "a vanished anchor's penalty is 0, silencing the record")
class ZeroVanishedPenalty(_RerankingModel):
    def adjust(self, item: Recalled) -> Recalled:
        if item.record.anchor_state is AnchorState.VANISHED:
            return _rescored(item, penalty=0.0)
        return item


@mutant("drifted-below-vanished", "drifted is priced at 0.4, above vanished's 0.35")
class DriftedAboveVanished(_RerankingModel):
    def adjust(self, item: Recalled) -> Recalled:
        if item.record.anchor_state is AnchorState.DRIFTED:
            return _rescored(item, penalty=0.4)
        return item


@mutant("default-confidence", "a record written without confidence ranks at 1.0, not 0.5")
class DefaultConfidenceOne(_RerankingModel):
    def adjust(self, item: Recalled) -> Recalled:
        if item.record.confidence is None:
            return _rescored(item, base=1.0)
        return item


@mutant("score-then-newest", "equal scores are broken by the oldest id")
class TiesOldestFirst(_RerankingModel):
    def order(self, items: builtins.list[Recalled]) -> builtins.list[Recalled]:
        return sorted(items, key=lambda r: (-r.score, r.record.id))


@mutant("limit-after-ranking", "recall keeps the newest `limit` records, then ranks them")
class LimitBeforeRanking(ModelStore):
    def recall(self, query: str | None = None, *, limit: int | None = None, **kw: Any) -> Recall:
        full = super().recall(query, limit=None, **kw)
        newest = sorted(full.results, key=lambda r: -r.record.id)
        kept = {r.record.id for r in sem.apply_limit(newest, limit)}
        return replace(full, results=[r for r in full.results if r.record.id in kept])


@mutant("limit-zero-unlimited", "a limit of 0 returns no records instead of all")
class LimitZeroMeansNone(ModelStore):
    def list(self, *, limit: int | None = None, **kw: Any) -> MemoryListing:
        listing = super().list(limit=limit, **kw)
        return replace(listing, records=[]) if limit == 0 else listing

    def recall(self, query: str | None = None, *, limit: int | None = None, **kw: Any) -> Recall:
        result = super().recall(query, limit=limit, **kw)
        return replace(result, results=[]) if limit == 0 else result


@mutant("decay-none-reproducible", "decay none multiplies by 0.999 per generation of age")
class DecayNoneNotOne(_RerankingModel):
    def adjust(self, item: Recalled) -> Recalled:
        if item.decay_factor == 1.0 and item.age > 0:
            factor = 0.999**item.age
            score = sem.score(item.base_confidence, item.anchor_penalty, factor)
            return replace(item, decay_factor=factor, score=score)
        return item


# --- Anchors -------------------------------------------------------------------


@mutant("unverifiable-not-valid", "an anchor with a blob missing on one side counts as valid")
class UnverifiableIsValid(ModelStore):
    def _anchor_state(
        self, anchor_key: str | None, anchor_blob: str | None, graph: Graph | None = None
    ) -> AnchorState:
        state = super()._anchor_state(anchor_key, anchor_blob, graph)
        return AnchorState.VALID if state is AnchorState.UNVERIFIABLE else state


@mutant("anchor-captured-at-write", "the anchor's path is not captured when the record is written")
class AnchorPathNotCaptured(ModelStore):
    def _write(self, state: Any, write: MemoryWrite) -> int:
        new_id = super()._write(state, write)
        state.records[new_id].anchor_path = None
        return new_id


# --- Query and filters ---------------------------------------------------------


@mutant("query-semantics", "the query is matched case-sensitively")
class CaseSensitiveQuery(ModelStore):
    def recall(self, query: str | None = None, **kw: Any) -> Recall:
        result = super().recall(query, **kw)
        words = [w for part in (query or "").split("::") for w in part.split()]
        kept = [
            r
            for r in result.results
            if all(
                w in "\n".join([r.record.body, *self._anchor_text(r.record.anchor)]) for w in words
            )
        ]
        return replace(result, results=kept)

    @staticmethod
    def _anchor_text(anchor: MemoryAnchor | None) -> list[str]:
        return [anchor.key, anchor.path or ""] if anchor is not None else []


@mutant("scope-exact-filter", "the scope filter matches scopes that start with it")
class ScopePrefixFilter(ModelStore):
    def _matching(
        self,
        scope: str | None,
        kind: MemoryKind | str | None,
        anchor_key: str | None,
        include_superseded: bool,
        anchors: sem.AnchorFilter | None = None,
    ) -> builtins.list[_Row]:
        rows = super()._matching(None, kind, anchor_key, include_superseded, anchors)
        return [r for r in rows if scope is None or r.scope.startswith(scope)]


@mutant("listing-counts-whole-store", "live and superseded count only the filtered records")
class CountsOnlyMatches(ModelStore):
    def list(self, **kw: Any) -> MemoryListing:
        listing = super().list(**kw)
        everything = super().list(**{**kw, "include_superseded": True, "limit": None})
        live = sum(1 for r in everything.records if r.superseded_by is None)
        return replace(listing, live=live, superseded=len(everything.records) - live)


# --- Supersession, forgetting, ids ------------------------------------------------


@mutant("supersession-immediate", "superseded records are still listed and recalled")
class SupersededStillListed(ModelStore):
    def _matching(
        self,
        scope: str | None,
        kind: MemoryKind | str | None,
        anchor_key: str | None,
        include_superseded: bool,
        anchors: sem.AnchorFilter | None = None,
    ) -> builtins.list[_Row]:
        return super()._matching(scope, kind, anchor_key, True, anchors)


@mutant("supersession-errors-untouched", "an already superseded record can be superseded again")
class SupersedeTwice(ModelStore):
    def _write(self, state: Any, write: MemoryWrite) -> int:
        target = state.records.get(write.supersedes) if write.supersedes is not None else None
        if target is not None:
            target.superseded_by = None
        return super()._write(state, write)


@mutant("forget-restores", "forgetting a successor leaves its predecessors superseded")
class ForgetKeepsPointers(ModelStore):
    def forget(self, id: int) -> MemoryForgotten:
        if id not in self._state.records:
            return super().forget(id)
        del self._state.records[id]
        return MemoryForgotten(id=id, restored=[])


@mutant("ids-never-reused", "forgetting the newest record lets its id be handed out again")
class IdsReused(ModelStore):
    def forget(self, id: int) -> MemoryForgotten:
        forgotten = super().forget(id)
        self._state.last_id = max(self._state.records, default=0)
        return forgotten


@mutant("refused-writes-never-mutate", "a write refused for its supersedes target still inserts")
class RefusedWriteInserts(ModelStore):
    def record_many(self, writes: Iterable[MemoryWrite]) -> builtins.list[int]:
        batch = list(writes)
        try:
            return super().record_many(batch)
        except NotFound:
            for write in batch:
                sem.validate_write(write.kind, write.scope, write.body, write.confidence)
            super().record_many([replace(w, supersedes=None) for w in batch])
            raise


@mutant("validation-limits", "an unknown kind as a list filter is ignored instead of refused")
class UnknownKindFilterIgnored(ModelStore):
    def list(self, *, kind: MemoryKind | str | None = None, **kw: Any) -> MemoryListing:
        if kind is not None and kind not in sem.KIND_TOKENS:
            kind = None
        return super().list(kind=kind, **kw)


# --- Reads that write, snapshots, durability ---------------------------------------


@mutant("reads-never-mutate", "memory.list advances the cache clock")
class ListTicks(ModelStore):
    def list(self, **kw: Any) -> MemoryListing:
        self._state.ticks += 1
        return super().list(**kw)


@mutant("snapshot-changes-on-write", "the snapshot leaves out the tree witness")
class SnapshotWithoutTree(ModelStore):
    def snapshot(self) -> dict[str, Any]:
        image = super().snapshot()
        image["tree"] = None
        return image

    def reopen(self) -> None:
        tree = self._state.tree
        super().reopen()
        self._state.tree = tree


@mutant("survives-reopen", "reopening forgets the cache tier")
class ReopenDropsCache(ModelStore):
    def reopen(self) -> None:
        super().reopen()
        self._state.cache.clear()


# --- Cache tier ------------------------------------------------------------------


@mutant("cache-get-records-access", "cache.get returns the entry without counting the hit")
class GetRecordsNoAccess(ModelStore):
    def cache_get(self, key: str) -> CacheEntry | None:
        entry = self._state.cache.get(key)
        return self._entry(entry) if entry is not None else None


@mutant("put-keeps-hits", "replacing an entry resets its hits to 0")
class PutResetsHits(ModelStore):
    def cache_put(self, key: str, fingerprint: str, json: str, anchor: str | None = None) -> None:
        super().cache_put(key, fingerprint, json, anchor)
        self._state.cache[key].hits = 0


@mutant("bytes-fixed-at-write", "an entry's bytes counts the json payload only")
class BytesOfPayloadOnly(ModelStore):
    def cache_put(self, key: str, fingerprint: str, json: str, anchor: str | None = None) -> None:
        super().cache_put(key, fingerprint, json, anchor)
        self._state.cache[key].bytes = len(json.encode("utf-8"))


class _SweepModel(ModelStore):
    """The model's sweep, with its pin, order and sizes as hooks."""

    def pinned(self, is_mru: bool, entry: CacheEntry, generation: int) -> bool:
        return eviction.is_pinned(is_mru, entry.generation, generation, entry.anchor_state.applies)

    def evict_key(self, entry: CacheEntry) -> tuple[Any, ...]:
        return eviction.eviction_key(entry.anchor_state.applies, entry.last_used, entry.key)

    def size(self, entry: CacheEntry) -> int:
        return entry.bytes

    def advance(self, evicted: int) -> int:
        return 1

    def cache_sweep(self, budget_bytes: int) -> CacheSweep:
        state = self._state
        entries = self.cache_entries()
        mru = max(entries, key=lambda e: (e.last_used, e.key), default=None)
        pinned = [e for e in entries if self.pinned(e is mru, e, state.generation)]
        candidates = sorted((e for e in entries if e not in pinned), key=self.evict_key)
        sizes = [self.size(e) for e in candidates]
        evict = eviction.evict_count(sizes, sum(self.size(e) for e in pinned), budget_bytes)
        for entry in candidates[:evict]:
            del state.cache[entry.key]
        freed = sum(e.bytes for e in candidates[:evict])
        retained = sum(e.bytes for e in entries) - freed
        state.generation += self.advance(evict)
        return CacheSweep(
            budget_bytes=budget_bytes,
            scanned=len(entries),
            pinned=len(pinned),
            evicted=evict,
            freed_bytes=freed,
            retained_bytes=retained,
            over_budget=retained > budget_bytes,
            generation=state.generation,
        )


@mutant("mru-always-kept", "the sweep may evict the most-recently-used entry")
class SweepEvictsMru(_SweepModel):
    def pinned(self, is_mru: bool, entry: CacheEntry, generation: int) -> bool:
        return super().pinned(False, entry, generation)


@mutant("current-generation-pinned", "the sweep ignores the current-generation pin")
class SweepIgnoresGenerationPin(_SweepModel):
    def pinned(self, is_mru: bool, entry: CacheEntry, generation: int) -> bool:
        return is_mru


@mutant("eviction-order", "the sweep evicts least recently used first, ignoring applies")
class SweepIgnoresApplies(_SweepModel):
    def evict_key(self, entry: CacheEntry) -> tuple[Any, ...]:
        return (entry.last_used, entry.key)


@mutant("eviction-stops-when-fits", "the sweep measures sizes by payload length, not bytes")
class SweepMeasuresPayload(_SweepModel):
    def size(self, entry: CacheEntry) -> int:
        return len(entry.json)


@mutant("generation-advances-after-sweep", "a sweep that evicts nothing keeps the generation")
class GenerationStuckWhenNothingEvicted(_SweepModel):
    def advance(self, evicted: int) -> int:
        return 1 if evicted else 0


# --- Search ----------------------------------------------------------------------


@mutant("search-any-term", "search keeps only records holding every query term")
class AllTermsSearch(ModelStore):
    def search(self, query: str, **kw: Any) -> Recall:
        found = super().search(query, **kw)
        terms = set(found.terms or ())

        def holds_all(item: Recalled) -> bool:
            anchor = item.record.anchor
            held = lexical.document_terms(
                item.record.body,
                anchor.key if anchor else None,
                anchor.path if anchor else None,
            )
            return terms <= set(held)

        return replace(found, results=[r for r in found.results if holds_all(r)])


@mutant("search-positive-relevance", "the IDF is Robertson's ln((N - n + 0.5) / (n + 0.5))")
class ClassicIdfSearch(ModelStore):
    def _relevance(
        self, terms: tuple[str, ...], document: lexical.Document, stats: lexical.CorpusStats
    ) -> float:
        total = 0.0
        for term in terms:
            count = document.counts.get(term, 0)
            if count:
                n, big_n = stats.document_frequency[term], stats.documents
                weight = math.log((big_n - n + 0.5) / (n + 0.5))
                total += lexical.term_weight(count, document.length, stats.average_length, weight)
        return total


@mutant("search-bm25-relevance", "statistics are counted over the filtered records only")
class FilteredStatisticsSearch(ModelStore):
    def _statistics(
        self, documents: Iterable[lexical.Document], wanted: set[int]
    ) -> lexical.CorpusStats:
        return lexical.CorpusStats.of(d for d in documents if d.id in wanted)


@mutant("search-evidence-orders", "the search score is the relevance alone, ignoring evidence")
class RelevanceOnlySearch(ModelStore):
    def search(self, query: str, *, limit: int | None = None, **kw: Any) -> Recall:
        found = super().search(query, limit=None, **kw)
        bare = [replace(r, score=r.relevance or 0.0) for r in found.results]
        bare.sort(key=lambda r: lexical.search_key(r.score, r.record.id))
        return replace(found, results=sem.apply_limit(bare, limit))


@mutant("search-never-superseded", "search ranks and counts superseded records too")
class SupersededSearched(ModelStore):
    def _search_corpus(self) -> builtins.list[_Row]:
        return self._matching(None, None, None, include_superseded=True)


@mutant("search-never-mutates", "memory.search advances the cache clock")
class SearchTicks(ModelStore):
    def search(self, query: str, **kw: Any) -> Recall:
        self._state.ticks += 1
        return super().search(query, **kw)


@mutant("search-deterministic", "each search adds a hair more relevance than the one before")
class DriftingSearch(ModelStore):
    calls = 0

    def _relevance(
        self, terms: tuple[str, ...], document: lexical.Document, stats: lexical.CorpusStats
    ) -> float:
        value = super()._relevance(terms, document, stats)
        return value + 1e-12 * self.calls if value else value

    def search(self, query: str, **kw: Any) -> Recall:
        self.calls += 1
        return super().search(query, **kw)


# --- Protocol-level mutants ---------------------------------------------------------


class _OpsMutant:
    """A PROTOCOL caller over the model with one op answered differently."""

    def __init__(self) -> None:
        self.store = ModelStore()
        self._ops = Ops(self.store, implementation="mutant")

    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        return self._ops.call(op, dict(args or {}))


@mutant("budget-refuses-garbage", "an unparseable budget falls back to the default")
class BudgetAcceptsGarbage(_OpsMutant):
    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        try:
            return super().call(op, args)
        except InvalidBudget:
            return eviction.DEFAULT_CACHE_BUDGET_BYTES


@mutant("bad-request", "a negative limit is read as no limit instead of BadRequest")
class NegativeLimitAccepted(_OpsMutant):
    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        fixed = dict(args or {})
        limit = fixed.get("limit")
        if isinstance(limit, int) and not isinstance(limit, bool) and limit < 0:
            fixed["limit"] = None
        return super().call(op, fixed)


@mutant("arguments-checked", "an argument the op does not list is dropped instead of refused")
class UnknownArgumentsDropped(_OpsMutant):
    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        spec = OPS.get(op)
        known = {arg.name for arg in spec.args} if spec is not None else set()
        kept = {k: v for k, v in (args or {}).items() if spec is None or k in known}
        return super().call(op, kept)


@mutant("strict-json", "a NaN confidence is read as no confidence")
class NaNConfidenceAccepted(_OpsMutant):
    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        fixed = dict(args or {})
        confidence = fixed.get("confidence")
        if isinstance(confidence, float) and math.isnan(confidence):
            fixed["confidence"] = None
        return super().call(op, fixed)


@mutant("undeclared-ops-unsupported", "declares only episodic but answers every op")
class AnswersUndeclaredOps(_OpsMutant):
    def __init__(self) -> None:
        super().__init__()
        self.store.capabilities = ("episodic",)

    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        checked = check_args(op, dict(args or {}))
        return self._ops._handlers[op](checked)


@mutant("cache-entry-anchor", "a cache entry's anchor is an object like a record's")
class CacheAnchorAsObject(_OpsMutant):
    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        result = super().call(op, args)
        entries = result if op == "cache.entries" else [result] if op == "cache.get" else []
        for entry in entries:
            if isinstance(entry, dict) and "anchor" in entry:
                entry["anchor"] = {"key": entry["anchor"], "blob": None, "path": None}
        return result


@mutant("result-shapes", "created_at is written in ISO 8601 with a T and a Z")
class IsoTimestamps(ModelStore):
    def _write(self, state: Any, write: MemoryWrite) -> int:
        new_id = super()._write(state, write)
        row = state.records[new_id]
        row.created_at = row.created_at.replace(" ", "T") + "Z"
        return new_id


@mutant("read-fault-order", "recall checks the kind filter before the decay token")
class KindBeforeDecay(ModelStore):
    def recall(self, query: str | None = None, **kw: Any) -> Recall:
        kind = kw.get("kind")
        if kind is not None:
            sem.parse_kind(kind)
        return super().recall(query, **kw)


@mutant("filters-not-validated", "a scope filter is validated like a written scope")
class ScopeFilterValidated(ModelStore):
    def _matching(
        self,
        scope: str | None,
        kind: MemoryKind | str | None,
        anchor_key: str | None,
        include_superseded: bool,
        anchors: sem.AnchorFilter | None = None,
    ) -> builtins.list[_Row]:
        if scope is not None:
            sem.validate_write("lesson", scope, "body", None)
        return super()._matching(scope, kind, anchor_key, include_superseded, anchors)


@mutant("limit-beyond-int64", "a limit past 2^63-1 fails, as memory.rs's SQL LIMIT does")
class HugeLimitFails(ModelStore):
    def list(self, *, limit: int | None = None, **kw: Any) -> MemoryListing:
        if limit is not None and not sem.fits_int64(limit):
            raise Corrupt(f"LIMIT {limit}: datatype mismatch")
        return super().list(limit=limit, **kw)


@mutant("sweep-reports-counts", "scanned leaves out the pinned entries")
class ScannedWithoutPinned(_SweepModel):
    def cache_sweep(self, budget_bytes: int) -> CacheSweep:
        swept = super().cache_sweep(budget_bytes)
        return replace(swept, scanned=swept.scanned - swept.pinned)


# --- Broken backends the suite must name precisely -----------------------------
#
# Not registered as mutants (each breaks an invariant a registered mutant
# already claims, or none a case can pin): tests/test_mutants.py checks what
# the suite says of each.


class HidesSearchServesIt(_OpsMutant):
    """Leaves ``search`` out of hello, and still serves ``memory.search``."""

    def __init__(self) -> None:
        super().__init__()
        self.store.capabilities = tuple(c for c in self.store.capabilities if c != "search")

    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        if op == "memory.search":
            return self._ops._handlers[op](check_args(op, dict(args or {})))
        return super().call(op, args)


class SearchIsAnUnknownOp(_OpsMutant):
    """Declares no ``search`` and answers ``memory.search`` as an op it has
    never heard of (``BadRequest``), not as one of a capability it lacks."""

    def __init__(self) -> None:
        super().__init__()
        self.store.capabilities = tuple(c for c in self.store.capabilities if c != "search")

    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        if op == "memory.search":
            raise BadRequest(f"unknown op {op!r}")
        return super().call(op, args)


class SignedIds(_OpsMutant):
    """Types ids as signed 64-bit integers, as memory.rs does: an ``id`` or
    ``supersedes`` beyond 2^63 - 1 is BadRequest rather than naming no record.
    One case, ``integer-arguments-have-64-bit-ranges``, holds four of its
    breaches."""

    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        for name in ("id", "supersedes"):
            value = (args or {}).get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > sem.INT64_MAX:
                raise BadRequest(f"{name} {value} does not fit a signed 64-bit integer")
        return super().call(op, args)


class _StoreError(Exception):
    kind = "StoreError"


class StoreErrorKind(_OpsMutant):
    """Answers a forget of an absent record with ``StoreError``, memory.rs's
    own error type, a kind PROTOCOL does not define."""

    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        try:
            return super().call(op, args)
        except NotFound as error:
            raise _StoreError(str(error)) from None


class ListWritesCacheEntry(_OpsMutant):
    """``memory.list`` leaves a cache entry behind: a read that writes, seen
    first by the suite's own check of what the store held before the run."""

    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        result = super().call(op, args)
        if op == "memory.list":
            self.store.cache_put("last-listing", "f", "{}")
        return result


class FaultOrderForCasedKinds(_OpsMutant):
    """Reports a bad body before a bad kind of letters only (``Lesson``, ``note``).

    Not registered as a mutant: no case pins that pair, and the random
    sequences of ``prop-equivalent-to-reference`` meet it only with some seeds,
    which makes it the test of a suite whose verdicts must not depend on the run.
    """

    def call(self, op: str, args: Mapping[str, Any] | None = None) -> Any:
        given = dict(args or {})
        kind, body = given.get("kind"), given.get("body")
        if (
            op == "memory.record"
            and isinstance(kind, str)
            and kind not in sem.KIND_TOKENS
            and kind.isalpha()
            and kind != "bogus"  # the kind the fault-order case uses
            and isinstance(body, str)
            and not body.strip()
        ):
            raise InvalidBody("invalid body: it is empty or only whitespace")
        return super().call(op, args)


# --- SQLite mutants -------------------------------------------------------------------


class _SQLiteMutant(SQLiteStore):
    """The SQLite store in a temporary folder of its own, removed on close."""

    def __init__(self, path: str | None = None) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="roteiro-mutant-"))
        super().__init__(path or self._folder / "memory.db")

    def close(self) -> None:
        super().close()
        shutil.rmtree(self._folder, ignore_errors=True)


class ErasesForeignStore(_SQLiteMutant):
    """A backend over a store that already held a team's records when the
    suite arrived -- the file ``$ROTEIRO_MUTANT_DB`` names, else one made here
    with two records in it -- whose reset erases them like any other.

    Not registered as a mutant: no case can catch it (every case starts by
    resetting), so the suite must refuse it before its first reset
    (``tests/test_mutants.py``).
    """

    def __init__(self) -> None:
        named = os.environ.get("ROTEIRO_MUTANT_DB")
        super().__init__(named)
        if not self.list(include_superseded=True).records:
            for body in ("the deploy key lives in the vault", "retry at most three times"):
                self.record(kind="lesson", body=body, scope="team")


@mutant("records-survive-rebuild", "a graph rebuild deletes the anchored records with the nodes")
class SQLiteRebuildDeletesAnchored(_SQLiteMutant):
    def rebuild(self) -> None:
        super().rebuild()
        with self._atomic() as conn:
            conn.execute("UPDATE agent_memory SET superseded_by = NULL")
            conn.execute(
                "DELETE FROM memory_recent WHERE record_id IN"
                " (SELECT id FROM agent_memory WHERE anchor_key IS NOT NULL)"
            )
            conn.execute("DELETE FROM agent_memory WHERE anchor_key IS NOT NULL")


@mutant("sweep-never-touches-episodic", "the sweep also deletes superseded records")
class SQLiteSweepDeletesSuperseded(_SQLiteMutant):
    def cache_sweep(self, budget_bytes: int) -> CacheSweep:
        swept = super().cache_sweep(budget_bytes)
        with self._atomic() as conn:
            conn.execute(
                "DELETE FROM memory_recent WHERE record_id IN"
                " (SELECT id FROM agent_memory WHERE superseded_by IS NOT NULL)"
            )
            conn.execute("DELETE FROM agent_memory WHERE superseded_by IS NOT NULL")
        return swept


@mutant("only-forget-removes", "recall with decay deletes records whose factor reached 0")
class SQLiteDecayDeletes(_SQLiteMutant):
    def recall(self, query: str | None = None, **kw: Any) -> Recall:
        result = super().recall(query, **kw)
        dead = [(r.record.id,) for r in result.results if r.decay_factor == 0.0]
        if dead:
            with self._atomic() as conn:
                conn.executemany(
                    "UPDATE agent_memory SET superseded_by = NULL, superseded_at = NULL"
                    " WHERE superseded_by = ?",
                    dead,
                )
                conn.executemany("DELETE FROM memory_recent WHERE record_id = ?", dead)
                conn.executemany("DELETE FROM agent_memory WHERE id = ?", dead)
            result = replace(result, results=[r for r in result.results if r.decay_factor > 0])
        return result


@mutant(
    "export-unchanged-by-memory-writes",
    "forgetting the last record anchored to a node deletes the node",
)
class SQLiteForgetPrunesNodes(_SQLiteMutant):
    def forget(self, id: int) -> MemoryForgotten:
        record = self.get(id)
        forgotten = super().forget(id)
        if record is not None and record.anchor is not None:
            with self._atomic() as conn:
                conn.execute(
                    "DELETE FROM nodes WHERE key = ?"
                    " AND NOT EXISTS (SELECT 1 FROM agent_memory WHERE anchor_key = ?)",
                    (record.anchor.key, record.anchor.key),
                )
        return forgotten


@mutant("applicable-only", "applicable_only also keeps unverifiable records")
class SQLiteApplicableKeepsUnverifiable(_SQLiteMutant):
    def recall(
        self,
        query: str | None = None,
        *,
        applicable_only: bool = False,
        limit: int | None = None,
        **kw: Any,
    ) -> Recall:
        result = super().recall(query, applicable_only=False, limit=None, **kw)
        results = result.results
        if applicable_only:
            loose = {AnchorState.UNVERIFIABLE}
            results = [r for r in results if r.record.applies or r.record.anchor_state in loose]
        return replace(result, results=sem.apply_limit(results, limit))
