"""Files git was told not to look at: the code graph holds what is on disk.

``git update-index --assume-unchanged`` and ``--skip-worktree`` make git
report a file unchanged whatever it holds; a sync that took the index's
entry for them would call an anchor on edited code valid."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_graph import committed, git

from roteiro_memory.repo.graph import sync
from roteiro_memory.stores.sqlite.store import SQLiteStore

FILES = {"a.py": "def f():\n    return 1\n", "b.py": "def g():\n    return 1\n"}


def _graph(db: SQLiteStore) -> dict[str, str | None]:
    return {n.key: n.blob for n in db.export_graph()}


@pytest.mark.parametrize("flag", ["--assume-unchanged", "--skip-worktree"])
def test_an_edit_git_is_told_to_ignore_still_changes_the_graph(tmp_path: Path, flag: str) -> None:
    repo = committed(tmp_path / "r", FILES)
    db = SQLiteStore(tmp_path / "m.db")
    sync(db, repo)
    before = _graph(db)
    git(repo.root, "update-index", flag, "a.py")
    assert sync(db, repo).up_to_date, "unchanged on disk: nothing to write"
    (repo.root / "a.py").write_text("def f():\n    return 2\n")
    assert git(repo.root, "status", "--porcelain") == "", "git sees no change"
    sync(db, repo)
    after = _graph(db)
    assert after["file:a.py"] != before["file:a.py"]
    assert after["py:a.py::f"] != before["py:a.py::f"]
    assert after["py:b.py::g"] == before["py:b.py::g"]
    (repo.root / "a.py").unlink()
    sync(db, repo)
    if flag == "--assume-unchanged":
        assert "file:a.py" not in _graph(db), "gone from disk: gone from the graph"
    else:  # how a file outside a sparse checkout is: the index's, as it was committed
        assert _graph(db)["py:a.py::f"] == before["py:a.py::f"]
