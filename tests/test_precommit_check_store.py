"""``roteiro-check-store``: stores picked by content, checked by the library."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest
from precommit_plants import (
    BAD_STORES,
    open_store,
    plant_bad_store,
    plant_companions,
    plant_fifo,
    plant_foreign_migrations,
    plant_foreign_sqlite,
    plant_hidden_by_a_hot_journal,
    plant_hot_journal,
    plant_store,
    plant_undecodable_name,
)

from roteiro_memory.precommit.check_store import main

EXPECTED = {
    "dangling": "agent_memory id 3: superseded by 999, which does not exist (a dangling pointer)",
    "cycle": "agent_memory id 1: supersession cycle: 1 -> 2 -> 1",
    "fork": "agent_memory id 2: supersedes 2 records (1, 3): a fork",
    "kind": "agent_memory id 3: unknown kind 'rumour'",
    "confidence": "agent_memory id 1: confidence 1.5 is outside [0, 1]",
    "scope": "agent_memory id 3: a write would refuse it: invalid scope ' padded'",
    "body": "agent_memory id 3: a write would refuse it: invalid body",
    "bytes": "agent_cache key 'context:a': bytes is 20 but its key, fingerprint and json are 19",
    "clock": "agent_cache key 'context:a': last used at tick 99, but the clock is behind it",
    "newer": "schema_migrations version 99: schema version 99 is newer than this version knows",
    "integrity": "store: SQLite integrity check: row 1 missing from index idx_mem_anchor",
    "blob-anchor": "agent_memory id 2: anchor_key or anchor_path is not text",
    "sequence-text": "sqlite_sequence agent_memory: sequence holds 'many', not a whole number",
    "no-clock": "agent_cache_clock: expected exactly one clock row, found 0",
    "created-at": "agent_memory id 2: created_at 'not a date' is not a UTC time",
    "clock-full": "agent_cache_clock id 0: ticks 9223372036854775807 is at the largest 64-bit",
    "stamp": "agent_cache key 'context:a': generation -1 and last used",
}
"""The start of a line the hook must print for each planted fault."""


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, list[str]]:
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert err == ""
    return status, out.splitlines()


def test_check_store_plants_cover_every_fault() -> None:
    assert set(EXPECTED) == set(BAD_STORES)


def test_check_store_is_silent_on_a_healthy_store_and_other_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = tmp_path / "memory.db"
    text.write_text("not a database")
    files = [
        plant_store(tmp_path / "good.bin"),
        plant_foreign_sqlite(tmp_path / "f.db"),
        plant_foreign_migrations(tmp_path / "app.sqlite3"),
        text,
    ]
    assert _run(capsys, *files) == (0, [])


@pytest.mark.parametrize("how", sorted(BAD_STORES))
def test_check_store_reports_each_planted_fault(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = plant_bad_store(tmp_path / f"{how}.sqlite", how)
    status, lines = _run(capsys, store)
    assert status == 1
    assert any(line.startswith(f"{store}: {EXPECTED[how]}") for line in lines), lines


def test_check_store_leaves_the_files_as_it_found_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A read-only open of a WAL-mode store would leave -wal and -shm files."""
    good = plant_store(tmp_path / "good.db")
    bad = plant_bad_store(tmp_path / "bad.db", "dangling")
    before = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in (good, bad)}
    assert _run(capsys, good, bad)[0] == 1
    after = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in tmp_path.iterdir()}
    assert after == before


def test_check_store_reads_a_store_in_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(tmp_path / "live.db") as store:
        store.record("lesson", "written while the hook runs")
        assert _run(capsys, tmp_path / "live.db") == (0, [])


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_check_store_with_no_files_checks_the_repositorys_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ROTEIRO_MEMORY_DB", raising=False)
    _git(tmp_path, "init", "-q")
    monkeypatch.chdir(tmp_path)
    assert _run(capsys) == (0, []), "no store yet: nothing to check"
    own = tmp_path / ".git" / "roteiro" / "memory.db"
    own.parent.mkdir()
    plant_bad_store(own, "confidence")
    status, lines = _run(capsys)
    assert status == 1
    assert lines == [f"{own}: {EXPECTED['confidence']}"]


@pytest.mark.parametrize("through", ["fifo", "symlink"])
def test_check_store_never_passes_a_repositorys_own_store_that_is_a_fifo(
    tmp_path: Path, through: str
) -> None:
    """The repository's own store is checked whatever is there: a FIFO in
    its place is the refusal ``roteiro-memory`` gives it, and a failure --
    without opening it, which would wait for a writer for ever."""
    import sys

    _git(tmp_path, "init", "-q")
    own = tmp_path / ".git" / "roteiro" / "memory.db"
    own.parent.mkdir()
    if through == "symlink":
        target = plant_fifo(tmp_path / "pipe.db")
        own.symlink_to(target)
    else:
        plant_fifo(own)
    env = {k: v for k, v in os.environ.items() if k != "ROTEIRO_MEMORY_DB"}
    done = subprocess.run(
        [sys.executable, "-m", "roteiro_memory.precommit.check_store"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout == (
        f"{own}: store: {own}: not a regular file, so not a roteiro-memory store; "
        "move it away, or set ROTEIRO_MEMORY_DB to the path of the store file\n"
    )


def test_check_store_advises_only_what_the_hook_takes_never_a_db_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook has no --db: a store that is no file (a FIFO the variable
    names) is reported with advice the hook's user can follow."""
    fifo = plant_fifo(tmp_path / "pipe.db")
    monkeypatch.setenv("ROTEIRO_MEMORY_DB", str(fifo))
    status, lines = _run(capsys)
    assert status == 1
    assert len(lines) == 1, lines
    assert "--db" not in lines[0]
    assert lines[0].endswith(
        "not a regular file, so not a roteiro-memory store; move it away, or set "
        "ROTEIRO_MEMORY_DB to the path of the store file"
    )


def test_check_store_never_passes_a_repositorys_store_it_could_not_find_for_want_of_git(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inside a repository whose store is damaged, with no git to say where
    that store is: a finding naming why nothing was checked (and the one
    remedy the hook takes), never a pass."""
    monkeypatch.delenv("ROTEIRO_MEMORY_DB", raising=False)
    _git(tmp_path, "init", "-q")
    own = tmp_path / ".git" / "roteiro" / "memory.db"
    own.parent.mkdir()
    plant_bad_store(own, "confidence")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "no-such-folder"))
    status, lines = _run(capsys)
    assert status == 1
    assert lines == [
        "roteiro-check-store: cannot tell which git repository this is: git is not installed "
        "or not on PATH; install git to use it; or set ROTEIRO_MEMORY_DB to the path of the "
        "store file; nothing was checked"
    ]


def test_check_store_with_no_files_honours_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store = plant_bad_store(tmp_path / "elsewhere.db", "kind")
    monkeypatch.setenv("ROTEIRO_MEMORY_DB", str(store))
    status, lines = _run(capsys)
    assert status == 1
    assert lines[0].startswith(f"{store}: {EXPECTED['kind']}")


def test_check_store_with_an_unreachable_postgres_fails(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """ROTEIRO_MEMORY_DB naming a server nobody answers at is a finding,
    never a pass having checked nothing."""
    monkeypatch.setenv("ROTEIRO_MEMORY_DB", "postgresql://127.0.0.1:1/nothing?connect_timeout=2")
    status = main([])
    out, _err = capsys.readouterr()
    assert status == 1
    assert "127.0.0.1" in out, out
    assert "cannot" in out.lower(), out


def test_check_store_makes_no_postgres_store_and_waits_no_longer_than_a_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It made the schema a DSN named (a typo too), and waited for ever on
    a lock another session held."""
    import pg_server
    import psycopg

    from roteiro_memory.stores.postgres.store import PostgresStore, split_schema

    dsn = pg_server.fresh_store_dsn()
    server, schema = split_schema(dsn)
    monkeypatch.setenv("ROTEIRO_MEMORY_DB", dsn)
    monkeypatch.setenv("ROTEIRO_MEMORY_BUSY_TIMEOUT_MS", "300")
    assert _run(capsys) == (0, [])  # nothing recorded there: nothing to check
    with psycopg.connect(server, autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        assert found.fetchone() is None
    with PostgresStore(dsn) as store:
        store.record("lesson", "kept")
    try:
        with psycopg.connect(server) as locker:
            locker.execute(f'LOCK TABLE "{schema}".agent_memory IN ACCESS EXCLUSIVE MODE')
            status, lines = _run(capsys)
            locker.rollback()
        assert status == 1
        assert len(lines) == 1
        assert "busy: another session held a lock past 300 ms" in lines[0]
        assert _run(capsys) == (0, [])
    finally:
        pg_server.drop_schema(dsn)


@pytest.mark.parametrize("through", ["fifo", "symlink"])
def test_check_store_passes_over_a_fifo_without_blocking(
    tmp_path: Path, through: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22, item 10: a FIFO is no store, and reading one would wait for
    a writer for ever; the hook runs in a process of its own with a time limit."""
    import sys

    named = plant_fifo(tmp_path / "pipe.db", through)
    store = plant_store(tmp_path / "memory.db")
    done = subprocess.run(
        [sys.executable, "-m", "roteiro_memory.precommit.check_store", str(named), str(store)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_schema_name_that_is_not_utf8_is_one_finding_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Python decodes SQLite's message ``malformed database schema (\\xe9t)``
    as strict UTF-8: the hook ended in a UnicodeDecodeError traceback."""
    store = plant_undecodable_name(plant_store(tmp_path / "memory.db"))
    status, lines = _run(capsys, store)
    assert status == 1
    assert lines == [
        f"{store}: store: {store} cannot be read as a store (malformed database schema (\\xe9t))"
    ]


def test_check_store_reads_a_log_without_making_its_index_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store and its log copied into a folder (a fixture) with no -shm:
    SQLite made one there to read the log, a file the hook left behind."""
    import shutil

    source = plant_companions(tmp_path / "source")
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    for companion in source[:2]:  # the database and its log, not the index
        shutil.copy2(companion, fixture)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in fixture.iterdir()}
    assert set(before) == {"memory.db", "memory.db-wal"}
    assert _run(capsys, fixture / "memory.db") == (0, [])
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in fixture.iterdir()} == before


def test_check_store_rolls_a_hot_journal_back_on_a_copy_and_leaves_the_folder_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A writer crashed mid-transaction in rollback-journal mode: the hook
    judges the store as SQLite will read it once the journal is rolled
    back -- sound -- never the half-written file; and the database and
    its journal are left byte for byte, time for time, as they were, so
    the next open still rolls it back."""
    import shutil

    folder = tmp_path / "crashed"
    folder.mkdir()
    path = plant_hot_journal(folder)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    assert set(before) == {"memory.db", "memory.db-journal"}
    assert _run(capsys, path) == (0, [])
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before

    torn = tmp_path / "torn"
    torn.mkdir()
    shutil.copyfile(path, torn / "memory.db")  # without its journal: what immutable reads
    status, lines = _run(capsys, torn / "memory.db")
    assert status == 1, "the torn file alone is not sound: the journal is what rolls it back"
    assert lines, lines


def test_check_store_checks_a_file_whose_last_commit_is_a_store_beside_a_hot_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A writer died mid-transaction, and the file as found records none of
    this project's migrations, though its last commit is a store with a
    fault: the hook picks it as a store and reports the fault, leaving the
    files as they were."""
    folder = tmp_path / "crashed"
    folder.mkdir()
    path = plant_hidden_by_a_hot_journal(folder)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    status, lines = _run(capsys, path)
    assert status == 1
    assert f"{path}: {EXPECTED['confidence']}" in lines, lines
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before


def test_check_store_never_passes_a_file_beside_a_hot_journal_it_could_not_examine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no room for the private copy its last commit is read on, the
    file is one finding saying why, not a pass and not a traceback."""
    import tempfile

    folder = tmp_path / "crashed"
    folder.mkdir()
    path = plant_hidden_by_a_hot_journal(folder)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    status, lines = _run(capsys, path)
    assert status == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"roteiro-check-store: {path}: a store beside a hot rollback")
    assert lines[0].endswith("; nothing was checked")
