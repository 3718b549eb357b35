"""A store in a folder (or on a filesystem) that cannot be written is read:
``list``, ``recall``, ``show``, ``export`` and ``mcp`` answer from it, opened
read-only, and a write fails in one line saying why, leaving the folder as it
was (issue 22, item 8).  ``check`` read it read-only already."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mounts import read_only

from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.stores.sqlite.store import SQLiteStore


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder holding a store of one record, closed (no log beside it)."""
    made = tmp_path / "shelf"
    made.mkdir()
    with SQLiteStore(made / "m.db") as store:
        store.record("lesson", "read me where nothing can be written")
    return made


def _cli(prefix: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "roteiro_memory", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=120,
        check=False,
    )


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_readonly_folder_reads_and_exports(folder: Path) -> None:
    db = str(folder / "m.db")
    before = _listing(folder)
    with read_only(folder) as prefix:
        listed = _cli(prefix, "--db", db, "--json", "list")
        recalled = _cli(prefix, "--db", db, "recall", "read")
        shown = _cli(prefix, "--db", db, "show", "1")
        exported = _cli(prefix, "--db", db, "export")
        checked = _cli(prefix, "--db", db, "check")
    assert listed.returncode == ExitCode.OK, listed.stderr
    result = json.loads(listed.stdout)["result"]
    assert [r["body"] for r in result["records"]] == ["read me where nothing can be written"]
    assert recalled.returncode == ExitCode.OK, recalled.stderr
    assert "read me" in recalled.stdout
    assert shown.returncode == ExitCode.OK, shown.stderr
    assert exported.returncode == ExitCode.OK, exported.stderr
    assert exported.stdout.splitlines()[-1].startswith('{"type": "end"')
    assert checked.returncode == ExitCode.OK, checked.stderr
    assert _listing(folder) == before  # no log nor index left beside it


@pytest.mark.parametrize(
    "write", [["add", "more"], ["forget", "1"], ["cache", "put", "k", "f", "{}"]]
)
def test_readonly_folder_refuses_a_write_saying_why(folder: Path, write: list[str]) -> None:
    db = str(folder / "m.db")
    with read_only(folder) as prefix:
        refused = _cli(prefix, "--db", db, *write)
    assert refused.returncode == ExitCode.STORE
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "folder is read-only" in refused.stderr
    assert "nothing was written" in refused.stderr
    assert "Traceback" not in refused.stderr
    with SQLiteStore(folder / "m.db") as store:
        assert store.list().live == 1


def test_readonly_folder_serves_mcp_reads_and_refuses_its_writes(
    folder: Path, tmp_path: Path
) -> None:
    if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing one fails
        pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    import anyio
    from agent_repo import GitRepo, mcp_session

    repo = GitRepo(tmp_path / "repo")
    db = str(folder / "m.db")

    async def main() -> tuple[object, object]:
        with read_only(folder) as prefix:
            command, *rest = [*prefix, sys.executable] if prefix else [sys.executable]
            args = [*rest, "-m", "roteiro_memory", "mcp", "--db", db]
            async with mcp_session(repo, args, command=command) as session:
                found = await session.call_tool("search", {"query": "read"})
                written = await session.call_tool("remember", {"kind": "lesson", "body": "x"})
                return found, written

    found, written = anyio.run(main)
    assert not found.is_error, found.content[0].text  # type: ignore[attr-defined]
    assert found.structured_content["results"]  # type: ignore[attr-defined]
    assert written.is_error  # type: ignore[attr-defined]
    error = written.structured_content["error"]  # type: ignore[attr-defined]
    assert error["kind"] == "Unavailable"
    assert "read-only" in error["message"]


def test_readonly_folder_with_a_log_and_no_index_is_not_read_without_the_log(
    tmp_path: Path,
) -> None:
    """A log may hold committed writes, which SQLite reads only through the
    shared-memory index it cannot create there: refused in one line, rather
    than answered from the database file alone."""
    import shutil
    import sqlite3

    live = tmp_path / "live"
    live.mkdir()
    with SQLiteStore(live / "m.db") as store:
        store.record("lesson", "checkpointed")
    writer = sqlite3.connect(live / "m.db", isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute("UPDATE agent_memory SET body = 'only in the log'")
        shelf = tmp_path / "shelf"
        shelf.mkdir()
        shutil.copy(live / "m.db", shelf / "m.db")
        shutil.copy(live / "m.db-wal", shelf / "m.db-wal")
    finally:
        writer.close()
    with read_only(shelf) as prefix:
        refused = _cli(prefix, "--db", str(shelf / "m.db"), "list")
    assert refused.returncode == ExitCode.STORE
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "write-ahead log" in refused.stderr
    assert "checkpointed" not in refused.stdout
