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


# --- an error means nothing was written -------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    from roteiro_memory.cli.main import main

    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_add_over_a_blob_tree_witness_commits_nothing_and_reports_corrupt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that would read back a value this version never writes fails
    before COMMIT: the error and an unchanged store, never both a commit and
    an error."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        store.set_tree("t1")
        store.connection.execute("UPDATE sync_state SET tree = X'00ff'")
        before = store.snapshot()
    status, out, err = _cli(capsys, "add", "refused", "--db", path, "--no-sync")
    assert status == 3
    assert out == ""
    assert "sync_state" in err, err
    assert len(err.splitlines()) == 1, err
    with SQLiteStore(path) as store:
        assert store.snapshot() == before


def test_a_written_record_a_read_would_refuse_is_never_committed(tmp_path: Path) -> None:
    """record_many reads its rows back before COMMIT and judges each as a
    read does: a row a read would refuse (here a trigger stores a scope as a
    blob) is the write's error, and nothing of the batch is kept."""
    from roteiro_memory.errors import Corrupt
    from roteiro_memory.store import MemoryWrite

    with SQLiteStore(tmp_path / "m.db") as store:
        store.record("lesson", "kept")
        before = store.snapshot()
        store.connection.execute(
            "CREATE TRIGGER blob_scope AFTER INSERT ON agent_memory WHEN NEW.body = 'bad'"
            " BEGIN UPDATE agent_memory SET scope = X'00ff' WHERE id = NEW.id; END"
        )
        writes = [MemoryWrite("lesson", body) for body in ("fine", "bad", "fine too")]
        with pytest.raises(Corrupt, match="scope"):
            store.record_many(writes)
        store.connection.execute("DROP TRIGGER blob_scope")
        assert store.snapshot() == before


def test_cache_put_over_a_blob_node_commits_nothing(tmp_path: Path) -> None:
    from roteiro_memory.errors import Corrupt
    from roteiro_memory.results import GraphNode

    with SQLiteStore(tmp_path / "m.db") as store:
        store.put_nodes([GraphNode("file:a.py", "file", "a.py", "a.py", "b1")])
        store.connection.execute("UPDATE nodes SET blob = X'00ff'")
        before = store.snapshot()
        with pytest.raises(Corrupt, match="nodes"):
            store.cache_put("k", "fp", "1", anchor="file:a.py")
        with pytest.raises(Corrupt, match="nodes"):
            store.record("lesson", "anchored", anchor="file:a.py")
        assert store.snapshot() == before


# --- the real error, never "cannot rollback" ----------------------------------


def test_import_onto_a_full_disk_reports_the_full_disk(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source:
        for index in range(200):
            source.record("lesson", f"lesson {index} " + "x" * 400)
        lines = list(source.export_lines())
    with SQLiteStore(tmp_path / "b.db") as target:
        before = target.snapshot()
        pages = target.connection.execute("PRAGMA page_count").fetchone()[0]
        target.connection.execute(f"PRAGMA max_page_count = {pages + 2}")
        with pytest.raises(sqlite3.Error, match="full") as failed:
            target.import_export(read_export(lines))
        assert "rollback" not in str(failed.value)
        assert not target.connection.in_transaction
        assert target.snapshot() == before


def test_db_dev_null_reports_the_real_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for argv in (["list", "--no-sync"], ["add", "x", "--no-sync"]):
        status, out, err = _cli(capsys, *argv, "--db", "/dev/null")
        assert status != 0
        assert out == ""
        assert len(err.splitlines()) == 1, err
        assert "/dev/null" in err
        assert "not a regular file" in err
        assert "rollback" not in err


def test_sequence_overflow_reports_the_exhausted_sequence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "one")
        store.connection.execute(
            "UPDATE sqlite_sequence SET seq = ? WHERE name = 'agent_memory'", (2**63 - 1,)
        )
        before = store.snapshot()
    status, out, err = _cli(capsys, "add", "two", "--db", path, "--no-sync")
    assert status == 3
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert "sequence" in err
    assert str(2**63 - 1) in err
    assert "rollback" not in err
    with SQLiteStore(path) as store:
        assert store.snapshot() == before
