"""Command-line habits: a near miss is refused naming what was meant, kinds
are matched without regard to case, ids are taken as pasted, ``--touched``
alone does not eat the query, and the same lesson recorded twice is one
record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import RETRY, Repo

from roteiro_memory.app.records import same_body


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo(tmp_path)
    made.git("init", "-q", "-b", "main")
    made.write("src/app/retry.py", RETRY)
    made.commit("initial")
    return made


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["recal", "x"], "unknown command 'recal'; did you mean 'recall'?"),
        (
            ["frobnicate"],
            "unknown command 'frobnicate'; `roteiro-memory --help` lists the commands",
        ),
        (
            ["--kind", "lesson", "add", "x"],
            "--kind is an option of add, so it goes after the command: "
            "roteiro-memory add x --kind lesson",
        ),
        (["recall", "--limt", "3"], "recall has no option --limt; did you mean --limit?"),
        (
            ["recall", "-k"],
            "recall has no option -k; `roteiro-memory recall --help` lists its options "
            "(a word that starts with a dash goes after `--`: "
            "`roteiro-memory recall [OPTIONS] -- -k`)",
        ),
        (
            ["recall", "--no-verify", "hook"],
            "recall has no option --no-verify; `roteiro-memory recall --help` lists its "
            "options (a word that starts with a dash goes after `--`: "
            "`roteiro-memory recall [OPTIONS] -- --no-verify`)",
        ),
        (
            ["list", "-q"],
            "list has no option -q; `roteiro-memory list --help` lists its options",
        ),
        (
            ["setup", "-x", "claude-code"],
            "setup has no option -x; `roteiro-memory setup --help` lists its options",
        ),
        (
            ["--jsn", "list"],
            "--jsn is not an option of list; did you mean --json (after the command)?",
        ),
    ],
)
def test_a_near_miss_names_what_was_meant(repo: Repo, argv: list[str], said: str) -> None:
    done = repo.run(*argv)
    assert done.returncode == 2
    assert done.stderr == f"roteiro-memory: error: {said}\n"


def test_kinds_are_matched_without_regard_to_case(repo: Repo) -> None:
    made = json.loads(repo.ok("add", "a decision", "--kind", "Decision", "--json"))["result"]
    assert made["record"]["kind"] == "decision"
    listed = repo.json("list", "--kind", "DECISION")["records"]
    assert [r["id"] for r in listed] == [made["id"]]
    refused = repo.run("list", "--kind", "Rumour")
    assert refused.returncode == 2
    assert "unknown memory kind 'Rumour'" in refused.stderr


@pytest.mark.parametrize("pasted", ["#1", " 1", "1 ", "# 1"])
def test_ids_are_taken_as_pasted_from_a_table_or_a_digest(repo: Repo, pasted: str) -> None:
    repo.add("the first", None)
    assert repo.json("show", pasted)["id"] == 1


def test_supersedes_takes_a_pasted_id(repo: Repo) -> None:
    repo.add("the first", None)
    done = repo.ok("add", "the second", "--supersedes", "#1")
    assert done == "recorded 2 (lesson, superseding 1)\n"


def test_touched_alone_does_not_take_the_next_word_for_a_revision(repo: Repo) -> None:
    on_run = repo.add("run retries OSError only", "src/app/retry.py::Retry.run")
    repo.add("run logs each attempt", "src/app/retry.py::Retry.run")
    source = (repo.root / "src/app/retry.py").read_text()
    repo.write(
        "src/app/retry.py", source.replace("def run(self, call):", "def run(self, call):  # e")
    )
    found = repo.json("recall", "--touched", "OSError")["results"]
    assert [r["record"]["id"] for r in found] == [on_run]
    by_rev = repo.json("recall", "--touched=HEAD", "OSError")["results"]
    assert [r["record"]["id"] for r in by_rev] == [on_run]


def test_same_body_folds_case_and_white_space() -> None:
    assert same_body("Retry  twice\n", " retry TWICE")
    assert not same_body("retry twice", "retry thrice")


def test_remembering_the_same_lesson_twice_writes_it_once(repo: Repo) -> None:
    first = json.loads(
        repo.ok("add", "Run retries OSError only", "--anchor", "src/app/retry.py", "--json")
    )["result"]
    assert first["existing"] is False
    before = repo.snapshot()
    again = repo.ok("add", "run  retries oserror ONLY", "--anchor", "src/app/retry.py")
    assert again == (
        f"already recorded as {first['id']} (lesson, anchored to src/app/retry.py (+ valid)); "
        "nothing written (--allow-duplicate writes another)\n"
    )
    assert repo.snapshot() == before
    as_json = json.loads(
        repo.ok("add", "Run retries OSError only", "--anchor", "src/app/retry.py", "--json")
    )["result"]
    assert (as_json["id"], as_json["existing"]) == (first["id"], True)
    assert repo.snapshot() == before


@pytest.mark.parametrize(
    "other",
    [
        ["--kind", "decision"],
        ["--scope", "team"],
        ["--anchor", "src/app/retry.py::Retry.run"],
        ["--allow-duplicate"],
    ],
)
def test_a_lesson_differing_in_kind_scope_or_anchor_is_written(
    repo: Repo, other: list[str]
) -> None:
    repo.ok("add", "Run retries OSError only", "--anchor", "src/app/retry.py")
    made = json.loads(
        repo.ok(
            "add",
            "Run retries OSError only",
            *(["--anchor", "src/app/retry.py"] if "--anchor" not in other else []),
            *other,
            "--json",
        )
    )["result"]
    assert (made["id"], made["existing"]) == (2, False)


def test_an_unanchored_lesson_is_not_answered_by_an_anchored_one(repo: Repo) -> None:
    repo.ok("add", "retry twice", "--anchor", "src/app/retry.py")
    made = json.loads(repo.ok("add", "retry twice", "--json"))["result"]
    assert made["existing"] is False
    again = json.loads(repo.ok("add", "Retry twice", "--json"))["result"]
    assert (again["id"], again["existing"]) == (made["id"], True)


def test_a_superseded_lesson_does_not_answer_for_itself(repo: Repo) -> None:
    repo.ok("add", "retry twice")
    repo.ok("add", "retry three times", "--supersedes", "1")
    made = json.loads(repo.ok("add", "retry twice", "--json"))["result"]
    assert (made["id"], made["existing"]) == (3, False)


def test_an_empty_scope_is_refused_on_reads_as_on_writes(repo: Repo) -> None:
    for argv in (["add", "x", "--scope", ""], ["list", "--scope", ""], ["recall", "--scope="]):
        done = repo.run(*argv, "--json")
        assert done.returncode == 2, argv
        assert json.loads(done.stdout)["error"]["kind"] == "InvalidScope", argv
