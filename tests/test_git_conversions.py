"""The working graph holds the blobs git would store, whatever git does to
line endings.

Git stores a file in its clean form: CRLF made LF under ``text``/``eol`` or
``core.autocrlf``.  A working file's node takes the id of that form and its
symbols are read from it, so committing a file changes no node, and a
revision's graph agrees with the working tree's wherever the code is the
same.  Sync runs no filter; a file checked out through one is read from the
index.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from test_graph import git

from roteiro_memory.repo import blobs as gitblobs
from roteiro_memory.repo.binding import blob_id
from roteiro_memory.repo.graph import Repo, find_repo, graph_blobs, rev_graph, sync
from roteiro_memory.repo.working import working_graph
from roteiro_memory.stores.sqlite.store import SQLiteStore

CRLF_SOURCE = b"def f():\r\n    return 1\r\n\r\n\r\ndef g():\r\n    return 2\r\n"


def new_repo(root: Path, *config: tuple[str, str]) -> Repo:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    for key, value in config:
        git(root, "config", key, value)
    found = find_repo(root)
    assert found is not None
    return found


def commit_all(root: Path) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "c")


def head_tree(root: Path) -> str:
    return git(root, "rev-parse", "HEAD^{tree}").strip()


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "m.db")


@pytest.mark.parametrize(
    "setting",
    [
        pytest.param({"attributes": "* text=auto eol=crlf\n"}, id="eol-attribute"),
        pytest.param({"config": ("core.autocrlf", "true")}, id="autocrlf-true"),
        pytest.param({"config": ("core.autocrlf", "input")}, id="autocrlf-input"),
    ],
)
def test_committing_crlf_files_changes_no_node(
    tmp_path: Path, store: SQLiteStore, setting: dict[str, object]
) -> None:
    config = [setting["config"]] if "config" in setting else []
    repo = new_repo(tmp_path / "r", *config)  # type: ignore[arg-type]
    if "attributes" in setting:
        (repo.root / ".gitattributes").write_text(str(setting["attributes"]))
    (repo.root / "m.py").write_bytes(CRLF_SOURCE)
    before = sync(store, repo)
    nodes = graph_blobs(store.export_graph())
    commit_all(repo.root)
    after = sync(store, repo)
    assert before.tree == head_tree(repo.root)
    assert after.up_to_date
    assert graph_blobs(store.export_graph()) == nodes
    assert nodes["file:m.py"] == blob_id(CRLF_SOURCE.replace(b"\r\n", b"\n"))


def test_symbols_of_a_converted_file_equal_the_revisions(
    tmp_path: Path, store: SQLiteStore
) -> None:
    """A symbol unchanged since a commit has that commit's blob, whether its
    file is edited (read from disk) or checked out (read from the index)."""
    repo = new_repo(tmp_path / "r", ("core.autocrlf", "true"))
    (repo.root / "m.py").write_bytes(CRLF_SOURCE)
    (repo.root / "n.py").write_bytes(b"def h():\r\n    pass\r\n")
    commit_all(repo.root)
    (repo.root / "n.py").unlink()
    git(repo.root, "checkout", "--", "n.py")  # checked out with CRLF again
    (repo.root / "m.py").write_bytes(CRLF_SOURCE.replace(b"return 2", b"return 3"))
    sync(store, repo)
    working = graph_blobs(store.export_graph())
    _, head = rev_graph(repo, "HEAD", [])
    assert working["py:m.py::f"] == head["py:m.py::f"]
    assert working["py:m.py::g"] != head["py:m.py::g"]
    assert working["py:n.py::h"] == head["py:n.py::h"]
    assert working["file:n.py"] == head["file:n.py"]


def test_a_file_checked_out_through_a_filter_is_read_from_the_index(
    tmp_path: Path, store: SQLiteStore
) -> None:
    """Its bytes on disk are not its blob's: its symbols come from the blob."""
    repo = new_repo(tmp_path / "r", ("filter.tag.clean", "sed 's/ + 0$//'"))
    git(repo.root, "config", "filter.tag.smudge", "sed 's/return 1$/return 1 + 0/'")
    (repo.root / ".gitattributes").write_text("*.py filter=tag\n")
    (repo.root / "m.py").write_text("def f():\n    return 1\n")
    commit_all(repo.root)
    (repo.root / "m.py").unlink()
    git(repo.root, "checkout", "--", "m.py")
    assert (repo.root / "m.py").read_text() == "def f():\n    return 1 + 0\n"
    report = sync(store, repo)
    assert report.tree == head_tree(repo.root)
    assert report.unparsable == []
    _, head = rev_graph(repo, "HEAD", [])
    assert graph_blobs(store.export_graph()) == head


def test_every_line_ending_conversion_gives_the_tree_git_writes(
    tmp_path: Path, store: SQLiteStore
) -> None:
    """Untracked files of every line-ending kind, and names a line of input
    would misread: the synced tree is the one ``git add -A`` then ``git
    write-tree`` gives."""
    repo = new_repo(tmp_path / "r", ("core.autocrlf", "true"))
    (repo.root / ".gitattributes").write_text("*.txt -text\nkeep.md text eol=crlf\n")
    (repo.root / "raw.txt").write_bytes(b"kept\r\nas is\r\n")
    (repo.root / "keep.md").write_bytes(b"made\r\nlf\r\n")
    (repo.root / "lone.md").write_bytes(b"a\rb\r\n")  # a lone CR: git leaves it as it is
    (repo.root / "mixed.py").write_bytes(b"def f():\r\n    return 1\n")
    for name in ["new\nline.py", "cr\r.py", '"quoted.py', "back\\slash.py", "tab\there.py"]:
        (repo.root / name).write_bytes(CRLF_SOURCE)
    report = sync(store, repo)
    git(repo.root, "add", "-A")
    assert report.tree == git(repo.root, "write-tree").strip()
    working = working_graph(SQLiteStore(tmp_path / "other.db"), repo)
    assert working.tree == report.tree


def test_sync_runs_no_filter(tmp_path: Path, store: SQLiteStore) -> None:
    """A filter is the user's program (it may hang, or write, as Git LFS
    does): an untracked file under one keeps the id of its bytes, and the
    filter is not run, though the file holds a carriage return."""
    ran = tmp_path / "ran"
    repo = new_repo(tmp_path / "r", ("filter.mark.clean", f"touch {ran}; cat"))
    (repo.root / ".gitattributes").write_text("*.py filter=mark\n")
    (repo.root / "m.py").write_bytes(CRLF_SOURCE)
    sync(store, repo)
    assert not ran.exists()
    nodes = graph_blobs(store.export_graph())
    assert nodes["file:m.py"] == blob_id(CRLF_SOURCE)
    assert "py:m.py::f" in nodes


def test_only_files_holding_a_carriage_return_are_asked_about(
    tmp_path: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file with no carriage return is stored as it is, and a filter's
    file is never asked about: only the others cost git a second read."""
    repo = new_repo(tmp_path / "r")
    (repo.root / ".gitattributes").write_text("filtered.py filter=any\n")
    (repo.root / "plain.py").write_text("def f():\n    pass\n")
    (repo.root / "crlf.py").write_bytes(CRLF_SOURCE)
    (repo.root / "filtered.py").write_bytes(CRLF_SOURCE)
    asked: list[list[str]] = []
    real = gitblobs.clean_blobs

    def spy(on: Repo, carriage: set[str]) -> dict[str, str]:
        answer = real(on, carriage)
        asked.append(sorted(answer))
        return answer

    monkeypatch.setattr("roteiro_memory.repo.graph.clean_blobs", spy)
    sync(store, repo)
    assert asked == [["crlf.py"]]


def test_a_file_edited_after_git_hashed_it_does_not_parse(
    tmp_path: Path, store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bytes read for symbols are of neither the id git gave nor the
    bytes hashed: the file changed since it was listed, so its symbols are
    not taken from them."""
    repo = new_repo(tmp_path / "r", ("core.autocrlf", "true"))
    (repo.root / "m.py").write_bytes(CRLF_SOURCE)
    real = gitblobs.clean_blobs

    def edit_after(on: Repo, carriage: set[str]) -> dict[str, str]:
        answer = real(on, carriage)
        (repo.root / "m.py").write_bytes(CRLF_SOURCE.replace(b"return 1", b"return 9"))
        return answer

    monkeypatch.setattr("roteiro_memory.repo.graph.clean_blobs", edit_after)
    report = sync(store, repo)
    assert [path for path, _ in report.unparsable] == ["m.py"]


def test_a_file_edited_in_the_index_s_last_second_is_read_again(
    tmp_path: Path, store: SQLiteStore
) -> None:
    """An edit of the same size whose stat data match the index entry's,
    dated as the index was written: git reads such a file's content rather
    than trust its stat data, and so must the copy of the index git is
    asked beside, which, dated when it was made, would vouch for them."""
    repo = new_repo(tmp_path / "r", ("core.trustctime", "false"))
    then = (int(time.time()) - 100) * 1_000_000_000  # the copy is dated later
    (repo.root / "m.py").write_bytes(CRLF_SOURCE)
    os.utime(repo.root / "m.py", ns=(then, then))
    commit_all(repo.root)
    edited = CRLF_SOURCE.replace(b"return 2", b"return 3")
    (repo.root / "m.py").write_bytes(edited)
    os.utime(repo.root / "m.py", ns=(then, then))
    os.utime((repo.git_dir or repo.common_dir) / "index", ns=(then, then))
    report = sync(store, repo)
    assert report.unparsable == []
    nodes = graph_blobs(store.export_graph())
    assert nodes["file:m.py"] == blob_id(edited)


def test_clean_content_is_the_form_the_blob_names() -> None:
    lf = CRLF_SOURCE.replace(b"\r\n", b"\n")
    assert gitblobs.clean_content(CRLF_SOURCE, blob_id(CRLF_SOURCE), "sha1") == CRLF_SOURCE
    assert gitblobs.clean_content(CRLF_SOURCE, blob_id(lf), "sha1") == lf
    assert gitblobs.clean_content(CRLF_SOURCE, blob_id(b"other"), "sha1") is None
    assert gitblobs.clean_content(lf, blob_id(b"other"), "sha1") is None


def test_an_indexed_crlf_blob_keeps_its_crlf_as_git_add_does(
    tmp_path: Path, store: SQLiteStore
) -> None:
    """``text=auto`` leaves a file whose indexed blob holds a carriage
    return as it is, which only git reading the index knows; and sync
    writes no object, nor touches the index."""
    repo = new_repo(tmp_path / "r")
    (repo.root / "m.py").write_bytes(CRLF_SOURCE)
    commit_all(repo.root)
    git(repo.root, "config", "core.autocrlf", "true")
    edited = CRLF_SOURCE.replace(b"return 2", b"return 3")
    (repo.root / "m.py").write_bytes(edited)
    (repo.root / "new.py").write_bytes(CRLF_SOURCE)
    objects = git(repo.root, "count-objects", "-v")
    index = (repo.git_dir or repo.common_dir) / "index"
    before = index.read_bytes()
    report = sync(store, repo)
    assert git(repo.root, "count-objects", "-v") == objects
    assert index.read_bytes() == before
    nodes = graph_blobs(store.export_graph())
    assert nodes["file:m.py"] == blob_id(edited)
    assert nodes["file:new.py"] == blob_id(CRLF_SOURCE.replace(b"\r\n", b"\n"))
    git(repo.root, "add", "-A")
    assert report.tree == git(repo.root, "write-tree").strip()


def _straddling(clean_bytes: int) -> bytes:
    """A Python source of ``clean_bytes`` bytes with LF line endings (a
    function, then comment lines), which is larger with CRLF ones."""
    head = b"def f():\n    return 1\n"
    line = b"#" * 99 + b"\n"
    lines, rest = divmod(clean_bytes - len(head), len(line))
    return head + line * lines + b"#" * (rest - 1) + b"\n"


@pytest.mark.parametrize("committed", [False, True], ids=["untracked", "committed"])
@pytest.mark.parametrize("over", [0, 1], ids=["at-the-limit", "a-byte-over"])
def test_add_anchor_and_sync_judge_the_parse_limit_on_the_same_bytes(
    tmp_path: Path, store: SQLiteStore, committed: bool, over: int
) -> None:
    """A file whose CRLF form on disk is over the limit and whose clean form
    (what sync parses) is at it is parsed by both; one byte more, refused by
    both, each saying the same size."""
    from roteiro_memory.app.anchors import AnchorError, parse_anchor, verify_anchor
    from roteiro_memory.repo.symbols import MAX_PARSED_BYTES

    repo = new_repo(tmp_path / "r")
    (repo.root / ".gitattributes").write_text("*.py text eol=crlf\n")
    clean = _straddling(MAX_PARSED_BYTES + over)
    (repo.root / "m.py").write_bytes(clean.replace(b"\n", b"\r\n"))
    if committed:
        commit_all(repo.root)
        assert git(repo.root, "status", "--porcelain") == ""
    assert (repo.root / "m.py").stat().st_size > MAX_PARSED_BYTES + over
    report = sync(store, repo)
    spec = parse_anchor("m.py::f", repo)
    if not over:
        assert report.unparsable == []
        assert graph_blobs(store.export_graph())["py:m.py::f"] is not None
        verify_anchor(spec, repo)
        return
    ((path, problem),) = report.unparsable
    assert path == "m.py"
    said = f"is {len(clean):,} bytes, over the 1 MiB whose symbols are read"
    assert problem.startswith(said)
    with pytest.raises(AnchorError, match=f"^{re.escape(f'--anchor: m.py {said}')}"):
        verify_anchor(spec, repo)
