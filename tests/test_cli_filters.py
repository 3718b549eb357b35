"""Repeated ``--kind`` and ``--anchor`` on ``list`` and ``recall`` keep the
union of each option's values, in the store's own order and under its limit
rule.  Checked against the model: one model query per (kind, anchor) pair,
merged and cut the way the contract orders and limits."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roteiro_memory import semantics as sem
from roteiro_memory.app import anchors as filters
from roteiro_memory.cli.main import main
from roteiro_memory.repo import graph, languages
from roteiro_memory.semantics import KIND_TOKENS
from roteiro_memory.store import MemoryWrite
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.sqlite.store import SQLiteStore

ANCHORS = ["file:a.py", "py:a.py::f", "file:b.py", "doc:guide"]

writes = st.lists(
    st.builds(
        MemoryWrite,
        kind=st.sampled_from(KIND_TOKENS),
        body=st.sampled_from(["retry on 503", "cap the backoff", "log the id"]),
        anchor=st.none() | st.sampled_from(ANCHORS),
        confidence=st.none() | st.sampled_from([0.1, 0.5, 0.9]),
    ),
    max_size=12,
)
kinds = st.lists(st.sampled_from(KIND_TOKENS), max_size=3)
anchors = st.lists(st.sampled_from(ANCHORS), max_size=3)
limits = st.sampled_from([0, 1, 2, 5])


def _cli(*argv: str) -> tuple[int, Any]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main([*argv, "--json", "--no-sync"])
    return status, json.loads(out.getvalue())["result"]


def _both(
    writes: list[MemoryWrite], command: str, options: list[str]
) -> tuple[ModelStore, int, Any]:
    """The model holding ``writes``, and what ``command`` with ``options``
    answers (exit status, ``result``) on an SQLite store holding the same."""
    model = ModelStore()
    model.record_many(writes)
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "m.db")
        with SQLiteStore(db) as store:
            store.record_many(writes)
        status, result = _cli(command, "--db", db, *options)
    return model, status, result


def _options(kind_values: list[str], anchor_values: list[str], limit: int) -> list[str]:
    argv = ["--limit", str(limit)]
    for kind in kind_values:
        argv += ["--kind", kind]
    for anchor in anchor_values:
        argv += ["--anchor", anchor]
    return argv


def _union(model: ModelStore, kind_values: list[str], anchor_values: list[str]) -> set[int]:
    """Every record id some (kind, anchor) query returns."""
    ids: set[int] = set()
    for kind in kind_values or [None]:
        for anchor in anchor_values or [None]:
            ids |= {r.id for r in model.list(kind=kind, anchor_key=anchor).records}
    return ids


@settings(max_examples=40)
@given(writes=writes, kind_values=kinds, anchor_values=anchors, limit=limits)
def test_repeated_filters_list_the_union_newest_first(
    writes: list[MemoryWrite], kind_values: list[str], anchor_values: list[str], limit: int
) -> None:
    from roteiro_memory import duplicates

    model, status, listing = _both(writes, "list", _options(kind_values, anchor_values, limit))
    expected = sorted(_union(model, kind_values, anchor_values), reverse=True)
    if limit:
        expected = expected[:limit]
    # The limit counts records read; what is shown folds their near-duplicates.
    read = [model.get(i) for i in expected]
    shown = [lead.id for lead, _ in duplicates.collapse([r for r in read if r], lambda r: r)]
    assert [r["id"] for r in listing["records"]] == shown
    assert status == (0 if expected else 1)


@settings(max_examples=40)
@given(writes=writes, kind_values=kinds, anchor_values=anchors, limit=limits)
def test_repeated_filters_recall_the_union_in_rank_order(
    writes: list[MemoryWrite], kind_values: list[str], anchor_values: list[str], limit: int
) -> None:
    options = [*_options(kind_values, anchor_values, limit), "--all"]  # every record, unfolded
    model, _, recall = _both(writes, "recall", options)
    wanted = _union(model, kind_values, anchor_values)
    ranked = [r.record.id for r in model.recall().results if r.record.id in wanted]
    assert [r["record"]["id"] for r in recall["results"]] == (ranked[:limit] if limit else ranked)
    scores = {r.record.id: r.score for r in model.recall().results}
    assert all(r["score"] == scores[r["record"]["id"]] for r in recall["results"])


def test_one_value_each_is_left_to_the_store() -> None:
    from roteiro_memory.app.anchors import AnchorSpec, anchor_filter

    assert sem.parse_kinds(None) is None
    assert sem.parse_kinds([]) is None
    assert sem.parse_kinds(["lesson", "lesson"]) == {sem.MemoryKind.LESSON}
    symbol = AnchorSpec("py:a.py::f", "a.py", "f")
    assert anchor_filter([symbol, symbol]) == ("py:a.py::f", None)
    key, anchors = anchor_filter([symbol, AnchorSpec("file:b.py", "b.py", None)])
    assert key is None
    assert anchors is not None
    assert anchors.keys == {"py:a.py::f", "file:b.py"}
    assert anchors.prefixes == ("py:b.py::",)


def test_graph_prefixes_are_the_key_rules_own() -> None:
    """One table names every prefix: the command line's and the graph's are its."""
    assert filters.KEY_PREFIXES is languages.KEY_PREFIXES
    assert (filters.FILE_PREFIX, filters.PY_PREFIX) == (graph.FILE_PREFIX, graph.PY_PREFIX)
    assert set(languages.SYMBOL_PREFIXES) == {"py:", "ts:", "js:", "go:", "rs:", "java:"}


def test_a_bare_path_filters_its_symbols_by_its_languages_prefix() -> None:
    from roteiro_memory.app.anchors import AnchorSpec, anchor_filter

    specs = [AnchorSpec(f"file:{path}", path, None) for path in ("web.ts", "a.go", "notes.txt")]
    _, anchors = anchor_filter(specs)
    assert anchors is not None
    assert anchors.prefixes == ("ts:web.ts::", "go:a.go::")


@pytest.mark.parametrize("command", ["list", "recall"])
@pytest.mark.parametrize("anchor", ["a.py\x00", "file:a\x00b", "a.py::f\x00"])
def test_filters_an_anchor_holding_a_nul_is_refused_not_matched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, anchor: str
) -> None:
    """It listed 0 records, exit 1, as if nothing were recorded there; no
    anchor can hold one, so it is a bad request naming it, on every backend
    alike (the command line reads it before any store does)."""
    from agent_repo import GitRepo

    repo = GitRepo(tmp_path / "repo")
    monkeypatch.chdir(repo.root)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main([command, "--anchor", anchor, "--json", "--no-sync", "--db", "m.db"])
    assert status == 2
    error = json.loads(out.getvalue())["error"]
    assert error["kind"] == "BadRequest"
    assert error["message"].startswith(f"--anchor {anchor!r} holds a NUL character"), error
    assert not (repo.root / "m.db").exists()
