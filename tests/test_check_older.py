"""``check`` of a store an earlier version wrote: judged as the next command
to open it finds it once migrated, on a private copy, and never changed."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from older_stores import sqlite_back_to

from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.stores.sqlite.checkfile import check_file, report
from roteiro_memory.stores.sqlite.migrations import SCHEMA_VERSION
from roteiro_memory.stores.sqlite.store import SQLiteStore

OLDER = list(range(3, SCHEMA_VERSION))
"""The schemas :func:`~older_stores.sqlite_back_to` puts a store back to."""


def _older(path: Path, version: int, *, stamped: bool = True) -> Path:
    """A store with records, cache entries and a supersession, put back at
    schema ``version``; without the application id when not ``stamped``, as
    the earliest versions left it."""
    with SQLiteStore(path) as store:
        first = store.record("lesson", "retry must cap backoff", confidence=0.8)
        store.record("decision", "use sqlite WAL mode", supersedes=first)
        store.record("attempt", "tried caching: failed", confidence=0.3)
        store.cache_put("k1", "fp1", '{"a": 1}')
        store.cache_get("k1")
    conn = sqlite3.connect(path, isolation_level=None)
    if not stamped:
        conn.execute("PRAGMA application_id = 0")
    sqlite_back_to(conn, version)
    conn.close()
    return path


def _state(path: Path) -> tuple[str, list[str]]:
    sides = sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f"{path.name}-"))
    return hashlib.sha256(path.read_bytes()).hexdigest(), sides


@pytest.mark.parametrize("version", OLDER)
def test_a_sound_older_store_has_no_findings_and_is_left_as_it_was(
    tmp_path: Path, version: int
) -> None:
    path = _older(tmp_path / "memory.db", version, stamped=version != 3)
    before = _state(path)
    assert check_file(path) == []
    assert report(path).migrates == (version, SCHEMA_VERSION)
    assert _state(path) == before, "check changed the store, or left files beside it"


def test_a_current_store_migrates_nowhere(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "current")
    assert report(path).migrates is None


def test_an_older_store_is_judged_by_the_rules_as_migrated(tmp_path: Path) -> None:
    """What is wrong with its rows is found; nothing opening would add (a
    migration, a table) is reported missing."""
    path = _older(tmp_path / "memory.db", 5)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA ignore_check_constraints = ON")
    conn.execute("UPDATE agent_memory SET kind = 'rumour' WHERE id = 3")
    conn.execute("UPDATE agent_memory SET confidence = 1.5 WHERE id = 1")
    conn.commit()
    conn.close()
    problems = [str(f) for f in check_file(path)]
    assert any("id 3: unknown kind 'rumour'" in p for p in problems), problems
    assert any("id 1: confidence 1.5 is outside [0, 1]" in p for p in problems), problems
    assert not [p for p in problems if "never applied" in p or "missing" in p], problems


def test_the_private_copy_is_gone_once_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    path = _older(tmp_path / "memory.db", 5)
    assert check_file(path) == []
    assert list(scratch.iterdir()) == []


def test_an_older_store_opening_cannot_migrate_is_one_finding_naming_it(tmp_path: Path) -> None:
    """A table in migration 6's way fails the migration opening makes: the
    check says so, of the store (never of its private copy)."""
    path = _older(tmp_path / "memory.db", 5)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE memory_chunks (x)")
    conn.commit()
    conn.close()
    found = report(path)
    assert found.migrates is None
    said = [f.problem for f in found.findings if f.table == "schema_migrations"]
    assert len(said) == 1, found.findings
    assert f"migrates it from schema 5 to {SCHEMA_VERSION}, and that fails" in said[0]
    assert "memory_chunks already exists" in said[0]
    assert str(path) in said[0]
    assert "roteiro-memory-check-" not in said[0]
    assert "roteiro-memory check" not in said[0], "check's own finding asks for a check"


def test_check_of_a_sound_older_store_exits_0_saying_the_next_open_migrates_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from roteiro_memory.cli.main import main

    monkeypatch.chdir(tmp_path)
    path = _older(tmp_path / "memory.db", 5)
    assert main(["check", "--db", str(path)]) == ExitCode.OK
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{path}: schema 5, an earlier version's; the next command that opens it migrates it "
        f"to schema {SCHEMA_VERSION} (checked here as migrated, on a private copy)",
        f"{path}: ok",
    ]
    assert main(["--json", "check", "--db", str(path)]) == ExitCode.OK
    result = json.loads(capsys.readouterr().out)["result"]
    assert result == {
        "store": str(path),
        "findings": [],
        "migrates": {"from": 5, "to": SCHEMA_VERSION},
    }


def test_the_hook_passes_a_sound_older_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from roteiro_memory.precommit.check_store import main

    path = _older(tmp_path / "memory.db", 5)
    assert main([str(path)]) == 0
    assert capsys.readouterr() == ("", "")
