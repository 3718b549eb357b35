"""``recall WORDS...`` answers a question with the search arm; ``--filter``
keeps the exact conjunctive match; ``eval`` runs the evaluation harness."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import Repo

from roteiro_memory.cli.main import main
from roteiro_memory.exitcodes import ExitCode


def _store(tmp_path: Path) -> tuple[Repo, str]:
    repo = Repo(tmp_path)
    repo.git("init", "-q", "-b", "main")
    store = str(tmp_path / "memory.db")
    repo.ok("add", "Database migrations time out under the table lock", "--db", store)
    repo.ok("add", "The cache is rebuilt on every deploy", "--db", store)
    return repo, store


def test_recall_words_find_a_lesson_phrased_otherwise(tmp_path: Path) -> None:
    repo, store = _store(tmp_path)
    found = repo.json(
        "recall", "why", "does", "my", "migration", "time", "out", "--db", store, "--json"
    )
    assert found["schema"] == "roteiro.search/v1"
    assert [r["record"]["id"] for r in found["results"]] == [1]
    assert found["results"][0]["relevance"] > 0
    # Stop words dropped, stemmed, and the two neighbouring words also joined.
    assert found["terms"] == ["migration", "migrationtim", "tim"]


def test_recall_filter_needs_every_word_as_a_substring(tmp_path: Path) -> None:
    repo, store = _store(tmp_path)
    assert main(["recall", "--filter", "why", "migration", "--db", store]) == ExitCode.NOTHING
    exact = repo.json("recall", "--filter", "migrations", "lock", "--db", store, "--json")
    assert exact["schema"] == "roteiro.recall/v1"
    assert [r["record"]["id"] for r in exact["results"]] == [1]


def test_recall_without_words_ranks_every_live_record(tmp_path: Path) -> None:
    repo, store = _store(tmp_path)
    everything = repo.json("recall", "--db", store, "--json")
    assert everything["schema"] == "roteiro.recall/v1"
    assert [r["record"]["id"] for r in everything["results"]] == [2, 1]


@pytest.mark.parametrize("query", [["IT"], ["for", "each"], ["::"]])
def test_a_question_of_no_searchable_word_says_so(tmp_path: Path, query: list[str]) -> None:
    """Stop words and punctuation leave no term: the answer says why it is
    empty and what finds words as written; a question of terms no record
    holds is empty with no such line."""
    repo, store = _store(tmp_path)
    done = repo.run("recall", *query, "--db", store)
    assert done.returncode == ExitCode.NOTHING
    assert done.stdout.splitlines()[1:] == [
        "no word of the question is searched: stop words and punctuation are not "
        "(recall --filter WORDS finds words as written)"
    ]
    unheld = repo.run("recall", "kubernetes", "--db", store)
    assert unheld.returncode == ExitCode.NOTHING
    assert len(unheld.stdout.splitlines()) == 1


@pytest.mark.parametrize("query", ["\x1c", "\x1f \x1d"])
def test_a_query_of_what_is_no_white_space_is_words_and_finds_nothing(
    tmp_path: Path, query: str
) -> None:
    """PROTOCOL's white space is Unicode's White_Space, which U+001C..U+001F
    are not (Python's ``str.strip`` takes them): such a query is no blank
    one listing every record, but words that find none."""
    _, store = _store(tmp_path)
    for filtering in ([], ["--filter"]):
        argv = ["recall", *filtering, query, "--db", store]
        assert main(argv) == ExitCode.NOTHING


def test_eval_prints_the_table_and_writes_the_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plot = tmp_path / "out.png"
    assert main(["eval", "coding", "--no-timing", "--plot", str(plot)]) == 0
    table = capsys.readouterr().out
    for arm in ("filter  all", "search  all", "bm25s   all"):
        assert arm in table
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_eval_bad_dataset_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["eval", "nosuch"]) == 2
    assert "invalid choice: 'nosuch'" in capsys.readouterr().err


def test_the_command_line_does_not_import_the_evaluation_to_start() -> None:
    code = (
        "import sys\n"
        "from roteiro_memory.cli.main import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print('roteiro_memory.evaluation' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False"
    assert "eval" in done.stdout


def test_eval_under_json_answers_in_the_envelope(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--json", "eval", "coding", "--arms", "bogus"]) == 2
    refused = json.loads(capsys.readouterr().out)
    assert refused["ok"] is False
    assert refused["error"]["kind"] == "BadRequest"
    assert "unknown arm 'bogus'" in refused["error"]["message"]
    assert main(["eval", "coding", "--json", "--no-timing", "--arms", "search"]) == 0
    answered = json.loads(capsys.readouterr().out)
    assert answered["schema"] == "roteiro.cli/v1"
    assert answered["ok"] is True
    assert answered["result"]["schema"] == "roteiro.eval/v1"
    assert list(answered["result"]["arms"]) == ["search"]
