"""A store never acknowledges a write into a file its path no longer names:
removed, replaced by a folder, or by another file renamed over it (issue 22,
item 1).  The connection would take the write into a file nobody can open,
gone when the process ends; the store refuses it in one line instead."""

from __future__ import annotations

import ast
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.stores.sqlite import SIDE_FILES
from roteiro_memory.stores.sqlite.store import SQLiteStore


def _remove(path: Path) -> None:
    for suffix in ("", *SIDE_FILES):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def test_identity_a_write_after_the_file_is_removed_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "kept")
        _remove(path)
        with pytest.raises(StoreUnavailable, match="removed") as refused:
            store.record("lesson", "would vanish")
        assert "nothing was written" in str(refused.value)
        assert "\n" not in str(refused.value)
        assert not path.exists()


def test_identity_a_write_after_a_folder_takes_the_name_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "kept")
        _remove(path)
        path.mkdir()
        with pytest.raises(StoreUnavailable, match="a folder"):
            store.record("lesson", "would vanish")
        with pytest.raises(StoreUnavailable, match="a folder"):
            store.cache_put("k", "f", "{}")
        assert list(path.iterdir()) == []


def test_identity_a_write_after_another_store_is_renamed_over_it_is_refused(
    tmp_path: Path,
) -> None:
    path, other = tmp_path / "m.db", tmp_path / "other.db"
    with SQLiteStore(other) as second:
        second.record("lesson", "the other store's")
    with SQLiteStore(path) as store:
        store.record("lesson", "kept")
        # Emptied, so that the log beside the name is no page of either file.
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        os.replace(other, path)
        with pytest.raises(StoreUnavailable, match="another file"):
            store.record("lesson", "would vanish")
        assert [r.body for r in store.list().records] == ["kept"]
    with SQLiteStore(path) as now_named:
        assert [r.body for r in now_named.list().records] == ["the other store's"]


def test_identity_a_file_replaced_while_a_write_runs_is_rolled_back(tmp_path: Path) -> None:
    """The check runs again just before the commit, under the write lock."""
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "kept")
        conn = store.connection
        moved = tmp_path / "moved.db"

        def move_during_the_write(*_: object) -> int:
            if not moved.exists():
                os.rename(path, moved)
            return 0

        conn.create_function("move_during_the_write", -1, move_during_the_write)
        conn.execute(
            "CREATE TEMP TRIGGER move_it AFTER INSERT ON main.agent_memory"
            " BEGIN SELECT move_during_the_write(); END"
        )
        with pytest.raises(StoreUnavailable, match="removed"):
            store.record("lesson", "would vanish")
        assert not conn.in_transaction
        assert [r.body for r in store.list().records] == ["kept"]


def test_identity_a_relative_path_is_checked_where_it_was_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP server moves to the repository's top level after opening a
    store named relative to where it started."""
    monkeypatch.chdir(tmp_path)
    with SQLiteStore("m.db") as store:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)
        store.record("lesson", "written where it was opened")
        assert not (elsewhere / "m.db").exists()
    with SQLiteStore(tmp_path / "m.db") as reopened:
        assert [r.body for r in reopened.list().records] == ["written where it was opened"]


def test_identity_reads_and_reopen_still_work(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "kept")
        _remove(path)
        assert [r.body for r in store.list().records] == ["kept"]
        store.reopen()  # the protocol's store.reopen: the path names a new store now
        assert store.record("lesson", "into the new file") == 1
        assert path.exists()


def test_identity_a_path_that_is_not_utf8_names_its_own_file(tmp_path: Path) -> None:
    """A folder whose name is not UTF-8 (read into ``str`` with surrogate
    escapes, as Python reads file names) holds the store by that name."""
    folder = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"bad\xffdir"))
    os.mkdir(folder)
    path = os.path.join(folder, "m.db")
    with SQLiteStore(path) as store:
        store.record("lesson", "kept")
    assert os.listdir(os.path.join(os.fsencode(tmp_path), b"bad\xffdir")) == [b"m.db"]
    with SQLiteStore(path) as store:
        assert [r.body for r in store.list().records] == ["kept"]


def _read_in_a_fresh_process(path: Path) -> list[str]:
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from roteiro_memory.stores.sqlite.store import SQLiteStore\n"
            "with SQLiteStore(sys.argv[1]) as s: print([r.body for r in s.list().records])",
            str(path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return list(ast.literal_eval(shown.stdout))


@pytest.mark.parametrize("moment", ["before SQLite opens it", "before the first read"])
@pytest.mark.parametrize("change", ["removed", "replaced"])
def test_identity_a_store_whose_file_goes_while_it_opens_opens_what_the_path_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moment: str, change: str
) -> None:
    """Another process removing the store (a read that made it and found
    nothing) or renaming another over it between the file's creation and the
    connection's first read: the store opens again on what the path names
    then -- made anew, private, when nothing is there -- so its writes land
    where a fresh process reads them, neither refused nor lost."""
    from roteiro_memory.stores.sqlite import store as module

    path, other = tmp_path / "m.db", tmp_path / "other.db"
    with SQLiteStore(other) as second:
        second.record("lesson", "the other store's")
    done: list[bool] = []

    def change_it() -> None:
        if done:
            return
        done.append(True)
        _remove(path)
        if change == "replaced":
            os.replace(other, path)

    if moment == "before SQLite opens it":
        connect = sqlite3.connect

        def connect_after_the_change(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            change_it()
            return connect(*args, **kwargs)

        monkeypatch.setattr(module.sqlite3, "connect", connect_after_the_change)
    else:
        reading = module.reading

        def read_after_the_change(conn: sqlite3.Connection) -> Any:
            change_it()
            return reading(conn)

        monkeypatch.setattr(module, "reading", read_after_the_change)
    with SQLiteStore(path) as store:
        monkeypatch.undo()
        assert done
        store.record("lesson", "written after it opened")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    before = ["the other store's"] if change == "replaced" else []
    assert _read_in_a_fresh_process(path) == ["written after it opened", *before]
