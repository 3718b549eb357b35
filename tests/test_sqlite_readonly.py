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
from precommit_plants import plant_hot_journal

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


def _cli(
    prefix: list[str], *args: str, tmpdir: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
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


def _files(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}


def test_readonly_folder_beside_a_hot_journal_is_read_as_of_its_last_commit(
    tmp_path: Path,
) -> None:
    """A writer died mid-transaction in rollback-journal mode: the file holds
    pages nobody committed, and the journal beside it the pages as they
    were.  Where the journal cannot be rolled back (a read-only folder),
    ``list`` and ``recall`` answer from the store as of its last commit --
    what they answer once it is rolled back -- never from the half-written
    file; a write is still refused; and the folder is left byte for byte,
    time for time, as it was (the journal for the next open that can write
    to roll back), with no copy left in the temporary folder."""
    import shutil

    shelf = tmp_path / "shelf"
    shelf.mkdir()
    db = str(plant_hot_journal(shelf))
    before = _files(shelf)
    assert set(before) == {"memory.db", "memory.db-journal"}
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    reads = (["--json", "list"], ["--json", "recall", "decision"])
    with read_only(shelf) as prefix:
        found = [_cli(prefix, "--db", db, *read, tmpdir=scratch) for read in reads]
        refused = _cli(prefix, "--db", db, "add", "more", tmpdir=scratch)
    assert _files(shelf) == before
    assert list(scratch.iterdir()) == []

    rolled = tmp_path / "rolled"
    shutil.copytree(shelf, rolled)  # writable: opening it rolls the journal back
    expected = [_cli([], "--db", str(rolled / "memory.db"), *read) for read in reads]
    assert not (rolled / "memory.db-journal").exists()
    for answer, wanted in zip(found, expected, strict=True):
        assert answer.returncode == ExitCode.OK, answer.stderr
        assert wanted.returncode == ExitCode.OK, wanted.stderr
        assert json.loads(answer.stdout)["result"] == json.loads(wanted.stdout)["result"]
    listed = json.loads(found[0].stdout)["result"]["records"]
    assert "decision 1" in [r["body"] for r in listed]
    recalled = json.loads(found[1].stdout)["result"]["results"]
    assert len(recalled) == 2, recalled  # the crashed write emptied what search reads
    assert refused.returncode == ExitCode.STORE
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert "folder is read-only" in refused.stderr


def test_a_read_beside_a_hot_journal_holds_its_private_copy_only_while_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rolled-back copy a read-only connection reads lives in a private
    folder of the temporary folder for as long as the connection does, and
    no longer; what it reads is the last commit (the crashed write's table
    is not there)."""
    import tempfile

    from roteiro_memory.stores.sqlite import readonly

    shelf = tmp_path / "shelf"
    shelf.mkdir()
    db = str(plant_hot_journal(shelf))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    conn = readonly.connect(db)
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
        assert "agent_memory" in tables
        assert "ballast" not in tables
        (held,) = scratch.iterdir()
        assert held.stat().st_mode & 0o777 == 0o700
    finally:
        conn.close()
    assert list(scratch.iterdir()) == []


def test_a_hot_journal_with_no_room_for_a_copy_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no private copy can be made to roll the journal back on, a
    read-only open is refused in one line naming the journal and what to
    do, rather than read from the half-written file; the folder is left as
    it was."""
    import tempfile

    from roteiro_memory.errors import StoreUnavailable
    from roteiro_memory.stores.sqlite import readonly

    shelf = tmp_path / "shelf"
    shelf.mkdir()
    db = str(plant_hot_journal(shelf))
    before = _files(shelf)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    with pytest.raises(StoreUnavailable) as refused:
        readonly.connect(db)
    said = str(refused.value)
    assert "\n" not in said
    assert said.startswith(f"{db}: a store beside a hot rollback journal is read with")
    assert f"so SQLite rolls {db}-journal back" in said
    assert "open it once where it can be written" in said
    assert _files(shelf) == before


@pytest.mark.parametrize("suffix", ["-journal", "-wal", "-shm"])
@pytest.mark.parametrize("made", ["fifo", "folder"])
def test_a_store_whose_companion_is_no_file_is_refused_naming_it_never_waited_on(
    folder: Path, suffix: str, made: str
) -> None:
    """SQLite opened a FIFO where the store's rollback journal goes and
    waited for a writer for ever (``list`` hung); the others failed as a
    disk I/O error to "try again once the cause is gone".  Every command now
    refuses such a store in one line naming what is there, before anything
    is opened or made, and the files are left as they were."""
    companion = folder / f"m.db{suffix}"
    if made == "fifo":
        os.mkfifo(companion)
    else:
        companion.mkdir()
    before = sorted(p.name for p in folder.iterdir()), (folder / "m.db").read_bytes()
    for command in (["list"], ["add", "--kind", "lesson", "a body"]):
        done = _cli([], "--db", str(folder / "m.db"), *command)
        assert done.returncode == ExitCode.STORE, done.stderr
        kind = "a FIFO" if made == "fifo" else "a directory"
        assert done.stderr.startswith(
            f"roteiro-memory: error: {companion} is {kind}, where SQLite keeps the store's "
        ), done.stderr
        assert done.stderr.count("\n") == 1
    assert (sorted(p.name for p in folder.iterdir()), (folder / "m.db").read_bytes()) == before
