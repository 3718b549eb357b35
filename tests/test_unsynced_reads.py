"""Reads of a store that takes no sync (opened read-only): the anchor states
are those of the working tree, built in memory at every read -- so a
session that lasts, as the MCP server's does, sees each edit -- or, for the
commands that read the store's own graph (``reanchor``'s proposals, ``cache
list``), those of the last sync, and the warning says which."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agent_repo import RETRY, GitRepo, mcp_session
from mounts import read_only

from roteiro_memory.exitcodes import ExitCode

WORKING = "anchor states are those of the working tree"
LAST_SYNC = "anchor states are those of the last sync"
EDITED = RETRY.replace("value * 1.1", "value * 1.3")


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


@pytest.fixture
def db(repo: GitRepo, tmp_path: Path) -> Path:
    """A store, synced with the committed code, in a folder of its own:
    a lesson (#1) and two decisions that disagree (#2, #3) about ``jitter``,
    and a cache entry anchored to it."""
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    path = shelf / "m.db"
    anchor = "src/app/retry.py::jitter"
    for args in (
        ["add", "--anchor", anchor, "jitter must stay below 1.2"],
        ["add", "--kind", "decision", "--anchor", anchor, "jitter multiplies by 1.1"],
        ["add", "--kind", "decision", "--anchor", anchor, "jitter adds a random tenth"],
        ["cache", "put", "--anchor", anchor, "k", "f", "{}"],
    ):
        done = repo.cli("--db", str(path), *args)
        assert done.returncode == ExitCode.OK, done.stderr
    return path


def _cli(repo: GitRepo, prefix: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "roteiro_memory", *args],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_one_session_sees_each_edit_of_a_read_only_store(
    repo: GitRepo, db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the MCP server holds one session for its whole life: a read after
    an edit resolves the anchors against the code as edited, and again as
    reverted, warning once."""
    from roteiro_memory.app import records
    from roteiro_memory.app.session import Session
    from roteiro_memory.stores.sqlite import readonly

    monkeypatch.setattr(readonly, "reason", lambda path: "its folder is read-only")
    monkeypatch.chdir(repo.root)
    warned: list[str] = []
    session = Session(str(db), warn=warned.append)
    try:
        states = [records.get(session, 1).anchor_state.value]
        repo.write("src/app/retry.py", EDITED)
        states.append(records.get(session, 1).anchor_state.value)
        states.append(records.get(session, 1).anchor_state.value)  # the same tree again
        repo.write("src/app/retry.py", RETRY)
        states.append(records.get(session, 1).anchor_state.value)
        repo.write("src/app/retry.py", EDITED.replace("1.3", "1.4"))
        states.append(records.get(session, 1).anchor_state.value)
    finally:
        session.close()
    assert states == ["valid", "drifted", "drifted", "valid", "drifted"]
    assert len(warned) == 1, warned
    assert WORKING in warned[0]


def test_the_mcp_server_on_a_read_only_store_sees_each_edit(repo: GitRepo, db: Path) -> None:
    if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing one fails
        pytest.importorskip("mcp", reason="the [mcp] extra is not installed")
    import anyio

    async def main() -> list[str]:
        states = []
        with read_only(db.parent) as prefix:
            command, *rest = [*prefix, sys.executable] if prefix else [sys.executable]
            args = [*rest, "-m", "roteiro_memory", "mcp", "--db", str(db)]
            async with mcp_session(repo, args, command=command) as session:
                for source in (RETRY, EDITED, RETRY):
                    repo.write("src/app/retry.py", source)
                    got = await session.call_tool("get", {"id": 1})
                    assert not got.is_error, got.content[0].text
                    states.append(got.structured_content["anchor_state"])
        return states

    assert anyio.run(main) == ["valid", "drifted", "valid"]


def test_conflicts_on_a_read_only_store_show_the_working_trees_states(
    repo: GitRepo, db: Path
) -> None:
    repo.write("src/app/retry.py", EDITED)
    with read_only(db.parent) as prefix:
        done = _cli(repo, prefix, "--db", str(db), "conflicts")
    assert done.returncode == ExitCode.OK, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.startswith((" 2 ", " 3 "))]
    assert [(row[0], row[1], row[3]) for row in rows] == [
        ("2", "decision", "drifted"),
        ("3", "decision", "drifted"),
    ]
    (line,) = done.stderr.splitlines()
    assert WORKING in line


@pytest.mark.parametrize("command", [["reanchor"], ["cache", "list"]])
def test_reads_of_the_stored_graph_say_its_states_are_the_last_syncs(
    repo: GitRepo, db: Path, command: list[str]
) -> None:
    """``reanchor`` works its proposals out from the store's graph, and the
    store resolves cache entries' anchors: on a store that takes no sync,
    no graph is built that they would not read, and the warning says what
    their states are."""
    repo.write("src/app/retry.py", EDITED)
    with read_only(db.parent) as prefix:
        done = _cli(repo, prefix, "--db", str(db), "--json", *command)
    (line,) = done.stderr.splitlines()
    assert LAST_SYNC in line
    result = json.loads(done.stdout)["result"]
    if command == ["reanchor"]:
        assert done.returncode == ExitCode.NOTHING, done.stderr
        assert result["proposals"] == []  # nothing was stale at the last sync
    else:
        assert done.returncode == ExitCode.OK, done.stderr
        (entry,) = result["entries"]
        assert entry["anchor_state"] == "valid"
