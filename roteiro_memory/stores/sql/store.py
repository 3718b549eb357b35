"""The one SQL store: every operation written once, over a :class:`~.dialects.Dialect`.

:class:`SQLStore` is the two-tier store over any SQL engine that has the
schema both migrations create (:mod:`.columns` lists it).  Each operation is
one transaction, and says here which one and which locks it takes; its SQL is
written once, with the engine's spellings taken from :attr:`SQLStore.dialect`.
The reads live here, since every command reads, and the graph's
(:mod:`.graph`); the other writes are loaded when one is made (:mod:`.writes`,
:mod:`.cache`).

What a concrete store keeps is what truly differs: how it connects and
migrates, its transactions (:meth:`SQLStore._write_transaction`,
:meth:`SQLStore._read_transaction`, :meth:`SQLStore._one_statement`), which
every operation joins instead while :meth:`SQLStore.atomically` holds one
open, the locks a shared engine takes before it writes
(:meth:`SQLStore._lock_records`, :meth:`SQLStore._lock_clock`,
:meth:`SQLStore._lock_cache`), how ids are reserved and reset, and its
integrity check and transfer.  An embedded engine whose every write holds
the database's one write lock from its start needs none of the locks: they
default to nothing.

Ranking, filtering and limits run in SQL, rendered from the semantics by
:mod:`.expressions`; every row a read hands back is read by :mod:`.rows`,
whose type guards report a value this version never writes as
:class:`~roteiro_memory.errors.Corrupt`, never served.
"""

from __future__ import annotations

import abc
import builtins
import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence

from roteiro_memory import arguments, eviction
from roteiro_memory import semantics as sem
from roteiro_memory.errors import Corrupt, RoteiroError
from roteiro_memory.results import (
    CacheEntry,
    CacheStats,
    CacheSweep,
    GraphNode,
    MemoryForgotten,
    MemoryListing,
    MemoryRecord,
    Recall,
    Recalled,
    check_graph,
)
from roteiro_memory.semantics import DEFAULT_SCOPE, Decay, MemoryKind
from roteiro_memory.store import STORE_CAPABILITIES, Graph, MemoryWrite, Store
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sql import graph as graph_sql
from roteiro_memory.stores.sql import ranking
from roteiro_memory.stores.sql.columns import (
    CACHE_COLS,
    CACHE_FROM,
    MEMORY_ANCHOR,
    RECORD_COLS,
    SWEEP_COLS,
    record_from,
)
from roteiro_memory.stores.sql.rows import SweepRow, entry_from_row, judge_record, record_from_row

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from typing import Any

    from roteiro_memory.check import Finding
    from roteiro_memory.store import KindFilter
    from roteiro_memory.stores.sql.dialects import Dialect
    from roteiro_memory.transfer import Export

__all__ = ["SQLStore"]


def statements(sql: str) -> list[str]:
    """The statements of a migration's ``sql``, split at each ``;`` outside a
    dollar-quoted body (a function's, ``$body$ ... $body$``): one a call,
    as SQLite's driver runs them."""
    out: list[str] = []
    current: list[str] = []
    opened: str | None = None
    for piece in re.split(r"(\$\w*\$)", sql):
        if re.fullmatch(r"\$\w*\$", piece):
            opened = piece if opened is None else (None if piece == opened else opened)
            current.append(piece)
            continue
        if opened is not None:
            current.append(piece)
            continue
        *ended, rest = piece.split(";")
        for part in ended:
            out.append("".join([*current, part]))
            current = []
        current.append(rest)
    out.append("".join(current))
    return [statement for statement in out if statement.strip()]


class SQLStore(Store):
    """The two-tier store in the tables of an SQL database, spoken in
    :attr:`dialect`.  A subclass connects (``_conn``) and provides the
    transactions; the hooks below say what else it must or may provide."""

    capabilities = STORE_CAPABILITIES
    dialect: Dialect
    _conn: Any
    ID_TABLE: tuple[str, str, str]
    """``(table, columns, order)`` of where the store keeps its id sequence,
    which a snapshot holds beside :data:`~.columns.SNAPSHOT_TABLES`."""

    # --- transactions and locks: the subclass's ---------------------------

    @abc.abstractmethod
    def _write_transaction(self) -> AbstractContextManager[Any]:
        """One write transaction, committed when the body returns and rolled
        back when it raises, never hiding the error that caused it."""

    @abc.abstractmethod
    def _read_transaction(self) -> AbstractContextManager[Any]:
        """One read transaction, so a read's several queries see one state."""

    def _one_statement(self) -> AbstractContextManager[Any]:
        """Where a read of one statement runs, after loading what it was given."""
        return self._read_transaction()

    # --- where each operation runs: its own transaction, or the held one ---

    _held: Any = None
    """The connection whose transaction :meth:`atomically` holds open, which
    every operation of this store joins meanwhile; None outside one."""

    _joined: int | None = None
    """How many writes have joined the block :meth:`atomically` holds, as
    its commit is made (none: the block only read, so wrote nothing, even
    where reading filled a TEMP table); None outside a block."""

    _closed = False
    """Whether :meth:`close` was called: every operation is then refused
    (:meth:`_within`), never handed to a closed connection."""

    @contextlib.contextmanager
    def atomically(self) -> Iterator[None]:
        if self._held is not None:
            yield  # a block inside a block is the one block
            return
        raised: BaseException | None = None
        ran = False
        try:
            with self._within(self._write_transaction) as conn:
                self._lock_records(conn)
                self._held, self._joined, ran = conn, 0, True
                try:
                    yield
                except BaseException as error:
                    raised = error
                    raise
                finally:
                    self._held = None
        except BaseException as failed:
            if failed is raised or not (ran and self._closed):
                raise
            # The body closed the store, and ending the transaction with the
            # closed connection failed: the driver's error says nothing more.
        finally:
            self._joined = None
        if ran and self._closed:  # the connection's end ended the transaction, unwritten
            raise raised if raised is not None else self._closed_inside()

    def _only_read(self) -> bool:
        """Whether the transaction committing now is a block of
        :meth:`atomically` that no write joined: a commit :attr:`changes`
        does not count."""
        return self._joined == 0

    def _within(
        self, own: Callable[[], AbstractContextManager[Any]]
    ) -> AbstractContextManager[Any]:
        """Where an operation runs: in ``own()``, its own transaction, or,
        inside a block of :meth:`atomically`, in the block's; refused once
        the store is closed."""
        self._usable()
        return own() if self._held is None else contextlib.nullcontext(self._held)

    def _usable(self) -> None:
        """Refuse any operation once the store is closed, before its
        arguments are looked at, as the model does."""
        if self._closed:
            raise self._closed_error()

    def _atomic(self) -> AbstractContextManager[Any]:
        """Where a write runs (:meth:`_within`)."""
        if self._joined is not None:
            self._joined += 1
        return self._within(self._write_transaction)

    def _reading(self) -> AbstractContextManager[Any]:
        """Where a read runs (:meth:`_within`)."""
        return self._within(self._read_transaction)

    def _statement(self) -> AbstractContextManager[Any]:
        """Where a read of one statement runs (:meth:`_within`)."""
        return self._within(self._one_statement)

    @abc.abstractmethod
    def _reserve_ids(self, conn: Any, count: int) -> int:
        """Reserve ``count`` ids for a batch of new records, in the write
        transaction; the largest id handed out before them."""

    @abc.abstractmethod
    def _reset_ids(self, conn: Any) -> None:
        """Start the id sequence again, for :meth:`reset`."""

    def _lock_records(self, conn: Any) -> None:
        """Before ``forget`` or ``reset``: what orders them with record writes."""

    def _lock_clock(self, conn: Any) -> None:
        """Before a cache access, removal or reset: what orders cache writes."""

    def _lock_cache(self, conn: Any) -> None:
        """Before a sweep: what keeps entries from coming or going as it decides."""

    def _check(self, conn: Any) -> builtins.list[Finding]:
        raise self._unsupported("check")

    def _export(self, conn: Any) -> Iterator[str]:
        raise self._unsupported("export")

    def _import(self, conn: Any, parsed: Export) -> dict[str, int]:
        raise self._unsupported("import")

    # --- schema ----------------------------------------------------------

    def _refuse_newer(self, newest: int, known: int) -> None:
        """Refuse a schema a newer version wrote, before anything is written."""
        if newest > known:
            raise Corrupt(
                f"{self.describe()}: written by a newer roteiro-memory (schema version "
                f"{newest}; this version knows up to {known}); upgrade roteiro-memory to open it"
            )

    def _apply(
        self,
        conn: Any,
        migrations: Iterable[tuple[int, str, str]],
        builds: dict[int, Any],
        steps: dict[int, Any],
    ) -> None:
        """Apply ``migrations`` in order, each recorded in ``schema_migrations``
        in the transaction that applies them all, then derive what ``builds``
        says of the newest of them that has a build: a build derives the
        whole term index in this version's layout, which an older build's
        tables may no longer have.  Then each pending one's ``steps``, in
        order: a step changes an index in place, and one a build made now
        is already as the step leaves it."""
        record = cols.insert("schema_migrations", cols.SCHEMA_MIGRATIONS, self.dialect.mark)
        built = None
        pending = []
        for version, name, sql in migrations:
            for statement in statements(sql):
                conn.execute(statement)
            conn.execute(record, (version, name))
            if version in builds:
                built = version
            if version in steps:
                pending.append(version)
        if built is not None:
            builds[built](conn)
        for version in pending:
            steps[version](conn)

    # --- episodic tier ---------------------------------------------------

    def _counts(self, conn: Any) -> tuple[int, int]:
        total, superseded = conn.execute(self.dialect.counts).fetchone()
        return int(total) - int(superseded), int(superseded)

    @staticmethod
    def _generation(conn: Any) -> int:
        return int(conn.execute(cols.GENERATION).fetchone()[0])

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
        from roteiro_memory.stores.sql import writes as written

        self._usable()
        batch = arguments.items(writes, "writes", "MemoryWrite")
        if not batch:
            return []
        d = self.dialect
        with self._atomic() as conn:
            ids = written.insert(conn, d, batch, self._reserve_ids(conn, len(batch)))
            # Read back before COMMIT: a record a read would refuse is never
            # committed, so an error always means nothing was written (each
            # row is judged as a read judges it; no record is built).
            sql = f"SELECT {RECORD_COLS}{record_from()} WHERE m.id BETWEEN {d.mark} AND {d.mark}"
            for row in conn.execute(sql, (ids[0], ids[-1])):
                judge_record(d, row)
        return ids

    def get(self, id: int, *, graph: Graph | None = None) -> MemoryRecord | None:
        self._usable()
        if not sem.fits_int64(arguments.integer(id, "id")):
            return None
        d = self.dialect
        params: dict[str, object] = {"id": id}
        with self._statement() as conn:
            nodes = d.node_relation(conn, graph, params)
            sql = f"SELECT {RECORD_COLS}{record_from(nodes)} WHERE m.id = {d.named('id')}"
            row = conn.execute(sql, params).fetchone()
        return record_from_row(d, row) if row is not None else None

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
        d = self.dialect
        where, params = sqlexpr.record_filters(
            d, scope, kind, anchor_key, include_superseded, anchors
        )
        with self._reading() as conn:
            sql = f"SELECT {RECORD_COLS}{record_from(d.node_relation(conn, graph, params))}"
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += " ORDER BY m.id DESC"
            keep = sem.effective_limit(limit)
            if keep is not None:
                sql += f" LIMIT {d.named('limit')}"
                params["limit"] = keep
            records = [record_from_row(d, row) for row in conn.execute(sql, params)]
            live, superseded = self._counts(conn)
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
        d = self.dialect
        parsed = Decay.parse(decay)
        where, params = sqlexpr.record_filters(d, scope, kind, anchor_key, False, anchors)
        tokens = sem.query_tokens(query)
        score, score_params = sqlexpr.score_expr(
            parsed, d, confidence="m.confidence", id_column="m.id", **MEMORY_ANCHOR
        )
        params.update(score_params)
        keep = sem.effective_limit(limit)
        with self._reading() as conn:
            if tokens:
                # Every token a substring of the record's search text.
                relation = d.token_relation(conn, tokens, params)
                where.append(
                    f"NOT EXISTS (SELECT 1 FROM {relation}"
                    f" WHERE {d.position('t.token', 'm.search')} = 0)"
                )
            if applicable_only:
                where.append(f"({sqlexpr.applies_expr(**MEMORY_ANCHOR)}) = 1")
            if stale_only:
                where.append(f"({sqlexpr.applies_expr(**MEMORY_ANCHOR)}) = 0")
            nodes = d.node_relation(conn, graph, params)
            generation = self._generation(conn)
            params["generation"] = generation

            def bounds(size: int) -> builtins.list[tuple[int, float, float]]:
                sql = ranking.recall_bounds_sql(
                    score, where, nodes, d.named("size"), hint=d.confidence_hint
                )
                rows: builtins.list[tuple[int, float, float]]
                rows = conn.execute(sql, {**params, "size": size}).fetchall()
                return rows

            results = None
            if keep is not None and parsed.mode == "none" and not stale_only:
                # With decay, age decides more than confidence, and of stale
                # records the anchor penalty does: the bound rarely stops
                # the read, and the full pass is then the faster.
                ids = ranking.top_scored(bounds, keep, ranking.EARLY_STOP_ROWS)
                if ids is not None:
                    results = sorted(
                        (
                            Recalled.rank(record, generation, parsed)
                            for record in self._records(conn, nodes, params, ids)
                        ),
                        key=lambda r: sem.rank_key(r.score, r.record.id),
                    )
            if results is None:
                # No limit, or the bound did not decide: one ranked pass.
                if keep is not None:
                    params["limit"] = keep
                limited = None if keep is None else d.named("limit")
                sql = ranking.recall_sql(score, where, nodes, limited)
                rows = conn.execute(sql, params).fetchall()
                results = [Recalled.rank(record_from_row(d, r), generation, parsed) for r in rows]
            live, superseded = self._counts(conn)
        return Recall(
            generation=generation, decay=parsed, results=results, live=live, superseded=superseded
        )

    def _records(
        self,
        conn: Any,
        nodes: str,
        params: dict[str, object],
        ids: Sequence[int],
        where: Sequence[str] = (),
    ) -> builtins.list[MemoryRecord]:
        """The records ``ids`` meeting every condition of ``where``, in no
        particular order (``params`` binds the node relation and ``where``)."""
        d = self.dialect
        out: builtins.list[MemoryRecord] = []
        for chunk in d.chunks(ids):
            bound = dict(params)
            ids_in = d.in_set("m.id", "ids", chunk, bound)
            sql = ranking.records_sql(nodes, ids_in, where, d.by_id_hint)
            out.extend(record_from_row(d, row) for row in conn.execute(sql, bound))
        return out

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
        from roteiro_memory import lexical
        from roteiro_memory.stores.sql import index, lexsearch

        d = self.dialect
        # A query beyond the terms cap is BadRequest, which wins over a bad
        # decay or kind [P-bad-request-first]; then decay before kind.
        terms = lexical.query_terms(query)
        parsed = Decay.parse(decay)
        where, params = sqlexpr.record_filters(d, scope, kind, anchor_key, False, anchors)
        if applicable_only:
            where.append(f"({sqlexpr.applies_expr(**MEMORY_ANCHOR)}) = 1")
        keep = sem.effective_limit(limit)
        with self._reading() as conn:
            nodes = d.node_relation(conn, graph, params)
            generation, stats = index.read_stats(conn)
            results: builtins.list[Recalled] = []
            if terms and stats.live:
                plan = lexsearch.plan(conn, d, terms, stats)

                parts, parts_params = sqlexpr.evidence_parts_expr(
                    parsed, d, confidence="m.confidence", id_column="m.id", **MEMORY_ANCHOR
                )
                params.update(parts_params, generation=generation)
                # The records of the best, as fetched, scored again by the one rule.
                results = sorted(
                    (
                        Recalled.found(record_from_row(d, row), generation, parsed, value)
                        for row, value in lexsearch.best(
                            conn, d, plan, keep, parts, nodes, where, params
                        )
                    ),
                    key=lambda r: sem.rank_key(r.score, r.record.id),
                )
        return Recall(
            generation=generation,
            decay=parsed,
            results=results,
            live=stats.live,
            superseded=stats.records - stats.live,
            schema=lexical.SEARCH_SCHEMA,
            terms=builtins.list(terms),
        )

    def forget(self, id: int) -> MemoryForgotten:
        from roteiro_memory.stores.sql import writes

        arguments.integer(id, "id")
        with self._atomic() as conn:
            self._lock_records(conn)
            restored = writes.forget(conn, self.dialect, id)
        return MemoryForgotten(id=id, restored=restored)

    # --- cache tier ------------------------------------------------------

    def cache_put(self, key: str, fingerprint: str, json: str, anchor: str | None = None) -> None:
        from roteiro_memory.stores.sql import cache

        sem.check_anchor(anchor)
        size = eviction.cache_entry_bytes(key, fingerprint, json)
        d = self.dialect
        with self._atomic() as conn:
            cache.put(conn, d, key, fingerprint, json, anchor, size)
            # Read back before COMMIT, as a record write does.
            entry_from_row(d, self._entry_row(conn, key))

    def _entry_row(self, conn: Any, key: str) -> Any:
        d = self.dialect
        sql = f"SELECT {CACHE_COLS}{CACHE_FROM} WHERE c.key = {d.mark}"
        return conn.execute(sql, (d.text(key),)).fetchone()

    def cache_get(self, key: str) -> CacheEntry | None:
        from roteiro_memory.stores.sql import cache

        self._usable()
        arguments.text(key, "cache key")
        with self._atomic() as conn:
            self._lock_clock(conn)
            row = self._entry_row(conn, key)
            if row is None:
                return None  # a miss records no access and spends no tick
            entry = entry_from_row(self.dialect, row)  # refused before its hit is counted
            cache.touch(conn, self.dialect, key)
        return entry

    def cache_entries(self) -> builtins.list[CacheEntry]:
        with self._statement() as conn:
            rows = conn.execute(f"SELECT {CACHE_COLS}{CACHE_FROM} ORDER BY c.key").fetchall()
        return [entry_from_row(self.dialect, row) for row in rows]

    def sweep_rows(self) -> builtins.list[SweepRow]:
        """Every entry as the sweep reads it: same table, join and order as
        :meth:`cache_entries`, without the payload."""
        with self._statement() as conn:
            return self._sweep_rows(conn)

    def _sweep_rows(self, conn: Any) -> builtins.list[SweepRow]:
        rows = conn.execute(f"SELECT {SWEEP_COLS}{CACHE_FROM} ORDER BY c.key").fetchall()
        return [SweepRow(self.dialect, row) for row in rows]

    def cache_forget(self, key: str) -> bool:
        self._usable()
        arguments.text(key, "cache key")
        d = self.dialect
        with self._atomic() as conn:
            self._lock_clock(conn)
            sql = f"DELETE FROM agent_cache WHERE key = {d.mark}"
            return bool(conn.execute(sql, (d.text(key),)).rowcount > 0)

    def cache_stats(self, budget_bytes: int) -> CacheStats:
        from roteiro_memory.stores.sql import cache

        arguments.count(budget_bytes, "budget_bytes")
        with self._reading() as conn:
            return cache.stats(conn, self.dialect, budget_bytes)

    def cache_sweep(self, budget_bytes: int) -> CacheSweep:
        from roteiro_memory.stores.sql import cache

        arguments.count(budget_bytes, "budget_bytes")
        with self._atomic() as conn:
            self._lock_cache(conn)
            return cache.sweep(conn, self.dialect, budget_bytes, self._sweep_rows)

    # --- graph -----------------------------------------------------------

    def put_nodes(self, nodes: Iterable[GraphNode]) -> None:
        self._usable()
        rows = graph_sql.rows(self.dialect, check_graph(nodes))
        if rows:
            with self._atomic() as conn:
                graph_sql.upsert(conn, self.dialect, rows)

    def remove_nodes(self, keys: Iterable[str]) -> None:
        self._usable()
        doomed = sorted({self.dialect.text(key) for key in keys})
        if doomed:
            with self._atomic() as conn:
                self.dialect.delete_keys(conn, "nodes", "key", doomed)

    def set_tree(self, tree: str | None) -> None:
        check_graph((), tree)
        with self._atomic() as conn:
            graph_sql.set_tree(conn, self.dialect, tree)

    def tree(self) -> str | None:
        with self._statement() as conn:
            row = conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
        return self.dialect.read(row[0]) if row else None

    def rebuild(self) -> None:
        with self._atomic() as conn:
            conn.execute("DELETE FROM nodes")

    def export_graph(self) -> builtins.list[GraphNode]:
        with self._statement() as conn:
            return graph_sql.read(conn, self.dialect)

    def find_nodes(
        self, keys: Iterable[str] = (), blobs: Iterable[str] = (), prefixes: Iterable[str] = ()
    ) -> builtins.list[GraphNode]:
        found = [builtins.list(keys), builtins.list(blobs), builtins.list(prefixes)]
        with self._reading() as conn:  # in the runs the engine binds, one snapshot
            return graph_sql.read(conn, self.dialect, *found)

    def count_nodes(self, prefixes: tuple[str, ...]) -> int:
        with self._statement() as conn:
            return graph_sql.count(conn, self.dialect, prefixes)

    def anchor_keys(self) -> builtins.list[str]:
        with self._statement() as conn:
            return graph_sql.anchored(conn, self.dialect)

    def replace_graph(self, nodes: Iterable[GraphNode], tree: str | None) -> tuple[int, int]:
        # Compared and written under the write lock: a sync racing another
        # (two worktrees of one clone, two machines) never leaves a mixed graph.
        new = graph_sql.rows(self.dialect, check_graph(nodes, tree))
        with self._atomic() as conn:
            return graph_sql.replace(conn, self.dialect, new, tree)

    # --- store -----------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        from roteiro_memory.stores.sql import index

        d = self.dialect
        out: dict[str, Any] = {}
        with self._reading() as conn:
            for table, columns, order in (*cols.SNAPSHOT_TABLES, self.ID_TABLE):
                names = [c.strip() for c in columns.split(",")]
                rows = conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}").fetchall()
                out[table] = [
                    {name: d.plain(value) for name, value in zip(names, row, strict=True)}
                    for row in rows
                ]
            # What the index holds, not how: the same records give the same
            # snapshot whether their postings are recent or merged.
            out["memory_postings"] = index.contents(conn, d)
        return out

    def reset(self) -> None:
        from roteiro_memory.stores.sql import writes

        with self._atomic() as conn:
            self._lock_records(conn)
            self._lock_clock(conn)
            writes.reset(conn, self.dialect)
            self._reset_ids(conn)

    # --- integrity and transfer -----------------------------------------

    def failure(self, error: Exception) -> RoteiroError:
        # Loaded when something failed, not on every start-up.
        from roteiro_memory.stores.failures import unexpected

        return unexpected(error)

    def check(self) -> builtins.list[Finding]:
        with self._reading() as conn:
            return self._check(conn)

    def export_lines(self) -> Iterator[str]:
        with self._reading() as conn:
            lines = builtins.list(self._export(conn))
        yield from lines

    def import_export(self, parsed: Export) -> dict[str, int]:
        from roteiro_memory.transfer import checked_export

        checked = checked_export(parsed)
        with self._atomic() as conn:
            return self._import(conn, checked)

    @property
    def connection(self) -> Any:
        """The underlying connection, for maintenance and tests."""
        return self._conn
