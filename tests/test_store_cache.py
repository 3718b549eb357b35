"""The store contract's cache tier: bytes, hits and ticks, entries, and the
sweep's pinning, eviction order and generation.

Every test taking ``store`` runs against every backend in
``conftest.BACKEND_FACTORIES``.
"""

from __future__ import annotations

import pytest
from store_states import (
    BIG,
    advance_cache_generation,
    changed_fields,
    entry,
    every_record,
    node,
    populate,
)

from roteiro_memory.store import Store


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
