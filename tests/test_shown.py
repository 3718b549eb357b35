"""Near-duplicates shown once and conflicts marked, on every surface: the
CLI's list, recall and conflicts (text and --json), the MCP tools, pack and
the hooks' notices -- all through roteiro_memory.app.shown, while the store
and memory.search keep every record."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from agent_repo import GitRepo
from test_hook import common, context, hook, read, silent

from roteiro_memory.exitcodes import ExitCode

RUN = "src/app/retry.py::Retry.run"
RUN_KEY = "py:" + RUN
"""The stored key of RUN, as the JSON shapes carry anchors."""
JITTER = "src/app/retry.py::jitter"

LESSON = "Retry.run retries OSError only: a TimeoutError escapes on the first attempt"
AGAIN = "Retry.run retries OSError only, so a TimeoutError escapes on the first attempt"
FIVE = "Retry.run gives up after five attempts"
THIRTY = "Retry.run gives up after thirty seconds, however many attempts"


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def cli(repo: GitRepo, *args: str, status: int = ExitCode.OK) -> str:
    done = repo.cli(*args)
    assert done.returncode == status, done.stderr
    return done.stdout


def result(repo: GitRepo, *args: str, status: int = ExitCode.OK) -> Any:
    return json.loads(cli(repo, *args, "--json", status=status))["result"]


def add(repo: GitRepo, body: str, *args: str) -> None:
    cli(repo, "add", body, *args)


def twice(repo: GitRepo) -> None:
    """Records 1 and 2 say the same about Retry.run; 3 is about jitter."""
    add(repo, LESSON, "--anchor", RUN, "--confidence", "0.8")
    add(repo, AGAIN, "--anchor", RUN)
    add(repo, "jitter scales the delay, it never adds to it", "--anchor", JITTER)


def conflicting(repo: GitRepo) -> None:
    """Records 1 and 2: two live decisions about Retry.run."""
    add(repo, FIVE, "--kind", "decision", "--anchor", RUN)
    add(repo, THIRTY, "--kind", "decision", "--anchor", RUN)


def test_near_duplicate_shown_once_with_its_ids(repo: GitRepo) -> None:
    twice(repo)
    for command, lines, footer in (
        (["recall"], 2, "2 results, 3 with near-duplicates"),
        (["recall", "timeouterror", "escapes"], 1, "1 result, 2 with near-duplicates"),
        (["list"], 2, "2 records, 3 with near-duplicates"),
    ):
        out = cli(repo, *command)
        rows = [line for line in out.splitlines() if " lesson " in line]
        assert len(rows) == lines, out
        assert footer in out, out
        assert "[2 near-duplicates: #1, #2]" in out or "[2 near-duplicates: #2, #1]" in out
        assert (AGAIN in out) != (LESSON in out), out  # the folded body is not printed
    ranked = result(repo, "recall")
    assert [r["record"]["id"] for r in ranked["results"]] == [1, 3]
    assert ranked["collapsed"] == [{"id": 1, "count": 2, "ids": [1, 2]}]
    listed = result(repo, "list")
    assert [r["id"] for r in listed["records"]] == [3, 2]
    assert listed["collapsed"] == [{"id": 2, "count": 2, "ids": [2, 1]}]


def test_all_shows_every_record(repo: GitRepo) -> None:
    twice(repo)
    ranked = result(repo, "recall", "--all")
    assert [r["record"]["id"] for r in ranked["results"]] == [1, 3, 2]
    assert "collapsed" not in ranked
    assert [r["id"] for r in result(repo, "list", "--all")["records"]] == [3, 2, 1]
    assert "near-duplicates" not in cli(repo, "recall", "--all")


def test_the_store_and_the_protocol_search_keep_every_record(repo: GitRepo) -> None:
    twice(repo)
    from roteiro_memory.stores.naming import open_store

    store = open_store("sqlite", next((repo.root / ".git").glob("**/*.db")))
    assert {r.record.id for r in store.search("timeouterror").results} == {1, 2}
    assert len(store.list().records) == 3


def test_conflicting_decisions_name_each_other(repo: GitRepo) -> None:
    conflicting(repo)
    out = cli(repo, "recall")
    assert f"[unresolved: conflicts with #2] {FIVE}" in out
    assert f"[unresolved: conflicts with #1] {THIRTY}" in out
    assert "roteiro-memory add TEXT --kind decision --anchor ANCHOR --supersedes ID" in out
    listed = cli(repo, "list", "--kind", "decision")
    assert "[unresolved: conflicts with #2]" in listed
    assert result(repo, "recall")["conflicts"] == [{"anchor": RUN_KEY, "ids": [1, 2]}]
    # Shown alone, a decision still names the one it disagrees with.
    assert "[unresolved: conflicts with #2]" in cli(repo, "recall", "five", "--limit", "1")


def test_recording_a_conflicting_decision_says_so_at_once(repo: GitRepo) -> None:
    add(repo, FIVE, "--kind", "decision", "--anchor", RUN)
    out = cli(repo, "add", THIRTY, "--kind", "decision", "--anchor", RUN)
    assert out.splitlines()[1].startswith("unresolved: conflicts with #1, live decisions")
    assert "unresolved" not in cli(repo, "add", "the backoff doubles", "--anchor", RUN)
    again = cli(repo, "add", THIRTY, "--kind", "decision", "--anchor", RUN).splitlines()
    assert again[0].startswith("already recorded as 2")
    assert again[1].startswith("unresolved: conflicts with #1, live decisions")


def test_add_json_carries_the_conflict_it_made(repo: GitRepo) -> None:
    add(repo, FIVE, "--kind", "decision", "--anchor", RUN)
    first = result(repo, "add", "the backoff doubles", "--kind", "decision")  # unanchored
    assert "conflicts" not in first
    made = result(repo, "add", THIRTY, "--kind", "decision", "--anchor", RUN)
    assert made["id"] == 3
    assert made["conflicts"] == [{"anchor": RUN_KEY, "ids": [1, 3]}]
    # Answered as already recorded, it is still part of the conflict.
    again = result(repo, "add", THIRTY, "--kind", "decision", "--anchor", RUN)
    assert again["existing"] is True
    assert again["conflicts"] == [{"anchor": RUN_KEY, "ids": [1, 3]}]
    lesson = result(repo, "add", "the backoff doubles", "--anchor", RUN)
    assert "conflicts" not in lesson


def test_conflicts_lists_them_with_the_commands_that_settle_them(repo: GitRepo) -> None:
    conflicting(repo)
    out = cli(repo, "conflicts")
    assert out.splitlines()[0] == f"unresolved at {RUN}: 2 live decisions"
    for record_id in (1, 2):
        assert (
            f"roteiro-memory add TEXT --kind decision --anchor {RUN} --supersedes {record_id}"
            in out
        )
    shape = result(repo, "conflicts")
    assert shape["schema"] == "roteiro.conflicts/v1"
    assert shape["conflicts"] == [
        {
            "anchor": RUN_KEY,
            "ids": [1, 2],
            "statements": [[1], [2]],
            "settle": f"roteiro-memory add TEXT --kind decision --anchor {RUN} --supersedes ID",
        }
    ]


def test_superseded_decision_is_no_conflict(repo: GitRepo) -> None:
    conflicting(repo)
    add(repo, THIRTY, "--kind", "decision", "--anchor", RUN, "--supersedes", "1")
    done = repo.cli("conflicts")
    assert done.returncode == ExitCode.NOTHING, done.stderr
    assert done.stdout.startswith("no unresolved conflicts")
    assert "unresolved" not in cli(repo, "recall", "--kind", "decision")
    assert result(repo, "conflicts", status=ExitCode.NOTHING)["conflicts"] == []


def test_nothing_is_resolved_automatically(repo: GitRepo) -> None:
    conflicting(repo)
    for _ in range(2):
        cli(repo, "conflicts")
        cli(repo, "recall")
    assert [r["superseded_by"] for r in result(repo, "list", "--all")["records"]] == [None, None]


def test_conflicts_refuses_an_empty_scope_in_one_line(repo: GitRepo) -> None:
    conflicting(repo)
    done = repo.cli("conflicts", "--scope", "")
    assert done.returncode == ExitCode.USAGE, done
    assert done.stderr.count("\n") == 1, done.stderr
    assert "--scope is empty" in done.stderr, done.stderr


def test_pack_shows_a_near_duplicate_once_and_marks_a_conflict(repo: GitRepo) -> None:
    twice(repo)
    add(repo, FIVE, "--kind", "decision", "--anchor", RUN)
    add(repo, THIRTY, "--kind", "decision", "--anchor", RUN)
    digest = cli(repo, "pack")
    assert digest.count("TimeoutError escapes") == 1, digest
    assert "[2 near-duplicates: #1, #2]" in digest
    assert "[unresolved: conflicts with #5]" in digest
    assert "[unresolved: conflicts with #4]" in digest
    assert "--supersedes ID" in digest
    shape = result(repo, "pack")
    assert shape["collapsed"] == [{"id": 1, "count": 2, "ids": [1, 2]}]
    assert shape["conflicts"] == [{"anchor": RUN_KEY, "ids": [4, 5]}]
    assert shape["omitted"] == 0


def test_pack_all_shows_every_near_duplicate(repo: GitRepo) -> None:
    twice(repo)
    digest = cli(repo, "pack", "--all")
    assert digest.count("TimeoutError escapes") == 2, digest
    assert "near-duplicates" not in digest
    shape = result(repo, "pack", "--all")
    assert "collapsed" not in shape
    ids = [r["record"]["id"] for g in shape["groups"] for r in g["results"]]
    assert sorted(ids) == [1, 2, 3]
    assert shape["omitted"] == 0


def test_hook_all_shows_every_near_duplicate(repo: GitRepo) -> None:
    twice(repo)
    text = context(hook(repo, read(repo, "src/app/retry.py"), "--all"), "PreToolUse")
    assert text.count("TimeoutError escapes") == 2, text
    assert "near-duplicates" not in text
    start = {**common(repo, "SessionStart"), "source": "clear"}
    digest = context(hook(repo, start, "--all"), "SessionStart")
    assert digest.count("TimeoutError escapes") == 2, digest
    assert "near-duplicates" not in digest


def test_a_folded_near_duplicate_counts_as_shown_in_the_session(repo: GitRepo) -> None:
    twice(repo)
    start = {**common(repo, "SessionStart"), "source": "startup"}
    assert "[2 near-duplicates: #1, #2]" in context(hook(repo, start), "SessionStart")
    # Both were shown in one line at session start: neither is shown again.
    silent(hook(repo, read(repo, "src/app/retry.py"), "--all"))


def test_a_file_notice_shows_a_near_duplicate_once_and_marks_a_conflict(repo: GitRepo) -> None:
    twice(repo)
    conflicting(repo)  # records 4 and 5
    text = context(hook(repo, read(repo, "src/app/retry.py")), "PreToolUse")
    assert text.count("TimeoutError escapes") == 1, text
    assert "[2 near-duplicates: #1, #2]" in text
    assert "[unresolved: conflicts with #5]" in text
    assert "remember the decision that holds with supersedes" in text


if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing SDK fails
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")


def tools(repo: GitRepo, *sequence: tuple[str, dict[str, Any]]) -> list[Any]:
    from test_mcp_surfaces import calls

    db = next((repo.root / ".git").glob("**/*.db"))
    return calls(repo, db, *sequence)


def test_mcp_tools_show_a_near_duplicate_once_and_all_shows_every_one(repo: GitRepo) -> None:
    twice(repo)
    search, every, listed, listed_all = tools(
        repo,
        ("search", {"query": "timeouterror"}),
        ("search", {"query": "timeouterror", "all": True}),
        ("list", {}),
        ("list", {"all": True}),
    )
    assert [r["record"]["id"] for r in search.structured_content["results"]] == [1]
    assert search.structured_content["collapsed"] == [{"id": 1, "count": 2, "ids": [1, 2]}]
    text = search.content[0].text
    assert "1 result, 2 with near-duplicates" in text
    assert "[2 near-duplicates: #1, #2]" in text
    assert [r["record"]["id"] for r in every.structured_content["results"]] == [1, 2]
    assert [r["id"] for r in listed.structured_content["records"]] == [3, 2]
    assert [r["id"] for r in listed_all.structured_content["records"]] == [3, 2, 1]


def test_mcp_tools_mark_conflicting_decisions_and_list_them(repo: GitRepo) -> None:
    conflicting(repo)
    search, listed, refused, remembered = tools(
        repo,
        ("search", {"query": "gives up"}),
        ("list", {"conflicts": True}),
        ("list", {"conflicts": True, "kind": "lesson"}),
        ("remember", {"kind": "decision", "body": "Retry.run never gives up", "anchor": RUN}),
    )
    text = search.content[0].text
    assert "[unresolved: conflicts with #2]" in text
    assert "[unresolved: conflicts with #1]" in text
    assert "remember the decision that holds with supersedes" in text
    assert search.structured_content["conflicts"] == [{"anchor": RUN_KEY, "ids": [1, 2]}]
    assert listed.structured_content["conflicts"][0]["ids"] == [1, 2]
    assert listed.content[0].text.startswith("1 unresolved conflict:")
    assert refused.is_error
    assert "'kind' does not go with 'conflicts'" in refused.content[0].text
    assert "[unresolved: conflicts with #1, #2]" in remembered.content[0].text
    assert remembered.structured_content["conflicts"] == [{"anchor": RUN_KEY, "ids": [1, 2, 3]}]
