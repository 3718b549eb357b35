"""The SQLite store's transaction helpers: a rollback never hides the error
that caused it, and export, import and check run through them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from roteiro_memory.stores.sqlite.store import SQLiteStore
from roteiro_memory.stores.sqlite.transactions import atomic, reading
from roteiro_memory.transfer import read_export


def _roll_back_on(store: SQLiteStore, table: str) -> None:
    """A trigger that ends the whole transaction when ``table`` is written,
    as SQLite does itself on a full disk or an I/O error."""
    store.connection.execute(
        f"CREATE TEMP TRIGGER fail_{table} BEFORE INSERT ON main.{table}"
        " BEGIN SELECT RAISE(ROLLBACK, 'database or disk is full'); END"
    )


def test_rollback_never_hides_the_error(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        store.record("lesson", "kept")
        _roll_back_on(store, "agent_memory")
        with pytest.raises(sqlite3.IntegrityError, match="disk is full"):
            store.record("lesson", "refused")
        assert not store.connection.in_transaction
        assert [r.body for r in store.list().records] == ["kept"]


def test_rollback_never_hides_the_error_when_the_transaction_was_closed_underneath(
    tmp_path: Path,
) -> None:
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    conn.execute("CREATE TABLE t (x)")

    def write() -> None:
        with atomic(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            conn.execute("ROLLBACK")
            raise LookupError("original")

    def read() -> None:
        with reading(conn):
            conn.execute("SELECT * FROM t").fetchall()
            conn.execute("COMMIT")
            raise LookupError("original")

    with pytest.raises(LookupError, match="original"):
        write()
    with pytest.raises(LookupError, match="original"):
        read()
    assert not conn.in_transaction
    conn.close()


def test_a_failed_commit_is_the_error_raised(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    conn.execute("CREATE TABLE p (id INTEGER PRIMARY KEY)")
    conn.execute("CREATE TABLE c (p REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)")
    conn.execute("PRAGMA foreign_keys = ON")
    with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"), atomic(conn):
        conn.execute("INSERT INTO c VALUES (7)")
    assert not conn.in_transaction
    assert conn.execute("SELECT COUNT(*) FROM c").fetchone()[0] == 0
    conn.close()


def test_import_rolls_back_whole_and_raises_the_original_error(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source:
        source.record("lesson", "one")
        source.cache_put("k", "fp", "{}")
        lines = list(source.export_lines())
    with SQLiteStore(tmp_path / "b.db") as target:
        before = target.snapshot()
        _roll_back_on(target, "agent_cache")
        with pytest.raises(sqlite3.IntegrityError, match="disk is full"):
            target.import_export(read_export(lines))
        assert not target.connection.in_transaction
        assert target.snapshot() == before


class _FailingOn:
    """A connection that, on a query naming ``table``, ends the transaction
    underneath and then fails, as an I/O error does."""

    def __init__(self, conn: sqlite3.Connection, table: str) -> None:
        self._conn = conn
        self._table = table

    def execute(self, sql: str, *args: Any) -> Any:
        if f"FROM {self._table}" in sql and self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("disk I/O error")
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@pytest.mark.parametrize("operation", ["export", "check"])
def test_export_and_check_read_through_the_store_helper(tmp_path: Path, operation: str) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        store.cache_put("k", "fp", "{}")
        real = store.connection
        store._conn = _FailingOn(real, "agent_cache")  # type: ignore[assignment]
        try:
            run = (lambda: list(store.export_lines())) if operation == "export" else store.check
            with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
                run()
        finally:
            store._conn = real
        assert not real.in_transaction
