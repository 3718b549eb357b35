"""Every result's JSON is exactly the PROTOCOL shape, on every backend.

Key sets are compared exactly (a missing or extra field fails) and values as
whole dicts, so field order never matters.  Optional fields "omitted when
none" -- a record's and a cache entry's ``anchor`` -- must be absent, not null.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from wire_servers import RECORD_KEYS

from roteiro_memory.results import CACHE_SCHEMA, MEMORY_SCHEMA, RECALL_SCHEMA, GraphNode
from roteiro_memory.semantics import Decay
from roteiro_memory.store import Store

UTC_SECONDS = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")

ENTRY_KEYS = {"key", "fingerprint", "json", "bytes", "generation", "last_used", "hits"}


def as_json(result: Any) -> Any:
    """``to_json()``, checked to survive a trip through JSON text unchanged."""
    value = result.to_json()
    assert json.loads(json.dumps(value)) == value
    return value


def without_times(record: dict[str, Any]) -> dict[str, Any]:
    """The record with its human-only timestamps checked for shape and removed."""
    assert UTC_SECONDS.fullmatch(record["created_at"])
    if record["superseded_at"] is not None:
        assert UTC_SECONDS.fullmatch(record["superseded_at"])
    return {k: v for k, v in record.items() if k not in {"created_at", "superseded_at"}}


def test_schema_tags() -> None:
    assert MEMORY_SCHEMA == "roteiro.memory/v1"
    assert RECALL_SCHEMA == "roteiro.recall/v1"
    assert CACHE_SCHEMA == "roteiro.cache/v1"


def test_record_without_anchor_omits_the_anchor_field(store: Store) -> None:
    record = store.get(store.record("lesson", "unanchored"))
    assert record is not None
    value = as_json(record)
    assert set(value) == RECORD_KEYS
    assert without_times(value) == {
        "id": 1,
        "scope": "repo",
        "kind": "lesson",
        "anchor_state": "unanchored",
        "applies": True,
        "body": "unanchored",
        "confidence": None,
        "tree": None,
        "superseded_by": None,
    }


def test_record_with_anchor_nests_key_blob_and_path(store: Store) -> None:
    store.put_nodes([GraphNode("sym:f", "fn", "f", "src/f.rs", "blob-1")])
    store.set_tree("tree-1")
    record = store.get(
        store.record("decision", "about f", scope="team", anchor="sym:f", confidence=0.75)
    )
    assert record is not None
    value = as_json(record)
    assert set(value) == RECORD_KEYS | {"anchor"}
    assert without_times(value) == {
        "id": 1,
        "scope": "team",
        "kind": "decision",
        "anchor": {"key": "sym:f", "blob": "blob-1", "path": "src/f.rs"},
        "anchor_state": "valid",
        "applies": True,
        "body": "about f",
        "confidence": 0.75,
        "tree": "tree-1",
        "superseded_by": None,
    }


def test_vanished_anchor_keeps_its_key_with_null_blob_and_path(store: Store) -> None:
    record = store.get(store.record("lesson", "gone", anchor="sym:gone"))
    assert record is not None
    value = as_json(record)
    assert value["anchor"] == {"key": "sym:gone", "blob": None, "path": None}
    assert (value["anchor_state"], value["applies"]) == ("vanished", False)


def test_superseded_record_shows_its_successor_and_when(store: Store) -> None:
    old = store.record("lesson", "old")
    new = store.record("lesson", "new", supersedes=old)
    record = store.get(old)
    assert record is not None
    value = as_json(record)
    assert value["superseded_by"] == new
    assert UTC_SECONDS.fullmatch(value["superseded_at"])


def test_memory_listing_shape(store: Store) -> None:
    old = store.record("lesson", "old")
    store.record("lesson", "new", supersedes=old)
    value = as_json(store.list())
    assert set(value) == {"schema", "records", "live", "superseded"}
    assert (value["schema"], value["live"], value["superseded"]) == (MEMORY_SCHEMA, 1, 1)
    assert [r["id"] for r in value["records"]] == [2]
    assert set(value["records"][0]) == RECORD_KEYS


def test_recall_shape(store: Store) -> None:
    store.record("lesson", "older", confidence=1.0)
    store.record("lesson", "newer")
    value = as_json(store.recall(decay="linear:4"))
    assert set(value) == {
        "schema",
        "generation",
        "decay",
        "reproducible",
        "results",
        "live",
        "superseded",
    }
    assert {k: v for k, v in value.items() if k != "results"} == {
        "schema": RECALL_SCHEMA,
        "generation": 2,
        "decay": {"linear": {"span": 4}},
        "reproducible": False,
        "live": 2,
        "superseded": 0,
    }
    first, second = value["results"]
    assert set(first) == {
        "score",
        "base_confidence",
        "anchor_penalty",
        "decay_factor",
        "age",
        "record",
    }
    assert {k: v for k, v in first.items() if k != "record"} == {
        "score": 0.9 * 0.75,
        "base_confidence": 1.0,
        "anchor_penalty": 0.9,
        "decay_factor": 0.75,
        "age": 1,
    }
    assert {k: v for k, v in second.items() if k != "record"} == {
        "score": 0.5 * 0.9,
        "base_confidence": 0.5,
        "anchor_penalty": 0.9,
        "decay_factor": 1.0,
        "age": 0,
    }
    assert set(first["record"]) == RECORD_KEYS
    assert (first["record"]["id"], second["record"]["id"]) == (1, 2)


@pytest.mark.parametrize(
    ("token", "shape", "reproducible"),
    [
        ("none", "none", True),
        ("linear", {"linear": {"span": 200}}, False),
        ("linear:0", {"linear": {"span": 0}}, False),
        ("exponential", {"exponential": {"half_life": 50}}, False),
        ("exponential:9", {"exponential": {"half_life": 9}}, False),
    ],
)
def test_recall_reports_its_decay_shape(
    store: Store, token: str, shape: object, reproducible: bool
) -> None:
    value = as_json(store.recall(decay=token))
    assert (value["decay"], value["reproducible"]) == (shape, reproducible)
    assert as_json(Decay.parse(token)) == shape


def test_memory_forgotten_shape(store: Store) -> None:
    old = store.record("lesson", "old")
    new = store.record("lesson", "new", supersedes=old)
    assert as_json(store.forget(new)) == {"id": new, "restored": [old]}
    assert as_json(store.forget(old)) == {"id": old, "restored": []}


def test_cache_entry_without_anchor_omits_the_anchor_field(store: Store) -> None:
    store.cache_put("k", "fp", '{"v": 1}')
    (entry,) = store.cache_entries()
    value = as_json(entry)
    assert set(value) == ENTRY_KEYS | {"anchor_state"}
    assert value == {
        "key": "k",
        "fingerprint": "fp",
        "json": '{"v": 1}',
        "bytes": 11,
        "generation": 0,
        "last_used": 1,
        "hits": 0,
        "anchor_state": "unanchored",
    }


def test_cache_entry_with_anchor_is_the_key_string(store: Store) -> None:
    store.put_nodes([GraphNode("sym:f", blob="b1")])
    store.cache_put("k", "fp", "{}", anchor="sym:f")
    got = store.cache_get("k")
    assert got is not None
    value = as_json(got)
    assert set(value) == ENTRY_KEYS | {"anchor", "anchor_state"}
    assert (value["anchor"], value["anchor_state"]) == ("sym:f", "valid")


def test_cache_stats_shape(store: Store) -> None:
    store.cache_put("k", "fp", "{}")
    assert as_json(store.cache_stats(100)) == {
        "schema": CACHE_SCHEMA,
        "entries": 1,
        "bytes": 5,
        "budget_bytes": 100,
        "generation": 0,
    }


def test_cache_sweep_shape(store: Store) -> None:
    store.cache_put("k", "fp", "{}")
    assert as_json(store.cache_sweep(1)) == {
        "schema": CACHE_SCHEMA,
        "budget_bytes": 1,
        "scanned": 1,
        "pinned": 1,
        "evicted": 0,
        "freed_bytes": 0,
        "retained_bytes": 5,
        "over_budget": True,
        "generation": 1,
    }


def test_graph_node_shape_has_every_field_null_where_none_was_given(store: Store) -> None:
    store.put_nodes([GraphNode("sym:b"), GraphNode("sym:a", "fn", "a", "src/a.rs", "b1")])
    assert [as_json(n) for n in store.export_graph()] == [
        {"key": "sym:a", "kind": "fn", "name": "a", "path": "src/a.rs", "blob": "b1"},
        {"key": "sym:b", "kind": None, "name": None, "path": None, "blob": None},
    ]
