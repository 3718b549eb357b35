"""The store contract's invariants, each pinned by a test named after it.

Every test taking ``store`` runs against every backend in
``conftest.BACKEND_FACTORIES``.  The SQLite-only tests at the end look beneath
the contract, at the columns the sweep reads and the SQL the ranking runs.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roteiro_memory import semantics as sem
from roteiro_memory.errors import (
    AlreadySuperseded,
    InvalidBody,
    InvalidConfidence,
    InvalidDecay,
    InvalidKind,
    InvalidScope,
    NotFound,
    RoteiroError,
)
from roteiro_memory.results import CacheEntry, GraphNode
from roteiro_memory.semantics import AnchorState, Decay
from roteiro_memory.store import MemoryWrite, Store
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sqlite.store import CACHE_COLS, SWEEP_COLS, SQLiteStore

BIG = 10**9
"""A budget nothing in these tests comes near."""


def node(key: str, blob: str | None = "b1", path: str | None = None) -> GraphNode:
    return GraphNode(key, "fn", key.rsplit(":", 1)[-1], path or f"src/{key[4:]}.rs", blob)


def five_states(store: Store) -> dict[AnchorState, int]:
    """One live record in each anchor state, returned by state."""
    store.put_nodes([node("sym:valid"), node("sym:drift"), node("sym:unv", blob=None)])
    ids = {
        AnchorState.UNANCHORED: store.record("lesson", "unanchored lesson"),
        AnchorState.VALID: store.record("lesson", "valid lesson", anchor="sym:valid"),
        AnchorState.DRIFTED: store.record("lesson", "drifted lesson", anchor="sym:drift"),
        AnchorState.VANISHED: store.record("lesson", "vanished lesson", anchor="sym:gone"),
        AnchorState.UNVERIFIABLE: store.record("lesson", "unverifiable lesson", anchor="sym:unv"),
    }
    store.put_nodes([node("sym:drift", blob="b2")])
    return ids


def populate(store: Store) -> None:
    """A store with something in every table: every anchor state, a
    supersession, a tree witness, and cache entries in several states."""
    store.set_tree("tree-1")
    five_states(store)
    overruled = store.record("decision", "overruled", scope="team", confidence=0.2)
    store.record("decision", "the ruling", scope="team", confidence=0.8, supersedes=overruled)
    store.cache_put("plain", "fp", "{}")
    store.cache_put("valid", "fp", '{"a": 1}', anchor="sym:valid")
    store.cache_put("gone", "fp", "[]", anchor="sym:gone")
    store.cache_get("plain")


def every_record(store: Store) -> list[dict[str, Any]]:
    listing = store.list(include_superseded=True)
    return [record.to_json() for record in listing.records]


def flatten(value: object, path: tuple[object, ...] = ()) -> dict[tuple[object, ...], object]:
    """Every leaf of a JSON-like value by its path, so two snapshots of any
    backend can be compared field by field without knowing their shape."""
    if isinstance(value, dict):
        out: dict[tuple[object, ...], object] = {}
        for key, item in value.items():
            out.update(flatten(item, (*path, key)))
        return out
    if isinstance(value, list):
        out = {}
        for index, item in enumerate(value):
            out.update(flatten(item, (*path, index)))
        return out
    return {path: value}


def changed_fields(before: dict[str, Any], after: dict[str, Any]) -> set[tuple[object, ...]]:
    old, new = flatten(before), flatten(after)
    missing = object()
    return {p for p in old.keys() | new.keys() if old.get(p, missing) != new.get(p, missing)}


def entry(store: Store, key: str) -> CacheEntry:
    found = {e.key: e for e in store.cache_entries()}
    return found[key]


def advance_cache_generation(store: Store) -> None:
    """Sweep once with room to spare, so what follows is not pinned as this
    generation's own work."""
    store.cache_sweep(BIG)


# --- Anchors ------------------------------------------------------------------


def test_anchor_naming_no_node_is_accepted_and_reads_back_vanished(store: Store) -> None:
    record_id = store.record("lesson", "about deleted code", anchor="sym:nowhere")
    record = store.get(record_id)
    assert record is not None
    assert record.anchor_state is AnchorState.VANISHED
    assert record.anchor is not None
    assert (record.anchor.key, record.anchor.blob, record.anchor.path) == (
        "sym:nowhere",
        None,
        None,
    )
    assert not record.applies


def test_anchor_evidence_and_tree_witness_are_captured_from_the_stores_graph_at_write(
    store: Store,
) -> None:
    store.put_nodes([node("sym:f", blob="blob-1", path="src/one.rs")])
    store.set_tree("tree-1")
    first = store.record("lesson", "about f", anchor="sym:f")

    store.put_nodes([node("sym:f", blob="blob-2", path="src/two.rs")])
    store.set_tree("tree-2")
    second = store.record("lesson", "about f again", anchor="sym:f")

    old, new = store.get(first), store.get(second)
    assert old is not None
    assert new is not None
    assert old.anchor is not None
    assert new.anchor is not None
    assert (old.anchor.blob, old.anchor.path, old.tree) == ("blob-1", "src/one.rs", "tree-1")
    assert (new.anchor.blob, new.anchor.path, new.tree) == ("blob-2", "src/two.rs", "tree-2")
    assert old.anchor_state is AnchorState.DRIFTED, "evidence, not a live view"
    assert new.anchor_state is AnchorState.VALID


def test_a_record_written_before_any_tree_witness_has_none(store: Store) -> None:
    record = store.get(store.record("lesson", "no tree yet"))
    assert record is not None
    assert record.tree is None


def test_every_anchor_state_reads_back_from_the_store(store: Store) -> None:
    ids = five_states(store)
    for state, record_id in ids.items():
        record = store.get(record_id)
        assert record is not None
        assert record.anchor_state is state
        assert record.applies is state.applies


# --- Supersession and refused writes -------------------------------------------


def test_supersession_drops_a_record_from_list_and_recall_at_once(store: Store) -> None:
    old = store.record("lesson", "tabs are fine")
    assert [r.id for r in store.list().records] == [old]
    new = store.record("lesson", "spaces only", supersedes=old)

    assert [r.id for r in store.list().records] == [new]
    assert [r.record.id for r in store.recall().results] == [new]
    assert [r.record.id for r in store.recall("tabs").results] == []
    superseded = store.get(old)
    assert superseded is not None
    assert superseded.superseded_by == new
    assert superseded.superseded_at is not None
    assert [r.id for r in store.list(include_superseded=True).records] == [new, old]


def test_superseding_an_absent_record_is_not_found_and_changes_nothing(store: Store) -> None:
    store.record("lesson", "present")
    before = store.snapshot()
    with pytest.raises(NotFound, match="999"):
        store.record("lesson", "successor", supersedes=999)
    assert store.snapshot() == before


def test_superseding_a_superseded_record_is_already_superseded_and_changes_nothing(
    store: Store,
) -> None:
    old = store.record("lesson", "first")
    new = store.record("lesson", "second", supersedes=old)
    before = store.snapshot()
    with pytest.raises(AlreadySuperseded) as raised:
        store.record("lesson", "third", supersedes=old)
    assert f"{old}" in str(raised.value)
    assert f"{new}" in str(raised.value), "the message names the successor already recorded"
    assert store.snapshot() == before


def _refusals() -> list[Any]:
    def write(**kwargs: Any) -> Callable[[Store], object]:
        args = {"kind": "lesson", "body": "a body", **kwargs}
        return lambda s: s.record(**args)

    def batch(*writes: MemoryWrite) -> Callable[[Store], object]:
        return lambda s: s.record_many(list(writes))

    good = MemoryWrite("lesson", "fine")
    return [
        pytest.param(write(kind="note"), InvalidKind, id="InvalidKind"),
        pytest.param(write(scope=" repo"), InvalidScope, id="InvalidScope"),
        pytest.param(write(body=" \n"), InvalidBody, id="InvalidBody"),
        pytest.param(write(confidence=1.5), InvalidConfidence, id="InvalidConfidence"),
        pytest.param(write(supersedes=999), NotFound, id="NotFound"),
        pytest.param(write(supersedes=1), AlreadySuperseded, id="AlreadySuperseded"),
        pytest.param(
            write(kind="note", scope="", body="", confidence=2.0, supersedes=999),
            InvalidKind,
            id="first-fault-kind",
        ),
        pytest.param(
            write(confidence=2.0, supersedes=999),
            InvalidConfidence,
            id="confidence-before-supersedes",
        ),
        pytest.param(
            batch(good, MemoryWrite("lesson", "")), InvalidBody, id="batch-all-or-nothing-body"
        ),
        pytest.param(
            batch(
                good,
                MemoryWrite("lesson", "x", supersedes=3),
                MemoryWrite("lesson", "y", supersedes=3),
            ),
            AlreadySuperseded,
            id="batch-supersedes-twice",
        ),
        pytest.param(
            batch(good, MemoryWrite("lesson", "x", supersedes=999)),
            NotFound,
            id="batch-all-or-nothing-supersedes",
        ),
        pytest.param(lambda s: s.forget(999), NotFound, id="forget-NotFound"),
        pytest.param(lambda s: s.recall(decay="clock"), InvalidDecay, id="recall-InvalidDecay"),
        pytest.param(lambda s: s.recall(kind="note"), InvalidKind, id="recall-InvalidKind"),
        pytest.param(lambda s: s.list(kind="Lesson"), InvalidKind, id="list-InvalidKind"),
    ]


@pytest.mark.parametrize(("operation", "error"), _refusals())
def test_every_refused_operation_leaves_the_snapshot_unchanged(
    store: Store, operation: Callable[[Store], object], error: type[RoteiroError]
) -> None:
    first = store.record("lesson", "first")
    store.record("lesson", "second", supersedes=first)
    store.record("lesson", "third")
    store.cache_put("k", "fp", "{}")
    before = store.snapshot()
    with pytest.raises(RoteiroError) as raised:
        operation(store)
    assert type(raised.value) is error
    assert raised.value.kind == error.kind
    assert store.snapshot() == before


@pytest.mark.parametrize(
    ("batch", "error"),
    [
        pytest.param(
            [MemoryWrite("lesson", "x", supersedes=999), MemoryWrite("note", "")],
            NotFound,
            id="supersedes-then-invalid",
        ),
        pytest.param(
            [MemoryWrite("note", ""), MemoryWrite("lesson", "x", supersedes=999)],
            InvalidKind,
            id="invalid-then-supersedes",
        ),
        pytest.param(
            [MemoryWrite("lesson", "x", supersedes=1), MemoryWrite("lesson", " ", confidence=9)],
            AlreadySuperseded,
            id="already-superseded-then-invalid",
        ),
    ],
)
def test_a_batch_reports_the_first_faulty_write_whichever_check_it_fails(
    store: Store, batch: list[MemoryWrite], error: type[RoteiroError]
) -> None:
    """As if written one record at a time: an earlier write's supersession
    fault is reported before a later write's validation fault."""
    first = store.record("lesson", "first")
    store.record("lesson", "second", supersedes=first)
    before = store.snapshot()
    with pytest.raises(RoteiroError) as raised:
        store.record_many(batch)
    assert type(raised.value) is error
    assert store.snapshot() == before


def test_a_batch_may_supersede_a_record_written_earlier_in_it(store: Store) -> None:
    ids = store.record_many(
        [MemoryWrite("lesson", "first"), MemoryWrite("lesson", "second", supersedes=1)]
    )
    assert ids == [1, 2]
    assert [r.id for r in store.list().records] == [2]


# --- Forget -----------------------------------------------------------------------


def test_forget_restores_and_reports_predecessors(store: Store) -> None:
    old = store.record("lesson", "old")
    new = store.record("lesson", "new", supersedes=old)
    forgotten = store.forget(new)
    assert (forgotten.id, forgotten.restored) == (new, [old])
    restored = store.get(old)
    assert restored is not None
    assert (restored.superseded_by, restored.superseded_at) == (None, None)
    assert [r.id for r in store.list().records] == [old]
    assert [r.record.id for r in store.recall().results] == [old]
    assert store.get(new) is None


def test_forget_of_a_record_superseding_nothing_restores_nothing(store: Store) -> None:
    kept = store.record("lesson", "kept")
    gone = store.record("lesson", "gone")
    assert store.forget(gone).restored == []
    assert [r.id for r in store.list(include_superseded=True).records] == [kept]


def test_forget_of_a_predecessor_leaves_its_successor_live(store: Store) -> None:
    old = store.record("lesson", "old")
    new = store.record("lesson", "new", supersedes=old)
    assert store.forget(old).restored == []
    assert [r.id for r in store.list(include_superseded=True).records] == [new]


def test_forget_of_an_absent_id_is_not_found_and_changes_nothing(store: Store) -> None:
    record_id = store.record("lesson", "here")
    store.forget(record_id)
    before = store.snapshot()
    for absent in (record_id, 0, -1, 2**63, 2**64):
        with pytest.raises(NotFound, match=str(absent)):
            store.forget(absent)
    assert store.snapshot() == before


# --- Ranking -------------------------------------------------------------------------


def test_zero_confidence_ranks_last_and_is_still_returned(store: Store) -> None:
    zero = store.record("lesson", "worthless but kept", confidence=0.0)
    store.record("lesson", "drifted", anchor="sym:gone", confidence=0.01)
    store.record("lesson", "plain")
    results = store.recall().results
    assert len(results) == 3
    assert results[-1].record.id == zero
    assert results[-1].score == 0.0


def test_default_confidence_is_one_half(store: Store) -> None:
    record_id = store.record("lesson", "silent about confidence")
    record = store.get(record_id)
    assert record is not None
    assert record.confidence is None, "what the writer said is kept: nothing"
    (recalled,) = store.recall().results
    assert recalled.base_confidence == 0.5
    assert recalled.score == 0.5 * 0.9


def test_recall_terms_multiply_to_the_score(store: Store) -> None:
    five_states(store)
    for recalled in store.recall(decay="exponential:2").results:
        assert recalled.anchor_penalty == sem.anchor_penalty(recalled.record.anchor_state)
        assert recalled.decay_factor == Decay.exponential(2).factor(recalled.age)
        assert recalled.score == sem.score(
            recalled.base_confidence, recalled.anchor_penalty, recalled.decay_factor
        )


def test_limit_zero_and_none_are_unlimited(store: Store) -> None:
    ids = [store.record("lesson", f"record {n}") for n in range(5)]
    newest_first = ids[::-1]
    for limit in (None, 0):
        assert [r.id for r in store.list(limit=limit).records] == newest_first
        assert [r.record.id for r in store.recall(limit=limit).results] == newest_first
    assert [r.id for r in store.list(limit=2).records] == newest_first[:2]


def test_recall_limit_applies_after_ranking(store: Store) -> None:
    """A limit returns the best records, not the newest ones."""
    best = store.record("lesson", "the best", confidence=1.0)
    second = store.record("lesson", "second best", confidence=0.9)
    for n in range(4):
        store.record("lesson", f"newer but weaker {n}", confidence=0.1)
    assert [r.record.id for r in store.recall(limit=1).results] == [best]
    assert [r.record.id for r in store.recall(limit=2).results] == [best, second]
    assert [r.id for r in store.list(limit=1).records] != [best], "list keeps the newest"


def test_ties_break_by_newest_id(store: Store) -> None:
    ids = [store.record("lesson", f"same score {n}", confidence=0.5) for n in range(4)]
    assert [r.record.id for r in store.recall().results] == ids[::-1]


def test_recall_orders_by_penalty_when_all_else_is_equal(store: Store) -> None:
    ids = five_states(store)
    order = sorted(ids, key=lambda s: -sem.anchor_penalty(s))
    assert [r.record.id for r in store.recall().results] == [ids[s] for s in order]


def test_applicable_only_keeps_exactly_the_applying_records(store: Store) -> None:
    ids = five_states(store)
    applying = {ids[s] for s in ids if s.applies}
    assert {r.record.id for r in store.recall(applicable_only=True).results} == applying
    assert {r.record.id for r in store.recall().results} == set(ids.values()), (
        "off by default: a record that does not apply is demoted, not withheld"
    )


def test_scope_filter_is_an_exact_match(store: Store) -> None:
    exact = store.record("lesson", "in repo", scope="repo")
    store.record("lesson", "in sub", scope="repo/sub")
    store.record("lesson", "in Repo", scope="Repo")
    store.record("lesson", "in repo2", scope="repo2")
    assert [r.record.id for r in store.recall(scope="repo").results] == [exact]
    assert [r.id for r in store.list(scope="repo").records] == [exact]
    assert store.recall(scope="rep").results == []


def test_query_does_not_search_scope(store: Store) -> None:
    store.record("lesson", "about beta", scope="alpha")
    assert store.recall("alpha").results == []
    assert len(store.recall("beta").results) == 1


def test_query_requires_every_token_case_insensitively(store: Store) -> None:
    both = store.record("lesson", "The Cache lives in L\u00c9COLE")
    store.record("lesson", "the cache alone")
    assert [r.record.id for r in store.recall("CACHE l\u00e9cole").results] == [both]
    assert [r.record.id for r in store.recall("\u00c9COLE").results] == [both]
    assert {r.record.id for r in store.recall("cache").results} == {both, both + 1}
    assert store.recall("cache missing").results == []


def test_query_splits_on_double_colon(store: Store) -> None:
    hit = store.record("lesson", "run() belongs to the crate")
    assert [r.record.id for r in store.recall("crate::run").results] == [hit]
    assert store.recall("crate::walk").results == []


@pytest.mark.parametrize("query", ["   ", "", None, " :: "])
def test_an_empty_query_filters_nothing(store: Store, query: str | None) -> None:
    store.record("lesson", "one")
    store.record("lesson", "two")
    assert len(store.recall(query).results) == 2


def test_query_searches_anchor_key_and_anchor_path(store: Store) -> None:
    store.put_nodes([node("sym:Parser::parse", path="src/Grammar/parser.rs")])
    hit = store.record("lesson", "nothing in the body", anchor="sym:Parser::parse")
    store.record("lesson", "unrelated")
    assert [r.record.id for r in store.recall("parser::PARSE").results] == [hit]
    assert [r.record.id for r in store.recall("grammar/parser.rs").results] == [hit]


def test_filters_by_kind_and_anchor_key(store: Store) -> None:
    lesson = store.record("lesson", "a lesson", anchor="sym:a")
    decision = store.record("decision", "a decision", anchor="sym:b")
    assert [r.id for r in store.list(kind="decision").records] == [decision]
    assert [r.record.id for r in store.recall(kind="lesson").results] == [lesson]
    assert [r.record.id for r in store.recall(anchor_key="sym:b").results] == [decision]
    assert [r.id for r in store.list(anchor_key="sym:a").records] == [lesson]


def test_listing_counts_the_whole_store_regardless_of_filter(store: Store) -> None:
    old = store.record("lesson", "old", scope="a")
    store.record("lesson", "new", scope="b", supersedes=old)
    store.record("decision", "other", scope="b")
    for result in (
        store.list(scope="nowhere"),
        store.list(kind="pattern", limit=1),
        store.list(include_superseded=True),
        store.recall("nothing matches this"),
        store.recall(scope="a", applicable_only=True),
    ):
        assert (result.live, result.superseded) == (2, 1)


def test_generation_is_the_max_id_incl_superseded_and_age_is_generation_minus_id(
    store: Store,
) -> None:
    assert store.recall().generation == 0, "an empty store is at generation 0"
    old = store.record("lesson", "old", scope="a")
    new = store.record("lesson", "new", scope="b", supersedes=old)
    others = [store.record("lesson", f"n{n}", scope="c") for n in range(3)]
    recall = store.recall(scope="a")
    assert recall.results == []
    assert recall.generation == others[-1], "the whole store's, regardless of filter"
    full = store.recall()
    assert {r.record.id: r.age for r in full.results} == {
        rid: full.generation - rid for rid in [new, *others]
    }


def test_ids_are_never_reused_after_the_newest_is_forgotten(store: Store) -> None:
    first = store.record("lesson", "first")
    newest = store.record("lesson", "newest")
    store.forget(newest)
    assert store.recall().generation == first
    store.reopen()
    again = store.record("lesson", "after forgetting")
    assert again == newest + 1
    assert store.record_many([MemoryWrite("lesson", "batch")]) == [again + 1]


# --- Reads never write ------------------------------------------------------------


def test_reads_never_change_the_snapshot(store: Store) -> None:
    populate(store)
    before = store.snapshot()
    store.get(1)
    store.get(999)
    store.list()
    store.list(include_superseded=True, scope="team", kind="decision", limit=1)
    for decay in ("none", "linear:1", "exponential:0"):
        store.recall("lesson", decay=decay, applicable_only=True, limit=2)
        store.recall(decay=decay)
    store.cache_entries()
    store.cache_stats(0)
    store.export_graph()
    store.tree()
    store.snapshot()
    assert store.snapshot() == before


def test_cache_get_changes_only_that_entrys_hits_and_last_used_and_the_tick(
    store: Store,
) -> None:
    populate(store)
    before_entries = {e.key: e for e in store.cache_entries()}
    before = store.snapshot()
    got = store.cache_get("valid")
    after = store.snapshot()

    changed = changed_fields(before, after)
    assert changed, "an access is recorded"
    assert {path[-1] for path in changed} == {"hits", "last_used", "ticks"}
    after_entries = {e.key: e for e in store.cache_entries()}
    for key, old in before_entries.items():
        if key == "valid":
            assert after_entries[key].hits == old.hits + 1
            assert after_entries[key].last_used > old.last_used
        else:
            assert after_entries[key] == old
    assert got == before_entries["valid"]


def test_cache_get_miss_changes_nothing(store: Store) -> None:
    populate(store)
    before = store.snapshot()
    assert store.cache_get("absent") is None
    assert store.snapshot() == before


def test_memory_writes_never_change_the_graph(store: Store) -> None:
    store.put_nodes([node("sym:a"), node("sym:b", blob=None)])
    graph = store.export_graph()
    old = store.record("lesson", "a", anchor="sym:a")
    new = store.record("lesson", "b", anchor="sym:b", supersedes=old)
    store.record("lesson", "c", anchor="sym:nowhere")
    store.forget(new)
    store.cache_put("k", "fp", "{}", anchor="sym:a")
    store.cache_sweep(0)
    assert store.export_graph() == graph


def test_records_cache_entries_clock_and_tree_survive_rebuild(store: Store) -> None:
    populate(store)
    records = every_record(store)
    entries = store.cache_entries()
    stats = store.cache_stats(BIG)

    store.rebuild()

    assert store.export_graph() == []
    assert store.tree() == "tree-1"
    rebuilt = every_record(store)
    assert [r["id"] for r in rebuilt] == [r["id"] for r in records]
    for old, new in zip(records, rebuilt, strict=True):
        state = "unanchored" if "anchor" not in old else "vanished"
        assert {**old, "anchor_state": state, "applies": state == "unanchored"} == new
    assert [
        (e.key, e.fingerprint, e.json, e.bytes, e.generation, e.last_used, e.hits, e.anchor)
        for e in store.cache_entries()
    ] == [
        (e.key, e.fingerprint, e.json, e.bytes, e.generation, e.last_used, e.hits, e.anchor)
        for e in entries
    ]
    assert store.cache_stats(BIG) == stats
    store.cache_put("after", "fp", "{}")
    assert entry(store, "after").last_used == max(e.last_used for e in entries) + 1


def test_nothing_but_forget_removes_a_record(store: Store) -> None:
    populate(store)
    ids = [r["id"] for r in every_record(store)]
    store.rebuild()
    store.cache_sweep(0)
    store.cache_sweep(0)
    for n in range(20):
        store.record("lesson", f"aging the old ones {n}")
    decayed = store.recall(decay="linear:0")
    assert any(r.decay_factor == 0.0 for r in decayed.results), "decay ranks them to zero"
    assert len(decayed.results) == len(store.list().records), "and still returns them"
    remaining = [r["id"] for r in every_record(store)]
    assert set(ids) <= set(remaining)
    store.forget(ids[0])
    assert ids[0] not in [r["id"] for r in every_record(store)]


# --- The cache tier -------------------------------------------------------------------


def test_cache_bytes_is_the_utf8_length_of_key_fingerprint_and_json_fixed_at_write(
    store: Store,
) -> None:
    key, fingerprint, payload = "\u043a\u043b\u044e\u0447", "f\u00e9", '{"v": "\u65e5\U0001f600"}'
    store.cache_put(key, fingerprint, payload, anchor="sym:x")
    expected = len(key.encode()) + len(fingerprint.encode()) + len(payload.encode())
    assert expected == 8 + 3 + 16
    assert entry(store, key).bytes == expected
    store.put_nodes([node("sym:x")])
    store.cache_get(key)
    store.cache_sweep(BIG)
    assert entry(store, key).bytes == expected, "fixed at write, whatever happens after"
    assert store.cache_stats(BIG).bytes == expected
    store.cache_put(key, "", "")
    assert entry(store, key).bytes == 8, "a replacement is a new write"


def test_cache_put_keeps_hits(store: Store) -> None:
    store.cache_put("k", "fp1", "{}")
    store.cache_get("k")
    store.cache_get("k")
    store.cache_put("k", "fp2", "[]")
    replaced = entry(store, "k")
    assert (replaced.hits, replaced.fingerprint, replaced.json) == (2, "fp2", "[]")


def test_each_cache_put_and_get_hit_takes_the_next_tick(store: Store) -> None:
    store.cache_put("a", "fp", "{}")
    store.cache_put("b", "fp", "{}")
    assert (entry(store, "a").last_used, entry(store, "b").last_used) == (1, 2)
    store.cache_get("a")
    assert entry(store, "a").last_used == 3
    store.cache_get("missing")
    store.cache_entries()
    store.cache_put("c", "fp", "{}")
    assert entry(store, "c").last_used == 4, "a miss and a listing take no tick"
    store.cache_put("a", "fp", "{}")
    assert entry(store, "a").last_used == 5


def test_cache_get_returns_the_values_before_the_access(store: Store) -> None:
    store.cache_put("k", "fp", "{}")
    first = store.cache_get("k")
    second = store.cache_get("k")
    assert first is not None
    assert second is not None
    assert (first.hits, first.last_used) == (0, 1)
    assert (second.hits, second.last_used) == (1, 2)
    assert (entry(store, "k").hits, entry(store, "k").last_used) == (2, 3)


def test_cache_entries_are_ordered_by_key_and_resolve_their_anchors(store: Store) -> None:
    store.put_nodes([node("sym:v"), node("sym:d"), node("sym:u", blob=None)])
    store.cache_put("e-unverifiable", "fp", "{}", anchor="sym:u")
    store.cache_put("d-drifted", "fp", "{}", anchor="sym:d")
    store.cache_put("c-vanished", "fp", "{}", anchor="sym:gone")
    store.cache_put("b-valid", "fp", "{}", anchor="sym:v")
    store.cache_put("a-unanchored", "fp", "{}")
    store.put_nodes([node("sym:d", blob="b2")])
    assert [(e.key, e.anchor_state.value) for e in store.cache_entries()] == [
        ("a-unanchored", "unanchored"),
        ("b-valid", "valid"),
        ("c-vanished", "vanished"),
        ("d-drifted", "drifted"),
        ("e-unverifiable", "unverifiable"),
    ]


def test_cache_forget_reports_whether_there_was_an_entry(store: Store) -> None:
    store.cache_put("k", "fp", "{}")
    assert store.cache_forget("k") is True
    assert store.cache_forget("k") is False
    assert store.cache_entries() == []


def test_sweep_pins_the_most_recently_used_entry(store: Store) -> None:
    store.cache_put("a", "fp", "x" * 100)
    store.cache_put("b", "fp", "x" * 100)
    advance_cache_generation(store)
    store.cache_get("a")
    swept = store.cache_sweep(0)
    assert [e.key for e in store.cache_entries()] == ["a"]
    assert (swept.scanned, swept.pinned, swept.evicted) == (2, 1, 1)
    assert swept.over_budget


def test_sweep_pins_the_current_generations_applying_entries(store: Store) -> None:
    store.put_nodes([node("sym:v"), node("sym:d")])
    store.cache_put("unanchored", "fp", "{}")
    store.cache_put("valid", "fp", "{}", anchor="sym:v")
    store.cache_put("drifted", "fp", "{}", anchor="sym:d")
    store.cache_put("vanished", "fp", "{}", anchor="sym:gone")
    store.cache_put("mru", "fp", "{}", anchor="sym:gone")
    store.put_nodes([node("sym:d", blob="b2")])
    swept = store.cache_sweep(0)
    assert [e.key for e in store.cache_entries()] == ["mru", "unanchored", "valid"]
    assert (swept.pinned, swept.evicted) == (3, 2)
    # A generation later nothing but the most recently used is pinned.
    store.cache_sweep(0)
    assert [e.key for e in store.cache_entries()] == ["mru"]


EVICTION_TIER = [
    ("old-applying", None),
    ("older-vanished", "sym:gone"),
    ("newer-vanished", "sym:gone"),
    ("new-applying", None),
    ("mru", None),
]
"""Put in this order, so each is used after the one before it."""


@pytest.mark.parametrize("count", [1, 2, 3, 4])
def test_sweep_evicts_non_applying_first_then_least_recently_used(store: Store, count: int) -> None:
    for key, anchor in EVICTION_TIER:
        store.cache_put(key, "fp", "x" * 10, anchor=anchor)
    advance_cache_generation(store)
    sizes = {e.key: e.bytes for e in store.cache_entries()}
    order = ["older-vanished", "newer-vanished", "old-applying", "new-applying"]

    swept = store.cache_sweep(sum(sizes.values()) - sum(sizes[k] for k in order[:count]))

    assert swept.evicted == count, "stops as soon as it fits"
    assert {e.key for e in store.cache_entries()} == set(sizes) - set(order[:count])
    assert not swept.over_budget


def test_sweep_stops_as_soon_as_the_tier_fits(store: Store) -> None:
    for key in ("a", "b", "c", "d"):
        store.cache_put(key, "fp", "x" * 97)  # 100 bytes each
    advance_cache_generation(store)
    swept = store.cache_sweep(250)
    assert (swept.evicted, swept.freed_bytes, swept.retained_bytes) == (2, 200, 200)
    assert [e.key for e in store.cache_entries()] == ["c", "d"]
    assert store.cache_sweep(200).evicted == 0, "exactly at the budget is not over it"


def test_sweep_reports_over_budget_when_pinned_bytes_exceed_it(store: Store) -> None:
    store.cache_put("big", "fp", "x" * 500)
    store.cache_put("small", "fp", "x")
    swept = store.cache_sweep(10)
    assert swept.over_budget, "everything is this generation's own applying work"
    assert (swept.evicted, swept.freed_bytes, swept.retained_bytes) == (0, 0, 513)
    assert (swept.scanned, swept.pinned, swept.budget_bytes) == (2, 2, 10)
    assert not store.cache_sweep(BIG).over_budget


def test_generation_advances_after_each_sweep(store: Store) -> None:
    assert store.cache_stats(0).generation == 0
    store.cache_put("k", "fp", "{}")
    assert entry(store, "k").generation == 0
    assert store.cache_sweep(BIG).generation == 1
    assert store.cache_stats(0).generation == 1
    store.cache_put("k", "fp", "{}")
    assert entry(store, "k").generation == 1, "entries carry the generation they were put in"
    assert store.cache_sweep(0).generation == 2
    assert store.cache_sweep(0).generation == 3, "even a sweep of an empty tier"


def test_cache_stats_reports_what_the_tier_holds(store: Store) -> None:
    store.cache_put("a", "fp", "{}")
    store.cache_put("b", "fp", "[1]")
    stats = store.cache_stats(7)
    assert (stats.entries, stats.bytes, stats.budget_bytes, stats.generation) == (2, 11, 7, 0)


def test_the_sweep_never_touches_episodic_rows(store: Store) -> None:
    populate(store)
    records = every_record(store)
    advance_cache_generation(store)
    store.cache_sweep(0)
    assert every_record(store) == records


# --- The store as a whole --------------------------------------------------------------


def test_reopen_keeps_the_snapshot_identical(store: Store) -> None:
    populate(store)
    before = store.snapshot()
    records = every_record(store)
    store.reopen()
    assert store.snapshot() == before
    assert every_record(store) == records
    store.reopen()
    assert store.snapshot() == before


def test_reset_empties_everything(store: Store) -> None:
    populate(store)
    store.cache_sweep(BIG)
    store.reset()
    assert store.list(include_superseded=True).records == []
    assert (store.list().live, store.list().superseded) == (0, 0)
    assert store.recall().generation == 0
    assert store.cache_entries() == []
    assert store.cache_stats(0).generation == 0
    assert store.export_graph() == []
    assert store.tree() is None
    assert store.record("lesson", "first again") == 1, "ids restart at 1"
    store.cache_put("k", "fp", "{}")
    assert (entry(store, "k").last_used, entry(store, "k").generation) == (1, 0), "ticks from 0"


def test_reset_gives_the_snapshot_of_a_fresh_store(store: Store) -> None:
    fresh = store.snapshot()
    populate(store)
    store.reset()
    assert store.snapshot() == fresh


WRITES: list[Any] = [
    pytest.param(lambda s: s.record("lesson", "new"), id="record"),
    pytest.param(lambda s: s.record("lesson", "successor", supersedes=1), id="record-supersedes"),
    pytest.param(lambda s: s.record_many([MemoryWrite("pattern", "batch")]), id="record_many"),
    pytest.param(lambda s: s.forget(2), id="forget"),
    pytest.param(lambda s: s.cache_put("new", "fp", "{}"), id="cache_put"),
    pytest.param(lambda s: s.cache_put("plain", "fp", "{}"), id="cache_put-same-values"),
    pytest.param(lambda s: s.cache_get("plain"), id="cache_get-hit"),
    pytest.param(lambda s: s.cache_forget("plain"), id="cache_forget"),
    pytest.param(lambda s: s.cache_sweep(BIG), id="cache_sweep-evicting-nothing"),
    pytest.param(lambda s: s.cache_sweep(0), id="cache_sweep"),
    pytest.param(lambda s: s.put_nodes([node("sym:new")]), id="put_nodes"),
    pytest.param(lambda s: s.put_nodes([node("sym:valid", blob="b9")]), id="put_nodes-blob"),
    pytest.param(lambda s: s.put_nodes([node("sym:valid", path="p/q.rs")]), id="put_nodes-path"),
    pytest.param(lambda s: s.remove_nodes(["sym:valid"]), id="remove_nodes"),
    pytest.param(lambda s: s.set_tree("tree-2"), id="set_tree"),
    pytest.param(lambda s: s.set_tree(None), id="set_tree-none"),
    pytest.param(lambda s: s.rebuild(), id="rebuild"),
    pytest.param(lambda s: s.reset(), id="reset"),
]


@pytest.mark.parametrize("write", WRITES)
def test_snapshot_changes_on_every_kind_of_write(
    store: Store, write: Callable[[Store], object]
) -> None:
    populate(store)
    before = store.snapshot()
    write(store)
    assert store.snapshot() != before


# --- SQLite only: beneath the contract ------------------------------------------------
#
# These look at the SQLite backend's columns and SQL directly, so they take the
# ``sqlite_store`` fixture rather than ``store``.


def _raw_put(store: SQLiteStore, key: str, stored_bytes: int, payload: int, last_used: int) -> None:
    """An entry whose stored ``bytes`` is independent of its payload."""
    store.connection.execute(
        "INSERT INTO agent_cache (key, fingerprint, json, bytes, generation, last_used, hits)"
        " VALUES (?, 'fp', ?, ?, 0, ?, 0)",
        (key, "x" * payload, stored_bytes, last_used),
    )


def _advance_clock(store: SQLiteStore) -> None:
    """Past the generation raw rows are written in, so none is generation-pinned."""
    store.connection.execute("UPDATE agent_cache_clock SET generation = 5")


def test_sqlite_sweep_totals_the_bytes_column_and_never_the_payload(
    sqlite_store: SQLiteStore,
) -> None:
    """By ``bytes``, ``heavy`` alone goes; by payload, ``light`` would go too."""
    _advance_clock(sqlite_store)
    _raw_put(sqlite_store, "heavy", 1000, 1, 1)
    _raw_put(sqlite_store, "light", 10, 1000, 2)
    _raw_put(sqlite_store, "mru", 0, 0, 3)

    swept = sqlite_store.cache_sweep(500)

    assert swept.evicted == 1, "a payload-measuring sweep would have taken `light` as well"
    assert swept.freed_bytes == 1000, "the stored size, not the 1 byte `heavy` holds"
    assert swept.retained_bytes == 10
    assert [row.key for row in sqlite_store.sweep_rows()] == ["light", "mru"]


def test_sqlite_sweep_query_names_no_payload_column() -> None:
    for forbidden in ("json", "fingerprint", "hits"):
        assert forbidden not in SWEEP_COLS, f"the sweep must not read {forbidden}"
    for required in (
        "c.key",
        "c.bytes",
        "c.generation",
        "c.last_used",
        "c.anchor_key",
        "c.anchor_blob",
    ):
        assert required in SWEEP_COLS, f"the sweep needs {required}"
    assert "c.json" in CACHE_COLS, "the full read is the one that carries the payload"


def test_sqlite_sweep_and_full_read_agree_row_for_row(sqlite_store: SQLiteStore) -> None:
    conn = sqlite_store.connection
    _advance_clock(sqlite_store)
    conn.execute("INSERT INTO nodes (key, kind, name, blob) VALUES ('sym:a', 'fn', 'a', 'blob1')")
    _raw_put(sqlite_store, "unanchored", 10, 4, 1)
    conn.execute(
        "INSERT INTO agent_cache"
        " (key, fingerprint, json, bytes, generation, last_used, hits, anchor_key, anchor_blob)"
        " VALUES ('valid', 'fp', '{}', 20, 0, 2, 0, 'sym:a', 'blob1'),"
        " ('drifted', 'fp', '{}', 30, 1, 3, 0, 'sym:a', 'blob-old'),"
        " ('vanished', 'fp', '{}', 40, 2, 4, 0, 'sym:gone', 'blob1'),"
        " ('unverifiable', 'fp', '{}', 50, 3, 5, 0, 'sym:a', NULL)"
    )
    narrow = sqlite_store.sweep_rows()
    full = sqlite_store.cache_entries()
    assert [(r.key, r.bytes, r.generation, r.last_used, r.anchor_state) for r in narrow] == [
        (e.key, e.bytes, e.generation, e.last_used, e.anchor_state) for e in full
    ]
    assert {r.anchor_state for r in narrow} == set(AnchorState), "every state exercised"


def test_sqlite_sweep_breaks_least_recently_used_ties_by_key(sqlite_store: SQLiteStore) -> None:
    """Ticks are unique through the API, so a tie needs raw rows to show."""
    _advance_clock(sqlite_store)
    _raw_put(sqlite_store, "b", 10, 1, 1)
    _raw_put(sqlite_store, "a", 10, 1, 1)
    _raw_put(sqlite_store, "mru", 10, 1, 2)
    assert sqlite_store.cache_sweep(20).evicted == 1
    assert [row.key for row in sqlite_store.sweep_rows()] == ["b", "mru"]


def test_sqlite_forget_reports_restored_predecessors_ascending(
    sqlite_store: SQLiteStore,
) -> None:
    """The API supersedes one record per write; raw pointers show the order."""
    ids = [sqlite_store.record("lesson", f"r{n}") for n in range(4)]
    sqlite_store.connection.execute(
        "UPDATE agent_memory SET superseded_by = ? WHERE id IN (?, ?, ?)",
        (ids[3], ids[2], ids[0], ids[1]),
    )
    assert sqlite_store.forget(ids[3]).restored == ids[:3]


DECAYS = [Decay.none(), *(Decay.parse(t) for t in ("linear", "linear:0", "linear:1"))]
DECAYS += [Decay.parse(t) for t in ("linear:7", "exponential", "exponential:0")]
DECAYS += [Decay.parse(t) for t in ("exponential:3", f"exponential:{sem.U64_MAX}")]


def _sql_scores(
    conn: sqlite3.Connection, decay: Decay, generation: int, source: str, columns: dict[str, str]
) -> list[tuple[int, float]]:
    expr, params = sqlexpr.score_expr(decay, sqlexpr.SQLITE, **columns)
    rows = conn.execute(f"SELECT id, {expr} FROM {source}", {**params, "generation": generation})
    return [(row[0], row[1]) for row in rows]


@pytest.mark.parametrize("decay", DECAYS, ids=str)
def test_sqlite_ranking_in_sql_agrees_with_python_bit_for_bit(
    sqlite_store: SQLiteStore, decay: Decay
) -> None:
    confidences = [None, 0.0, 1.0, 0.1, 1 / 3, 0.7, 5e-324, 0.999999]
    five_states(sqlite_store)
    for n in range(30):
        sqlite_store.record(
            "lesson",
            f"filler {n}",
            anchor=["sym:valid", "sym:drift", "sym:gone", "sym:unv", None][n % 5],
            confidence=confidences[n % len(confidences)],
        )
    generation = sqlite_store.recall().generation
    records = {r.id: r for r in sqlite_store.list().records}
    scores = _sql_scores(
        sqlite_store.connection,
        decay,
        generation,
        "agent_memory m LEFT JOIN nodes n ON n.key = m.anchor_key",
        {
            "confidence": "m.confidence",
            "id_column": "m.id",
            "anchor_key": "m.anchor_key",
            "anchor_blob": "m.anchor_blob",
            "node_key": "n.key",
            "node_blob": "n.blob",
        },
    )
    assert {records[i].anchor_state for i, _ in scores} == set(AnchorState)
    for record_id, sql_score in scores:
        record = records[record_id]
        python = sem.score(
            sem.base_confidence(record.confidence),
            sem.anchor_penalty(record.anchor_state),
            decay.factor(sem.record_age(generation, record_id)),
        )
        assert float(sql_score).hex() == python.hex(), f"record {record_id} under {decay}"
    recalled = sqlite_store.recall(decay=decay)
    assert [r.record.id for r in recalled.results] == [
        i for i, _ in sorted(scores, key=lambda p: sem.rank_key(p[1], p[0]))
    ]


@given(
    confidence=st.none() | st.floats(min_value=0.0, max_value=1.0),
    record_id=st.integers(min_value=1, max_value=2**62),
    newer=st.integers(min_value=0, max_value=2**62),
    decay=st.sampled_from(["none", "linear", "exponential"]).flatmap(
        lambda mode: (
            st.just(Decay.none())
            if mode == "none"
            else st.integers(0, sem.U64_MAX).map(lambda p: Decay(mode, p))
        )
    ),
    anchor=st.sampled_from(
        [
            (None, None, None, None),
            ("k", "b1", "k", "b1"),
            ("k", "b1", "k", "b2"),
            ("k", "b1", None, None),
            ("k", None, "k", "b1"),
            ("k", "b1", "k", None),
        ]
    ),
)
def test_sqlite_score_expression_equals_python_score_for_any_terms(
    confidence: float | None,
    record_id: int,
    newer: int,
    decay: Decay,
    anchor: tuple[str | None, str | None, str | None, str | None],
) -> None:
    generation = record_id + newer
    anchor_key, anchor_blob, node_key, node_blob = anchor
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        source = (
            "(SELECT :c AS confidence, :i AS id, :ak AS anchor_key, :ab AS anchor_blob,"
            " :nk AS node_key, :nb AS node_blob)"
        )
        expr, params = sqlexpr.score_expr(
            decay,
            sqlexpr.SQLITE,
            confidence="confidence",
            id_column="id",
            anchor_key="anchor_key",
            anchor_blob="anchor_blob",
            node_key="node_key",
            node_blob="node_blob",
        )
        (sql_score,) = conn.execute(
            f"SELECT {expr} FROM {source}",
            {
                **params,
                "generation": generation,
                "c": confidence,
                "i": record_id,
                "ak": anchor_key,
                "ab": anchor_blob,
                "nk": node_key,
                "nb": node_blob,
            },
        ).fetchone()
    state = sem.resolve_anchor(anchor_key, anchor_blob, node_key is not None, node_blob)
    python = sem.score(
        sem.base_confidence(confidence), sem.anchor_penalty(state), decay.factor(newer)
    )
    assert float(sql_score).hex() == python.hex()
