"""``check``, ``export`` and ``import`` judge a damaged store alike on every
database backend: one rule, one finding, whichever store holds the damage."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pg_server
import pytest

from roteiro_memory.errors import ImportRefused
from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.store import Store
from roteiro_memory.stores.postgres.store import PostgresStore
from roteiro_memory.stores.sqlite.store import SQLiteStore
from roteiro_memory.transfer import read_export


@dataclass
class Damaged:
    """A healthy store of one backend, the name ``--db`` gives it, and how to
    run SQL on it beneath the store (its constraints off where it can)."""

    backend: str
    store: Store
    db: str
    damage: Callable[[str], None]


def _fill(store: Store) -> None:
    first = store.record("lesson", "one", confidence=0.5)
    store.record("decision", "two", supersedes=first)
    store.record("pattern", "three")
    store.cache_put("a", "f", '{"a": 1}')
    store.cache_put("b", "f", "[]")


@pytest.fixture(params=["sqlite", "postgres"])
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Damaged]:
    if request.param == "sqlite":
        path = tmp_path / "memory.db"

        def plant(statement: str) -> None:
            conn = sqlite3.connect(path)
            conn.execute("PRAGMA ignore_check_constraints = ON")
            conn.execute(statement)
            conn.commit()
            conn.close()

        with SQLiteStore(path) as store:
            _fill(store)
            yield Damaged("sqlite", store, str(path), plant)
        return
    pg_server.require_server()
    dsn = pg_server.fresh_store_dsn()
    pg = PostgresStore(dsn)
    try:
        _fill(pg)
        for constraint in ("kind", "confidence"):
            pg.connection.execute(
                f"ALTER TABLE agent_memory DROP CONSTRAINT agent_memory_{constraint}_check"
            )
        yield Damaged("postgres", pg, dsn, lambda statement: pg.connection.execute(statement))
    finally:
        pg.close()
        pg_server.drop_schema(dsn)


def _cli(damaged: Damaged, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "roteiro_memory", "--db", damaged.db, *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


ROW_DAMAGE = [
    (
        "UPDATE agent_memory SET created_at = '2024-13-45 99:99:99' WHERE id = 1",
        "agent_memory id 1: created_at '2024-13-45 99:99:99' is not a UTC time",
    ),
    ("UPDATE agent_memory SET kind = 'rumour' WHERE id = 1", "agent_memory id 1: unknown kind"),
    (
        "UPDATE agent_memory SET confidence = 2.5 WHERE id = 1",
        "agent_memory id 1: confidence 2.5 is outside [0, 1]",
    ),
]


@pytest.mark.parametrize(
    ("damage", "finding"), ROW_DAMAGE, ids=["created_at", "kind", "confidence"]
)
def test_check_finds_on_every_backend_what_an_import_of_its_export_refuses(
    damaged: Damaged, damage: str, finding: str
) -> None:
    assert damaged.store.check() == []
    damaged.damage(damage)
    found = [str(f) for f in damaged.store.check()]
    assert any(line.startswith(finding) for line in found), found
    with pytest.raises(ImportRefused, match=finding.replace("[", r"\[")):
        read_export(damaged.store.export_lines())


def test_check_reports_a_missing_table_as_a_finding_on_every_backend(
    damaged: Damaged, tmp_path: Path
) -> None:
    cascade = " CASCADE" if damaged.backend == "postgres" else ""
    damaged.damage(f"DROP TABLE agent_cache{cascade}")
    assert [str(f) for f in damaged.store.check()] == ["agent_cache: table is missing"]
    done = _cli(damaged, "check", cwd=tmp_path)
    assert done.returncode == ExitCode.NOTHING, done.stderr
    assert "agent_cache: table is missing" in done.stdout, (done.stdout, done.stderr)


@pytest.fixture
def pg() -> Iterator[PostgresStore]:
    pg_server.require_server()
    store = pg_server.throwaway_store()
    try:
        _fill(store)
        yield store
    finally:
        store.close()


def test_postgres_check_reports_a_missing_column_as_a_finding_and_reads_on(
    pg: PostgresStore,
) -> None:
    pg.connection.execute("ALTER TABLE agent_memory DROP COLUMN created_at")
    found = [str(f) for f in pg.check()]
    assert len(found) == 1, found
    assert found[0].startswith("store: cannot be read as a store"), found
    assert [e.key for e in pg.cache_entries()] == ["a", "b"]


def test_postgres_check_reports_a_missing_id_counter_row(pg: PostgresStore) -> None:
    pg.connection.execute("DELETE FROM agent_memory_ids")
    assert [str(f) for f in pg.check()] == ["agent_memory_ids: the id counter row is missing"]
