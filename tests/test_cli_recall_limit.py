"""``recall`` prints the best-ranked records, not the whole store, unless
asked: ``--limit 0`` is every record."""

from __future__ import annotations

from pathlib import Path

from test_cli import Repo

from roteiro_memory.cli.commands.recall import LIMIT as RECALL_LIMIT


def test_recall_defaults_to_the_best_ranked_and_limit_zero_is_everything(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    repo.git("init", "-q", "-b", "main")
    store = str(tmp_path / "memory.db")
    for n in range(RECALL_LIMIT + 5):
        # The oldest records are the most confident: the default cut keeps
        # the best scores, not the newest ids.
        confidence = str(round(1.0 - n / 100, 2))
        repo.ok("add", f"lesson {n}", "--db", store, "--confidence", confidence)
    default = repo.json("recall", "--db", store, "--json")
    assert len(default["results"]) == RECALL_LIMIT
    assert [r["record"]["id"] for r in default["results"]] == list(range(1, RECALL_LIMIT + 1))
    assert default["live"] == RECALL_LIMIT + 5
    everything = repo.json("recall", "--db", store, "--json", "--limit", "0")
    assert len(everything["results"]) == RECALL_LIMIT + 5


def test_a_limit_beyond_64_bits_is_refused_naming_the_largest(tmp_path: Path) -> None:
    """A whole number too large for the store is refused with the range
    allowed, not as though it were not a whole number."""
    repo = Repo(tmp_path)
    store = str(tmp_path / "memory.db")
    for limit in ("9223372036854775808", "18446744073709551615", "9" * 40):
        done = repo.run("recall", "--db", store, "--no-sync", "--limit", limit)
        assert done.returncode == 2
        assert done.stderr == (
            f"roteiro-memory: error: invalid --limit {limit!r}: expected a whole number,"
            " 0 or more (0 = no limit), at most 9,223,372,036,854,775,807\n"
        )
    done = repo.run("recall", "--db", store, "--no-sync", "--limit", "-1")
    # -1 is a whole number: the refusal says which are allowed.
    assert done.stderr.endswith("expected a whole number, 0 or more (0 = no limit)\n")
