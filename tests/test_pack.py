"""The session digest: selection within a token budget, grouping, drift shown,
and the ``pack`` command's output, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_repo import RETRY, GitRepo

from roteiro_memory.app.pack import MAX_BUDGET, MIN_BUDGET, PACK_SCHEMA, select, tokens
from roteiro_memory.results import GraphNode
from roteiro_memory.stores.model import ModelStore

KINDS = ("lesson", "attempt", "decision", "pattern")
"""The kinds a digest holds."""


def store_with(*records: tuple[str, str, str | None]) -> ModelStore:
    """A store holding ``(kind, body, anchor key)`` records, every anchor valid."""
    store = ModelStore()
    keys = sorted({key for _, _, key in records if key is not None})
    store.put_nodes(GraphNode(key, blob="a" * 40) for key in keys)
    for kind, body, key in records:
        store.record(kind, body, anchor=key)
    return store


def test_tokens_are_utf8_bytes_over_four_rounded_up() -> None:
    assert [tokens(""), tokens("abcd"), tokens("abcde"), tokens("é" * 2)] == [0, 1, 2, 1]


def test_pack_fits_every_budget_and_counts_what_it_left_out() -> None:
    store = store_with(
        *[("lesson", f"lesson number {i} " + "x" * (i * 7), None) for i in range(60)]
    )
    recall = store.recall()
    for budget in (MIN_BUDGET, 150, 400, 1000, 5000):
        pack = select(recall, budget)
        assert tokens(pack.markdown()) <= budget, budget
        assert len(pack.chosen) + pack.omitted == 60
    assert select(recall, 400).chosen
    assert len(select(recall, 1000).chosen) > len(select(recall, 400).chosen)
    assert select(recall, 10**6).omitted == 0


def test_pack_cuts_a_long_body_to_one_line_that_says_how_to_read_it_all() -> None:
    store = store_with(("lesson", "short one", None), ("lesson", "y" * 4000, None))
    pack = select(store.recall(), 300)
    assert sorted(r.record.body[:9] for r in pack.chosen) == ["short one", "yyyyyyyyy"]
    long_line = next(line for line in pack.markdown().splitlines() if "yyy" in line)
    assert long_line.endswith("... [4000 chars: get 2]")
    assert len(long_line) < 300


def test_pack_skips_a_line_that_does_not_fit_and_keeps_the_next_that_does() -> None:
    store = store_with(("lesson", "short one", None), ("lesson", "y " * 99 + "y", None))
    budget = MIN_BUDGET + 10
    pack = select(store.recall(), budget)
    assert [r.record.body for r in pack.chosen] == ["short one"]
    assert pack.omitted == 1
    assert "1 more did not fit" in pack.markdown()
    assert tokens(pack.markdown()) <= budget


def test_pack_groups_by_kind_in_order_and_leaves_outcomes_out() -> None:
    store = store_with(
        ("pattern", "wrap every git call in _run", None),
        ("outcome", "the release went out", None),
        ("decision", "SQLite by default", None),
        ("attempt", "threading the sync made it slower", None),
        ("lesson", "git status is the slow part", None),
    )
    pack = select(store.recall(), 1000)
    text = pack.markdown()
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings == ["## Lessons", "## Failed attempts", "## Decisions", "## Patterns"]
    assert "the release went out" not in text
    assert [g["kind"] for g in pack.to_json()["groups"]] == [
        "lesson",
        "attempt",
        "decision",
        "pattern",
    ]


def test_pack_marks_drifted_and_vanished_records_instead_of_hiding_them() -> None:
    store = store_with(
        ("lesson", "run caps its backoff", "py:src/app/retry.py::Retry.run"),
        ("lesson", "jitter stays below 1.2", "py:src/app/retry.py::jitter"),
        ("lesson", "old helper is slow", "file:src/old.py"),
    )
    store.put_nodes([GraphNode("py:src/app/retry.py::Retry.run", blob="b" * 40)])
    store.remove_nodes(["file:src/old.py"])
    text = select(store.recall(), 1000).markdown()
    lessons, changed = text.split("## Changed since recorded\n")
    assert "- #2 lesson valid 0.50 @ src/app/retry.py::jitter: jitter stays below 1.2" in lessons
    # ranked by the anchor penalty: vanished 0.35, then drifted 0.25
    assert changed.index("- #3 lesson vanished 0.17 @ src/old.py: old helper is slow") < (
        changed.index("- #1 lesson drifted 0.12 @ src/app/retry.py::Retry.run: run caps")
    )
    assert "check it before relying on the record" in text


def test_pack_keeps_room_for_what_changed_when_everything_else_would_fill_it() -> None:
    """200 records, 5 of them drifted: with budget for a few dozen, the
    drifted ones are still shown (a share of the budget is theirs)."""
    rows = [("lesson", f"applies {n}: " + "z" * 60, None) for n in range(195)]
    rows += [("lesson", f"drifted {n}", f"py:src/m.py::f{n}") for n in range(5)]
    store = store_with(*rows)
    store.put_nodes(GraphNode(f"py:src/m.py::f{n}", blob="c" * 40) for n in range(5))
    pack = select(store.recall(), 2000)
    shown = {r.record.body for r in pack.chosen}
    assert {f"drifted {n}" for n in range(5)} <= shown
    assert 0 < pack.omitted < 195
    assert tokens(pack.markdown()) <= 2000


def test_pack_json_is_the_same_selection_with_recall_results() -> None:
    store = store_with(("lesson", "a", None), ("decision", "b", None), ("outcome", "c", None))
    pack = select(store.recall(), 500)
    shape = pack.to_json()
    assert shape["schema"] == PACK_SCHEMA
    assert shape["budget"] == 500
    assert shape["tokens"] == tokens(pack.markdown())
    assert shape["touched"] is None
    assert shape["omitted"] == 0
    assert shape["live"] == 3
    results = [r for g in shape["groups"] for r in g["results"]]
    assert [r["record"]["body"] for r in results] == ["a", "b"]
    assert set(results[0]) == {
        "score",
        "base_confidence",
        "anchor_penalty",
        "decay_factor",
        "age",
        "record",
    }


def test_pack_refuses_a_budget_below_its_floor() -> None:
    with pytest.raises(ValueError, match="below its floor"):
        select(store_with().recall(), MIN_BUDGET - 1)


def test_every_budget_in_range_gives_a_digest_whatever_the_store_holds() -> None:
    """Conflicting decisions, near-duplicates and records about changed code
    each bring a note, a heading or a sentence along; each costs only when
    what it belongs to is shown, so every budget from the smallest gives a
    digest within it that counts what it left out."""
    from roteiro_memory.app.shown import conflicts_among

    rows = [
        ("decision", "use the fast path", "py:src/a.py::f"),
        ("decision", "use the slow path always", "py:src/a.py::f"),
    ]
    rows += [("lesson", "always run the linter before committing", None)] * 3
    rows += [(k, f"{k} about g, number {n}", "py:src/a.py::g") for k in KINDS for n in range(3)]
    rows += [(k, f"{k} that applies, number {n}", None) for k in KINDS for n in range(3)]
    store = store_with(*rows)
    store.put_nodes([GraphNode("py:src/a.py::g", blob="b" * 40)])  # their code changed
    recall = store.recall()
    found = conflicts_among(store, [r.record for r in recall.results])
    assert found
    for budget in [*range(MIN_BUDGET, 600, 3), 2000, MAX_BUDGET]:
        pack = select(recall, budget, conflicts=found)
        assert tokens(pack.markdown()) <= budget, budget
        shown = sum(max(len(pack.marks.stands_for(r.record.id)), 1) for r in pack.chosen)
        assert shown + pack.omitted == len(recall.results), budget
    whole = select(recall, MAX_BUDGET, conflicts=found).markdown()
    assert "[unresolved: " in whole
    assert "## Changed since recorded" in whole
    assert select(recall, MIN_BUDGET, conflicts=found).chosen


# --- The command --------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def test_pack_on_a_repository_with_no_store_exits_0_and_creates_none(repo: GitRepo) -> None:
    done = repo.cli("pack")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# Memory for this repository\n")
    assert "Nothing recorded applies yet" in done.stdout
    assert not (repo.root / ".git" / "roteiro").exists()


def test_pack_touched_names_no_revision_that_is_none_even_with_no_store(repo: GitRepo) -> None:
    """``--touched=`` names no revision: refused as with a store, rather
    than a digest "about what changed since" nothing."""
    for given in ("--touched=", "--touched=-x"):
        done = repo.cli("pack", given)
        assert done.returncode == 2, done.stdout
        assert done.stdout == ""
        assert done.stderr.startswith("roteiro-memory: error: invalid revision '"), done.stderr
    assert repo.cli("pack", "--touched").returncode == 0
    assert not (repo.root / ".git" / "roteiro").exists()


def test_pack_outside_a_repository_exits_0(tmp_path: Path, repo: GitRepo) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    done = repo.cli("pack", "--json")
    assert done.returncode == 0
    moved = GitRepo.__new__(GitRepo)
    moved.root, moved.env = outside, repo.env
    away = moved.cli("pack", "--json")
    assert away.returncode == 0, away.stderr
    assert json.loads(away.stdout)["result"]["groups"] == []


def test_pack_twice_is_byte_identical_and_shows_drift(repo: GitRepo) -> None:
    for args in (
        ["add", "jitter stays below 1.2", "--anchor", "src/app/retry.py::jitter"],
        [
            "add",
            "run caps at 30 s",
            "--anchor",
            "src/app/retry.py::Retry.run",
            "--confidence",
            "0.9",
        ],
        ["add", "threads did not help", "--kind", "attempt"],
        ["add", "SQLite is the default", "--kind", "decision"],
    ):
        assert repo.cli(*args).returncode == 0
    repo.write("src/app/retry.py", RETRY.replace("value * 1.1", "value * 1.3"))
    first, second = repo.cli("pack"), repo.cli("pack")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert "- #1 lesson drifted 0.12 @ src/app/retry.py::jitter: jitter stays" in first.stdout
    assert repo.cli("pack", "--json").stdout == repo.cli("pack", "--json").stdout


def test_pack_touched_keeps_what_the_change_touches(repo: GitRepo) -> None:
    assert repo.cli("add", "jitter note", "--anchor", "src/app/retry.py::jitter").returncode == 0
    assert repo.cli("add", "run note", "--anchor", "src/app/retry.py::Retry.run").returncode == 0
    repo.write("src/app/retry.py", RETRY.replace("gave up", "gave up retrying"))
    done = repo.cli("pack", "--touched", "--json")
    assert done.returncode == 0, done.stderr
    shape = json.loads(done.stdout)["result"]
    assert shape["touched"] == "HEAD"
    bodies = [r["record"]["body"] for g in shape["groups"] for r in g["results"]]
    assert bodies == ["run note"]
    text = repo.cli("pack", "--touched").stdout
    assert text.startswith("# Memory about what changed since HEAD\n")


def test_pack_names_a_bad_budget(repo: GitRepo) -> None:
    done = repo.cli("pack", "--budget", "ten")
    assert done.returncode == 2
    assert "invalid --budget 'ten'" in done.stderr
    assert f"from {MIN_BUDGET} to {MAX_BUDGET}" in done.stderr


def test_pack_names_its_upper_bound(repo: GitRepo) -> None:
    done = repo.cli("pack", "--budget", str(MAX_BUDGET + 1))
    assert done.returncode == 2
    assert done.stderr == (
        f"roteiro-memory: error: invalid --budget '{MAX_BUDGET + 1}': expected a whole number "
        f"of tokens from {MIN_BUDGET} to {MAX_BUDGET}\n"
    )
    assert repo.cli("pack", "--budget", str(MAX_BUDGET)).returncode == 0


def test_pack_reads_no_more_records_than_its_budget_could_hold() -> None:
    """A huge budget on a large store bounds the work: the digest reads at
    most as many ranked records as its budget could show of those that
    apply, and of those about changed code as many as the share held for
    them could show when those that apply fill the rest (else as many as
    the budget could), each chosen by the store."""
    import math
    from typing import Any

    from roteiro_memory.app.pack import STALE_SHARE, _candidates, read_limit

    asked: list[tuple[object, ...]] = []

    class Counting(ModelStore):
        def recall(self, *args: Any, **kwargs: Any) -> Any:
            which = [k for k in ("applicable_only", "stale_only") if kwargs.get(k)]
            asked.append(("recall", kwargs.get("limit"), *which))
            return super().recall(*args, **kwargs)

        def list(self, *args: Any, **kwargs: Any) -> Any:
            asked.append(("list", kwargs.get("limit")))
            return super().list(*args, **kwargs)

    store = Counting()
    many = read_limit(MIN_BUDGET) + 40
    for n in range(many):
        store.record("lesson", f"lesson {n}")
        store.record("lesson", f"lesson {n} about gone code", anchor="py:src/gone.py::f")
    for budget in (MIN_BUDGET, MAX_BUDGET):
        asked.clear()
        candidates, every_read = _candidates(store, budget, None)
        limit = read_limit(budget)
        stale = limit if many < limit else read_limit(math.ceil(budget * STALE_SHARE))
        assert asked == [("recall", limit, "applicable_only"), ("recall", stale, "stale_only")]
        assert len(candidates.results) == min(many, limit) + min(many, stale)
        assert every_read is (many < stale)
    assert read_limit(MAX_BUDGET) < 10_000


def test_pack_says_at_least_when_records_were_left_unread(repo: GitRepo) -> None:
    """A read that stopped at its limit left records unread: the digest's
    count of those that did not fit is a floor, and says so, as its JSON
    does; a store read whole gives the exact count."""
    from roteiro_memory.app.pack import read_limit

    many = read_limit(MIN_BUDGET) + 39
    for n in range(many):
        assert repo.cli("add", f"lesson number {n}", "--no-sync").returncode == 0
    done = repo.cli("pack", "--budget", str(MIN_BUDGET), "--json")
    shape = json.loads(done.stdout)["result"]
    shown = sum(len(g["results"]) for g in shape["groups"])
    assert shown + shape["omitted"] == read_limit(MIN_BUDGET) < many
    assert shape["omitted_exact"] is False
    footer = repo.cli("pack", "--budget", str(MIN_BUDGET)).stdout.splitlines()[-1]
    assert footer.startswith(f"_At least {shape['omitted']} more did not fit the budget")
    whole = json.loads(repo.cli("pack", "--budget", "5000", "--json").stdout)["result"]
    assert whole["omitted_exact"] is True
    assert sum(len(g["results"]) for g in whole["groups"]) + whole["omitted"] == many


def test_pack_shows_stored_control_characters_as_escapes_within_its_budget() -> None:
    """A body may hold an escape sequence; the digest is printed to a
    terminal, so it shows ``\\x1b`` instead, and the budget counts those
    four bytes rather than the one it stands for."""
    bodies = [f"lesson {i} \x1b[2J\x07 " + "\x1b" * (i * 20) for i in range(40)]
    store = store_with(*[("lesson", body, None) for body in bodies])
    for budget in (MIN_BUDGET, 300, 2000):
        shown = select(store.recall(), budget).markdown()
        assert "\x1b" not in shown
        assert "\x07" not in shown
        assert tokens(shown) <= budget, budget
    assert " \\x1b[2J\\x07 " in select(store.recall(), 2000).markdown()


def test_pack_says_records_were_left_unread_when_all_it_read_fold_into_a_line(
    repo: GitRepo,
) -> None:
    """Near-duplicates fold into one line, so every record read can be shown
    while more were never read: no "At least 0 more did not fit"."""
    for _ in range(60):
        done = repo.cli(
            "add", "always run the linter before committing", "--no-sync", "--allow-duplicate"
        )
        assert done.returncode == 0, done.stderr
    shape = json.loads(repo.cli("pack", "--budget", "150", "--json").stdout)["result"]
    assert (shape["omitted"], shape["omitted_exact"]) == (0, False)
    footer = repo.cli("pack", "--budget", "150").stdout.splitlines()[-1]
    assert footer.startswith("_More records were left unread, beyond what the budget shows")


def test_a_drifted_record_older_than_the_window_is_still_listed_as_changed() -> None:
    """Records about changed code are found however many newer ones there
    are: the oldest one drifted is listed under its heading, not silently
    left out of a digest that says it is complete."""
    from roteiro_memory.app.pack import _candidates, read_limit
    from roteiro_memory.store import MemoryWrite

    store = store_with(("lesson", "f must never return 0", "py:src/a.py::f"))
    store.put_nodes([GraphNode("py:src/b.py::g", blob="a" * 40)])
    newer = read_limit(MAX_BUDGET) + 2001
    store.record_many(
        MemoryWrite("lesson", f"g note {n}", anchor="py:src/b.py::g", confidence=0.1)
        for n in range(newer)
    )
    store.put_nodes([GraphNode("py:src/a.py::f", blob="b" * 40)])  # record 1 drifts
    recall, every_read = _candidates(store, MAX_BUDGET, None)
    pack = select(recall, MAX_BUDGET, every_read=every_read)
    changed = [r.record.id for key, _, members in pack.groups() if key == "stale" for r in members]
    assert changed == [1]
    assert "- #1 lesson drifted" in pack.markdown().split("## Changed since recorded\n")[1]
