"""``check``, ``export`` and ``import`` judge a damaged store alike on every
database backend: one rule, one finding, whichever store holds the damage."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pg_server
import pytest

from roteiro_memory.errors import Corrupt, ImportRefused
from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.results import GraphNode
from roteiro_memory.store import Store
from roteiro_memory.stores.postgres.store import PostgresStore
from roteiro_memory.stores.sqlite.checkfile import check_file
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


WRITE_REFUSES = [
    (
        {
            "sqlite": "UPDATE agent_memory SET anchor_key = printf('%.5000c', 'a') WHERE id = 1",
            "postgres": "UPDATE agent_memory SET anchor_key = decode(repeat('61', 5000), 'hex')"
            " WHERE id = 1",
        },
        "agent_memory id 1: a write would refuse it: invalid anchor",
    ),
    (
        {
            "sqlite": "UPDATE agent_cache SET anchor_key = printf('%.5000c', 'a') WHERE key = 'a'",
            "postgres": "UPDATE agent_cache SET anchor_key = decode(repeat('61', 5000), 'hex')"
            " WHERE key = 'a'::bytea",
        },
        "agent_cache key 'a': a write would refuse it: invalid anchor",
    ),
]
"""Damage a write refuses, as each backend's SQL plants it."""


def _found_and_refused(damaged: Damaged, damage: str, finding: str) -> None:
    """``check`` finds ``finding`` after ``damage``, and an import of the
    export refuses it."""
    assert damaged.store.check() == []
    damaged.damage(damage)
    found = [str(f) for f in damaged.store.check()]
    assert any(line.startswith(finding) for line in found), found
    with pytest.raises(ImportRefused, match=re.escape(finding)):
        read_export(damaged.store.export_lines())


@pytest.mark.parametrize(
    ("damage", "finding"), ROW_DAMAGE, ids=["created_at", "kind", "confidence"]
)
def test_check_finds_on_every_backend_what_an_import_of_its_export_refuses(
    damaged: Damaged, damage: str, finding: str
) -> None:
    _found_and_refused(damaged, damage, finding)


def test_a_search_meeting_a_negative_confidence_is_corrupt_naming_the_row_on_every_backend(
    damaged: Damaged, tmp_path: Path
) -> None:
    """A search weighs a candidate's confidence by its square roots before
    the row is read whole: a negative one (planted past the constraints) is
    the store's damage, named as every read names it -- never "unexpected
    failure: math domain error"."""
    damaged.damage("UPDATE agent_memory SET confidence = -0.5 WHERE id = 3")
    message = "agent_memory row 3: confidence -0.5 is outside [0, 1]"
    with pytest.raises(Corrupt, match=re.escape(message)):
        damaged.store.search("three")
    done = _cli(damaged, "--no-sync", "recall", "three", cwd=tmp_path)
    assert done.returncode == ExitCode.STORE, done.stderr
    assert done.stderr.splitlines() == [f"roteiro-memory: error: {message}"]


@pytest.mark.parametrize(
    ("damage", "finding"), WRITE_REFUSES, ids=["record-anchor", "cache-anchor"]
)
def test_check_and_import_refuse_what_a_write_refuses_on_every_backend(
    damaged: Damaged, damage: dict[str, str], finding: str
) -> None:
    _found_and_refused(damaged, damage[damaged.backend], finding)


def test_a_cache_payload_of_any_text_passes_check_and_import_as_the_protocol_takes_it(
    damaged: Damaged,
) -> None:
    """PROTOCOL's ``cache.put`` takes any string: a store holding a payload
    that is not JSON is sound, and its export imports (only ``cache put``
    on the command line asks for JSON)."""
    damaged.store.cache_put("c", "f", "not json {")
    damaged.store.cache_put("d", "f", "NaN")
    assert damaged.store.check() == []
    payloads = {e["key"]: e["json"] for e in read_export(damaged.store.export_lines()).cache}
    assert payloads["c"] == "not json {"
    assert payloads["d"] == "NaN"


def test_check_reports_a_missing_clock_row_alike_on_every_backend(damaged: Damaged) -> None:
    damaged.damage("DELETE FROM agent_cache_clock")
    assert "agent_cache_clock: expected exactly one clock row, found 0" in [
        str(f) for f in damaged.store.check()
    ]


def test_check_names_graph_text_that_is_not_utf8_on_every_backend(damaged: Damaged) -> None:
    """What an export of the code graph would refuse, check finds, in its row."""
    damaged.store.put_nodes([GraphNode("file:a.py", "file", "a.py", "a.py", "b" * 40)])
    bad = {"sqlite": "CAST(X'61ff' AS TEXT)", "postgres": "'\\x61ff'::bytea"}[damaged.backend]
    damaged.damage(f"UPDATE nodes SET path = {bad}")
    found = [str(f) for f in damaged.store.check()]
    assert any(line.startswith("nodes key 'file:a.py': ") for line in found), found
    with pytest.raises(Corrupt, match="not UTF-8"):
        list(damaged.store.export_lines())


def test_the_encoding_of_a_lone_surrogate_is_no_text_to_check_or_export_on_every_backend(
    damaged: Damaged,
) -> None:
    """Bytes ED A0 80 encode U+D800, which no write stores and no import
    takes: check names the row and export refuses it, as for any bytes
    that are not UTF-8, on both backends."""
    bad = {
        "sqlite": "CAST(X'6261640aeda080' AS TEXT)",
        "postgres": "'\\x6261640aeda080'::bytea",
    }[damaged.backend]
    damaged.damage(f"UPDATE agent_memory SET body = {bad} WHERE id = 3")
    found = [str(f) for f in damaged.store.check()]
    assert any(line.startswith("agent_memory id 3: ") for line in found), found
    with pytest.raises(Corrupt, match=r"^agent_memory id 3: a stored text value is not UTF-8"):
        list(damaged.store.export_lines())


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


UNEXPORTABLE_BODY = {
    "sqlite": "UPDATE agent_memory SET body = CAST('abc' AS BLOB) WHERE id = 1",
    "postgres": "UPDATE agent_memory SET body = '\\x61ff62'::bytea WHERE id = 1",
}
"""A body each backend's reader refuses: binary data, bytes that are not UTF-8."""


@pytest.mark.parametrize("to_file", [False, True], ids=["stdout", "output-file"])
def test_export_of_a_value_never_written_is_corrupt_naming_its_row_not_the_output(
    damaged: Damaged, tmp_path: Path, to_file: bool
) -> None:
    damaged.damage(UNEXPORTABLE_BODY[damaged.backend])
    out = tmp_path / "earlier.jsonl"
    earlier = '{"format": "roteiro-memory.export/v2"}\n'  # export replaces only an export
    out.write_text(earlier)
    done = _cli(damaged, "export", *(["-o", str(out)] if to_file else []), cwd=tmp_path)
    assert done.returncode == ExitCode.STORE, done.stderr
    assert done.stdout == ""
    said = done.stderr.splitlines()
    assert len(said) == 1, said
    assert said[0].startswith("roteiro-memory: error: agent_memory id 1: "), said
    assert "roteiro-memory check" in said[0]
    assert out.read_text() == earlier


def test_export_refuses_a_store_without_its_clock_row_on_every_backend(damaged: Damaged) -> None:
    damaged.damage("DELETE FROM agent_cache_clock")
    with pytest.raises(Corrupt, match="agent_cache_clock: the cache clock row is missing"):
        list(damaged.store.export_lines())


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("UPDATE sqlite_sequence SET seq = 'abc'", "id sequence holds 'abc'"),
        ("UPDATE agent_cache_clock SET ticks = 'x'", "clock ticks holds 'x'"),
        ("UPDATE agent_cache_clock SET generation = 1.5", "clock generation holds 1.5"),
    ],
)
def test_sqlite_export_refuses_a_count_that_is_not_a_whole_number_as_check_does(
    tmp_path: Path, damage: str, said: str
) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        _fill(store)
    conn = sqlite3.connect(path)
    conn.execute(damage)
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        assert any("export would refuse it" in f.problem for f in store.check())
        with pytest.raises(Corrupt, match=said):
            list(store.export_lines())


def test_sqlite_text_that_is_not_utf8_is_named_by_its_row_in_check_and_export(
    tmp_path: Path,
) -> None:
    """SQLite keeps any bytes in a text column; the driver fails a whole
    query on them, naming no row.  The check reports the row, the file
    check as the store's, and the export is refused naming it."""
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        _fill(store)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE agent_memory SET body = CAST(X'61ff62' AS TEXT) WHERE id = 3")
    conn.commit()
    conn.close()
    with SQLiteStore(path) as store:
        found = [str(f) for f in store.check()]
        assert "agent_memory id 3: body holds 'a\\udcffb'" in "\n".join(found), found
        assert not any("cannot be read" in line for line in found), found
        with pytest.raises(Corrupt, match=r"^agent_memory id 3: a stored text value is not UTF-8"):
            list(store.export_lines())
        assert store.get(1) is not None  # the connection reads as before
    assert [str(f) for f in check_file(path)] == found
