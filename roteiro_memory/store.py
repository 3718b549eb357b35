"""The store contract every backend implements, written once.

Each method is one PROTOCOL operation.  The invariants a backend must keep are
listed here by the tags the conformance cases cite:

* ``reads-never-mutate`` -- ``get``, ``list``, ``recall``, ``search``, ``cache_entries``,
  ``cache_stats``, ``export_graph`` and ``snapshot`` change no persisted value.
  ``cache_get`` is the one read that writes, and only the entry's ``hits`` and
  ``last_used`` and the tick counter.
* ``refused-writes-never-mutate`` -- an operation that raises leaves the store
  exactly as it was.
* ``supersession-immediate`` -- a superseded record leaves ``list`` and
  ``recall`` the moment its successor is written; the successor is checked
  before anything is inserted, and insert and pointer update are one
  transaction.
* ``only-forget-removes`` -- nothing but ``forget`` deletes a record: not
  ``rebuild``, not ``cache_sweep``, not decay.
* ``forget-restores`` -- forgetting a successor clears the pointers to it and
  reports the predecessors made live again, ascending.
* ``ids-never-reused`` -- ids increase and are never handed out twice, even
  after the newest record is forgotten; the memory generation is the largest
  id stored now (0 when empty) and a record's age is generation - id.
* ``anchor-captured-at-write`` -- the anchor's blob and path, and the tree
  witness, are taken by the store from its own graph when the record is
  written; a key naming no node is accepted and reads back vanished.
* ``sweep-never-touches-episodic`` -- the sweep deletes cache entries only.
* ``snapshot-changes-on-write`` -- every persisted change changes the snapshot.

``search`` (capability ``search``, declared only by a backend with a term
index) keeps these besides, by the tags of ``conformance/search.yaml``:

* ``search-any-term`` -- a live record matching the filters is a candidate
  exactly when it holds at least one query term; a query with no term finds
  nothing.
* ``search-positive-relevance`` -- every result has relevance > 0, and the
  relevance is the BM25 of :mod:`roteiro_memory.lexical` over the live
  records of the whole store.
* ``search-evidence-orders`` -- the score is relevance x the recall score
  (its confidence tempered, :func:`~roteiro_memory.lexical.search_evidence`), so
  at equal relevance the evidence decides and a drifted or vanished record is
  demoted, never dropped; ties go to the newest id.
* ``search-never-superseded`` -- a superseded record is never a result and
  does not count in the statistics.
* ``search-never-mutates`` -- a search changes no persisted value.
* ``search-deterministic`` -- with decay ``none`` the same search twice gives
  the same bytes.

Errors are the classes of :mod:`roteiro_memory.errors`; validation faults are
reported in the order kind, scope, body, confidence, supersedes.  Every
operation refuses an argument of the wrong type -- ``None`` or a number where
text is wanted, a ``bool`` or a ``float`` where an integer is (``True`` is no
id), an ``include_superseded`` that is no ``bool``, ``anchors`` that are no
:class:`~roteiro_memory.semantics.AnchorFilter` -- or a ``limit`` or
``budget_bytes`` outside 0 to 2^64 - 1 as
:class:`~roteiro_memory.errors.BadRequest`, naming the parameter, the value
and what is allowed, and changes nothing (:mod:`roteiro_memory.arguments`);
a ``graph`` mapping and the ``applicable_only`` flag are taken as given.  A
kind, confidence or decay of the wrong type is refused by its own error
instead (InvalidKind, InvalidConfidence, InvalidDecay).  A read's ``scope`` and
``anchor_key`` filters are not validated beyond their type: one no record can
have matches nothing.  Once closed, a store refuses every operation as
:class:`~roteiro_memory.errors.StoreUnavailable`.

Optional operations (``check``, ``export_lines``, ``import_export``) are not
PROTOCOL operations; a store that does not provide one raises
:class:`~roteiro_memory.errors.Unsupported` naming the store and the
operation, so a caller never needs to know which store it holds.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Iterable, Iterator, Mapping

from roteiro_memory.errors import (
    RoteiroError,
    StoreUnavailable,
    Unsupported,
    unexpected_failure,
)
from roteiro_memory.results import (
    CacheEntry,
    CacheStats,
    CacheSweep,
    GraphNode,
    MemoryForgotten,
    MemoryListing,
    MemoryRecord,
    Recall,
    check_graph,
)
from roteiro_memory.semantics import DEFAULT_SCOPE, AnchorFilter, Decay, MemoryKind
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from contextlib import AbstractContextManager
    from types import TracebackType
    from typing import Any

    from roteiro_memory.check import Finding
    from roteiro_memory.transfer import Export

__all__ = [
    "CAPABILITIES",
    "DEFAULT_CAPABILITIES",
    "SERVER_CAPABILITIES",
    "STORE_CAPABILITIES",
    "Graph",
    "MemoryWrite",
    "Store",
]

Graph = Mapping[str, str | None]
"""A graph as anchors see it: node key -> blob (None when the node has none)."""

if TYPE_CHECKING:
    KindFilter = MemoryKind | str | Iterable[MemoryKind | str] | None
    """What the ``kind`` of ``list``, ``recall`` and ``search`` takes: one kind,
    any of several (:func:`~roteiro_memory.semantics.parse_kinds`), or None for
    every kind."""

STORE_CAPABILITIES: tuple[str, ...] = (
    "episodic",
    "cache",
    "graph",
    "snapshot",
    "budget",
    "durable",
    "search",
)
"""The capabilities a store has in-process; the reference backends declare them all."""

DEFAULT_CAPABILITIES: tuple[str, ...] = tuple(c for c in STORE_CAPABILITIES if c != "search")
"""What a store declares unless it says otherwise: everything in-process but
``search``, which needs a term index a backend declares by overriding ``capabilities``."""

SERVER_CAPABILITIES: tuple[str, ...] = ("shared", "crash")
"""The capabilities of a wire server over a store the suite names: several
instances share it, and it survives SIGKILL (PROTOCOL "Several instances on one
store, and crashes").  No store declares them in-process."""

CAPABILITIES: tuple[str, ...] = (*STORE_CAPABILITIES, *SERVER_CAPABILITIES)
"""Every capability PROTOCOL names."""


@valueclass
class MemoryWrite:
    """One record to write, as :meth:`Store.record_many` takes it."""

    kind: MemoryKind | str
    body: str
    scope: str = DEFAULT_SCOPE
    anchor: str | None = None
    confidence: float | None = None
    supersedes: int | None = None


class Store(abc.ABC):
    """A two-tier agent memory store: the episodic tier, never silently
    evicted, and the cache tier, bounded by a byte budget."""

    name: str = "store"
    """Short backend name, reported in ``hello``."""

    capabilities: tuple[str, ...] = DEFAULT_CAPABILITIES

    # --- Episodic tier ---------------------------------------------------

    @abc.abstractmethod
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
        """Write one record and return its id.

        Raises InvalidKind, InvalidScope, InvalidBody, InvalidConfidence,
        InvalidAnchor (an anchor over the size limit), NotFound or
        AlreadySuperseded (for ``supersedes``), or BadRequest for a value of
        the wrong type, writing nothing.
        """

    @abc.abstractmethod
    def record_many(self, writes: Iterable[MemoryWrite]) -> builtins.list[int]:
        """Write every record in one transaction, in order; all or nothing.

        A write may supersede a record written earlier in the same batch.
        """

    @abc.abstractmethod
    def get(self, id: int, *, graph: Graph | None = None) -> MemoryRecord | None:
        """One record by id, superseded or not; None when absent.

        ``graph`` (on ``get``, ``list`` and ``recall``): resolve anchors against
        this key -> blob mapping instead of the stored nodes -- another
        revision's graph, say.  Reading with it writes nothing.
        """

    @abc.abstractmethod
    def list(
        self,
        *,
        scope: str | None = None,
        kind: KindFilter = None,
        anchor_key: str | None = None,
        include_superseded: bool = False,
        limit: int | None = None,
        graph: Graph | None = None,
        anchors: AnchorFilter | None = None,
    ) -> MemoryListing:
        """Matching records newest first; ``limit`` (None or 0 = all) keeps the
        newest.  ``live``/``superseded`` count the whole store.

        ``kind`` (on ``list``, ``recall`` and ``search``) keeps records of that
        kind, or of any of several: the store filters, orders and limits the
        union itself, so no ranking rule runs outside a store.

        ``anchors`` (on ``list``, ``recall`` and ``search``, not a PROTOCOL argument) keeps
        only records whose anchor it matches, before the limit."""

    @abc.abstractmethod
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
        anchors: AnchorFilter | None = None,
        stale_only: bool = False,
    ) -> Recall:
        """Live matching records ranked by score then newest id; the limit
        (None or 0 = all) applies after ranking.  Writes nothing.

        ``stale_only`` (not a PROTOCOL argument) keeps only the records whose
        anchor does not apply -- drifted, vanished or unverifiable --, the
        store choosing them before its limit, so a session digest finds
        those about changed code however old, reading no more than it shows."""

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
        anchors: AnchorFilter | None = None,
    ) -> Recall:
        """Live matching records holding any query term, ranked by
        relevance x evidence then newest id (:mod:`roteiro_memory.lexical`);
        the limit applies after ranking.  Writes nothing.  ``anchors`` (not a
        PROTOCOL argument) narrows the candidates as on :meth:`recall`; the
        statistics stay those of the whole store.

        Optional: a backend without a term index raises Unsupported and
        leaves ``search`` out of its capabilities.
        """
        raise Unsupported(
            f"memory.search: the {self.name!r} backend has no term index; it does not "
            "declare the 'search' capability (use recall, or the 'memory' backend)"
        )

    @abc.abstractmethod
    def forget(self, id: int) -> MemoryForgotten:
        """Delete one record, restoring what it superseded; NotFound if absent."""

    @abc.abstractmethod
    def atomically(self) -> AbstractContextManager[None]:
        """Run the body's operations on this store as one write transaction
        holding, from its start, the lock record writes take: nothing another
        writer commits comes between what the body reads and what it writes,
        so a use case's check and the write it decides are one step.
        Committed when the body returns; when it raises, every write in it is
        rolled back.  Not a PROTOCOL operation.

        Other writers wait for the body, which should therefore be short (no
        git, no waiting on anything else); a block inside a block is the one
        block.  The body lets what an operation raises propagate: caught, a
        failed write may have left part of itself to commit.  A body that
        closes the store ends the block with nothing written: what the body
        raised goes on, else StoreUnavailable says so."""

    # --- Cache tier ------------------------------------------------------

    @abc.abstractmethod
    def cache_put(self, key: str, fingerprint: str, json: str, anchor: str | None = None) -> None:
        """Write or replace an entry at the next tick; a replacement keeps its hits.

        Raises InvalidAnchor, or BadRequest for a key, fingerprint or json
        holding a lone surrogate (text no store keeps); nothing is written."""

    @abc.abstractmethod
    def cache_get(self, key: str) -> CacheEntry | None:
        """The entry as it was before this access, recording the access."""

    @abc.abstractmethod
    def cache_entries(self) -> builtins.list[CacheEntry]:
        """Every entry ordered by key, recording no access."""

    @abc.abstractmethod
    def cache_forget(self, key: str) -> bool:
        """Delete one entry; whether there was one."""

    @abc.abstractmethod
    def cache_stats(self, budget_bytes: int) -> CacheStats:
        """What the tier holds against ``budget_bytes``."""

    @abc.abstractmethod
    def cache_sweep(self, budget_bytes: int) -> CacheSweep:
        """Evict down to ``budget_bytes`` by the ADR's order, then advance the
        generation.  Reads sizes from the stored ``bytes``, never payloads."""

    # --- Graph -----------------------------------------------------------

    @abc.abstractmethod
    def put_nodes(self, nodes: Iterable[GraphNode]) -> None:
        """Upsert nodes by key, replacing every field; BadRequest, with
        nothing written, when a field of one holds a lone surrogate."""

    @abc.abstractmethod
    def remove_nodes(self, keys: Iterable[str]) -> None:
        """Delete nodes by key; absent keys are ignored."""

    @abc.abstractmethod
    def set_tree(self, tree: str | None) -> None:
        """Set the repo-state witness later writes record (BadRequest for one
        holding a lone surrogate)."""

    @abc.abstractmethod
    def tree(self) -> str | None:
        """The current repo-state witness."""

    @abc.abstractmethod
    def rebuild(self) -> None:
        """Delete every node and nothing else."""

    @abc.abstractmethod
    def export_graph(self) -> builtins.list[GraphNode]:
        """Every node, sorted by key."""

    def find_nodes(
        self, keys: Iterable[str] = (), blobs: Iterable[str] = (), prefixes: Iterable[str] = ()
    ) -> builtins.list[GraphNode]:
        """The nodes whose key is one of ``keys``, whose blob is one of
        ``blobs`` or whose key starts with one of ``prefixes``, sorted by
        key: what a few records need of a large graph (or its file nodes,
        not its symbols).  A backend that can find them without reading
        every node overrides this."""
        wanted, carried, starts = set(keys), set(blobs), tuple(prefixes)
        return [
            n
            for n in self.export_graph()
            if n.key in wanted or n.blob in carried or (starts and n.key.startswith(starts))
        ]

    def anchor_keys(self) -> builtins.list[str]:
        """Every key an anchor names -- a record's, superseded ones too, or a
        cache entry's -- each once, sorted.  A backend that can read them
        without reading every record overrides this."""
        keys = {r.anchor.key for r in self.list(include_superseded=True).records if r.anchor}
        keys.update(entry.anchor for entry in self.cache_entries() if entry.anchor is not None)
        return sorted(keys)

    def count_nodes(self, prefixes: tuple[str, ...]) -> int:
        """How many nodes have a key starting with one of ``prefixes``.  A
        backend that can count without reading every node overrides this."""
        return sum(1 for node in self.export_graph() if node.key.startswith(prefixes))

    def replace_graph(self, nodes: Iterable[GraphNode], tree: str | None) -> tuple[int, int]:
        """Make the graph exactly ``nodes`` and the witness ``tree``, writing
        only what differs; returns (nodes written, nodes removed).

        A backend shared by several writers overrides this to compare and
        write in one transaction, so two syncs racing never leave one tree's
        witness over a mixture of both graphs.  This default is correct for a
        single writer.
        """
        new = {node.key: node for node in check_graph(nodes, tree)}
        old = {node.key: node for node in self.export_graph()}
        changed = [node for key, node in new.items() if old.get(key) != node]
        gone = sorted(key for key in old if key not in new)
        if changed:
            self.put_nodes(changed)
        if gone:
            self.remove_nodes(gone)
        if self.tree() != tree:
            self.set_tree(tree)
        return len(changed), len(gone)

    # --- Store -----------------------------------------------------------

    @abc.abstractmethod
    def snapshot(self) -> dict[str, Any]:
        """Every persisted row and counter, deterministic for a given state."""

    # --- Optional: integrity and transfer ---------------------------------

    def describe(self) -> str:
        """Where the store lives, for a report (never with a password)."""
        return f"the {self.name} store"

    @property
    def changes(self) -> int | None:
        """How many write transactions this store object has committed (on
        SQLite, those that changed a row), so two readings tell whether a
        write came between them; None where the store does not count them."""
        return None

    def check(self) -> builtins.list[Finding]:
        """Every integrity problem found (:mod:`roteiro_memory.check`), read on
        one snapshot and changing nothing; empty when the store is healthy."""
        raise self._unsupported("check")

    def export_lines(self) -> Iterator[str]:
        """The whole store as the JSON Lines of :mod:`roteiro_memory.transfer`,
        header first, read on one snapshot."""
        raise self._unsupported("export")

    def import_export(self, parsed: Export) -> dict[str, int]:
        """Load a parsed export into this store, which must be empty (else
        :class:`~roteiro_memory.transfer.ImportRefused`), in one transaction:
        all or nothing.  Returns the count of nodes, records and cache entries."""
        raise self._unsupported("import")

    def failure(self, error: Exception) -> RoteiroError:
        """What ``error``, raised by an operation that did not report it
        itself, is reported as: the protocol server's last resort, so that
        every request is answered.  A database store maps its driver's
        errors once for its family (:mod:`roteiro_memory.stores.failures`);
        anything else is :func:`~roteiro_memory.errors.unexpected_failure`."""
        return unexpected_failure(error)

    def _closed_error(self) -> StoreUnavailable:
        """What an operation on a store that was closed raises: the same
        refusal from every backend, the store untouched."""
        return StoreUnavailable(
            f"{self.describe()} is closed: this store object takes no more operations "
            "(open the store again to use it)"
        )

    def _closed_inside(self) -> StoreUnavailable:
        """What a block of :meth:`atomically` whose body closed the store
        raises as it ends (when the body raised nothing itself): closing
        ended its transaction, so nothing it wrote was kept."""
        return StoreUnavailable(
            f"{self.describe()} was closed inside an atomically() block, so nothing the block "
            "wrote was kept: close the store after the block ends"
        )

    def _unsupported(self, operation: str) -> Unsupported:
        return Unsupported(
            f"the {self.name!r} store ({type(self).__name__}) does not support {operation}; "
            "use an SQLite or PostgreSQL store for it"
        )

    @abc.abstractmethod
    def reopen(self) -> None:
        """Close and open again from what was persisted."""

    @abc.abstractmethod
    def reset(self) -> None:
        """Replace the store by a fresh, empty one."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the store's resources.  Every later operation, ``reopen``
        included, is refused as StoreUnavailable ("... is closed"); closing
        again does nothing."""

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
