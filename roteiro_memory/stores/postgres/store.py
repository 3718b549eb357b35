"""The shared store on PostgreSQL: the same thin layer over the semantics.

Where one clone's SQLite file is outgrown -- several agents and people sharing
what was learned, across machines -- the store lives in a schema of a
PostgreSQL database.  It needs the optional driver::

    pip install 'roteiro-memory[postgres]'

and psycopg is imported only when a PostgreSQL store is opened.

Naming a store.  ``PostgresStore(dsn, schema="roteiro")`` keeps every table in
the schema ``schema`` (created on first open), so several stores, and parallel
test runs, share one database without meeting.  Where a store is named by one
string (``--db``, ``postgres:DSN``), the schema rides in the DSN as a
``schema`` parameter, which is taken out before the DSN reaches libpq:
``postgresql://host/db?schema=team_a`` or ``host=... dbname=db schema=team_a``.

Concurrency.  Every write is one transaction.  Record writes and ``forget``
take the row lock of the id counter first, so they run one at a time, check
supersessions against what is committed, and commit ids in increasing order.
Every cache-tier write takes the clock row's lock first, so two accesses never
share a tick and a sweep, which also locks the cache table, sees no entry come
or go while it decides.  Reads run in one read-only repeatable-read
transaction, so their several queries see one state.

Ranking, filtering and limits run in SQL, rendered by
:mod:`roteiro_memory.stores.sql.expressions` (guarded there against PostgreSQL's refusal to
round a product to zero).  The sweep reads narrow columns, in eviction order,
and decides with the semantics functions, like the SQLite backend.  Text is
stored as UTF-8 ``bytea`` (see :mod:`roteiro_memory.stores.postgres.migrations` for why).
"""

from __future__ import annotations

import builtins
import contextlib
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from roteiro_memory import lexical
from roteiro_memory import semantics as sem
from roteiro_memory.check import Finding
from roteiro_memory.errors import (
    Corrupt,
    InvalidStoreName,
    NotFound,
    RoteiroError,
    StoreUnavailable,
    excerpt,
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
from roteiro_memory.semantics import DEFAULT_SCOPE, Decay, MemoryKind
from roteiro_memory.store import STORE_CAPABILITIES, Graph, MemoryWrite, Store
from roteiro_memory.stores.postgres import check as pg_check
from roteiro_memory.stores.postgres import link
from roteiro_memory.stores.postgres import transfer as pg_transfer
from roteiro_memory.stores.postgres.dsn import redact, split_schema
from roteiro_memory.stores.postgres.failures import from_psycopg, is_psycopg_error
from roteiro_memory.stores.postgres.migrations import BUILDS, MIGRATIONS, NOW_TEXT, SCHEMA_VERSION
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sql import index, ranking
from roteiro_memory.stores.sql.shape import CACHE_APPLIES as _CACHE_APPLIES
from roteiro_memory.stores.sql.shape import CACHE_COLS as CACHE_COLS
from roteiro_memory.stores.sql.shape import CACHE_FROM as CACHE_FROM
from roteiro_memory.stores.sql.shape import (
    CACHE_NAMES,
    RECALL_BOUND,
    RECORD_NAMES,
    SNAPSHOT_TABLES,
    TextSets,
    recall_bounds_sql,
    recall_sql,
    record_filters,
    records_sql,
    search_sql,
)
from roteiro_memory.stores.sql.shape import MEMORY_ANCHOR as _MEMORY_ANCHOR
from roteiro_memory.stores.sql.shape import RECORD_COLS as RECORD_COLS
from roteiro_memory.stores.sql.shape import RECORD_FROM as RECORD_FROM
from roteiro_memory.stores.sql.shape import record_from as _record_from
from roteiro_memory.transfer import Export

if TYPE_CHECKING:
    import psycopg

    from roteiro_memory.store import KindFilter

__all__ = ["DEFAULT_SCHEMA", "INSTALL_HINT", "PostgresStore", "split_schema"]

SETS = TextSets(
    member=lambda column, param: f"{column} = ANY({param}::bytea[])",
    prefixed=lambda column, param: (
        f"EXISTS (SELECT 1 FROM unnest({param}::bytea[]) AS p(v)"
        f" WHERE substring({column} FROM 1 FOR length(p.v)) = p.v)"
    ),
    bind=lambda values: [_b(value) for value in values],
)
"""Sets of text bound as one ``bytea[]`` (text is stored as UTF-8 bytes, and a
prefix of a string's bytes is the bytes of its prefix)."""


DEFAULT_SCHEMA = "roteiro"
"""The schema a store lives in when its name carries none."""

INSTALL_HINT = "pip install 'roteiro-memory[postgres]'"

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_LOCK_NAMESPACE = "roteiro-memory:"

GRAPH_NODES = "unnest(%(graph_keys)s::bytea[], %(graph_blobs)s::bytea[]) AS g(key, blob)"
"""Where a read given a ``graph`` resolves anchors: the mapping bound as two
arrays and joined as a derived table, so the read writes nothing at all."""
SWEEP_COLS = "c.key, c.bytes, c.generation, c.last_used, (" + _CACHE_APPLIES + ") AS applies"
"""What the sweep reads: every column eviction is decided by, and no payload.
Whether the anchor applies is the anchor rule rendered in SQL, so a row is
four integers and a key rather than two blobs and two keys more."""
SWEEP_ORDER = " ORDER BY " + sqlexpr.eviction_order(
    {"applies": "applies", "last_used": "c.last_used", "key": "c.key"}
)
"""The eviction order over :data:`SWEEP_COLS` (its ``applies`` alias), for
:meth:`PostgresStore.sweep_rows`; bytes keys sort as their strings do."""
_SWEEP_PINNED = sqlexpr.pinned_expr(
    sqlexpr.POSTGRES, applies=_CACHE_APPLIES, key="c.key", generation="c.generation"
)
_SWEEP_EVICTION_ORDER = sqlexpr.eviction_order(
    {"applies": _CACHE_APPLIES, "last_used": "c.last_used", "key": "c.key"}
)
_SWEEP_MRU_ORDER = sqlexpr.most_recently_used({"last_used": "c.last_used", "key": "c.key"})

_STAMP = NOW_TEXT
_CACHE_RETURNED = cols.select_list(cols.CACHE_READ, "o") + ", n.key, n.blob"
"""What ``cache_get`` hands back: :data:`CACHE_COLS` of the entry as it was."""


def _node_relation(graph: Graph | None, params: dict[str, object]) -> str:
    """The relation anchors are resolved against: ``nodes``, or ``graph``
    bound into ``params``."""
    if graph is None:
        return "nodes"
    params["graph_keys"] = [_b(key) for key in graph]
    params["graph_blobs"] = [_ob(blob) for blob in graph.values()]
    return f"(SELECT key, blob FROM {GRAPH_NODES})"


def _search_terms(
    terms: Sequence[str], corpus: lexical.CorpusStats, params: dict[str, object]
) -> tuple[str, str]:
    """The per-posting weight and the term condition of a search over
    ``terms``, binding each term and its IDF into ``params``."""
    real = sqlexpr.POSTGRES.real
    cases = []
    for number, term in enumerate(terms):
        params[f"term{number}"] = _b(term)
        params[f"idf{number}"] = lexical.idf(corpus.document_frequency[term], corpus.documents)
        cases.append(f"WHEN %(term{number})s THEN CAST(%(idf{number})s AS {real})")
    params["average_length"] = corpus.average_length
    weight = sqlexpr.term_weight_expr(
        sqlexpr.POSTGRES,
        tf="t.tf",
        length="t.length",
        idf=f"(CASE t.term {' '.join(cases)} END)",
        average_length=f"CAST(%(average_length)s AS {real})",
    )
    params["terms"] = [_b(term) for term in terms]
    return weight, "t.term = ANY(%(terms)s)"


def _check_schema_name(schema: str) -> str:
    if not _SCHEMA_NAME.fullmatch(schema):
        raise InvalidStoreName(
            f"invalid PostgreSQL schema name {excerpt(schema)}: expected a letter or underscore "
            "followed by letters, digits or underscores, at most 63 characters"
        )
    return schema


def _b(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _ob(text: str | None) -> bytes | None:
    return None if text is None else _b(text)


def _t(raw: bytes | None) -> str | None:
    return None if raw is None else _s(raw)


def _s(raw: bytes) -> str:
    """Stored UTF-8 as text; bytes this version never writes are Corrupt."""
    try:
        return bytes(raw).decode("utf-8", "surrogatepass")
    except UnicodeDecodeError as error:
        raise Corrupt(
            f"a stored text value is not UTF-8 ({error.reason} at byte {error.start}); "
            "run `roteiro-memory check` on the store"
        ) from None


def _record_from_row(raw: Sequence[Any]) -> MemoryRecord:
    row = cols.decode(RECORD_NAMES, raw)
    try:
        kind = sem.parse_kind(row["kind"])
    except ValueError as error:
        raise Corrupt(f"agent_memory row {row['id']}: {error}") from None
    anchor_key, anchor_blob = _t(row["anchor_key"]), _t(row["anchor_blob"])
    return MemoryRecord(
        id=row["id"],
        scope=_s(row["scope"]),
        kind=kind,
        anchor=(
            MemoryAnchor(anchor_key, anchor_blob, _t(row["anchor_path"]))
            if anchor_key is not None
            else None
        ),
        anchor_state=sem.resolve_anchor(
            anchor_key, anchor_blob, row["node_key"] is not None, _t(row["node_blob"])
        ),
        body=_s(row["body"]),
        confidence=row["confidence"],
        tree=_t(row["tree"]),
        created_at=row["created_at"],
        superseded_by=row["superseded_by"],
        superseded_at=row["superseded_at"],
    )


def _entry_from_row(raw: Sequence[Any]) -> CacheEntry:
    row = cols.decode(CACHE_NAMES, raw)
    anchor = _t(row["anchor_key"])
    return CacheEntry(
        key=_s(row["key"]),
        fingerprint=_s(row["fingerprint"]),
        json=_s(row["json"]),
        bytes=row["bytes"],
        generation=row["generation"],
        last_used=row["last_used"],
        hits=row["hits"],
        anchor=anchor,
        anchor_state=sem.resolve_anchor(
            anchor, _t(row["anchor_blob"]), row["node_key"] is not None, _t(row["node_blob"])
        ),
    )


class PostgresStore(Store):
    """The two-tier store in one schema of a PostgreSQL database."""

    name = "postgres"
    capabilities = STORE_CAPABILITIES

    def __init__(self, dsn: str, schema: str | None = None) -> None:
        self._given = dsn  # what messages are redacted against, with self.dsn
        stripped, named = split_schema(dsn)
        if schema is not None and named is not None and schema != named:
            raise InvalidStoreName(
                f"the DSN names schema {named!r} but schema {schema!r} was also given; name it once"
            )
        self.dsn = stripped
        chosen = schema if schema is not None else named
        if chosen == "":
            raise InvalidStoreName(
                "the PostgreSQL schema parameter is empty (schema=): name a schema, e.g. "
                f"?schema={DEFAULT_SCHEMA}, or leave the parameter out for {DEFAULT_SCHEMA!r}"
            )
        self.schema = _check_schema_name(chosen or DEFAULT_SCHEMA)
        self._link = self._open()

    # --- connection and schema -------------------------------------------

    @property
    def _conn(self) -> psycopg.Connection[tuple[Any, ...]]:
        """The connection, replaced first when it was lost (:mod:`.link`);
        while the server is down that fails, and the next call tries again."""
        if link.stale(self._link):
            fresh = self._open()
            self._link.close()
            self._link = fresh
        return self._link

    def failure(self, error: Exception) -> RoteiroError:
        if is_psycopg_error(error):
            return from_psycopg(error)
        return super().failure(error)

    def describe(self) -> str:
        """Where the store lives, without any password."""
        import psycopg.conninfo

        try:
            info = psycopg.conninfo.conninfo_to_dict(self.dsn)
        except psycopg.ProgrammingError:
            return f"PostgreSQL schema {self.schema!r}"
        where = " ".join(
            f"{name}={info[name]}" for name in ("host", "port", "dbname", "user") if name in info
        )
        return f"PostgreSQL {where or 'default connection'} schema {self.schema!r}"

    def _open(self) -> psycopg.Connection[tuple[Any, ...]]:
        try:
            import psycopg
        except ImportError:
            raise StoreUnavailable(
                "the PostgreSQL backend needs the psycopg driver, which is not installed; "
                f"install it with: {INSTALL_HINT}"
            ) from None
        link.quiet_driver()
        try:
            conn = psycopg.connect(self.dsn, autocommit=True)
        except psycopg.Error as error:
            said = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            said = redact(said, self.dsn, self._given)
            if isinstance(error, psycopg.ProgrammingError):  # libpq cannot parse the DSN
                raise InvalidStoreName(
                    f"the PostgreSQL DSN is malformed ({said}); expected "
                    "postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DBNAME[?schema=NAME]"
                ) from None
            raise StoreUnavailable(f"{self.describe()}: cannot connect ({said})") from None
        try:
            conn.execute(f"SET search_path TO {self._ident()}")
            self._migrate(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _ident(self) -> str:
        # The name matched _SCHEMA_NAME; quoting keeps its case as written.
        return '"' + self.schema + '"'

    def _migrate(self, conn: psycopg.Connection[tuple[Any, ...]]) -> None:
        """Create or upgrade the schema, one opener at a time.

        The advisory lock is per schema name, so concurrent first opens of one
        store wait for each other and opens of different stores do not.  Only
        what is missing is created, so opening an up-to-date store needs no
        right to create anything: a shared server's users can be given just
        the use of the schema and its tables.
        """
        with _transaction(conn):
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (_LOCK_NAMESPACE + self.schema,)
            )
            exists = conn.execute(
                "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
            ).fetchone()
            if exists is None:
                conn.execute(f"CREATE SCHEMA {self._ident()}")
            tables = {
                row[0]
                for row in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                    (self.schema,),
                )
            }
            if tables and "schema_migrations" not in tables:
                raise Corrupt(
                    f"{self.describe()}: the schema holds tables but is not a roteiro-memory "
                    "store (it has no schema_migrations table); refusing to change it"
                )
            if "schema_migrations" not in tables:
                conn.execute(
                    "CREATE TABLE schema_migrations ("
                    " version integer PRIMARY KEY, name text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                )
            applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
            newest = max(applied, default=0)
            if newest > SCHEMA_VERSION:
                raise Corrupt(
                    f"{self.describe()}: written by a newer roteiro-memory (schema version "
                    f"{newest}; this version knows up to {SCHEMA_VERSION}); upgrade "
                    "roteiro-memory to open it"
                )
            for version, name, sql in MIGRATIONS:
                if version in applied:
                    continue
                for statement in sql.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if version in BUILDS:
                    BUILDS[version](conn)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                    (version, name),
                )

    @contextlib.contextmanager
    def _atomic(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """One read-committed write transaction; its locks are taken by the
        operation's first statement, so it sees what committed before."""
        conn = self._conn
        with _transaction(conn):
            yield conn

    @contextlib.contextmanager
    def _reading(self) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
        """One read-only transaction on one snapshot."""
        conn = self._conn
        with _transaction(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", writes=False):
            yield conn

    # --- episodic tier ---------------------------------------------------

    @staticmethod
    def _counts(conn: psycopg.Connection[tuple[Any, ...]]) -> tuple[int, int]:
        row = conn.execute("SELECT COUNT(*), COUNT(superseded_by) FROM agent_memory").fetchone()
        assert row is not None
        total, superseded = int(row[0]), int(row[1])
        return total - superseded, superseded

    @staticmethod
    def _generation(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
        return _one(conn, "SELECT COALESCE(MAX(id), 0) FROM agent_memory")

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
        batch = list(writes)
        if not batch:
            return []
        with self._atomic() as conn:
            # Reserving the ids takes the counter's row lock, which orders
            # record writers: the next one waits here until this one commits,
            # so ids commit in increasing order.  A refusal below rolls the
            # reservation back with everything else.
            row = conn.execute(
                "UPDATE agent_memory_ids SET last_id = last_id + %(n)s"
                " WHERE id = 0 AND last_id <= %(room)s"
                " RETURNING last_id - %(n)s, (SELECT tree FROM sync_state WHERE id = 0)",
                {"n": len(batch), "room": sem.INT64_MAX - len(batch)},
            ).fetchone()
            if row is None:
                counter = conn.execute(
                    "SELECT last_id FROM agent_memory_ids WHERE id = 0"
                ).fetchone()
                if counter is None:
                    raise Corrupt(f"{self.describe()}: the id counter row is missing")
                raise Corrupt(
                    f"{self.describe()}: agent_memory: the id counter is at {counter[0]}, so "
                    f"{len(batch)} more ids would pass the largest 64-bit id {sem.INT64_MAX}; "
                    "this store can take no more records: record into a new store"
                )
            base, tree = int(row[0]), row[1]
            valid = self._check_writes(conn, batch, base)
            evidence = self._anchor_evidence(
                conn, {w.anchor for w in batch if w.anchor is not None}
            )
            ids = list(range(base + 1, base + len(batch) + 1))
            rows = []
            for new_id, write, ok in zip(ids, batch, valid, strict=True):
                blob, path = (
                    evidence.get(write.anchor, (None, None))
                    if write.anchor is not None
                    else (None, None)
                )
                rows.append(
                    (
                        new_id,
                        _b(ok.scope),
                        ok.kind.value,
                        _ob(write.anchor),
                        _ob(blob),
                        _ob(path),
                        _b(ok.body),
                        ok.confidence,
                        tree,
                        _b(sem.search_text(ok.body, write.anchor, path)),
                    )
                )
            insert = (
                "INSERT INTO agent_memory (id, scope, kind, anchor_key, anchor_blob,"
                " anchor_path, body, confidence, tree, search)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            )
            if len(rows) == 1:
                conn.execute(insert, rows[0])
            else:
                with conn.cursor() as cur:
                    cur.executemany(insert, rows)
            pointers = [
                (new_id, write.supersedes)
                for new_id, write in zip(ids, batch, strict=True)
                if write.supersedes is not None
            ]
            if pointers:
                successors, targets = zip(*pointers, strict=True)
                conn.execute(
                    f"UPDATE agent_memory AS m SET superseded_by = v.successor,"
                    f" superseded_at = {_STAMP}"
                    " FROM unnest(%s::bigint[], %s::bigint[]) AS v(successor, target)"
                    " WHERE m.id = v.target",
                    (list(successors), list(targets)),
                )
            postings = [
                (new_id, index.posting(ok.body, write.anchor, _t(row[5])))
                for new_id, write, ok, row in zip(ids, batch, valid, rows, strict=True)
            ]
            index.written(conn, index.POSTGRES, [w.supersedes for w in batch], base, postings)
        return ids

    @staticmethod
    def _check_writes(
        conn: psycopg.Connection[tuple[Any, ...]], batch: Sequence[MemoryWrite], base: int
    ) -> builtins.list[sem.ValidWrite]:
        """:func:`~roteiro_memory.semantics.check_batch` over the stored state
        of the records the batch supersedes."""
        targets = sem.stored_targets(batch, base)
        stored: dict[int, int | None] = {}
        if targets:
            stored.update(
                conn.execute(
                    "SELECT id, superseded_by FROM agent_memory WHERE id = ANY(%s)", (targets,)
                ).fetchall()
            )
        return sem.check_batch(batch, base, stored)

    @staticmethod
    def _anchor_evidence(
        conn: psycopg.Connection[tuple[Any, ...]], keys: set[str]
    ) -> dict[str, tuple[str | None, str | None]]:
        """The blob and path each anchor key's node carries now."""
        if not keys:
            return {}
        return {
            _s(key): (_t(blob), _t(path))
            for key, blob, path in conn.execute(
                "SELECT key, blob, path FROM nodes WHERE key = ANY(%s)",
                ([_b(key) for key in sorted(keys)],),
            )
        }

    def get(self, id: int, *, graph: Graph | None = None) -> MemoryRecord | None:
        if not sem.fits_int64(id):
            return None
        params: dict[str, object] = {"id": id}
        nodes = _node_relation(graph, params)
        # One statement outside a transaction block sees one state.
        with _guarded(self._conn):
            row = self._conn.execute(
                f"SELECT {RECORD_COLS}{_record_from(nodes)} WHERE m.id = %(id)s", params
            ).fetchone()
        return _record_from_row(row) if row is not None else None

    @staticmethod
    def _filters(
        scope: str | None,
        kind: KindFilter,
        anchor_key: str | None,
        include_superseded: bool,
        anchors: sem.AnchorFilter | None = None,
    ) -> tuple[builtins.list[str], dict[str, object]]:
        return record_filters(
            scope,
            kind,
            anchor_key,
            include_superseded,
            placeholder=lambda name: f"%({name})s",
            text=_b,
            sets=SETS,
            anchors=anchors,
        )

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
        where, params = self._filters(scope, kind, anchor_key, include_superseded, anchors)
        sql = f"SELECT {RECORD_COLS}{_record_from(_node_relation(graph, params))}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY m.id DESC"
        keep = sem.effective_limit(limit)
        if keep is not None:
            sql += " LIMIT %(limit)s"
            params["limit"] = keep
        with self._reading() as conn:
            records = [_record_from_row(row) for row in conn.execute(sql, params)]
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
    ) -> Recall:
        parsed = Decay.parse(decay)
        where, params = self._filters(scope, kind, anchor_key, False, anchors)
        nodes = _node_relation(graph, params)
        tokens = sem.query_tokens(query)
        if tokens:
            # One bound array, not one parameter per token: a statement takes
            # at most 65,535 parameters.
            where.append(
                "NOT EXISTS (SELECT 1 FROM unnest(%(tokens)s::bytea[]) AS t(token)"
                " WHERE position(t.token IN m.search) = 0)"
            )
            params["tokens"] = [_b(token) for token in tokens]
        if applicable_only:
            where.append(f"({sqlexpr.applies_expr(**_MEMORY_ANCHOR)}) = 1")
        score, score_params = sqlexpr.score_expr(
            parsed, sqlexpr.POSTGRES, confidence="m.confidence", id_column="m.id", **_MEMORY_ANCHOR
        )
        params.update(score_params)
        keep = sem.effective_limit(limit)
        with self._reading() as conn:
            generation = self._generation(conn)
            params["generation"] = generation

            def bounds(size: int) -> list[tuple[int, float, float]]:
                sql = recall_bounds_sql(score, where, nodes, "%(size)s")
                return conn.execute(sql, {**params, "size": size}).fetchall()

            results = None
            if keep is not None and parsed.mode == "none":
                # With decay, age decides more than confidence and the bound
                # rarely stops the read: the full pass is then the faster.
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
                sql = recall_sql(score, where, nodes, None if keep is None else "%(limit)s")
                rows = conn.execute(sql, params).fetchall()
                results = [Recalled.rank(_record_from_row(row), generation, parsed) for row in rows]
            live, superseded = self._counts(conn)
        return Recall(
            generation=generation, decay=parsed, results=results, live=live, superseded=superseded
        )

    @staticmethod
    def _records(
        conn: psycopg.Connection[tuple[Any, ...]],
        nodes: str,
        params: dict[str, object],
        ids: Sequence[int],
    ) -> builtins.list[MemoryRecord]:
        """The records ``ids``, in no particular order (``params`` binds the
        node relation)."""
        if not ids:
            return []
        sql = records_sql(nodes, "m.id = ANY(%(ids)s)")
        return [_record_from_row(row) for row in conn.execute(sql, {**params, "ids": list(ids)})]

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
        parsed = Decay.parse(decay)
        terms = lexical.query_terms(query)
        where, params = self._filters(scope, kind, anchor_key, False, anchors)
        nodes = _node_relation(graph, params)
        if applicable_only:
            where.append(f"({sqlexpr.applies_expr(**_MEMORY_ANCHOR)}) = 1")
        keep = sem.effective_limit(limit)
        with self._reading() as conn:
            generation = self._generation(conn)
            params["generation"] = generation
            stats = index.read_stats(conn, index.POSTGRES, terms)
            corpus = stats.corpus
            results: builtins.list[Recalled] = []
            if terms and corpus.total_terms:
                weight, term_match = _search_terms(terms, corpus, params)
                floor = f"CAST({ranking.EVIDENCE_FLOOR!r} AS double precision)"
                # Base confidence bounds the evidence (penalty and decay never
                # exceed 1) without joining a node per candidate.
                bound = f"GREATEST({RECALL_BOUND}, {floor})"
                node_join = nodes if applicable_only else None

                def bounds(size: int | None) -> list[tuple[int, float]]:
                    sql = search_sql(weight, bound, term_match, where, node_join, "%(size)s")
                    return conn.execute(sql, {**params, "size": size}).fetchall()

                def exact(ids: Sequence[int]) -> builtins.list[Recalled]:
                    postings = index.read_postings(conn, index.POSTGRES, ids, terms)
                    return index.found(
                        self._records(conn, nodes, params, ids),
                        postings,
                        terms,
                        corpus,
                        generation,
                        parsed,
                    )

                results = ranking.top(
                    bounds, exact, keep, ranking.relevance_stop, ranking.SEARCH_FIRST_READ
                )
        return Recall(
            generation=generation,
            decay=parsed,
            results=results,
            live=corpus.documents,
            superseded=stats.records - corpus.documents,
            schema=lexical.SEARCH_SCHEMA,
            terms=list(terms),
        )

    def forget(self, id: int) -> MemoryForgotten:
        with self._atomic() as conn:
            # Taken like a record write, so a supersession of this record
            # never interleaves with its removal.
            conn.execute("SELECT last_id FROM agent_memory_ids WHERE id = 0 FOR UPDATE")
            if (
                not sem.fits_int64(id)
                or conn.execute("SELECT 1 FROM agent_memory WHERE id = %s", (id,)).fetchone()
                is None
            ):
                raise NotFound(f"no memory record with id {id} to forget")
            live = (
                conn.execute(
                    "SELECT 1 FROM agent_memory WHERE id = %s AND superseded_by IS NULL", (id,)
                ).fetchone()
                is not None
            )
            restored = sorted(
                row[0]
                for row in conn.execute(
                    "UPDATE agent_memory SET superseded_by = NULL, superseded_at = NULL"
                    " WHERE superseded_by = %s RETURNING id",
                    (id,),
                )
            )
            index.forgotten(conn, index.POSTGRES, id, live, restored)
            conn.execute("DELETE FROM agent_memory WHERE id = %s", (id,))
        return MemoryForgotten(id=id, restored=restored)

    # --- cache tier ------------------------------------------------------

    @staticmethod
    def _lock_clock(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
        """Lock the clock row for this transaction; the cache generation."""
        return _one(conn, "SELECT generation FROM agent_cache_clock WHERE id = 0 FOR UPDATE")

    @staticmethod
    def _next_tick(conn: psycopg.Connection[tuple[Any, ...]]) -> int:
        return _one(
            conn, "UPDATE agent_cache_clock SET ticks = ticks + 1 WHERE id = 0 RETURNING ticks"
        )

    def cache_put(self, key: str, fingerprint: str, json: str, anchor: str | None = None) -> None:
        sem.check_anchor(anchor)
        size = sem.cache_entry_bytes(key, fingerprint, json)
        with self._atomic() as conn:
            # Ticking takes the clock row's lock before the table is touched,
            # the order every cache write and the sweep keep.
            row = conn.execute(
                "UPDATE agent_cache_clock SET ticks = ticks + 1 WHERE id = 0"
                " RETURNING ticks, generation"
            ).fetchone()
            if row is None:
                raise Corrupt(f"{self.describe()}: the cache clock row is missing")
            conn.execute(
                "INSERT INTO agent_cache (key, fingerprint, bytes, generation, last_used, hits,"
                " anchor_key, anchor_blob, json) VALUES (%(key)s, %(fingerprint)s, %(bytes)s,"
                " %(generation)s, %(tick)s, 0, %(anchor)s,"
                " (SELECT blob FROM nodes WHERE key = %(anchor)s), %(json)s)"
                " ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint,"
                " bytes = excluded.bytes, generation = excluded.generation,"
                " last_used = excluded.last_used, anchor_key = excluded.anchor_key,"
                " anchor_blob = excluded.anchor_blob, json = excluded.json",
                {
                    "key": _b(key),
                    "fingerprint": _b(fingerprint),
                    "bytes": size,
                    "generation": row[1],
                    "tick": row[0],
                    "anchor": _ob(anchor),
                    "json": _b(json),
                },
            )

    def cache_get(self, key: str) -> CacheEntry | None:
        try:
            with self._atomic() as conn:
                tick = self._next_tick(conn)
                # The self-join hands back the entry as it was before this access.
                row = conn.execute(
                    "UPDATE agent_cache c SET hits = c.hits + 1, last_used = %(tick)s"
                    " FROM agent_cache o LEFT JOIN nodes n ON n.key = o.anchor_key"
                    f" WHERE c.key = %(key)s AND o.key = c.key RETURNING {_CACHE_RETURNED}",
                    {"tick": tick, "key": _b(key)},
                ).fetchone()
                if row is None:
                    raise _Miss
        except _Miss:
            # Rolled back: a miss records no access and spends no tick.
            return None
        return _entry_from_row(row)

    def cache_entries(self) -> builtins.list[CacheEntry]:
        with _guarded(self._conn):
            rows = self._conn.execute(f"SELECT {CACHE_COLS}{CACHE_FROM} ORDER BY c.key").fetchall()
        return [_entry_from_row(row) for row in rows]

    def sweep_rows(self) -> builtins.list[tuple[Any, ...]]:
        """Every entry as the sweep reads it, without the payload, in
        eviction order (:data:`SWEEP_ORDER`)."""
        return self._conn.execute(f"SELECT {SWEEP_COLS}{CACHE_FROM}{SWEEP_ORDER}").fetchall()

    def cache_forget(self, key: str) -> bool:
        with self._atomic() as conn:
            self._lock_clock(conn)
            return conn.execute("DELETE FROM agent_cache WHERE key = %s", (_b(key),)).rowcount > 0

    def cache_stats(self, budget_bytes: int) -> CacheStats:
        with self._reading() as conn:
            row = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM agent_cache"
            ).fetchone()
            assert row is not None
            generation = _one(conn, "SELECT generation FROM agent_cache_clock WHERE id = 0")
        return CacheStats(
            entries=int(row[0]), bytes=int(row[1]), budget_bytes=budget_bytes, generation=generation
        )

    def cache_sweep(self, budget_bytes: int) -> CacheSweep:
        """Decided in SQL from the narrow columns, as the SQLite store does:
        one aggregate for what the tier holds and pins, then the candidates in
        eviction order, taken only until the tier fits."""
        with self._atomic() as conn:
            # The clock row first, as every cache write takes it, then the
            # table, so no put or get can slip in while the sweep decides.
            generation = self._lock_clock(conn)
            conn.execute("LOCK TABLE agent_cache IN SHARE ROW EXCLUSIVE MODE")
            mru = conn.execute(
                f"SELECT c.key FROM agent_cache c ORDER BY {_SWEEP_MRU_ORDER} LIMIT 1"
            ).fetchone()
            params = {"mru": mru[0] if mru else None, "cache_generation": generation}
            totals = conn.execute(
                f"SELECT COUNT(*), COALESCE(SUM(c.bytes), 0), COALESCE(SUM({_SWEEP_PINNED}), 0)"
                f"{CACHE_FROM}",
                params,
            ).fetchone()
            assert totals is not None
            scanned, held, pinned = (int(value) for value in totals)
            candidates = conn.execute(
                f"SELECT c.key, c.bytes{CACHE_FROM} WHERE ({_SWEEP_PINNED}) = 0"
                f" ORDER BY {_SWEEP_EVICTION_ORDER}",
                params,
            ).fetchall()
            evict = sem.evictions_until_fits((size for _, size in candidates), held, budget_bytes)
            doomed = candidates[:evict]
            if doomed:
                conn.execute(
                    "DELETE FROM agent_cache WHERE key = ANY(%s)", ([key for key, _ in doomed],)
                )
            freed = sum(size for _, size in doomed)
            new_generation = _one(
                conn,
                "UPDATE agent_cache_clock SET generation = generation + 1 WHERE id = 0"
                " RETURNING generation",
            )
        retained = held - freed
        return CacheSweep(
            budget_bytes=budget_bytes,
            scanned=scanned,
            pinned=pinned,
            evicted=evict,
            freed_bytes=freed,
            retained_bytes=retained,
            over_budget=retained > budget_bytes,
            generation=new_generation,
        )

    # --- graph -----------------------------------------------------------

    def put_nodes(self, nodes: Iterable[GraphNode]) -> None:
        latest = {n.key: n for n in nodes}
        # In key order, so two writers upserting overlapping nodes lock rows
        # in the same order and cannot deadlock.
        rows = [
            (_b(n.key), _ob(n.kind), _ob(n.name), _ob(n.path), _ob(n.blob))
            for _, n in sorted(latest.items())
        ]
        if not rows:
            return
        with self._atomic() as conn, conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO nodes (key, kind, name, path, blob) VALUES (%s, %s, %s, %s, %s)"
                " ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, name = excluded.name,"
                " path = excluded.path, blob = excluded.blob",
                rows,
            )

    def remove_nodes(self, keys: Iterable[str]) -> None:
        doomed = sorted({_b(key) for key in keys})
        if not doomed:
            return
        with self._atomic() as conn:
            conn.execute("DELETE FROM nodes WHERE key = ANY(%s)", (doomed,))

    def set_tree(self, tree: str | None) -> None:
        with self._atomic() as conn:
            conn.execute(
                "INSERT INTO sync_state (id, tree) VALUES (0, %s)"
                " ON CONFLICT (id) DO UPDATE SET tree = excluded.tree",
                (_ob(tree),),
            )

    def tree(self) -> str | None:
        with _guarded(self._conn):
            row = self._conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
        return _t(row[0]) if row else None

    def rebuild(self) -> None:
        with self._atomic() as conn:
            conn.execute("DELETE FROM nodes")

    def export_graph(self) -> builtins.list[GraphNode]:
        with _guarded(self._conn):
            rows = self._conn.execute(
                "SELECT key, kind, name, path, blob FROM nodes ORDER BY key"
            ).fetchall()
        return [GraphNode(_s(row[0]), *(_t(value) for value in row[1:])) for row in rows]

    # --- store -----------------------------------------------------------

    _SNAPSHOT_TABLES = (*SNAPSHOT_TABLES, ("agent_memory_ids", "id, last_id", "id"))

    def snapshot(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        with self._reading() as conn:
            for table, columns, order in self._SNAPSHOT_TABLES:
                names = [c.strip() for c in columns.split(",")]
                rows: builtins.list[tuple[Any, ...]] = conn.execute(
                    f"SELECT {columns} FROM {table} ORDER BY {order}"
                ).fetchall()
                out[table] = [
                    {
                        name: _s(value) if isinstance(value, bytes) else value
                        for name, value in zip(names, row, strict=True)
                    }
                    for row in rows
                ]
        return out

    def reopen(self) -> None:
        self._link.close()
        self._link = self._open()

    def reset(self) -> None:
        """Empty this store's schema, and nothing outside it."""
        with self._atomic() as conn:
            conn.execute("SELECT last_id FROM agent_memory_ids WHERE id = 0 FOR UPDATE")
            self._lock_clock(conn)
            conn.execute(
                "TRUNCATE memory_terms, memory_term_df, agent_memory, agent_cache,"
                " nodes, sync_state"
            )
            index.clear(conn)
            conn.execute("UPDATE agent_cache_clock SET ticks = 0, generation = 0")
            conn.execute("UPDATE agent_memory_ids SET last_id = 0")

    # --- integrity and transfer -----------------------------------------

    def check(self) -> builtins.list[Finding]:
        with self._reading() as conn:
            return pg_check.check_connection(conn)

    def export_lines(self) -> Iterator[str]:
        with self._reading() as conn:
            lines = builtins.list(pg_transfer.export_lines(conn))
        yield from lines

    def import_export(self, parsed: Export) -> dict[str, int]:
        with self._atomic() as conn:
            return pg_transfer.import_export(conn, parsed)

    def drop(self) -> None:
        """Remove this store's schema and everything in it, then close."""
        self._conn.execute(f"DROP SCHEMA IF EXISTS {self._ident()} CASCADE")
        self._conn.close()

    def close(self) -> None:
        self._link.close()

    @property
    def connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        """The underlying connection, for maintenance and tests (as it is:
        one the server has ended is replaced by the next call, not here)."""
        return self._link


class _Miss(Exception):
    """Raised inside a transaction to roll it back when a key is absent."""


def _one(conn: psycopg.Connection[tuple[Any, ...]], sql: str) -> int:
    """The single integer a statement returns."""
    row = conn.execute(sql).fetchone()
    if row is None:
        raise Corrupt(f"expected one row from {sql!r} and found none; the store is damaged")
    return int(row[0])


@contextlib.contextmanager
def _transaction(
    conn: psycopg.Connection[tuple[Any, ...]], begin: str = "BEGIN", *, writes: bool = True
) -> Iterator[None]:
    """Run the body in one transaction: committed if it returns, rolled back
    if it (or the commit) raises.  The rollback runs only while the server
    still holds a transaction for it, and a rollback that fails anyway never
    replaces the error that caused it; a lost connection is reported as
    :class:`StoreUnavailable`, the original as its cause -- lost while a
    ``writes`` transaction's commit was on its way, as a write that may or
    may not have been stored (:func:`.link.commit_unknown`)."""
    with _guarded(conn):
        conn.execute(begin)
        try:
            yield
        except BaseException as error:
            _rollback(conn, error)
            raise
        try:
            conn.execute("COMMIT")
        except BaseException as error:
            if conn.broken and writes:
                raise link.commit_unknown(error) from error
            _rollback(conn, error)
            raise


def _rollback(conn: psycopg.Connection[tuple[Any, ...]], cause: BaseException) -> None:
    import psycopg.pq

    if conn.closed or conn.broken:
        return  # the server ended the transaction with the connection
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        return  # no transaction is open: nothing to roll back
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error as failed:
        cause.add_note(f"(and the rollback that followed failed too: {failed})")


@contextlib.contextmanager
def _guarded(conn: psycopg.Connection[tuple[Any, ...]]) -> Iterator[None]:
    """Report a lost connection as :class:`StoreUnavailable`, so a caller (the
    protocol server, say) sees one of this package's errors; the driver's
    error is kept as its cause."""
    import psycopg

    try:
        yield
    except psycopg.OperationalError as error:
        if conn.broken or conn.closed:
            raise link.lost(error) from error
        raise
