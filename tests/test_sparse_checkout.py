"""A sparse checkout: the files outside it are in the index alone, and the
code graph holds them as the index does, their symbols read from there."""

from __future__ import annotations

from pathlib import Path

from test_cli import Repo
from test_graph import committed, git

from roteiro_memory.repo.graph import sync
from roteiro_memory.stores.sqlite.store import SQLiteStore

FILES = {
    "in/a.py": "def f():\n    return 1\n",
    "out/b.py": "def g():\n    return 2\n",
    "out/c.ts": "export function h(): number {\n  return 3;\n}\n",
}


def test_symbols_of_a_file_outside_a_sparse_checkout_are_read_from_the_index(
    tmp_path: Path,
) -> None:
    """Never "does not parse" for a file that is simply not checked out: its
    symbols are those of its blob, as a sync before the sparse checkout read
    them, so an anchor on one stays valid."""
    repo = committed(tmp_path / "r", FILES)
    before = SQLiteStore(tmp_path / "before.db")
    sync(before, repo)
    git(repo.root, "sparse-checkout", "set", "in")
    assert not (repo.root / "out").exists()
    db = SQLiteStore(tmp_path / "m.db")
    report = sync(db, repo)
    assert report.unparsable == []
    graph = {n.key: n.blob for n in db.export_graph()}
    assert graph == {n.key: n.blob for n in before.export_graph()}
    assert graph["py:out/b.py::g"] is not None
    assert graph["ts:out/c.ts::h"] is not None


def test_an_anchor_path_outside_a_sparse_checkout_is_refused_naming_its_raw_key(
    tmp_path: Path,
) -> None:
    """The file is tracked, though not on disk: "no file ... expected a
    tracked ... file" would say it is not; the refusal says where it is and
    the raw key that anchors to it, which then reads valid."""
    repo = Repo.committed(tmp_path / "r", FILES)
    repo.git("sparse-checkout", "set", "in")
    for anchor, key in [("out/b.py::g", "py:out/b.py::g"), ("out/b.py", "file:out/b.py")]:
        refused = repo.run("add", "x", "--anchor", anchor)
        assert refused.returncode == 2
        assert refused.stderr == (
            "roteiro-memory: error: --anchor: 'out/b.py' is tracked, but outside the sparse "
            "checkout, so it is not in the working tree to be read; the code graph holds it "
            f"as the index does: anchor to it by its raw key, {key!r}\n"
        )
        assert repo.state(repo.add(f"about {key}", key)) == "valid"
    gone = repo.run("add", "x", "--anchor", "in/nothing.py")
    assert "no file 'in/nothing.py' in the working tree" in gone.stderr
