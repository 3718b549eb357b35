"""The wire form of roteiro.conformance/v1: each op's result shape, and the
SQLite and in-memory servers answering alike, driven through a real subprocess.
"""

# ruff: noqa: F401, F811 -- the wire_servers fixtures are imported, then requested by name

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from wire import WireServer, request_line, run_lines, server_argv
from wire_servers import (
    BACKENDS,
    ENTRY_KEYS,
    RECALLED_KEYS,
    RECORD_KEYS,
    argv_for,
    backend,
    server,
    shared,
)

from roteiro_memory.eviction import DEFAULT_CACHE_BUDGET_BYTES

# --- graph -----------------------------------------------------------------


def test_graph_ops_upsert_export_sorted_remove_and_rebuild(server: WireServer) -> None:
    nodes = [
        {"key": "b", "kind": "fn", "name": "go", "path": "src/b.rs", "blob": "b1"},
        {"key": "a"},
    ]
    assert server.ok("graph.put_nodes", {"nodes": nodes}) is None
    exported = server.ok("graph.export")
    assert exported == {
        "nodes": [
            {"key": "a", "kind": None, "name": None, "path": None, "blob": None},
            {"key": "b", "kind": "fn", "name": "go", "path": "src/b.rs", "blob": "b1"},
        ]
    }
    server.ok("graph.put_nodes", {"nodes": [{"key": "b", "blob": "b2"}]})
    assert server.ok("graph.export")["nodes"][1] == {
        "key": "b",
        "kind": None,
        "name": None,
        "path": None,
        "blob": "b2",
    }
    assert server.ok("graph.remove_nodes", {"keys": ["a", "absent"]}) is None
    assert [n["key"] for n in server.ok("graph.export")["nodes"]] == ["b"]
    assert server.ok("graph.set_tree", {"tree": "tree-1"}) is None
    server.ok("memory.record", {"kind": "lesson", "body": "kept", "anchor": "b"})
    server.ok("cache.put", {"key": "k", "fingerprint": "f", "json": "1"})
    assert server.ok("graph.rebuild") is None
    assert server.ok("graph.export") == {"nodes": []}
    record = server.ok("memory.get", {"id": 1})
    assert record["tree"] == "tree-1"
    assert record["anchor_state"] == "vanished"
    assert [e["key"] for e in server.ok("cache.entries")] == ["k"]
    assert server.ok("graph.set_tree", {"tree": None}) is None


# --- episodic tier ---------------------------------------------------------


def test_memory_record_get_list_shapes(server: WireServer) -> None:
    server.ok("graph.put_nodes", {"nodes": [{"key": "fn:x", "path": "src/x.rs", "blob": "h1"}]})
    server.ok("graph.set_tree", {"tree": "w1"})
    assert server.ok("memory.record", {"kind": "lesson", "body": "plain"}) == {"id": 1}
    anchored = {"kind": "pattern", "body": "pinned", "scope": "s", "anchor": "fn:x"}
    assert server.ok("memory.record", {**anchored, "confidence": 0.75}) == {"id": 2}
    plain = server.ok("memory.get", {"id": 1})
    assert set(plain) == RECORD_KEYS
    assert plain["anchor_state"] == "unanchored"
    assert plain["applies"] is True
    assert (plain["scope"], plain["kind"], plain["body"]) == ("repo", "lesson", "plain")
    assert plain["confidence"] is None
    assert plain["tree"] == "w1"
    assert isinstance(plain["created_at"], str)
    assert len(plain["created_at"]) == len("YYYY-MM-DD HH:MM:SS")
    pinned = server.ok("memory.get", {"id": 2})
    assert set(pinned) == RECORD_KEYS | {"anchor"}
    assert pinned["anchor"] == {"key": "fn:x", "blob": "h1", "path": "src/x.rs"}
    assert pinned["anchor_state"] == "valid"
    assert pinned["confidence"] == 0.75
    assert server.ok("memory.get", {"id": 3}) is None
    listing = server.ok("memory.list")
    assert set(listing) == {"schema", "records", "live", "superseded"}
    assert listing["schema"] == "roteiro.memory/v1"
    assert [r["id"] for r in listing["records"]] == [2, 1]
    assert (listing["live"], listing["superseded"]) == (2, 0)
    assert server.ok("memory.list", {"limit": 1})["records"] == [pinned]


@pytest.mark.parametrize(
    ("token", "shape"),
    [
        ("none", "none"),
        ("linear", {"linear": {"span": 200}}),
        ("linear:9", {"linear": {"span": 9}}),
        ("exponential", {"exponential": {"half_life": 50}}),
        ("exponential:3", {"exponential": {"half_life": 3}}),
    ],
)
def test_memory_recall_shape_for_each_decay(server: WireServer, token: str, shape: Any) -> None:
    server.ok("memory.record", {"kind": "lesson", "body": "alpha beta", "confidence": 0.9})
    server.ok("memory.record", {"kind": "attempt", "body": "gamma"})
    recall = server.ok("memory.recall", {"query": "ALPHA", "decay": token})
    assert set(recall) == {
        "schema",
        "generation",
        "decay",
        "reproducible",
        "results",
        "live",
        "superseded",
    }
    assert recall["schema"] == "roteiro.recall/v1"
    assert recall["decay"] == shape
    assert recall["reproducible"] is (token == "none")
    assert recall["generation"] == 2
    assert (recall["live"], recall["superseded"]) == (2, 0)
    [hit] = recall["results"]
    assert set(hit) == RECALLED_KEYS
    assert hit["record"]["id"] == 1
    assert hit["age"] == 1
    assert hit["base_confidence"] == 0.9
    for term in ("score", "anchor_penalty", "decay_factor"):
        assert isinstance(hit[term], (int, float))


def test_memory_supersede_and_forget_restore(server: WireServer) -> None:
    server.ok("memory.record", {"kind": "decision", "body": "old"})
    server.ok("memory.record", {"kind": "decision", "body": "older too"})
    assert server.ok("memory.record", {"kind": "decision", "body": "new", "supersedes": 1}) == {
        "id": 3
    }
    old = server.ok("memory.get", {"id": 1})
    assert old["superseded_by"] == 3
    assert isinstance(old["superseded_at"], str)
    listing = server.ok("memory.list")
    assert [r["id"] for r in listing["records"]] == [3, 2]
    assert (listing["live"], listing["superseded"]) == (2, 1)
    everything = server.ok("memory.list", {"include_superseded": True})
    assert [r["id"] for r in everything["records"]] == [3, 2, 1]
    assert server.ok("memory.forget", {"id": 3}) == {"id": 3, "restored": [1]}
    assert server.ok("memory.get", {"id": 1})["superseded_by"] is None
    assert server.ok("memory.forget", {"id": 2}) == {"id": 2, "restored": []}


# --- cache tier ------------------------------------------------------------


def test_cache_ops_shapes_and_access_accounting(server: WireServer) -> None:
    server.ok("graph.put_nodes", {"nodes": [{"key": "n", "blob": "b"}]})
    assert server.ok("cache.put", {"key": "k2", "fingerprint": "fp", "json": "[1]"}) is None
    server.ok("cache.put", {"key": "k1", "fingerprint": "ü", "json": "{}", "anchor": "n"})
    entries = server.ok("cache.entries")
    assert [e["key"] for e in entries] == ["k1", "k2"]
    anchored, plain = entries
    assert set(plain) == ENTRY_KEYS
    assert set(anchored) == ENTRY_KEYS | {"anchor"}
    assert anchored["anchor"] == "n"
    assert anchored["anchor_state"] == "valid"
    assert plain["anchor_state"] == "unanchored"
    assert anchored["bytes"] == len("k1ü{}".encode())
    assert (plain["last_used"], anchored["last_used"]) == (1, 2)
    assert server.ok("cache.entries") == entries, "cache.entries recorded an access"
    got = server.ok("cache.get", {"key": "k2"})
    assert got == plain, "cache.get shows the entry as it was before the access"
    after = server.ok("cache.get", {"key": "k2"})
    assert (after["hits"], after["last_used"]) == (1, 3)
    assert server.ok("cache.get", {"key": "absent"}) is None
    stats = server.ok("cache.stats", {"budget_bytes": 10})
    assert stats == {
        "schema": "roteiro.cache/v1",
        "entries": 2,
        "bytes": plain["bytes"] + anchored["bytes"],
        "budget_bytes": 10,
        "generation": 0,
    }
    held = plain["bytes"] + anchored["bytes"]
    # k2 is the most recently used and k1 is of the current generation and
    # applies: both pinned, so the tier stays over a zero budget and says so.
    assert server.ok("cache.sweep", {"budget_bytes": 0}) == {
        "schema": "roteiro.cache/v1",
        "budget_bytes": 0,
        "scanned": 2,
        "pinned": 2,
        "evicted": 0,
        "freed_bytes": 0,
        "retained_bytes": held,
        "over_budget": True,
        "generation": 1,
    }
    assert server.ok("cache.forget", {"key": "k2"}) is True
    assert server.ok("cache.forget", {"key": "never"}) is False


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (None, DEFAULT_CACHE_BUDGET_BYTES),
        ("2", 2 * 1024 * 1024),
        (" 3\t", 3 * 1024 * 1024),
        ("+1", 1024 * 1024),
        ("0", 0),
        (str(2**44 - 1), (2**44 - 1) * 1024 * 1024),
    ],
)
def test_cache_budget_converts_whole_megabytes(
    server: WireServer, env: str | None, expected: int
) -> None:
    assert server.ok("cache.budget", {"env": env}) == expected


# --- store -----------------------------------------------------------------


def test_store_snapshot_is_stable_under_reads_and_changes_on_writes(server: WireServer) -> None:
    server.ok("memory.record", {"kind": "lesson", "body": "b"})
    server.ok("cache.put", {"key": "k", "fingerprint": "f", "json": "1"})
    first = server.ok("store.snapshot")
    for op, args in [
        ("memory.get", {"id": 1}),
        ("memory.list", None),
        ("memory.recall", {"query": "b"}),
        ("cache.entries", None),
        ("cache.stats", {"budget_bytes": 0}),
        ("graph.export", None),
        ("hello", None),
        ("cache.budget", {"env": "1"}),
    ]:
        server.ok(op, args)
        assert server.ok("store.snapshot") == first, f"{op} changed the snapshot"
    server.ok("cache.get", {"key": "k"})
    assert server.ok("store.snapshot") != first


def test_store_reopen_keeps_everything(server: WireServer) -> None:
    server.ok("graph.put_nodes", {"nodes": [{"key": "n", "blob": "b"}]})
    server.ok("graph.set_tree", {"tree": "t"})
    server.ok("memory.record", {"kind": "lesson", "body": "one", "anchor": "n"})
    server.ok("memory.record", {"kind": "lesson", "body": "two", "supersedes": 1})
    server.ok("cache.put", {"key": "k", "fingerprint": "f", "json": "1"})
    server.ok("cache.sweep", {"budget_bytes": 100})
    before = server.ok("store.snapshot")
    assert server.ok("store.reopen") is None
    assert server.ok("store.snapshot") == before


def test_sqlite_store_survives_a_restarted_server(tmp_path: Path) -> None:
    argv = server_argv("sqlite", tmp_path / "memory.db")
    with WireServer(argv) as first:
        first.ok("memory.record", {"kind": "outcome", "body": "durable"})
        first.ok("cache.put", {"key": "k", "fingerprint": "f", "json": "1"})
        before = first.ok("store.snapshot")
        assert first.finish() == 0
    with WireServer(argv) as second:
        assert second.ok("store.snapshot") == before
        assert second.ok("memory.get", {"id": 1})["body"] == "durable"


def _script(seed: int, length: int) -> list[bytes]:
    """A reproducible mix of well-formed, refused and malformed requests."""
    rng = random.Random(seed)
    kinds = ["lesson", "attempt", "decision", "pattern", "outcome", "rumour"]
    keys = ["n1", "n2", "n3"]
    lines = []
    for request_id in range(1, length + 1):
        choice = rng.randrange(14)
        if choice == 0:
            nodes = [{"key": k, "blob": rng.choice(["b1", "b2", None])} for k in keys[:2]]
            lines.append(request_line(request_id, "graph.put_nodes", {"nodes": nodes}))
        elif choice == 1:
            lines.append(
                request_line(request_id, "graph.remove_nodes", {"keys": [rng.choice(keys)]})
            )
        elif choice == 2:
            lines.append(request_line(request_id, "graph.set_tree", {"tree": f"t{request_id}"}))
        elif choice in (3, 4, 5):
            args: dict[str, Any] = {
                "kind": rng.choice(kinds),
                "body": rng.choice(["alpha beta", "beta", "gamma::delta", " "]),
                "anchor": rng.choice([*keys, None]),
                "confidence": rng.choice([None, 0.2, 0.9, 1.5]),
            }
            if rng.random() < 0.4:
                args["supersedes"] = rng.randrange(1, 12)
            lines.append(request_line(request_id, "memory.record", args))
        elif choice == 6:
            lines.append(request_line(request_id, "memory.forget", {"id": rng.randrange(1, 16)}))
        elif choice == 7:
            args = {"include_superseded": rng.random() < 0.5, "limit": rng.choice([None, 0, 2])}
            lines.append(request_line(request_id, "memory.list", args))
        elif choice == 8:
            args = {
                "query": rng.choice([None, "beta", "n1", "GAMMA delta"]),
                "decay": rng.choice(["none", "linear:5", "exponential:2", "clock"]),
                "applicable_only": rng.random() < 0.5,
                "limit": rng.choice([None, 3]),
            }
            lines.append(request_line(request_id, "memory.recall", args))
        elif choice == 9:
            key = rng.choice(["a", "b", "c"])
            args = {"key": key, "fingerprint": "f", "json": "x" * rng.randrange(1, 40)}
            args["anchor"] = rng.choice([*keys, None])
            lines.append(request_line(request_id, "cache.put", args))
        elif choice == 10:
            lines.append(request_line(request_id, "cache.get", {"key": rng.choice("abcd")}))
        elif choice == 11:
            budget = rng.choice([0, 30, 1000])
            lines.append(request_line(request_id, "cache.sweep", {"budget_bytes": budget}))
        elif choice == 12:
            lines.append(
                request_line(
                    request_id, rng.choice(["cache.entries", "graph.export", "store.reopen"])
                )
            )
        else:
            lines.append(rng.choice([b"{", request_line(request_id, "memory.get", {"id": -1})]))
    return lines


def _comparable(response: dict[str, Any]) -> Any:
    """A response with the human-only timestamps blanked out."""

    def blank(value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: ("<time>" if k in ("created_at", "superseded_at") and v else blank(v))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [blank(v) for v in value]
        return value

    return blank(response)


@pytest.mark.parametrize("seed", range(3))
def test_sqlite_and_memory_servers_answer_alike(tmp_path: Path, seed: int) -> None:
    """The same request stream gets the same responses from both backends'
    servers, error kinds included (messages may word things differently)."""
    lines = _script(seed, 150)
    answers = {}
    for backend_name in BACKENDS:
        responses, stderr, code = run_lines(argv_for(backend_name, tmp_path), lines)
        assert code == 0, stderr
        assert len(responses) == len(lines)
        for response in responses:
            if not response["ok"]:
                response["error"].pop("message")
        answers[backend_name] = [_comparable(r) for r in responses]
    for index, (ours, model) in enumerate(zip(answers["sqlite"], answers["memory"], strict=True)):
        assert ours == model, f"request {index + 1}: {lines[index]!r}"
