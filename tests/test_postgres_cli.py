"""The command line on a PostgreSQL store: named by ``--db`` or
``ROTEIRO_MEMORY_DB``, and ``export``/``import`` between it and SQLite."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pg_server
import pytest

TIMEOUT = 120


def _cli(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "roteiro_memory", *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done.stdout


@pytest.fixture
def dsn() -> Iterator[str]:
    named = pg_server.fresh_store_dsn()
    try:
        yield named
    finally:
        pg_server.drop_schema(named)


def test_cli_writes_and_reads_a_store_named_by_the_environment(tmp_path: Path, dsn: str) -> None:
    env = {"ROTEIRO_MEMORY_DB": dsn}
    _cli("add", "--no-sync", "--kind", "decision", "shared across machines", cwd=tmp_path, env=env)
    listed = _cli("list", "--no-sync", "--json", cwd=tmp_path, env=env)
    assert "shared across machines" in listed
    assert _cli("check", cwd=tmp_path, env=env).strip().endswith(": ok")
    assert not any(tmp_path.iterdir()), "a DSN must not be taken for a file name"


def test_cli_export_from_sqlite_import_into_postgres_and_back(tmp_path: Path, dsn: str) -> None:
    source, back = tmp_path / "source.db", tmp_path / "back.db"
    _cli("add", "--no-sync", "--db", str(source), "first lesson", cwd=tmp_path)
    _cli("add", "--no-sync", "--db", str(source), "--supersedes", "1", "second", cwd=tmp_path)
    _cli("add", "--no-sync", "--db", str(source), "--confidence", "0.3", "third", cwd=tmp_path)
    _cli("cache", "put", "--db", str(source), "k", "fp", "{}", cwd=tmp_path)
    exported = _cli("export", "--db", str(source), cwd=tmp_path)
    (tmp_path / "a.jsonl").write_text(exported)
    _cli("import", "--db", dsn, str(tmp_path / "a.jsonl"), cwd=tmp_path)
    from_postgres = _cli("export", "--db", dsn, cwd=tmp_path)
    assert from_postgres == exported
    (tmp_path / "b.jsonl").write_text(from_postgres)
    _cli("import", "--db", str(back), str(tmp_path / "b.jsonl"), cwd=tmp_path)
    assert _cli("export", "--db", str(back), cwd=tmp_path) == exported


def test_a_command_migrating_an_older_postgres_store_says_so_once(tmp_path: Path, dsn: str) -> None:
    """As of an older SQLite store: any command migrates it, and after it an
    earlier version cannot open it, so a server still running on it must be
    restarted -- said on stderr by the command that migrated it, not after."""
    from older_stores import postgres_back_to

    from roteiro_memory.stores.postgres.migrations import SCHEMA_VERSION
    from roteiro_memory.stores.postgres.store import PostgresStore

    store = PostgresStore(dsn)
    try:
        store.record("lesson", "from an earlier version")
        postgres_back_to(store.connection, 10)
    finally:
        store.close()
    said = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "roteiro_memory", "list", "--no-sync", "--db", dsn],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert "from an earlier version" in done.stdout
        said.append(done.stderr)
    assert f"migrated the store from schema version 10 to {SCHEMA_VERSION}" in said[0], said
    assert "restart any still running on it" in said[0]
    assert said[1] == ""
