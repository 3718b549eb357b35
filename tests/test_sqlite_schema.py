"""The SQLite schema: recorded migrations, and files that are refused untouched.

A store either opens at the schema this version knows, or is refused with
``Corrupt`` before anything is written: a file that is not ours, or one a
newer version wrote, must come out of a failed open byte for byte the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from damaged_stores import scribble_on_migrations
from older_stores import sqlite_back_to

from roteiro_memory.errors import Corrupt, RoteiroError, StoreUnavailable
from roteiro_memory.stores.sqlite.migrations import MIGRATIONS, SCHEMA_VERSION
from roteiro_memory.stores.sqlite.store import BUSY_TIMEOUT_MS, SQLiteStore

SIDE_FILES = ("-wal", "-shm", "-journal")


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _side_files(path: Path) -> list[str]:
    return [suffix for suffix in SIDE_FILES if Path(f"{path}{suffix}").exists()]


def _migration_rows(path: Path) -> list[tuple[int, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        ).fetchall()
    finally:
        conn.close()


def _schema_cookie(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        cookie: int = conn.execute("PRAGMA schema_version").fetchone()[0]
        return cookie
    finally:
        conn.close()


def _assert_refused_untouched(path: Path, error: type[RoteiroError] = Corrupt) -> str:
    """Opening ``path`` fails with ``error`` and leaves it exactly as it was,
    with no journal or WAL beside it; the error message."""
    digest, side = _digest(path), _side_files(path)
    with pytest.raises(error) as refused:
        SQLiteStore(path)
    assert refused.value.kind == "Corrupt"
    assert _digest(path) == digest, "a refused file was modified"
    assert _side_files(path) == side, "a refused open left files beside the store"
    return str(refused.value)


# --- migrations --------------------------------------------------------------


def test_migrations_are_numbered_in_order_and_schema_version_is_the_last() -> None:
    versions = [version for version, _, _ in MIGRATIONS]
    assert versions == list(range(1, len(MIGRATIONS) + 1))
    assert versions[-1] == SCHEMA_VERSION
    assert len({name for _, name, _ in MIGRATIONS}) == len(MIGRATIONS)


def test_a_new_store_records_one_row_per_migration_in_order(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    rows = _migration_rows(path)
    assert [(v, n) for v, n, _ in rows] == [(v, n) for v, n, _ in MIGRATIONS]
    assert all(applied_at for _, _, applied_at in rows)


def test_reopening_an_up_to_date_store_applies_nothing(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "kept")
    rows, cookie, digest = _migration_rows(path), _schema_cookie(path), _digest(path)
    with SQLiteStore(path) as store:
        assert store.get(1) is not None
    assert _migration_rows(path) == rows
    assert _schema_cookie(path) == cookie, "reopening changed the schema"
    assert _digest(path) == digest, "reopening an up-to-date store wrote to it"


def test_a_store_missing_a_migration_gets_only_that_one(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "older than the cache tier")
    conn = sqlite3.connect(path, isolation_level=None)
    sqlite_back_to(conn, SCHEMA_VERSION - 1)
    conn.close()
    earlier = _migration_rows(path)
    with SQLiteStore(path) as store:
        assert store.get(1) is not None
        assert store.recall(limit=1).results[0].record.id == 1
        assert [r.record.id for r in store.search("cache tier").results] == [1]
        assert store.check() == []
    rows = _migration_rows(path)
    assert rows[:-1] == earlier, "an applied migration was applied again"
    assert [v for v, _, _ in rows] == [v for v, _, _ in MIGRATIONS]


def test_a_failing_migration_records_nothing_and_leaves_no_partial_schema(
    tmp_path: Path,
) -> None:
    """Migrations are applied and recorded in one transaction: when a later one
    fails (here, a stray table in its way), the earlier ones are undone too."""
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.executescript(
        "DROP TABLE memory_members; DROP TABLE memory_segments; DROP TABLE memory_cells;"
        " DROP TABLE memory_recent; DROP TABLE memory_stats; DROP TABLE nodes;"
        " DROP TABLE sync_state; DROP TABLE agent_memory;"
        " DROP TABLE agent_cache_clock; DELETE FROM schema_migrations;"
        " DELETE FROM agent_cache;"
    )
    conn.close()
    with pytest.raises(Corrupt, match="agent_cache"):
        SQLiteStore(path)
    conn = sqlite3.connect(path)
    try:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        assert tables - {"sqlite_sequence"} == {"schema_migrations", "agent_cache"}
        assert conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone() == (0,)
    finally:
        conn.close()


# --- refusals ----------------------------------------------------------------


def test_a_store_from_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "written before the upgrade")
    newer = SCHEMA_VERSION + 1
    conn = sqlite3.connect(path)
    conn.execute(
        "INSERT INTO schema_migrations (version, name) VALUES (?, 'from the future')", (newer,)
    )
    conn.commit()
    conn.close()
    assert _side_files(path) == []
    message = _assert_refused_untouched(path)
    assert str(newer) in message
    assert str(SCHEMA_VERSION) in message


def test_serving_a_newer_store_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_migrations (version, name) VALUES (?, 'next')", (99,))
    conn.commit()
    conn.close()
    digest = _digest(path)
    done = subprocess.run(
        [sys.executable, "-m", "roteiro_memory", "protocol", "--db", str(path)],
        input=b'{"id": 1, "op": "hello"}\n',
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert done.stdout == b""
    lines = done.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert "99" in lines[0]
    assert str(SCHEMA_VERSION) in lines[0]
    assert _digest(path) == digest


def test_a_damaged_migrations_table_is_refused_as_damage_never_as_a_newer_schema(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "written before the disk failed")
    scribble_on_migrations(path)
    message = _assert_refused_untouched(path)
    assert "not a usable roteiro-memory store" in message
    assert "roteiro-memory check" in message
    assert "newer" not in message


@pytest.mark.parametrize(
    "statements",
    [
        [
            "DELETE FROM schema_migrations WHERE version = 3",
            "INSERT INTO schema_migrations (version, name) VALUES (56, 'next')",
        ],
        [
            "UPDATE schema_migrations SET name = 'another' WHERE version = 2",
            "INSERT INTO schema_migrations (version, name) VALUES (10, 'next')",
        ],
        ["INSERT INTO schema_migrations (version, name) VALUES (10, x'00')"],
        ["DELETE FROM schema_migrations WHERE version = 8"],
    ],
    ids=["a-gap-then-a-higher-version", "a-renamed-migration", "a-name-that-is-no-text", "a-gap"],
)
def test_migrations_no_version_records_are_refused_as_damage_never_as_a_newer_schema(
    tmp_path: Path, statements: list[str]
) -> None:
    """Every version applies its migrations in order, by number and name:
    a table that records anything else, however cleanly it reads, no
    version wrote, and a higher version in it is no evidence of a newer one."""
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "kept")
    conn = sqlite3.connect(path)
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()
    message = _assert_refused_untouched(path)
    assert "not a usable roteiro-memory store (schema_migrations records" in message
    assert "roteiro-memory check" in message
    assert "newer" not in message


def test_opening_a_current_store_runs_no_quick_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table is checked before its reading is believed only when the
    store is to be migrated or refused: a current store opens on its rows."""
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: object, **kwargs: object) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)  # type: ignore[arg-type]
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    with SQLiteStore(path) as store:
        assert store.list(limit=1) is not None
    assert any("schema_migrations" in s for s in statements), statements
    assert not [s for s in statements if "check" in s.lower()], statements


@pytest.mark.parametrize(
    "content",
    [
        b"my shopping list\n",
        b"SQLite format 2\x00" + bytes(100),
        b"\x00" * 4096,
        "SQLite format 3 — but a text file".encode(),
    ],
    ids=["text", "other-header", "zeros", "near-miss-header"],
)
def test_a_file_that_is_not_an_sqlite_database_is_refused_untouched(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "memory.db"
    path.write_bytes(content)
    message = _assert_refused_untouched(path)
    assert str(path) in message


def test_a_truncated_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    """An SQLite header over garbage is not a store either."""
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    path.write_bytes(path.read_bytes()[:100] + b"\xff" * 3000)
    _assert_refused_untouched(path)


@pytest.mark.parametrize("journal_mode", ["delete", "wal"])
def test_someone_elses_sqlite_database_is_refused_untouched(
    tmp_path: Path, journal_mode: str
) -> None:
    path = tmp_path / "theirs.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA journal_mode = {journal_mode}")
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.commit()
    conn.close()
    message = _assert_refused_untouched(path)
    assert "schema_migrations" in message
    conn = sqlite3.connect(path)
    try:
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master")]
        assert tables == ["invoices"]
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == journal_mode
    finally:
        conn.close()


def test_a_directory_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "store.db"
    folder.mkdir()
    with pytest.raises(StoreUnavailable, match="directory"):
        SQLiteStore(folder)
    assert list(folder.iterdir()) == []


def test_an_empty_file_becomes_a_new_store(tmp_path: Path) -> None:
    """Zero bytes is what SQLite itself calls an empty database, so it is
    taken as a fresh store rather than refused."""
    path = tmp_path / "memory.db"
    path.touch()
    with SQLiteStore(path) as store:
        assert store.record("lesson", "first") == 1
    assert len(_migration_rows(path)) == len(MIGRATIONS)


# --- connection settings -----------------------------------------------------


def test_wal_foreign_keys_and_busy_timeout_are_on_after_open_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        for _ in range(2):
            conn = store.connection
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
            assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
            store.reopen()
    header = path.read_bytes()[:20]
    assert (header[18], header[19]) == (2, 2), "WAL is not recorded in the file header"


def test_foreign_keys_reject_a_dangling_supersession_pointer(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "memory.db") as store:
        store.record("lesson", "alone")
        with pytest.raises(sqlite3.IntegrityError):
            store.connection.execute("UPDATE agent_memory SET superseded_by = 999 WHERE id = 1")
        record = store.get(1)
        assert record is not None
        assert record.superseded_by is None


# --- concurrent first open -----------------------------------------------------

_OPENER = r"""
import json
import os
import sys

from roteiro_memory.stores.sqlite.store import SQLiteStore

sys.stdin.readline()
try:
    with SQLiteStore(sys.argv[1]) as store:
        print(json.dumps({"id": store.record("lesson", f"from {sys.argv[2]}")}))
except Exception as error:
    print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
"""


def test_processes_opening_one_fresh_path_at_once_all_succeed(tmp_path: Path) -> None:
    for round_ in range(3):
        path = tmp_path / f"fresh-{round_}.db"
        openers = [
            subprocess.Popen(
                [sys.executable, "-c", _OPENER, str(path), str(n)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for n in range(4)
        ]
        reports = []
        try:
            # Each interpreter starts and blocks on stdin; release them together.
            for opener in openers:
                assert opener.stdin is not None
                opener.stdin.write(b"go\n")
                opener.stdin.flush()
            for opener in openers:
                out, err = opener.communicate(timeout=120)
                assert opener.returncode == 0, err.decode()
                reports.append(json.loads(out))
        finally:
            for opener in openers:
                opener.kill()
                opener.wait()
        assert all("id" in report for report in reports), reports
        assert sorted(report["id"] for report in reports) == [1, 2, 3, 4]
        assert [(v, n) for v, n, _ in _migration_rows(path)] == [(v, n) for v, n, _ in MIGRATIONS]


def test_threads_opening_one_fresh_path_at_once_all_succeed(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    barrier = threading.Barrier(4)
    outcomes: list[object] = []

    def open_and_write(n: int) -> None:
        barrier.wait(timeout=60)
        try:
            with SQLiteStore(path) as store:
                outcomes.append(store.record("lesson", f"thread {n}"))
        except Exception as error:  # collected and asserted on below
            outcomes.append(error)

    threads = [threading.Thread(target=open_and_write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(outcomes, key=repr) == [1, 2, 3, 4], outcomes
    assert len(_migration_rows(path)) == len(MIGRATIONS)


# --- recognising our own store (item: a foreign database is left untouched) --


def _cli(capsys: pytest.CaptureFixture[str], *argv: object) -> tuple[int, str, str]:
    from roteiro_memory.cli.main import main

    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def _foreign_with_migrations(path: Path, version_type: str, version: object) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"CREATE TABLE schema_migrations (version {version_type} PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO schema_migrations VALUES (?, 'create users')", (version,))
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT)")
    conn.execute("INSERT INTO users (email) VALUES ('a@example.com')")
    conn.commit()
    conn.close()


@pytest.mark.parametrize(
    ("version_type", "version"), [("INTEGER", 1), ("varchar", "20240101120000")]
)
def test_foreign_database_with_schema_migrations_left_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version_type: str, version: object
) -> None:
    """Another tool's database with its own schema_migrations (a Rails one has
    ``version varchar``) is refused before anything is written, by the store
    and by a read command alike."""
    path = tmp_path / "theirs.db"
    _foreign_with_migrations(path, version_type, version)
    message = _assert_refused_untouched(path)
    assert str(path) in message
    assert "not a roteiro-memory store" in message
    digest = _digest(path)
    status, out, err = _cli(capsys, "list", "--db", path, "--no-sync")
    assert status == 3
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert "not a roteiro-memory store" in err
    assert _digest(path) == digest
    assert _side_files(path) == []
    conn = sqlite3.connect(path)
    try:
        tables = {
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        assert tables == {"schema_migrations", "users"}
        assert conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone() == (1,)
    finally:
        conn.close()


def test_foreign_database_imitating_our_migrations_with_other_tables_left_untouched(
    tmp_path: Path,
) -> None:
    """Without our application id, only the exact schema fingerprint of an
    earlier version's store is taken for ours: one more table and it is not."""
    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 0")
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    conn.close()
    assert "not a roteiro-memory store" in _assert_refused_untouched(path)


def test_new_store_carries_the_application_id(tmp_path: Path) -> None:
    from roteiro_memory.stores.sqlite.migrations import APPLICATION_ID

    path = tmp_path / "memory.db"
    SQLiteStore(path).close()
    assert int.from_bytes(path.read_bytes()[68:72], "big") == APPLICATION_ID != 0


def _as_earlier_version(path: Path, *, drop_last_migration: bool = False) -> None:
    """A store as an earlier version left it: no application id (and,
    optionally, at migration 3: before the term index and the recall index)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA application_id = 0")
    if drop_last_migration:
        sqlite_back_to(conn, 3)
    conn.close()


def test_store_from_an_earlier_version_is_recognised_and_stamped_with_its_migration(
    tmp_path: Path,
) -> None:
    from roteiro_memory.stores.sqlite.migrations import APPLICATION_ID

    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "from an earlier version")
    _as_earlier_version(path, drop_last_migration=True)
    with SQLiteStore(path) as store:
        assert store.get(1) is not None
        assert store.connection.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
        assert store.migrated is not None
        assert store.migrated[0] == 3
        # Migration 8, the newest to build the index, indexed the record it
        # found; 9's step then found no long term to key.
        assert [r.record.id for r in store.search("earlier").results] == [1]
        assert store.check() == []
    assert [v for v, _, _ in _migration_rows(path)] == [v for v, _, _ in MIGRATIONS]
    assert SCHEMA_VERSION == 9


def test_store_from_an_earlier_version_at_the_current_schema_opens(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "kept")
    _as_earlier_version(path)
    with SQLiteStore(path) as store:
        assert store.get(1) is not None


def test_read_command_migrating_an_older_store_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "from an earlier version")
    _as_earlier_version(path, drop_last_migration=True)
    status, out, err = _cli(capsys, "list", "--db", path, "--no-sync")
    assert status == 0
    assert "from an earlier version" in out
    assert "migrated" in err, err
    assert str(SCHEMA_VERSION) in err
    status, out, err = _cli(capsys, "list", "--db", path, "--no-sync")
    assert status == 0
    assert err == ""


def test_a_refused_export_leaves_an_older_store_unmigrated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``export -o`` judges its output before it opens the store: a refused
    one leaves a store an earlier version wrote exactly as it was."""
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "from an earlier version")
    _as_earlier_version(path, drop_last_migration=True)
    digest = _digest(path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for output in (path, f"{path}-wal", fifo, f"{tmp_path}/", "a\x00b"):
        status, out, err = _cli(capsys, "export", "--db", path, "-o", output)
        assert status == 2, err
        assert out == ""
        assert len(err.splitlines()) == 1, err
        assert "migrated" not in err
    assert _digest(path) == digest
    assert _side_files(path) == []


def test_protocol_server_migrating_an_older_store_says_so(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "from an earlier version")
    _as_earlier_version(path, drop_last_migration=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    argv = [sys.executable, "-m", "roteiro_memory", "protocol", "--db", str(path)]
    first = subprocess.run(argv, input=b"", capture_output=True, env=env, timeout=60, check=False)
    assert first.returncode == 0, first.stderr
    said = first.stderr.decode()
    assert "migrated the store" in said, said
    assert str(SCHEMA_VERSION) in said, said
    again = subprocess.run(argv, input=b"", capture_output=True, env=env, timeout=60, check=False)
    assert again.stderr == b""


# --- reads do not wait for the write lock --------------------------------------


@pytest.fixture
def held_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A store with one record and one cache entry, whose write lock another
    connection holds, and a short busy timeout for this process's opens."""
    from roteiro_memory.stores.sqlite.store import BUSY_TIMEOUT_ENV

    monkeypatch.chdir(tmp_path)
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "readable while a writer works")
        store.cache_put("k", "f", "1")
    monkeypatch.setenv(BUSY_TIMEOUT_ENV, "300")
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO nodes (key) VALUES ('file:held.py')")
    try:
        yield path
    finally:
        writer.execute("ROLLBACK")
        writer.close()


@pytest.mark.parametrize(
    "argv",
    [["list", "--no-sync"], ["show", "1"], ["export"], ["cache", "stats"], ["check"]],
    ids=lambda argv: " ".join(argv),
)
def test_read_commands_answer_while_another_process_holds_the_write_lock(
    held_store: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    status, _out, err = _cli(capsys, *argv, "--db", held_store)
    assert status == 0, err
    assert err == ""


def test_write_command_lock_timeout_says_busy(
    held_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = _cli(capsys, "add", "waits", "--db", held_store, "--no-sync")
    assert status != 0
    assert out == ""
    assert len(err.splitlines()) == 1, err
    assert "busy: another process holds the store" in err
    assert "corrupt" not in err.lower()
    assert "not a usable" not in err


def test_busy_timeout_is_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from roteiro_memory.stores.sqlite.store import BUSY_TIMEOUT_ENV

    with SQLiteStore(tmp_path / "a.db", busy_timeout_ms=1234) as store:
        assert store.connection.execute("PRAGMA busy_timeout").fetchone()[0] == 1234
    monkeypatch.setenv(BUSY_TIMEOUT_ENV, "250")
    with SQLiteStore(tmp_path / "b.db") as store:
        assert store.connection.execute("PRAGMA busy_timeout").fetchone()[0] == 250
    monkeypatch.setenv(BUSY_TIMEOUT_ENV, "soon")
    with pytest.raises(RoteiroError, match=f"{BUSY_TIMEOUT_ENV}.*'soon'"):
        SQLiteStore(tmp_path / "c.db")


def test_store_from_an_earlier_version_after_analyze_is_still_recognised(tmp_path: Path) -> None:
    """SQLite's own tables (``sqlite_stat1`` after ANALYZE) are not part of
    the fingerprint."""
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "analysed")
    _as_earlier_version(path)
    conn = sqlite3.connect(path)
    conn.execute("ANALYZE")
    conn.close()
    with SQLiteStore(path) as store:
        assert store.get(1) is not None


def test_a_store_named_in_memory_makes_no_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``:memory:`` is SQLite's name for a database in memory: the store
    works there, and nothing is left in the folder it was opened from."""
    from roteiro_memory.stores.sqlite.store import IN_MEMORY

    monkeypatch.chdir(tmp_path)
    with SQLiteStore(IN_MEMORY) as store:
        assert store.record("lesson", "kept in memory") == 1
        assert [r.body for r in store.list().records] == ["kept in memory"]
    assert list(tmp_path.iterdir()) == []


def test_a_store_keeps_the_durability_the_readme_states(tmp_path: Path) -> None:
    """WAL with ``synchronous = NORMAL``: what the README says a write
    acknowledged survives (a killed process, not a power loss)."""
    store = SQLiteStore(tmp_path / "memory.db")
    try:
        conn = store._conn
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    finally:
        store.close()
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    assert "WAL mode with `synchronous = NORMAL`" in " ".join(readme.split())
