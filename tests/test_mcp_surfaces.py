"""One behaviour on every surface: what the MCP tools answer agrees with the
command line -- timestamps, the scope rule, anchors from the repository
root, remembering the same lesson once -- and speaks in the agent's terms,
in compact lines."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from agent_repo import GitRepo, mcp_session

from roteiro_memory.app.brief import BODY_CHARS

if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing SDK fails
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

LINE = re.compile(r"^#\d+ (lesson|attempt|decision|pattern|outcome) [a-z]+( \d+\.\d\d)?( @ \S+)?: ")


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def serve(db: Path) -> list[str]:
    return ["-m", "roteiro_memory", "mcp", "--db", str(db)]


async def _calls(repo: GitRepo, db: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    out = []
    async with mcp_session(repo, serve(db)) as session:
        for name, arguments in calls:
            out.append(await session.call_tool(name, arguments))
    return out


def calls(repo: GitRepo, db: Path, *sequence: tuple[str, dict[str, Any]]) -> list[Any]:
    return anyio.run(_calls, repo, db, list(sequence))


def test_timestamps_are_iso_8601_as_on_the_command_line(repo: GitRepo, tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    made, got = calls(repo, db, ("remember", {"kind": "lesson", "body": "x"}), ("get", {"id": 1}))
    created = got.structured_content["created_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", created), created
    assert made.structured_content["record"]["created_at"] == created
    shown = json.loads(repo.cli("show", "1", "--db", str(db), "--json").stdout)["result"]
    assert shown["created_at"] == created
    assert f"created {created}" in got.content[0].text


def test_an_empty_scope_is_invalid_on_every_tool_as_on_the_command_line(
    repo: GitRepo, tmp_path: Path
) -> None:
    results = calls(
        repo,
        tmp_path / "m.db",
        ("remember", {"kind": "lesson", "body": "x", "scope": ""}),
        ("search", {"scope": ""}),
        ("list", {"scope": ""}),
        ("list", {}),
    )
    for result in results[:3]:
        assert result.is_error
        assert result.structured_content["error"]["kind"] == "InvalidScope"
    assert results[3].structured_content["records"] == []  # nothing was stored as "repo"


def test_remembering_the_same_lesson_twice_answers_the_first(repo: GitRepo, tmp_path: Path) -> None:
    lesson = {
        "kind": "lesson",
        "body": "Retry.run retries OSError only",
        "anchor": "src/app/retry.py",
    }
    first, again, forced, listed = calls(
        repo,
        tmp_path / "m.db",
        ("remember", lesson),
        ("remember", {**lesson, "body": "retry.run  retries oserror ONLY"}),
        ("remember", {**lesson, "allow_duplicate": True}),
        ("list", {"all": True}),
    )
    assert first.structured_content["existing"] is False
    assert again.structured_content["existing"] is True
    assert again.structured_content["id"] == first.structured_content["id"]
    assert again.content[0].text.startswith(
        f"Already recorded as #{first.structured_content['id']}; nothing was written"
    )
    assert forced.structured_content["existing"] is False
    assert [r["id"] for r in listed.structured_content["records"]] == [2, 1]


def test_anchors_are_paths_from_the_repository_root_wherever_the_server_started(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The server started in a subfolder reads an anchor from the root, as
    the command line does, and an absolute path inside the repository too."""
    below = GitRepo.__new__(GitRepo)
    below.root, below.env = repo.root / "src", repo.env

    async def main() -> list[Any]:
        async with mcp_session(below, serve(tmp_path / "m.db")) as session:
            return [
                await session.call_tool(
                    "remember",
                    {"kind": "lesson", "body": "one", "anchor": "src/app/retry.py::jitter"},
                ),
                await session.call_tool(
                    "remember",
                    {
                        "kind": "lesson",
                        "body": "two",
                        "anchor": str(repo.root / "src/app/retry.py"),
                    },
                ),
            ]

    keys = [r.structured_content["record"]["anchor"]["key"] for r in anyio.run(main)]
    assert keys == ["py:src/app/retry.py::jitter", "file:src/app/retry.py"]


def test_refusals_name_the_tools_arguments_not_command_line_options(tmp_path: Path) -> None:
    """Served outside any repository (a store named by --db): a path anchor
    and a revision need one, and the refusal says so in the agent's terms."""
    nowhere = GitRepo.__new__(GitRepo)
    nowhere.root, nowhere.env = tmp_path, {}

    async def main() -> list[Any]:
        env = {"GIT_CEILING_DIRECTORIES": str(tmp_path.parent)}
        async with mcp_session(nowhere, serve(tmp_path / "m.db"), env=env) as session:
            return [
                await session.call_tool(
                    "remember", {"kind": "lesson", "body": "x", "anchor": "src/app.py"}
                ),
                await session.call_tool("touched", {"rev": "main"}),
                await session.call_tool("search", {"limit": -1}),
            ]

    texts = [result.content[0].text for result in anyio.run(main)]
    assert "argument 'anchor'" in texts[0]
    assert "argument 'rev'" in texts[1]
    assert "argument 'limit'" in texts[2]
    for text in texts:
        assert "--" not in text, text


def test_answers_are_one_line_a_record_with_long_bodies_cut(repo: GitRepo, tmp_path: Path) -> None:
    long = "the backoff " + "grows and " * 40 + "stops at thirty seconds"
    _, _, found, listed, got = calls(
        repo,
        tmp_path / "m.db",
        ("remember", {"kind": "lesson", "body": long, "anchor": "src/app/retry.py::jitter"}),
        ("remember", {"kind": "decision", "body": "CI runs on Ubuntu only"}),
        ("search", {"query": "backoff ubuntu"}),
        ("list", {}),
        ("get", {"id": 1}),
    )
    head, *lines, note = found.content[0].text.splitlines()
    assert head == "2 results, best first (store: 2 live, 0 superseded)."
    assert all(LINE.match(line) for line in lines), lines
    assert lines[0].startswith("#1 lesson valid ") or lines[1].startswith("#1 lesson valid ")
    cut = next(line for line in lines if line.startswith("#1 "))
    assert cut.endswith(f"... [{len(long)} chars: get 1]")
    assert len(cut) < BODY_CHARS + 80
    assert note == f"Bodies are cut at {BODY_CHARS} characters; `get` shows a record in full."
    assert listed.content[0].text.splitlines()[1].startswith("#2 decision unanchored: CI runs")
    assert long in got.content[0].text  # get is the whole record


def test_remember_refuses_an_anchor_on_an_untracked_binary_file(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The tool goes through the command line's check: a file sync leaves
    out of the graph is no anchor."""
    (repo.root / "bin.dat").write_bytes(b"ab\0cd")
    (refused, listed) = calls(
        repo,
        tmp_path / "m.db",
        ("remember", {"kind": "lesson", "body": "x", "anchor": "bin.dat"}),
        ("list", {}),
    )
    assert refused.is_error
    assert "untracked binary file" in refused.content[0].text
    assert "not in the code graph" in refused.content[0].text
    assert listed.structured_content["records"] == []


def test_remember_refuses_a_symbol_anchor_on_a_symlink_as_the_command_line_does(
    repo: GitRepo, tmp_path: Path
) -> None:
    (tmp_path / "sec.py").write_text("def secret_token():\n    return 42\n")
    os.symlink(tmp_path / "sec.py", repo.root / "out.py")
    os.mkfifo(repo.root / "pipe.py")
    db = tmp_path / "m.db"
    anchors = ["out.py::secret_token", "pipe.py::f"]
    made = calls(
        repo, db, *(("remember", {"kind": "lesson", "body": a, "anchor": a}) for a in anchors)
    )
    texts = [result.content[0].text for result in made]
    assert all(result.is_error for result in made), texts
    assert "argument 'anchor'" in texts[0]
    assert "'out.py' is a symbolic link" in texts[0]
    assert "'pipe.py' is a FIFO, not a file" in texts[1]
    listed = repo.cli("list", "--db", str(db), "--no-sync")
    assert listed.returncode == 1, listed.stdout
