"""Everything the benchmark knows about PostgreSQL, in one place.

The same methods as ``sqlite_backend``.  A store's locator is a DSN naming a
database of its own on the server (``roteiro_bench_<label>``), so ``clone``
is ``CREATE DATABASE ... TEMPLATE`` and ``discard`` drops the database.  The
floors are the plain queries a measurement is compared with, written against
the PostgreSQL schema: fetching every live row's ranking inputs, reading
the sweep's columns and deleting the same keys in one transaction, and the
term index queried by hand for the search arm (``bench/search.py``).  A store
kept between runs (``keep``) is a database of its own too, named by its label
and the schema version.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import psycopg
from psycopg import sql
from workload import CacheRow

from roteiro_memory.semantics import AnchorState
from roteiro_memory.stores.postgres.migrations import SCHEMA_VERSION
from roteiro_memory.stores.postgres.store import PostgresStore
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sql.cache import APPLIES
from roteiro_memory.stores.sql.columns import CACHE_FROM
from roteiro_memory.stores.sql.dialects import POSTGRES

__all__ = ["PostgresBackend"]

RECALL_FLOOR = (
    "SELECT m.id, m.confidence, m.anchor_key, m.anchor_blob, n.blob"
    " FROM agent_memory m LEFT JOIN nodes n ON n.key = m.anchor_key"
    " WHERE m.superseded_by IS NULL"
)
SWEEP_FLOOR_READ = (
    f"SELECT c.key, c.bytes, c.generation, c.last_used, ({APPLIES}) AS applies{CACHE_FROM}"
)
"""The sweep's narrow columns, whether the anchor applies decided by the server."""
WRITTEN_COLS = (
    "id, scope, kind, anchor_key, anchor_blob, anchor_path, body, confidence, tree, search"
)
INSERT_FLOOR = (
    f"INSERT INTO agent_memory ({WRITTEN_COLS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
INDEX_WRITTEN = (
    ("memory_members", "cell, segment, ids, lengths", "cell, segment"),
    ("memory_segments", "term, cell, segment, postings", "term, cell, segment"),
    ("memory_cells", "term, cell, postings, max_tf, tail", "term, cell"),
    ("memory_recent", "record_id, cell, length, terms", "record_id"),
)
"""The term index rows ``record_many`` writes beside each record, by table:
the floor inserts them too, so it does all the writing ``record_many`` does."""
STATS_WRITTEN = "records, live, live_terms, tokenizer"
_PREFIX = "roteiro_bench_"


def _text(value: Any) -> Any:
    return value.encode("utf-8") if isinstance(value, str) else value


class PostgresBackend:
    """Stores as databases on one server, reached through ``dsn``."""

    name = "postgres"

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn

    # --- where stores live ---------------------------------------------

    def locator(self, label: str) -> str:
        return psycopg.conninfo.make_conninfo(self.dsn, dbname=self._database(label))

    @staticmethod
    def _database(label: str) -> str:
        return _PREFIX + "".join(c if c.isalnum() else "_" for c in label)

    def _admin(self, statement: sql.Composed | sql.SQL) -> None:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(statement)

    def create(self, label: str) -> PostgresStore:
        """A fresh, empty store in a database of its own."""
        self.discard(label)
        self._admin(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(self._database(label))))
        return PostgresStore(self.locator(label))

    @staticmethod
    def open(locator: str) -> PostgresStore:
        return PostgresStore(locator)

    def clone(self, source: str, label: str) -> str:
        """Copy the (closed) store at ``source`` as a new database; the server
        writes the copy out before it returns."""
        self.discard(label)
        source_db = psycopg.conninfo.conninfo_to_dict(source)["dbname"]
        self._admin(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(self._database(label)), sql.Identifier(str(source_db))
            )
        )
        self._admin(sql.SQL("CHECKPOINT"))
        return self.locator(label)

    def discard(self, label: str) -> None:
        self._admin(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(self._database(label))
            )
        )

    @staticmethod
    def size_bytes(locator: str) -> int:
        with psycopg.connect(locator) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        return int(row[0]) if row else 0

    def keep(self, label: str, build: Callable[[PostgresStore], object]) -> tuple[str, bool]:
        """The locator of a store kept between runs as its own database (the
        schema version in its name), built by ``build`` when there is none
        yet, then vacuumed and analyzed; and whether it was built now.  Drop
        the database (``roteiro_bench_search_...``) to rebuild."""
        kept = f"{label}-v{SCHEMA_VERSION}"
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            found = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (self._database(kept),)
            ).fetchone()
        if found is not None:
            return self.locator(kept), False
        partial = f"{kept}-partial"
        store = self.create(partial)
        try:
            build(store)
            # What autovacuum would do soon after a bulk load: planner
            # statistics and a visibility map, before anything is timed.
            store.connection.execute("VACUUM ANALYZE")
        finally:
            store.close()
        self._admin(
            sql.SQL("ALTER DATABASE {} RENAME TO {}").format(
                sql.Identifier(self._database(partial)), sql.Identifier(self._database(kept))
            )
        )
        self._admin(sql.SQL("CHECKPOINT"))
        return self.locator(kept), True

    # --- bulk setup ----------------------------------------------------

    @staticmethod
    def load_cache(
        store: PostgresStore, rows: Iterable[CacheRow], *, ticks: int, generation: int
    ) -> None:
        """COPY a whole cache tier in and set the clock."""
        conn = store.connection
        with conn.transaction(), conn.cursor() as cur:
            with cur.copy(
                "COPY agent_cache (key, fingerprint, bytes, generation, last_used, hits,"
                " anchor_key, anchor_blob, json) FROM STDIN"
            ) as copy:
                for row in rows:
                    copy.write_row(
                        (
                            _text(row.key),
                            _text(row.fingerprint),
                            row.bytes,
                            row.generation,
                            row.last_used,
                            0,
                            _text(row.anchor_key),
                            _text(row.anchor_blob),
                            _text(row.json),
                        )
                    )
            cur.execute(
                "UPDATE agent_cache_clock SET ticks = %s, generation = %s WHERE id = 0",
                (ticks, generation),
            )
        conn.execute("VACUUM ANALYZE agent_cache")

    # --- facts about a built store ---------------------------------------

    @staticmethod
    def anchor_states(store: PostgresStore, tier: str) -> Counter[str]:
        table, alias = ("agent_memory", "m") if tier == "episodic" else ("agent_cache", "c")
        case = sqlexpr.anchor_case(
            {state: f"'{state.value}'" for state in AnchorState},
            anchor_key=f"{alias}.anchor_key",
            anchor_blob=f"{alias}.anchor_blob",
            node_key="n.key",
            node_blob="n.blob",
        )
        where = " WHERE m.superseded_by IS NULL" if table == "agent_memory" else ""
        rows = store.connection.execute(
            f"SELECT {case} AS state, COUNT(*) FROM {table} {alias}"
            f" LEFT JOIN nodes n ON n.key = {alias}.anchor_key{where} GROUP BY state"
        )
        return Counter({state: int(count) for state, count in rows})

    @staticmethod
    def cache_keys(store: PostgresStore) -> set[str]:
        rows = store.connection.execute("SELECT key FROM agent_cache")
        return {bytes(row[0]).decode("utf-8") for row in rows}

    @staticmethod
    def written_rows(store: PostgresStore) -> dict[str, list[tuple[Any, ...]]]:
        """The rows ``record_many`` wrote, by table: the records in id order,
        their term index, and the index's statistics row."""
        conn = store.connection
        written = {
            "agent_memory": conn.execute(f"SELECT {WRITTEN_COLS} FROM agent_memory ORDER BY id"),
            **{
                table: conn.execute(f"SELECT {cols} FROM {table} ORDER BY {order}")
                for table, cols, order in INDEX_WRITTEN
            },
            "memory_stats": conn.execute(f"SELECT {STATS_WRITTEN} FROM memory_stats"),
        }
        return {table: [tuple(row) for row in rows] for table, rows in written.items()}

    # --- floors ------------------------------------------------------------

    @staticmethod
    def recall_floor(store: PostgresStore) -> int:
        """Fetch every live row's ranking inputs into Python; the row count."""
        return len(store.connection.execute(RECALL_FLOOR).fetchall())

    @staticmethod
    def sweep_floor(store: PostgresStore, doomed: Sequence[str]) -> int:
        """Read the sweep's columns for every entry and delete ``doomed``, in
        one transaction; the number of entries read."""
        conn = store.connection
        with conn.transaction():
            scanned = len(conn.execute(SWEEP_FLOOR_READ).fetchall())
            conn.execute(
                "DELETE FROM agent_cache WHERE key = ANY(%s)", ([_text(k) for k in doomed],)
            )
        return scanned

    @staticmethod
    def insert_floor(store: PostgresStore, rows: dict[str, list[tuple[Any, ...]]]) -> None:
        """A bare ``executemany`` of every row, in one transaction."""
        conn = store.connection
        records = rows["agent_memory"]
        with conn.transaction(), conn.cursor() as cur:
            cur.executemany(INSERT_FLOOR, records)
            for table, cols, _ in INDEX_WRITTEN:
                marks = ", ".join("%s" for _ in cols.split(","))
                cur.executemany(f"INSERT INTO {table} ({cols}) VALUES ({marks})", rows[table])
            sets = ", ".join(f"{col.strip()} = %s" for col in STATS_WRITTEN.split(","))
            cur.execute(f"UPDATE memory_stats SET {sets} WHERE id = 0", rows["memory_stats"][0])
            cur.execute(
                "UPDATE agent_memory_ids SET last_id = %s WHERE id = 0",
                (max((row[0] for row in records), default=0),),
            )

    # --- diagnostics -------------------------------------------------------

    @staticmethod
    def statements(store: PostgresStore, action: Callable[[], object]) -> list[str]:
        """Not traced on PostgreSQL (use the server's log); runs ``action``."""
        action()
        return []

    @staticmethod
    def plan(store: PostgresStore, statement: str) -> Iterator[str]:
        with contextlib.suppress(psycopg.Error):
            for row in store.connection.execute(f"EXPLAIN {statement}"):
                yield str(row[0])


# --- the search arm and early-stop recall (bench/search.py) --------------------


FLOOR_SCHEMA = "bench_fts"
"""Where the text-search floor's table lives, in the store's database."""


def index_bytes(store: PostgresStore) -> int:
    """Bytes the term index's tables take, their indexes and TOAST included."""
    from roteiro_memory.stores.sql.columns import DERIVED_TABLES

    row = store.connection.execute(
        "SELECT SUM(pg_total_relation_size(c.oid)) FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relname = ANY(%s) AND c.relkind = 'r'",
        (store.schema, list(DERIVED_TABLES)),
    ).fetchone()
    return int(row[0]) if row else 0


def _floor_rows(store: PostgresStore) -> list[tuple[int, str]]:
    rows = store.connection.execute(
        "SELECT id, body, anchor_key, anchor_path FROM agent_memory"
        " WHERE superseded_by IS NULL ORDER BY id"
    )
    return [
        (int(i), " ".join(bytes(t).decode("utf-8") for t in (body, key, path) if t is not None))
        for i, body, key, path in rows
    ]


def fts_load(conn: Any, table: str, rows: Iterable[tuple[int, str]]) -> None:
    """The floor: a table of the records' text with a generated ``tsvector``,
    filled by COPY, then its GIN index built."""
    conn.execute(
        f"CREATE TABLE {table} (id bigint PRIMARY KEY, body text NOT NULL,"
        " tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED)"
    )
    with conn.cursor() as cur, cur.copy(f"COPY {table} (id, body) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    conn.execute(f"CREATE INDEX {table.split('.')[-1]}_tsv ON {table} USING GIN (tsv)")


def fts_floor(store: PostgresStore) -> float | None:
    """Make the store's database hold the floor (once); the seconds it took
    when made now."""
    conn = store.connection
    found = conn.execute(
        "SELECT 1 FROM pg_namespace WHERE nspname = %s", (FLOOR_SCHEMA,)
    ).fetchone()
    if found is not None:
        return None
    rows = _floor_rows(store)
    start = time.perf_counter()
    with conn.transaction():
        conn.execute(f"CREATE SCHEMA {FLOOR_SCHEMA}")
        fts_load(conn, f"{FLOOR_SCHEMA}.docs", rows)
    conn.execute(f"VACUUM ANALYZE {FLOOR_SCHEMA}.docs")
    return time.perf_counter() - start


def fts_search(store: PostgresStore, query: str) -> list[int]:
    """The floor's top 10 for any of the query's words, by ``ts_rank_cd``."""
    words = " | ".join(re.findall(r"\w+", query))
    rows = store.connection.execute(
        f"SELECT id, ts_rank_cd(tsv, q) AS r FROM {FLOOR_SCHEMA}.docs,"
        " to_tsquery('english', %s) q WHERE tsv @@ q ORDER BY r DESC LIMIT 10",
        (words,),
    )
    return [int(row[0]) for row in rows]


def fts_bytes(store: PostgresStore) -> int:
    """The floor's GIN index and its tsvector column, in bytes."""
    row = store.connection.execute(
        f"SELECT pg_relation_size('{FLOOR_SCHEMA}.docs_tsv'),"
        f" (SELECT SUM(pg_column_size(tsv)) FROM {FLOOR_SCHEMA}.docs)"
    ).fetchone()
    assert row is not None
    return int(row[0]) + int(row[1])


def recall_full_scan(store: PostgresStore) -> list[int]:
    """Recall limit 10 as it ran before the early stop: every live record
    scored and sorted in SQL, the ten decoded and ranked, in one read-only
    snapshot with the counts; their ids."""
    from roteiro_memory.results import Recalled
    from roteiro_memory.semantics import Decay
    from roteiro_memory.stores.sql.columns import MEMORY_ANCHOR
    from roteiro_memory.stores.sql.ranking import recall_sql
    from roteiro_memory.stores.sql.rows import record_from_row

    decay = Decay.parse("none")
    score, params = sqlexpr.score_expr(
        decay, POSTGRES, confidence="m.confidence", id_column="m.id", **MEMORY_ANCHOR
    )
    conn = store.connection
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        row = conn.execute("SELECT COALESCE(MAX(id), 0) FROM agent_memory").fetchone()
        generation = int(row[0]) if row else 0
        statement = recall_sql(score, ["m.superseded_by IS NULL"], "nodes", "%(limit)s")
        rows = conn.execute(statement, {**params, "limit": 10, "generation": generation})
        ranked = [
            Recalled.rank(record_from_row(POSTGRES, r), generation, decay) for r in rows.fetchall()
        ]
        conn.execute("SELECT COUNT(*), COUNT(superseded_by) FROM agent_memory").fetchone()
    finally:
        conn.execute("COMMIT")
    return [r.record.id for r in ranked]


# Methods of PostgresBackend, written beside the floors they measure against.
for _name in ("index_bytes", "recall_full_scan", "fts_floor", "fts_search", "fts_bytes"):
    setattr(PostgresBackend, _name, staticmethod(globals()[_name]))
