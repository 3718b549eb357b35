"""Stores in known states, and ways to compare what they hold, for the
store-contract tests (``tests/test_store_*.py``).
"""

from __future__ import annotations

from typing import Any

from roteiro_memory.results import CacheEntry, GraphNode
from roteiro_memory.semantics import AnchorState
from roteiro_memory.store import Store

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
