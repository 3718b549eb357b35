"""The store as a whole: reads never write, the graph and the tiers keep
apart, rebuild, reopen and reset, and the snapshot that tells writes apart.

Every test taking ``store`` runs against every backend in
``conftest.BACKEND_FACTORIES``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from store_states import BIG, entry, every_record, node, populate

from roteiro_memory.store import MemoryWrite, Store

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
