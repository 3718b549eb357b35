"""The code graph from git, at the library level: tree ids, incremental sync,
revision graphs, and reads resolved against a given graph on every backend."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from roteiro_memory.repo import graph as gitgraph
from roteiro_memory.repo import nodes as graphnodes
from roteiro_memory.repo.graph import (
    FileEntry,
    Repo,
    find_repo,
    graph_blobs,
    rev_graph,
    sync,
    touched_keys,
    tree_id,
    working_files,
)
from roteiro_memory.results import GraphNode
from roteiro_memory.store import Store
from roteiro_memory.stores.sqlite.store import SQLiteStore

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "T",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "T",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, env=ENV, capture_output=True, text=True, check=True
    ).stdout


def committed(root: Path, files: dict[str, str]) -> Repo:
    """A repository at ``root`` with ``files`` (path -> text) committed."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "init")
    found = find_repo(root)
    assert found is not None
    return found


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return committed(
        tmp_path / "r",
        {
            "pkg/a.py": "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
            "pkg/b.py": "class C:\n    def m(self):\n        pass\n",
            "data.txt": "data\n",
        },
    )


def spy_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the files parsed from now on, in order."""
    parsed: list[str] = []
    real = graphnodes._symbol_nodes

    def spy(path: str, source: bytes, object_format: str) -> list[GraphNode]:
        parsed.append(path)
        return real(path, source, object_format)

    monkeypatch.setattr(graphnodes, "_symbol_nodes", spy)
    return parsed


@pytest.fixture
def db(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "m.db")


def test_find_repo_outside_any_repository_is_none(tmp_path: Path) -> None:
    assert find_repo(tmp_path) is None


@pytest.mark.parametrize("name", ["two\nlines", "ends\n", "\nstarts", "cr\rhere", "ls\u2028ep"])
def test_find_repo_reads_a_repository_path_holding_a_line_break(tmp_path: Path, name: str) -> None:
    """git ends each value it prints with a line break, which a folder's
    name may hold too (or a carriage return, or U+2028, which str.splitlines
    also breaks at): the repository is found, at its own path, from its top
    level and from a folder below it."""
    root = tmp_path / name
    found = committed(root, {"sub/a.py": "def f():\n    return 1\n"})
    assert found.root == root
    assert found.git_dir == root / ".git"
    assert found.common_dir == root / ".git"
    assert found.object_format == "sha1"
    below = find_repo(root / "sub")
    assert below is not None
    assert (below.root, below.git_dir, below.common_dir) == (root, root / ".git", root / ".git")
    with SQLiteStore(tmp_path / "m.db") as db:
        assert sync(db, found).files == 1
        assert {n.key for n in db.export_graph()} == {"file:sub/a.py", "py:sub/a.py::f"}


def test_tree_id_equals_git_write_tree(repo: Repo) -> None:
    root = repo.root
    (root / "pkg" / "sub").mkdir()
    (root / "pkg" / "sub" / "x.txt").write_text("x\n")
    (root / "pkg-a.txt").write_text("sorts between pkg and pkg/\n")
    script = root / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    (root / "link").symlink_to("data.txt")
    files = gitgraph.working_files(repo)
    git(root, "add", "-A")
    assert tree_id(files.values()) == git(root, "write-tree").strip()


def test_tree_id_of_nothing_is_the_empty_tree() -> None:
    assert tree_id([]) == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def test_sync_writes_file_and_symbol_nodes(repo: Repo, db: SQLiteStore) -> None:
    report = sync(db, repo)
    keys = {n.key for n in db.export_graph()}
    assert keys == {
        "file:data.txt",
        "file:pkg/a.py",
        "file:pkg/b.py",
        "py:pkg/a.py::f",
        "py:pkg/a.py::g",
        "py:pkg/b.py::C",
        "py:pkg/b.py::C.m",
    }
    assert report.tree == git(repo.root, "rev-parse", "HEAD^{tree}").strip()
    assert db.tree() == report.tree
    node = next(n for n in db.export_graph() if n.key == "file:pkg/a.py")
    assert node.blob == git(repo.root, "rev-parse", "HEAD:pkg/a.py").strip()


def test_sync_with_nothing_changed_writes_nothing(repo: Repo, db: SQLiteStore) -> None:
    sync(db, repo)
    before = db.snapshot()
    report = sync(db, repo)
    assert report.up_to_date
    assert db.snapshot() == before


def test_an_up_to_date_sync_reports_the_symbols_the_graph_holds(repo: Repo, store: Store) -> None:
    first = sync(store, repo)
    store.put_nodes([GraphNode("other:tool-node", blob="1")])  # no symbol of ours
    again = sync(store, repo)
    assert again.up_to_date
    assert (first.symbols, again.symbols, again.files) == (4, 4, 3)


def test_sync_hashes_only_changed_files_and_parses_only_changed_python(
    repo: Repo, db: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync(db, repo)
    (repo.root / "pkg" / "a.py").write_text("def f():\n    return 10\n\n\ndef g():\n    return 2\n")
    (repo.root / "new.txt").write_text("untracked\n")
    hashed: list[str] = []
    real = gitgraph.working_entry

    def spy(r: Repo, path: str, **options: bool) -> FileEntry | str | None:
        hashed.append(path)
        return real(r, path, **options)

    monkeypatch.setattr(gitgraph, "working_entry", spy)
    report = sync(db, repo)
    assert sorted(hashed) == ["new.txt", "pkg/a.py"]
    assert report.parsed == ["pkg/a.py"]
    written = {n.key: n.blob for n in db.export_graph()}
    assert "file:new.txt" in written
    # g's text did not change, so neither did its node
    assert report.written == 3  # file:pkg/a.py, py:pkg/a.py::f, file:new.txt


def test_sync_removes_nodes_of_deleted_files(repo: Repo, db: SQLiteStore) -> None:
    sync(db, repo)
    (repo.root / "pkg" / "b.py").unlink()
    report = sync(db, repo)
    keys = {n.key for n in db.export_graph()}
    assert not any("pkg/b.py" in key for key in keys)
    assert report.removed == 3


def test_a_tracked_file_beyond_a_folder_turned_link_has_no_node(
    repo: Repo, db: SQLiteStore, tmp_path: Path
) -> None:
    """git never follows a link on the way to a path: it reports the file
    deleted, and the graph must agree, whatever lies behind the link."""
    outside = tmp_path / "elsewhere"
    (repo.root / "pkg").rename(outside)
    (repo.root / "pkg").symlink_to(outside)
    report = sync(db, repo)
    keys = {n.key for n in db.export_graph()}
    assert not any(key.startswith(("file:pkg/", "py:pkg/")) for key in keys), sorted(keys)
    assert "file:pkg" in keys  # the link itself is a file of the tree
    files = working_files(repo)
    assert report.tree == tree_id(files.values())
    (outside / "a.py").write_text("def f():\n    return 99\n")
    assert sync(db, repo).up_to_date


def test_ignored_files_are_not_nodes(repo: Repo, db: SQLiteStore) -> None:
    (repo.root / ".gitignore").write_text("*.log\n")
    (repo.root / "noise.log").write_text("x\n")
    sync(db, repo)
    keys = {n.key for n in db.export_graph()}
    assert "file:.gitignore" in keys
    assert "file:noise.log" not in keys


def test_rev_graph_reuses_unchanged_symbols_and_parses_the_rest(
    repo: Repo, db: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    (repo.root / "pkg" / "a.py").write_text("def f():\n    return 3\n")
    sync(db, repo)
    parsed = spy_parses(monkeypatch)
    tree, graph = rev_graph(repo, "HEAD", db.export_graph())
    assert parsed == ["pkg/a.py"]
    assert tree == git(repo.root, "rev-parse", "HEAD^{tree}").strip()
    assert "py:pkg/a.py::g" in graph
    working = graph_blobs(db.export_graph())
    assert touched_keys(graph, working) == {"file:pkg/a.py", "py:pkg/a.py::f", "py:pkg/a.py::g"}


def test_rev_graph_refuses_an_unknown_revision(repo: Repo) -> None:
    with pytest.raises(gitgraph.GitError, match="no-such"):
        rev_graph(repo, "no-such", [])


def test_touched_keys_counts_presence_and_blob() -> None:
    before = {"a": "1", "b": "2", "c": None, "d": "4"}
    after = {"a": "1", "b": "3", "c": None, "e": "5"}
    assert touched_keys(before, after) == {"b", "d", "e"}


# --- Reads against a given graph, on every backend ---------------------------


def test_reads_resolve_against_a_given_graph_and_write_nothing(store: Store) -> None:
    store.put_nodes([GraphNode("k", blob="b1"), GraphNode("gone", blob="g1")])
    valid = store.record("lesson", "on k", anchor="k")
    other = store.record("lesson", "on gone", anchor="gone")
    plain = store.record("lesson", "no anchor")
    before = store.snapshot()
    graph = {"k": "b2", "extra": None}
    assert store.get(valid, graph=graph).anchor_state.value == "drifted"  # type: ignore[union-attr]
    assert store.get(other, graph=graph).anchor_state.value == "vanished"  # type: ignore[union-attr]
    unverifiable = {"k": None}
    assert store.get(valid, graph=unverifiable).anchor_state.value == "unverifiable"  # type: ignore[union-attr]
    listed = {r.id: r.anchor_state.value for r in store.list(graph={"k": "b1"}).records}
    assert listed == {valid: "valid", other: "vanished", plain: "unanchored"}
    recalled = store.recall(graph={"k": "b1", "gone": "g1"}, applicable_only=True)
    assert [r.record.id for r in recalled.results] == [other, valid, plain]
    ranked = store.recall(graph=graph)
    assert [r.record.id for r in ranked.results] == [plain, other, valid]
    assert store.snapshot() == before
    assert store.get(valid).anchor_state.value == "valid"  # type: ignore[union-attr]


def test_a_file_name_that_is_not_utf8_is_reported_and_left_out(repo: Repo, db: SQLiteStore) -> None:
    (repo.root / os.fsdecode(b"bad\xffname.txt")).write_text("x\n")
    report = sync(db, repo)
    assert [problem for _, problem in report.unparsable] == [
        "has a name that is not UTF-8, so it has no node"
    ]
    assert report.symbols == 4
    assert len([n for n in db.export_graph() if n.key.startswith("file:")]) == 3
    git(repo.root, "add", "-A")
    assert report.tree == git(repo.root, "write-tree").strip()


def test_replace_graph_makes_the_graph_exactly_what_is_given(store: Store) -> None:
    store.put_nodes([GraphNode("a", blob="1"), GraphNode("b", blob="2")])
    store.set_tree("t0")
    # "c" was written by another sync after this one read the graph
    store.put_nodes([GraphNode("c", blob="3")])
    wanted = [GraphNode("a", blob="1"), GraphNode("b", blob="22"), GraphNode("d", blob="4")]
    assert store.replace_graph(wanted, "t1") == (2, 1)
    assert store.export_graph() == wanted
    assert store.tree() == "t1"
    before = store.snapshot()
    assert store.replace_graph(list(reversed(wanted)), "t1") == (0, 0)
    assert store.snapshot() == before


def test_untracked_file_hashed_streaming(repo: Repo) -> None:
    """An untracked file is hashed a chunk at a time: hashing 12 MiB allocates
    a small fraction of it, and the blob id is git's."""
    import tracemalloc

    big = repo.root / "notes.txt"
    with big.open("wb") as out:
        for n in range(12):
            out.write(bytes([65 + n]) * (1024 * 1024))
    tracemalloc.start()
    try:
        files = gitgraph.working_files(repo)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, peak
    assert files["notes.txt"].blob == git(repo.root, "hash-object", "notes.txt").strip()


def test_untracked_file_that_cannot_be_source_has_no_node(repo: Repo, db: SQLiteStore) -> None:
    """An untracked file over MAX_UNTRACKED_BYTES (never read), or with a NUL
    byte in its first 8 KiB, gets no node; the sync that first meets it names
    it, and the next, finding the tree unchanged, says nothing."""
    with (repo.root / "huge.log").open("wb") as out:
        out.truncate(gitgraph.MAX_UNTRACKED_BYTES + 1)
    (repo.root / "blob.bin").write_bytes(b"head\0" + b"x" * 100)
    (repo.root / "fine.txt").write_text("text\n")
    report = sync(db, repo)
    keys = {n.key for n in db.export_graph()}
    assert "file:fine.txt" in keys
    assert "file:huge.log" not in keys
    assert "file:blob.bin" not in keys
    named = dict(report.unparsable)
    assert "MiB a source file may be" in named["huge.log"]
    assert "NUL byte" in named["blob.bin"]
    again = sync(db, repo)
    assert again.up_to_date
    assert again.unparsable == []


def test_languages_left_unread_are_noted_only_once_the_graph_is_committed(
    repo: Repo, db: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sync left pending, written in a transaction that is rolled back,
    notes nothing: noted beside the old graph, the languages it left unread
    would be taken as read by every sync after, and never parsed."""
    notes: list[list[str]] = []
    monkeypatch.setattr(gitgraph.unread, "note", lambda _git_dir, names: notes.append(names))
    report = sync(db, repo, write=False)
    assert report.pending is not None
    assert db.tree() is None
    report.unread = ["TypeScript"]  # as a sync that met a missing grammar leaves it

    def refused() -> None:
        with db.atomically():
            report.write(db)
            raise RuntimeError("the records it was to be written with were refused")

    with pytest.raises(RuntimeError):
        refused()
    assert (notes, db.tree()) == ([], None)
    again = sync(db, repo, write=False)
    again.unread = ["TypeScript"]
    with db.atomically():
        again.write(db)
    again.note_unread(repo.git_dir)
    assert (notes, db.tree()) == ([["TypeScript"]], again.tree)


def test_a_repository_whose_path_holds_a_line_break_is_one_to_the_commands(
    tmp_path: Path,
) -> None:
    from test_cli import Repo as Cli

    cli = Cli.committed(tmp_path / "two\nlines", {"a.py": "def f():\n    return 1\n"})
    assert cli.add("a lesson", "a.py::f") == 1
    assert [r["anchor"]["key"] for r in cli.json("list")["records"]] == ["py:a.py::f"]
    assert cli.db.is_file()  # in the repository's own .git, not elsewhere
