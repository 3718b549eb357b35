"""Sync reads only what it listed, as it listed it.  A working tree's file
swapped, between git listing it and sync reading it (or between sync looking
at it and hashing it), for a symbolic link to a file outside the repository
or for a FIFO, or whose folder is swapped for a link, is never read through
the link and never waited on; a file edited after it was hashed is not
parsed as if it were the blob its node names.  Such a file is what sync
makes of a file that vanished since listed.  ``add --anchor`` reads the
file it checks by the same rule, and sync its own note of unread files.

Each swap is made at the moment between the look and the read, so the race
is run, not hoped for; whatever might wait on a FIFO runs in a thread given
a deadline, so a wait fails the test instead of holding the run up."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from test_graph import committed

from roteiro_memory.app.anchors import parse_anchor, verify_anchor
from roteiro_memory.errors import AnchorError
from roteiro_memory.repo import graph as gitgraph
from roteiro_memory.repo import unread
from roteiro_memory.repo.binding import blob_id
from roteiro_memory.repo.graph import Repo, SyncReport, sync
from roteiro_memory.stores.sqlite.store import SQLiteStore

T = TypeVar("T")

DEADLINE = 20.0
"""Seconds a sync (of a few files) may take before it is taken to wait."""

SECRET = "def secret_token():\n    return 42\n"
"""What a file outside the repository holds: no node may name it."""


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return committed(
        tmp_path / "r",
        {"pkg/a.py": "def f():\n    return 1\n", "b.py": "def g():\n    return 2\n"},
    )


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the repository whose ``a.py`` defines a secret."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "a.py").write_text(SECRET)
    (folder / "new.py").write_text(SECRET)
    return folder


def swap_after_listing(monkeypatch: pytest.MonkeyPatch, swap: Callable[[], None]) -> None:
    """Run ``swap`` once sync has listed and hashed the files, before it
    reads any to parse it."""
    real = gitgraph.build

    def build(*args: Any, **kwargs: Any) -> Any:
        swap()
        return real(*args, **kwargs)

    monkeypatch.setattr(gitgraph, "build", build)


def swap_after_lstat(monkeypatch: pytest.MonkeyPatch, path: Path, swap: Callable[[], None]) -> None:
    """Run ``swap`` right after ``path`` is first looked at (lstat), before
    it is opened to be hashed."""
    real = Path.lstat
    done: list[bool] = []

    def lstat(self: Path) -> os.stat_result:
        info = real(self)
        if self == path and not done:
            done.append(True)
            swap()
        return info

    monkeypatch.setattr(Path, "lstat", lstat)


def in_time(run: Callable[[], T], fifo: Path) -> T:
    """What ``run()`` returns, failing the test when it has not returned
    within :data:`DEADLINE`: opening ``fifo`` for reading waits for a writer.
    One is then opened and closed, which ends the wait and the thread."""
    results: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(run())
        except BaseException as error:  # re-raised in the test's thread
            errors.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(DEADLINE)
    if thread.is_alive():
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(DEADLINE)
        pytest.fail(f"still waiting after {DEADLINE:.0f} s: {fifo.name} was opened as a FIFO")
    if errors:
        raise errors[0]
    return results[0]


def synced(tmp_path: Path, repo: Repo) -> tuple[SyncReport, set[str]]:
    """A sync into a store made here (SQLite connections stay in their
    thread), and the keys it left."""
    with SQLiteStore(tmp_path / "m.db") as store:
        report = sync(store, repo)
        return report, {node.key for node in store.export_graph()}


@pytest.fixture
def after_listing(
    repo: Repo, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str], None]:
    """Swap ``pkg/a.py`` once listed -- for a link to ``outside/a.py``
    (``"link"``), for a FIFO (``"fifo"``), or its folder for a link to
    ``outside`` (``"folder"``) -- in a fresh store, which must read it."""
    target = repo.root / "pkg" / "a.py"

    def choose(kind: str) -> None:
        def swap() -> None:
            if kind == "folder":
                shutil.rmtree(repo.root / "pkg")
                (repo.root / "pkg").symlink_to(outside)
                return
            target.unlink()
            if kind == "link":
                target.symlink_to(outside / "a.py")
            else:
                os.mkfifo(target)

        swap_after_listing(monkeypatch, swap)

    return choose


def test_sync_does_not_follow_a_file_swapped_for_a_link_after_listing(
    repo: Repo, tmp_path: Path, after_listing: Callable[[str], None]
) -> None:
    after_listing("link")
    report, keys = synced(tmp_path, repo)
    assert not [key for key in keys if "secret_token" in key]
    assert not [key for key in keys if key.startswith("py:pkg/a.py::")]
    assert "file:pkg/a.py" in keys
    assert "pkg/a.py" in dict(report.unparsable)
    assert "py:b.py::g" in keys


def test_sync_does_not_read_through_a_folder_swapped_for_a_link_after_listing(
    repo: Repo, tmp_path: Path, after_listing: Callable[[str], None]
) -> None:
    after_listing("folder")
    report, keys = synced(tmp_path, repo)
    assert not [key for key in keys if "secret_token" in key]
    assert "pkg/a.py" in dict(report.unparsable)


def test_sync_does_not_wait_on_a_file_swapped_for_a_fifo_after_listing(
    repo: Repo, tmp_path: Path, after_listing: Callable[[str], None]
) -> None:
    after_listing("fifo")
    report, keys = in_time(lambda: synced(tmp_path, repo), repo.root / "pkg" / "a.py")
    assert "pkg/a.py" in dict(report.unparsable)
    assert "py:b.py::g" in keys


def test_sync_parses_a_file_only_as_the_blob_it_listed(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file edited between its hashing and its reading is not parsed:
    symbols of the new text under the old blob would be a graph of no tree.
    The next sync, hashing the new text, parses it."""
    synced(tmp_path, repo)
    listed = "def g():\n    return 3\n"
    (repo.root / "b.py").write_text(listed)

    def edit() -> None:
        (repo.root / "b.py").write_text(listed + "\n\ndef late():\n    pass\n")

    swap_after_listing(monkeypatch, edit)
    report, keys = synced(tmp_path, repo)
    assert "py:b.py::late" not in keys
    assert "b.py" in dict(report.unparsable)
    with SQLiteStore(tmp_path / "m.db") as store:
        node = next(node for node in store.export_graph() if node.key == "file:b.py")
    assert node.blob == blob_id(listed.encode())
    monkeypatch.undo()
    report, keys = synced(tmp_path, repo)
    assert "py:b.py::late" in keys
    assert report.unparsable == []


@pytest.mark.parametrize("kind", ["link", "fifo"])
def test_sync_does_not_hash_what_replaced_a_file_after_it_was_looked_at(
    repo: Repo, outside: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """An untracked file swapped between its lstat and its opening is taken
    for no file, as a link or FIFO would have been at the lstat."""
    new = repo.root / "new.py"
    new.write_text("def h():\n    pass\n")

    def swap() -> None:
        new.unlink()
        if kind == "link":
            new.symlink_to(outside / "new.py")
        else:
            os.mkfifo(new)

    swap_after_lstat(monkeypatch, new, swap)
    _, keys = in_time(lambda: synced(tmp_path, repo), new)
    assert not [key for key in keys if "new.py" in key]
    assert "py:b.py::g" in keys


def test_an_anchor_is_not_checked_through_a_folder_swapped_for_a_link_after_it_was_looked_at(
    repo: Repo, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = gitgraph.working_entry

    def working_entry(*args: Any, **kwargs: Any) -> Any:
        entry = real(*args, **kwargs)
        if not (repo.root / "pkg").is_symlink():  # swapped once, after the first look
            shutil.rmtree(repo.root / "pkg")
            (repo.root / "pkg").symlink_to(outside)
        return entry

    monkeypatch.setattr(gitgraph, "working_entry", working_entry)
    spec = parse_anchor("pkg/a.py::secret_token", repo)
    with pytest.raises(AnchorError, match="changed while it was checked"):
        verify_anchor(spec, repo)


def test_sync_does_not_wait_on_a_fifo_where_its_note_of_unread_files_is(repo: Repo) -> None:
    assert repo.git_dir is not None
    note = repo.git_dir / "roteiro" / "unread"
    note.parent.mkdir(exist_ok=True)
    os.mkfifo(note)
    assert in_time(lambda: unread.languages(repo.git_dir), note) == []
