"""Everything the benchmark knows about SQLite, in one place.

A backend for the benchmark is a class with the methods below.  Stores live
at *locators* (here a file path); ``clone`` copies a built store so a
destructive measurement (the sweep) starts from the same state every time.
The floors are the plain queries a measurement is compared with, written
against this backend's schema and driver; a PostgreSQL backend supplies its
own class with the same methods (``clone`` could use ``CREATE DATABASE ...
TEMPLATE``) and registers it in ``run.BACKENDS``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from workload import CacheRow

from roteiro_memory.semantics import AnchorState
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sql.columns import CACHE_FROM, SWEEP_COLS
from roteiro_memory.stores.sql.dialects import SQLITE
from roteiro_memory.stores.sqlite.migrations import SCHEMA_VERSION
from roteiro_memory.stores.sqlite.store import SQLiteStore

__all__ = ["SQLiteBackend"]

RECALL_FLOOR = (
    "SELECT m.id, m.confidence, m.anchor_key, m.anchor_blob, n.blob"
    " FROM agent_memory m LEFT JOIN nodes n ON n.key = m.anchor_key"
    " WHERE m.superseded_by IS NULL"
)
SWEEP_FLOOR_READ = f"SELECT {SWEEP_COLS}{CACHE_FROM}"
WRITTEN_COLS = "scope, kind, anchor_key, anchor_blob, anchor_path, body, confidence, tree, search"
INSERT_FLOOR = f"INSERT INTO agent_memory ({WRITTEN_COLS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
INDEX_WRITTEN = (
    ("memory_members", "cell, segment, ids, lengths", "cell, segment"),
    ("memory_segments", "term, cell, segment, postings", "term, cell, segment"),
    ("memory_cells", "term, cell, postings, max_tf, tail", "term, cell"),
    ("memory_recent", "record_id, cell, length, terms", "record_id"),
)
"""The term index rows ``record_many`` writes beside each record, by table:
the floor inserts them too, so it does all the writing ``record_many`` does."""
STATS_WRITTEN = "records, live, live_terms, tokenizer"
_CACHE_CHUNK = 2_048
KEPT = Path(tempfile.gettempdir()) / "roteiro-bench-search"
"""Where stores kept between runs live (:meth:`SQLiteBackend.keep`)."""


class SQLiteBackend:
    """Stores as files under one scratch directory."""

    name = "sqlite"

    def __init__(self, root: Path) -> None:
        self.root = root

    # --- where stores live ---------------------------------------------

    def locator(self, label: str) -> str:
        return str(self.root / f"{label}.db")

    def create(self, label: str) -> SQLiteStore:
        """A fresh, empty store."""
        self.discard(label)
        return SQLiteStore(self.locator(label))

    @staticmethod
    def open(locator: str) -> SQLiteStore:
        return SQLiteStore(locator)

    def clone(self, source: str, label: str) -> str:
        """Copy the (closed, checkpointed) store at ``source``; the copy is
        flushed to disk so its write-back does not land inside a timing."""
        target = self.locator(label)
        self.discard(label)
        shutil.copyfile(source, target)
        fd = os.open(target, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        return target

    def discard(self, label: str) -> None:
        base = self.locator(label)
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(base + suffix)

    @staticmethod
    def size_bytes(locator: str) -> int:
        return os.path.getsize(locator)

    @staticmethod
    def keep(label: str, build: Callable[[SQLiteStore], object]) -> tuple[str, bool]:
        """The locator of a store kept between runs under :data:`KEPT` (the
        schema version in its name), built by ``build`` when there is none
        yet; and whether it was built now.  Delete the file to rebuild."""
        KEPT.mkdir(exist_ok=True)
        path = KEPT / f"{label}-v{SCHEMA_VERSION}.db"
        if path.exists():
            return str(path), False
        partial = path.with_suffix(".partial")
        partial.unlink(missing_ok=True)
        store = SQLiteStore(partial)
        try:
            build(store)
        finally:
            store.close()
        partial.rename(path)
        return str(path), True

    # --- bulk setup ----------------------------------------------------

    @staticmethod
    def load_cache(
        store: SQLiteStore, rows: Iterable[CacheRow], *, ticks: int, generation: int
    ) -> None:
        """Insert a whole cache tier directly and set the clock: ``cache_put``
        per entry would cost a transaction each."""
        conn = store.connection
        conn.execute("BEGIN IMMEDIATE")
        try:
            chunk: list[tuple[Any, ...]] = []
            for row in rows:
                chunk.append(
                    (
                        row.key,
                        row.fingerprint,
                        row.bytes,
                        row.generation,
                        row.last_used,
                        row.anchor_key,
                        row.anchor_blob,
                        row.json,
                    )
                )
                if len(chunk) == _CACHE_CHUNK:
                    _insert_cache(conn, chunk)
                    chunk = []
            _insert_cache(conn, chunk)
            conn.execute(
                "UPDATE agent_cache_clock SET ticks = ?, generation = ? WHERE id = 0",
                (ticks, generation),
            )
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # --- facts about a built store ---------------------------------------

    @staticmethod
    def anchor_states(store: SQLiteStore, tier: str) -> Counter[str]:
        """How many live records (tier ``episodic``) or cache entries (tier
        ``cache``) are in each anchor state, by the store's own rule."""
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
        return Counter(dict(rows))

    @staticmethod
    def cache_keys(store: SQLiteStore) -> set[str]:
        return {row[0] for row in store.connection.execute("SELECT key FROM agent_cache")}

    @staticmethod
    def written_rows(store: SQLiteStore) -> dict[str, list[tuple[Any, ...]]]:
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
    def recall_floor(store: SQLiteStore) -> int:
        """Fetch every live row's ranking inputs into Python; the row count."""
        return len(store.connection.execute(RECALL_FLOOR).fetchall())

    @staticmethod
    def sweep_floor(store: SQLiteStore, doomed: Sequence[str]) -> int:
        """Read the sweep's columns for every entry and delete ``doomed``, in
        one write transaction; the number of entries read."""
        conn = store.connection
        conn.execute("BEGIN IMMEDIATE")
        try:
            scanned = len(conn.execute(SWEEP_FLOOR_READ).fetchall())
            conn.executemany("DELETE FROM agent_cache WHERE key = ?", [(k,) for k in doomed])
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return scanned

    @staticmethod
    def insert_floor(store: SQLiteStore, rows: dict[str, list[tuple[Any, ...]]]) -> None:
        """A bare ``executemany`` of every row, in one write transaction."""
        conn = store.connection
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany(INSERT_FLOOR, rows["agent_memory"])
            for table, cols, _ in INDEX_WRITTEN:
                marks = ", ".join("?" for _ in cols.split(","))
                conn.executemany(f"INSERT INTO {table} ({cols}) VALUES ({marks})", rows[table])
            sets = ", ".join(f"{col.strip()} = ?" for col in STATS_WRITTEN.split(","))
            conn.execute(f"UPDATE memory_stats SET {sets} WHERE id = 0", rows["memory_stats"][0])
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # --- diagnostics -------------------------------------------------------

    @staticmethod
    def statements(store: SQLiteStore, action: Callable[[], object]) -> list[str]:
        """The SQL statements ``action`` runs on the store's connection."""
        seen: list[str] = []
        store.connection.set_trace_callback(seen.append)
        try:
            action()
        finally:
            store.connection.set_trace_callback(None)
        return seen

    @staticmethod
    def plan(store: SQLiteStore, statement: str) -> Iterator[str]:
        """EXPLAIN QUERY PLAN of one traced statement (bound values inlined)."""
        rows = store.connection.execute(f"EXPLAIN QUERY PLAN {statement}").fetchall()
        for row in rows:
            yield str(row[-1])


def _insert_cache(conn: sqlite3.Connection, chunk: list[tuple[Any, ...]]) -> None:
    conn.executemany(
        "INSERT INTO agent_cache (key, fingerprint, bytes, generation, last_used, hits,"
        " anchor_key, anchor_blob, json) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?)",
        chunk,
    )


# --- the search arm and early-stop recall (bench/search.py) --------------------


def index_bytes(store: SQLiteStore) -> int:
    """Bytes the term index's tables and their indexes take in the file
    (SQLite's ``dbstat``)."""
    from roteiro_memory.stores.sql.columns import DERIVED_TABLES

    marks = ", ".join("?" for _ in DERIVED_TABLES)
    row = store.connection.execute(
        "SELECT SUM(pgsize) FROM dbstat WHERE name IN"
        f" (SELECT name FROM sqlite_master WHERE tbl_name IN ({marks}))",
        DERIVED_TABLES,
    ).fetchone()
    return int(row[0])


def recall_full_scan(store: SQLiteStore) -> list[int]:
    """Recall limit 10 as it ran before the early stop: every live record
    scored and sorted in SQL, the ten decoded and ranked; their ids."""
    from roteiro_memory.results import Recalled
    from roteiro_memory.semantics import Decay
    from roteiro_memory.stores.sql.columns import MEMORY_ANCHOR
    from roteiro_memory.stores.sql.ranking import recall_sql
    from roteiro_memory.stores.sql.rows import record_from_row

    decay = Decay.parse("none")
    score, params = sqlexpr.score_expr(
        decay, SQLITE, confidence="m.confidence", id_column="m.id", **MEMORY_ANCHOR
    )
    conn = store.connection
    conn.execute("BEGIN")
    try:
        generation = conn.execute("SELECT COALESCE(MAX(id), 0) FROM agent_memory").fetchone()[0]
        sql = recall_sql(score, ["m.superseded_by IS NULL"], "nodes", ":limit")
        rows = conn.execute(sql, {**params, "limit": 10, "generation": generation}).fetchall()
        ranked = [Recalled.rank(record_from_row(SQLITE, row), generation, decay) for row in rows]
        conn.execute("SELECT COUNT(*), COUNT(superseded_by) FROM agent_memory").fetchone()
    finally:
        conn.execute("COMMIT")
    return [r.record.id for r in ranked]


# Methods of SQLiteBackend, written beside the floors they measure against.
for _name in ("index_bytes", "recall_full_scan"):
    setattr(SQLiteBackend, _name, staticmethod(globals()[_name]))
