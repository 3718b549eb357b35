"""The wire form of roteiro.conformance/v1, driven through a real subprocess.

Each test starts ``python -m roteiro_memory protocol`` (once, the installed
``roteiro-memory`` script) and speaks to it line by line; every read has a
timeout (:mod:`wire`), so a hang fails instead of stalling the run.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wire import WireServer, request_line, run_lines, server_argv

from roteiro_memory.errors import ERROR_KINDS
from roteiro_memory.semantics import DEFAULT_CACHE_BUDGET_BYTES, MAX_BODY_BYTES
from roteiro_memory.store import CAPABILITIES
from roteiro_memory.stores.sqlite.store import SQLiteStore

BACKENDS = ("sqlite", "memory")

RECORD_KEYS = {
    "id",
    "scope",
    "kind",
    "anchor_state",
    "applies",
    "body",
    "confidence",
    "tree",
    "created_at",
    "superseded_by",
    "superseded_at",
}
RECALLED_KEYS = {"score", "base_confidence", "anchor_penalty", "decay_factor", "age", "record"}
ENTRY_KEYS = {
    "key",
    "fingerprint",
    "json",
    "bytes",
    "generation",
    "last_used",
    "hits",
    "anchor_state",
}
ANCHOR_STATES = {"unanchored", "valid", "drifted", "vanished", "unverifiable"}


def _argv(backend: str, folder: Path) -> list[str]:
    return server_argv(backend, folder / "memory.db" if backend == "sqlite" else None)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def server(backend: str, tmp_path: Path) -> Iterator[WireServer]:
    """A fresh server of each backend, over a fresh store."""
    with WireServer(_argv(backend, tmp_path)) as running:
        yield running


@pytest.fixture(scope="module", params=BACKENDS)
def shared(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WireServer]:
    """One long-lived server per backend, holding a little of everything, for
    the many requests that must be refused without touching it."""
    folder = tmp_path_factory.mktemp(f"wire-{request.param}")
    with WireServer(_argv(request.param, folder)) as running:
        running.ok("graph.put_nodes", {"nodes": [{"key": "n1", "path": "a.rs", "blob": "b1"}]})
        running.ok("graph.set_tree", {"tree": "t1"})
        running.ok("memory.record", {"kind": "lesson", "body": "first", "anchor": "n1"})
        running.ok("memory.record", {"kind": "decision", "body": "second", "supersedes": 1})
        running.ok("cache.put", {"key": "k", "fingerprint": "f", "json": "{}", "anchor": "n1"})
        running.ok("cache.get", {"key": "k"})
        yield running


def _refused(server: WireServer, op: str, args: dict[str, Any] | None, kind: str) -> str:
    """Assert the request fails with ``kind`` and leaves the snapshot as it was;
    the error message."""
    before = server.ok("store.snapshot")
    error = server.error(op, args)
    assert error["kind"] == kind, error
    assert server.ok("store.snapshot") == before, f"{op} {args} changed the store"
    message: str = error["message"]
    return message


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- session ---------------------------------------------------------------


def test_hello_reports_protocol_implementation_and_capabilities(server: WireServer) -> None:
    hello = server.ok("hello")
    assert set(hello) == {"protocol", "implementation", "capabilities"}
    assert hello["protocol"] == "roteiro.conformance/v1"
    assert set(hello["implementation"]) == {"name", "version"}
    assert isinstance(hello["implementation"]["name"], str)
    assert isinstance(hello["implementation"]["version"], str)
    assert sorted(hello["capabilities"]) == sorted(CAPABILITIES)


def test_reset_replaces_the_store_by_a_fresh_empty_one(server: WireServer) -> None:
    fresh = server.ok("store.snapshot")
    server.ok("graph.put_nodes", {"nodes": [{"key": "n"}]})
    server.ok("graph.set_tree", {"tree": "t"})
    server.ok("memory.record", {"kind": "lesson", "body": "b", "anchor": "n"})
    server.ok("cache.put", {"key": "k", "fingerprint": "f", "json": "1"})
    server.ok("cache.get", {"key": "k"})
    server.ok("cache.sweep", {"budget_bytes": 0})
    assert server.ok("reset") is None
    assert server.ok("store.snapshot") == fresh
    assert server.ok("memory.list", {"include_superseded": True})["records"] == []
    assert server.ok("cache.entries") == []
    assert server.ok("cache.stats", {"budget_bytes": 1})["generation"] == 0
    assert server.ok("graph.export") == {"nodes": []}
    assert server.ok("memory.record", {"kind": "lesson", "body": "again"}) == {"id": 1}


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_shutdown_answers_null_then_exits_zero_reading_no_further(
    backend_name: str, tmp_path: Path
) -> None:
    lines = [request_line(1, "shutdown"), request_line(2, "hello")]
    responses, stderr, code = run_lines(_argv(backend_name, tmp_path), lines)
    assert responses == [{"id": 1, "ok": True, "result": None}], stderr
    assert code == 0, stderr


def test_shutdown_from_a_live_session_ends_the_output(server: WireServer) -> None:
    server.ok("hello")
    assert server.call("shutdown") == {"id": 2, "ok": True, "result": None}
    assert server.end_of_output()
    assert server.process.wait(timeout=30) == 0


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_end_of_input_exits_zero(backend_name: str, tmp_path: Path) -> None:
    responses, stderr, code = run_lines(_argv(backend_name, tmp_path), [request_line(5, "hello")])
    assert [r["id"] for r in responses] == [5]
    assert code == 0, stderr
    assert stderr == ""
    empty, stderr, code = run_lines(_argv(backend_name, tmp_path), [])
    assert empty == []
    assert code == 0, stderr
    assert stderr == ""


def test_console_script_serves_the_protocol(tmp_path: Path) -> None:
    script = shutil.which("roteiro-memory")
    assert script is not None, "the roteiro-memory console script is not installed"
    argv = server_argv("sqlite", tmp_path / "memory.db", command=[script])
    lines = [request_line(1, "hello"), request_line(2, "shutdown")]
    responses, stderr, code = run_lines(argv, lines)
    assert [r["id"] for r in responses] == [1, 2], stderr
    assert responses[0]["result"]["protocol"] == "roteiro.conformance/v1"
    assert responses[1] == {"id": 2, "ok": True, "result": None}
    assert code == 0


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_responses_come_one_per_line_in_order_with_the_request_id(
    backend_name: str, tmp_path: Path
) -> None:
    lines = [
        request_line(7, "hello"),
        b"not json",
        request_line(3, "memory.record", {"kind": "lesson", "body": "x"}),
        request_line(3, "memory.get", {"id": 1}),
        b'{"id": true, "op": "hello"}',
        request_line(-4, "memory.forget", {"id": 99}),
        request_line(0, "nope"),
        request_line(2**70, "cache.entries"),
        b"",
        request_line(8, "memory.list"),
    ]
    responses, stderr, code = run_lines(_argv(backend_name, tmp_path), lines)
    assert [r["id"] for r in responses] == [7, None, 3, 3, None, -4, 0, 2**70, None, 8], stderr
    assert [r["ok"] for r in responses] == [
        True,
        False,
        True,
        True,
        False,
        False,
        False,
        True,
        False,
        True,
    ]
    assert responses[3]["result"]["body"] == "x"
    assert code == 0


def test_a_last_line_without_newline_and_crlf_lines_are_answered(server: WireServer) -> None:
    server.send(request_line(1, "hello") + b"\r\n")
    assert server.read()["ok"] is True
    server.send(request_line(2, "memory.list"))
    assert server.finish() == 0
    response = server.read()
    assert response["id"] == 2
    assert response["ok"] is True


def test_line_breaking_characters_in_strings_keep_one_response_per_line(
    backend: str, tmp_path: Path
) -> None:
    """U+2028, U+0085, CR and friends travel inside a string: only LF ends a line."""
    body = "one\u2028two\u2029three\u0085four\rfive\nsix\u000bseven\u000cend"
    lines = [
        # Sent raw, not \u-escaped, so the server's own line reading is tested too.
        json.dumps(
            {"id": 1, "op": "memory.record", "args": {"kind": "lesson", "body": body}},
            ensure_ascii=False,
        ).encode(),
        request_line(2, "memory.get", {"id": 1}),
        request_line(3, "memory.list"),
    ]
    responses, stderr, code = run_lines(_argv(backend, tmp_path), lines)
    assert code == 0, stderr
    assert [r["id"] for r in responses] == [1, 2, 3]
    assert responses[1]["result"]["body"] == body
    assert responses[2]["result"]["records"][0]["body"] == body


def test_output_is_utf8_whatever_the_locale(backend: str, tmp_path: Path) -> None:
    """The wire is UTF-8 by contract, so a C locale (no coercion, no UTF-8
    mode) must not change what is written or crash the server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIO"))}
    env.update(LC_ALL="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0")
    body = "naïve — 日本語 ✓"
    lines = [
        request_line(1, "memory.record", {"kind": "lesson", "body": body}),
        request_line(2, "memory.get", {"id": 1}),
    ]
    responses, stderr, code = run_lines(_argv(backend, tmp_path), lines, env=env)
    assert code == 0, stderr
    assert responses[1]["result"]["body"] == body


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
        responses, stderr, code = run_lines(_argv(backend_name, tmp_path), lines)
        assert code == 0, stderr
        assert len(responses) == len(lines)
        for response in responses:
            if not response["ok"]:
                response["error"].pop("message")
        answers[backend_name] = [_comparable(r) for r in responses]
    for index, (ours, model) in enumerate(zip(answers["sqlite"], answers["memory"], strict=True)):
        assert ours == model, f"request {index + 1}: {lines[index]!r}"


# --- one test per error kind -----------------------------------------------


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("memory.record", {"kind": "rumour", "body": "b"}),
        ("memory.record", {"kind": "Lesson", "body": "b"}),
        ("memory.list", {"kind": "rumour"}),
        ("memory.recall", {"kind": ""}),
    ],
)
def test_invalid_kind(shared: WireServer, op: str, args: dict[str, Any]) -> None:
    assert repr(args["kind"]) in _refused(shared, op, args, "InvalidKind")


@pytest.mark.parametrize(
    "scope", ["", " repo", "repo ", "re\u0000po", "a\u0085b", "x" * 129, "é" * 65]
)
def test_invalid_scope(shared: WireServer, scope: str) -> None:
    _refused(
        shared, "memory.record", {"kind": "lesson", "body": "b", "scope": scope}, "InvalidScope"
    )


@pytest.mark.parametrize("body", ["", " \t\n", "\u3000\u2028", "x" * (MAX_BODY_BYTES + 1)])
def test_invalid_body(shared: WireServer, body: str) -> None:
    _refused(shared, "memory.record", {"kind": "lesson", "body": body}, "InvalidBody")


@pytest.mark.parametrize("literal", ["1.5", "-0.01", "2", "1e400", "-1e400"])
def test_invalid_confidence(shared: WireServer, literal: str) -> None:
    """Out of [0, 1], including literals too large for a double (read as
    infinities, which are not the NaN/Infinity tokens JSON forbids)."""
    line = b'{"id": 9, "op": "memory.record", "args": {"kind": "lesson", "body": "b", '
    line += b'"confidence": ' + literal.encode() + b"}}"
    before = shared.ok("store.snapshot")
    response = shared.raw(line)
    assert response["id"] == 9
    assert response["error"]["kind"] == "InvalidConfidence", response
    assert shared.ok("store.snapshot") == before


@pytest.mark.parametrize("token", ["none:5", "linear:soon", "linear:", " none", "clock", ""])
def test_invalid_decay(shared: WireServer, token: str) -> None:
    _refused(shared, "memory.recall", {"decay": token}, "InvalidDecay")


@pytest.mark.parametrize(
    "env", ["", " ", "-1", "1.5", "1_0", "abc", "1 0", "\u0661", "++1", "17592186044416"]
)
def test_invalid_budget(shared: WireServer, env: str) -> None:
    _refused(shared, "cache.budget", {"env": env}, "InvalidBudget")


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("memory.forget", {"id": 999}),
        ("memory.forget", {"id": 2**63}),
        ("memory.record", {"kind": "lesson", "body": "b", "supersedes": 999}),
    ],
)
def test_not_found(shared: WireServer, op: str, args: dict[str, Any]) -> None:
    _refused(shared, op, args, "NotFound")


def test_already_superseded(shared: WireServer) -> None:
    args = {"kind": "lesson", "body": "again", "supersedes": 1}
    _refused(shared, "memory.record", args, "AlreadySuperseded")


def test_write_faults_are_reported_kind_scope_body_confidence_supersedes(
    shared: WireServer,
) -> None:
    faults = {"kind": "rumour", "scope": "", "body": "", "confidence": 9, "supersedes": 999}
    expected = ["InvalidKind", "InvalidScope", "InvalidBody", "InvalidConfidence", "NotFound"]
    fixes = {"kind": "lesson", "scope": "repo", "body": "b", "confidence": 0.5}
    for field, kind in zip(
        ["kind", "scope", "body", "confidence", "supersedes"], expected, strict=True
    ):
        _refused(shared, "memory.record", dict(faults), kind)
        if field in fixes:
            faults[field] = fixes[field]


def test_serving_a_file_that_is_not_a_store_exits_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes\n")
    digest = _file_digest(path)
    responses, stderr, code = run_lines(server_argv("sqlite", path), [request_line(1, "hello")])
    assert code != 0
    assert responses == []
    assert len(stderr.splitlines()) == 1, stderr
    assert str(path) in stderr
    assert "Traceback" not in stderr
    assert _file_digest(path) == digest


@pytest.mark.parametrize("where", ["a-directory", "missing/parent/memory.db"])
def test_serving_an_unopenable_path_exits_with_one_line(tmp_path: Path, where: str) -> None:
    if where == "a-directory":
        (tmp_path / where).mkdir()
    responses, stderr, code = run_lines(
        server_argv("sqlite", tmp_path / where), [request_line(1, "hello")]
    )
    assert code != 0
    assert responses == []
    assert len(stderr.splitlines()) == 1, stderr
    assert "Traceback" not in stderr
    assert not (tmp_path / "missing").exists()


def test_memory_backend_refuses_a_db_with_one_line(tmp_path: Path) -> None:
    argv = server_argv("memory", tmp_path / "memory.db")
    responses, stderr, code = run_lines(argv, [request_line(1, "hello")])
    assert code != 0
    assert responses == []
    assert len(stderr.splitlines()) == 1, stderr
    assert not (tmp_path / "memory.db").exists()


def test_a_row_with_an_unknown_kind_reads_as_corrupt(tmp_path: Path) -> None:
    """A row the schema's CHECK would refuse, planted behind its back, is
    reported as Corrupt rather than guessed at or crashed on."""
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "fine")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA ignore_check_constraints = ON")
    conn.execute(
        "INSERT INTO agent_memory (scope, kind, body, search) VALUES ('repo', 'rumour', 'x', 'x')"
    )
    conn.commit()
    conn.close()
    with WireServer(server_argv("sqlite", path)) as server:
        assert server.ok("memory.get", {"id": 1})["body"] == "fine"
        assert "rumour" in _refused(server, "memory.get", {"id": 2}, "Corrupt")
        _refused(server, "memory.list", None, "Corrupt")
        _refused(server, "memory.recall", {"query": "x"}, "Corrupt")
        assert server.ok("hello")["protocol"] == "roteiro.conformance/v1"


def _plant(path: Path, sql: str) -> None:
    """Change a stored row behind the store's back, past its CHECKs and foreign keys."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA ignore_check_constraints = ON")
    conn.execute(sql)
    conn.commit()
    conn.close()


def _stored_rows(path: Path) -> dict[str, list[str]]:
    """Every row of every table, read beside the server, to show nothing changed
    even where the snapshot itself cannot be taken."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {t: sorted(repr(row) for row in conn.execute(f"SELECT * FROM {t}")) for t in tables}
    finally:
        conn.close()


def _refused_on_disk(server: WireServer, path: Path, op: str, args: dict[str, Any] | None) -> None:
    before = _stored_rows(path)
    error = server.error(op, args)
    assert error["kind"] == "Corrupt", error
    assert _stored_rows(path) == before, f"a refused {op} changed the store"


@pytest.mark.parametrize(
    ("column", "literal"),
    [
        ("body", "X'00ff'"),
        ("scope", "X'01'"),
        ("confidence", "'high'"),
        ("confidence", "7.5"),
        ("confidence", "-1"),
        ("confidence", "9e999"),
        ("created_at", "X'00'"),
        ("anchor_key", "X'00'"),
        ("tree", "X'00'"),
        ("superseded_by", "'soon'"),
    ],
)
def test_a_damaged_record_row_reads_as_corrupt(tmp_path: Path, column: str, literal: str) -> None:
    """A value this version never writes is reported as Corrupt by every read
    that meets it, and the server keeps serving."""
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "fine")
        store.record("lesson", "damaged")
    _plant(path, f"UPDATE agent_memory SET {column} = {literal} WHERE id = 2")
    with WireServer(server_argv("sqlite", path)) as server:
        assert server.ok("memory.get", {"id": 1})["body"] == "fine"
        _refused_on_disk(server, path, "memory.get", {"id": 2})
        _refused_on_disk(server, path, "memory.list", {"include_superseded": True})
        if column != "superseded_by":
            _refused_on_disk(server, path, "memory.recall", None)
        assert server.ok("store.snapshot") == server.ok("store.snapshot")
        assert server.ok("hello")["protocol"] == "roteiro.conformance/v1"


@pytest.mark.parametrize(
    ("column", "literal", "sweep_reads_it"),
    [
        ("json", "X'00ff'", False),
        ("fingerprint", "X'01'", False),
        ("hits", "'lots'", False),
        ("bytes", "'many'", True),
        ("generation", "'g'", True),
        ("last_used", "1.5", True),
        ("anchor_key", "X'00'", True),
    ],
)
def test_a_damaged_cache_row_reads_as_corrupt(
    tmp_path: Path, column: str, literal: str, sweep_reads_it: bool
) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        store.cache_put("k", "f", "{}")
    _plant(path, f"UPDATE agent_cache SET {column} = {literal} WHERE key = 'k'")
    with WireServer(server_argv("sqlite", path)) as server:
        _refused_on_disk(server, path, "cache.entries", None)
        _refused_on_disk(server, path, "cache.get", {"key": "k"})
        if sweep_reads_it:
            _refused_on_disk(server, path, "cache.sweep", {"budget_bytes": 0})
        assert server.ok("store.snapshot") == server.ok("store.snapshot")
        assert server.ok("hello")["protocol"] == "roteiro.conformance/v1"


def test_a_refused_reopen_keeps_the_server_serving(tmp_path: Path) -> None:
    """A newer version migrating the file under a running server makes
    store.reopen fail with Corrupt; the server must answer the next request
    rather than die on a connection it already closed."""
    path = tmp_path / "memory.db"
    with WireServer(server_argv("sqlite", path)) as server:
        server.ok("memory.record", {"kind": "lesson", "body": "kept"})
        conn = sqlite3.connect(path)
        conn.execute("INSERT INTO schema_migrations (version, name) VALUES (99, 'future')")
        conn.commit()
        conn.close()
        message = server.error("store.reopen")["message"]
        assert "99" in message
        response = server.call("memory.get", {"id": 1})
        assert response["ok"] is True, response
        assert response["result"]["body"] == "kept"
        assert server.alive


def test_every_error_kind_is_exercised_here() -> None:
    """Keeps this module honest: one test per kind PROTOCOL names (Unsupported
    needs a narrower backend than the shipped ones; see test_protocol_args)."""
    tested = {
        "InvalidKind": test_invalid_kind,
        "InvalidScope": test_invalid_scope,
        "InvalidBody": test_invalid_body,
        "InvalidConfidence": test_invalid_confidence,
        "InvalidDecay": test_invalid_decay,
        "InvalidBudget": test_invalid_budget,
        "NotFound": test_not_found,
        "AlreadySuperseded": test_already_superseded,
        "Corrupt": test_a_row_with_an_unknown_kind_reads_as_corrupt,
        "Unsupported": test_unsupported_over_the_wire_form,
        "BadRequest": test_bad_request,
    }
    assert sorted(tested) == sorted(ERROR_KINDS)


def test_unsupported_over_the_wire_form() -> None:
    """The shipped backends declare every capability, so Unsupported is driven
    through the same line handler the server uses, over a narrower store."""
    from roteiro_memory.protocol import Ops, handle_line
    from roteiro_memory.stores.model import ModelStore

    class EpisodicOnly(ModelStore):
        capabilities = ("episodic",)

    ops = Ops(EpisodicOnly())
    answer, done = handle_line(
        ops, request_line(4, "cache.put", {"key": "k", "fingerprint": "f", "json": "1"})
    )
    response = json.loads(answer)
    assert response["id"] == 4
    assert response["error"]["kind"] == "Unsupported"
    assert "cache" in response["error"]["message"]
    assert done is False
    answer, _ = handle_line(ops, request_line(5, "cache.put", {"key": 1}))
    assert json.loads(answer)["error"]["kind"] == "BadRequest", "BadRequest is decided first"


# --- BadRequest ------------------------------------------------------------

_DEEP = 100_000
_WITH_CONFIDENCE = (
    b'{"id": 1, "op": "memory.record", "args": {"kind": "lesson", "body": "b", "confidence": '
)

BAD_LINES: list[tuple[str, bytes, int | None]] = [
    ("not-json", b"hello there", None),
    ("truncated-json", b'{"id": 1, "op": "hello"', None),
    ("invalid-utf8", b'{"id": 1, "op": "hello"}\xff', None),
    (
        "invalid-utf8-in-string",
        b'{"id": 1, "op": "memory.record", "args": {"kind": "lesson", "body": "\xc3("}}',
        None,
    ),
    ("overlong-utf8", b'{"id": 1, "op": "h\xc0\xafello"}', None),
    ("empty-line", b"", None),
    ("trailing-garbage", b'{"id": 1, "op": "hello"} x', None),
    ("two-objects-on-one-line", b'{"id": 1, "op": "hello"}{"id": 2, "op": "hello"}', None),
    ("byte-order-mark", b'\xef\xbb\xbf{"id": 1, "op": "hello"}', None),
    ("nul-byte", b'{"id": 1, "op": "hello"}\x00', None),
    ("blank-line", b"   \t", None),
    ("array", b'[{"id": 1, "op": "hello"}]', None),
    ("number", b"42", None),
    ("string", b'"hello"', None),
    ("null", b"null", None),
    ("missing-id", b'{"op": "hello"}', None),
    ("null-id", b'{"id": null, "op": "hello"}', None),
    ("string-id", b'{"id": "1", "op": "hello"}', None),
    ("float-id", b'{"id": 1.5, "op": "hello"}', None),
    ("integral-float-id", b'{"id": 1.0, "op": "hello"}', None),
    ("bool-id", b'{"id": true, "op": "hello"}', None),
    ("false-id", b'{"id": false, "op": "hello"}', None),
    (
        "nan-literal",
        _WITH_CONFIDENCE + b"NaN}}",
        None,
    ),
    (
        "infinity-literal",
        _WITH_CONFIDENCE + b"Infinity}}",
        None,
    ),
    (
        "minus-infinity-literal",
        _WITH_CONFIDENCE + b"-Infinity}}",
        None,
    ),
    ("deep-array", b"[" * _DEEP + b"]" * _DEEP, None),
    (
        "deep-args",
        b'{"id": 1, "op": "hello", "args": ' + b'{"a": ' * _DEEP + b"1" + b"}" * _DEEP + b"}",
        None,
    ),
    ("unclosed-deep", b"{" * _DEEP, None),
    ("huge-integer", b'{"id": 1, "op": "memory.get", "args": {"id": ' + b"9" * 5000 + b"}}", None),
    ("missing-op", b'{"id": 3}', 3),
    ("non-string-op", b'{"id": 3, "op": 5}', 3),
    ("surrogate-op", b'{"id": 3, "op": "\\ud800"}', 3),
    ("unknown-op", b'{"id": 3, "op": "memory.delete"}', 3),
    ("unknown-request-field", b'{"id": 3, "op": "hello", "argz": {}}', 3),
    ("surrogate-request-field", b'{"id": 3, "op": "hello", "\\ud800": 1}', 3),
    ("args-array", b'{"id": 3, "op": "hello", "args": []}', 3),
    ("args-string", b'{"id": 3, "op": "hello", "args": "x"}', 3),
    ("unknown-arg", b'{"id": 3, "op": "memory.get", "args": {"id": 1, "ids": 2}}', 3),
    ("arg-on-argless-op", b'{"id": 3, "op": "hello", "args": {"x": 1}}', 3),
    ("surrogate-arg-name", b'{"id": 3, "op": "memory.list", "args": {"\\ud800": 1}}', 3),
    (
        "surrogate-body",
        b'{"id": 3, "op": "memory.record", "args": {"kind": "lesson", "body": "a\\ud800"}}',
        3,
    ),
    ("surrogate-key", b'{"id": 3, "op": "cache.get", "args": {"key": "\\udfff"}}', 3),
    (
        "surrogate-in-keys",
        b'{"id": 3, "op": "graph.remove_nodes", "args": {"keys": ["\\udc00"]}}',
        3,
    ),
]


def _request(op: str, args: dict[str, Any]) -> bytes:
    return request_line(3, op, args)


BAD_REQUESTS: list[tuple[str, str, dict[str, Any]]] = [
    ("record-missing-kind", "memory.record", {"body": "b"}),
    ("record-missing-body", "memory.record", {"kind": "lesson"}),
    ("get-missing-id", "memory.get", {}),
    ("forget-missing-id", "memory.forget", {}),
    ("put-missing-json", "cache.put", {"key": "k", "fingerprint": "f"}),
    ("get-missing-key", "cache.get", {}),
    ("forget-missing-key", "cache.forget", {}),
    ("stats-missing-budget", "cache.stats", {}),
    ("sweep-missing-budget", "cache.sweep", {}),
    ("budget-missing-env", "cache.budget", {}),
    ("set-tree-missing-tree", "graph.set_tree", {}),
    ("put-nodes-missing-nodes", "graph.put_nodes", {}),
    ("remove-nodes-missing-keys", "graph.remove_nodes", {}),
    ("shutdown-with-args", "shutdown", {"now": True}),
    ("reset-with-args", "reset", {"hard": True}),
    ("id-as-string", "memory.get", {"id": "1"}),
    ("id-as-true", "memory.get", {"id": True}),
    ("id-as-null", "memory.get", {"id": None}),
    ("id-as-float", "memory.get", {"id": 1.5}),
    ("id-as-integral-float", "memory.forget", {"id": 1.0}),
    ("id-negative", "memory.get", {"id": -1}),
    ("forget-id-negative", "memory.forget", {"id": -1}),
    ("body-as-int", "memory.record", {"kind": "lesson", "body": 5}),
    ("kind-as-null", "memory.record", {"kind": None, "body": "b"}),
    ("scope-as-null", "memory.record", {"kind": "lesson", "body": "b", "scope": None}),
    ("scope-as-list", "memory.record", {"kind": "lesson", "body": "b", "scope": ["repo"]}),
    ("anchor-as-object", "memory.record", {"kind": "lesson", "body": "b", "anchor": {}}),
    ("confidence-as-string", "memory.record", {"kind": "lesson", "body": "b", "confidence": "0.5"}),
    ("confidence-as-true", "memory.record", {"kind": "lesson", "body": "b", "confidence": True}),
    ("supersedes-as-string", "memory.record", {"kind": "lesson", "body": "b", "supersedes": "1"}),
    ("supersedes-as-true", "memory.record", {"kind": "lesson", "body": "b", "supersedes": True}),
    ("supersedes-as-float", "memory.record", {"kind": "lesson", "body": "b", "supersedes": 1.0}),
    ("include-superseded-as-null", "memory.list", {"include_superseded": None}),
    ("include-superseded-as-int", "memory.list", {"include_superseded": 1}),
    ("include-superseded-as-string", "memory.list", {"include_superseded": "true"}),
    ("list-limit-negative", "memory.list", {"limit": -1}),
    ("list-limit-as-true", "memory.list", {"limit": True}),
    ("list-limit-as-string", "memory.list", {"limit": "5"}),
    ("recall-limit-negative", "memory.recall", {"limit": -3}),
    ("recall-limit-as-float", "memory.recall", {"limit": 2.0}),
    ("recall-query-as-int", "memory.recall", {"query": 7}),
    ("recall-decay-as-null", "memory.recall", {"decay": None}),
    ("recall-decay-as-object", "memory.recall", {"decay": {"linear": {"span": 3}}}),
    ("applicable-only-as-null", "memory.recall", {"applicable_only": None}),
    ("filter-scope-as-int", "memory.list", {"scope": 1}),
    ("filter-anchor-key-as-bool", "memory.recall", {"anchor_key": False}),
    ("cache-key-as-int", "cache.put", {"key": 1, "fingerprint": "f", "json": "1"}),
    ("cache-json-as-object", "cache.put", {"key": "k", "fingerprint": "f", "json": {}}),
    (
        "cache-anchor-as-int",
        "cache.put",
        {"key": "k", "fingerprint": "f", "json": "1", "anchor": 1},
    ),
    ("cache-get-key-as-null", "cache.get", {"key": None}),
    ("cache-forget-key-as-list", "cache.forget", {"key": ["k"]}),
    ("stats-budget-negative", "cache.stats", {"budget_bytes": -1}),
    ("sweep-budget-negative", "cache.sweep", {"budget_bytes": -1}),
    ("sweep-budget-as-true", "cache.sweep", {"budget_bytes": True}),
    ("sweep-budget-as-null", "cache.sweep", {"budget_bytes": None}),
    ("sweep-budget-as-string", "cache.sweep", {"budget_bytes": "1"}),
    ("sweep-budget-over-64-bits", "cache.sweep", {"budget_bytes": 2**64}),
    ("budget-env-as-int", "cache.budget", {"env": 5}),
    ("set-tree-as-int", "graph.set_tree", {"tree": 1}),
    ("nodes-as-object", "graph.put_nodes", {"nodes": {"key": "a"}}),
    ("node-as-string", "graph.put_nodes", {"nodes": ["a"]}),
    ("node-without-key", "graph.put_nodes", {"nodes": [{"path": "a"}]}),
    ("node-key-null", "graph.put_nodes", {"nodes": [{"key": None}]}),
    ("node-blob-int", "graph.put_nodes", {"nodes": [{"key": "a", "blob": 1}]}),
    ("node-unknown-field", "graph.put_nodes", {"nodes": [{"key": "a", "hash": "h"}]}),
    ("keys-as-string", "graph.remove_nodes", {"keys": "a"}),
    ("keys-with-int", "graph.remove_nodes", {"keys": ["a", 1]}),
    # BadRequest is decided before every other kind.
    (
        "bad-kind-and-bad-confidence",
        "memory.record",
        {"kind": "rumour", "body": "b", "confidence": "hi"},
    ),
    ("bad-kind-and-unknown-arg", "memory.record", {"kind": "rumour", "body": "b", "why": 1}),
    ("bad-decay-and-negative-limit", "memory.recall", {"decay": "clock", "limit": -1}),
    ("absent-id-as-string", "memory.forget", {"id": "999"}),
    ("bad-scope-and-missing-body", "memory.record", {"kind": "lesson", "scope": ""}),
]

BAD_CASES = [pytest.param(line, expected, id=name) for name, line, expected in BAD_LINES] + [
    pytest.param(_request(op, args), 3, id=name) for name, op, args in BAD_REQUESTS
]


@pytest.mark.parametrize(("line", "expected_id"), BAD_CASES)
def test_bad_request(shared: WireServer, line: bytes, expected_id: int | None) -> None:
    """Malformed requests are answered with BadRequest (id null when the id
    could not be read), change nothing, and leave the server serving."""
    before = shared.ok("store.snapshot")
    response = shared.raw(line)
    assert response["id"] == expected_id, response
    assert response["ok"] is False, response
    assert response["error"]["kind"] == "BadRequest", response
    assert shared.ok("store.snapshot") == before
    assert shared.alive


def _planted_failures(backend: str, db: str) -> None:
    """Plant, behind the store's back, data the database itself refuses to
    work with: a body that is not UTF-8, and an id sequence at its end."""
    if backend == "sqlite":
        conn = sqlite3.connect(db)
        conn.execute("UPDATE agent_memory SET body = CAST(X'ff61' AS TEXT)")
        conn.execute("UPDATE sqlite_sequence SET seq = 9223372036854775807")
        conn.commit()
        conn.close()
        return
    import psycopg

    from roteiro_memory.stores.postgres.store import split_schema

    rest, schema = split_schema(db)
    with psycopg.connect(rest, autocommit=True) as conn:
        conn.execute(f'UPDATE "{schema}".agent_memory_ids SET last_id = 9223372036854775807')


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_protocol_server_answers_a_database_error(backend: str, tmp_path: Path) -> None:
    """A failure of the database (an undecodable column, an overflowed id
    sequence) is answered with kind Corrupt, and the server goes on serving."""
    if backend == "sqlite":
        db = str(tmp_path / "memory.db")
        seed = SQLiteStore(db)
    else:
        import pg_server

        from roteiro_memory.stores.postgres.store import PostgresStore

        db = pg_server.fresh_store_dsn()
        seed = PostgresStore(db)
    seed.record("lesson", "planted")
    seed.close()
    _planted_failures(backend, db)
    lines = [
        request_line(1, "memory.get", {"id": 1}) if backend == "sqlite" else b"",
        request_line(2, "memory.record", {"kind": "lesson", "body": "next"}),
        request_line(3, "hello"),
    ]
    argv = [*server_argv(backend), "--db", db]
    responses, stderr, status = run_lines(argv, [line for line in lines if line])
    try:
        assert status == 0, stderr
        assert "Traceback" not in stderr
        failed, last = responses[:-1], responses[-1]
        assert failed
        assert all(r["ok"] is False for r in failed), failed
        assert all(r["error"]["kind"] == "Corrupt" for r in failed), failed
        assert all("\n" not in r["error"]["message"] for r in failed)
        assert last["id"] == 3
        assert last["ok"] is True
    finally:
        if backend == "postgres":
            pg_server.drop_schema(db)


def test_a_locked_sqlite_store_is_reported_unavailable(tmp_path: Path) -> None:
    """The one mapping of SQLite's failures: a lock held elsewhere is
    StoreUnavailable, naming SQLite's own words, not Corrupt."""
    from roteiro_memory.errors import StoreUnavailable
    from roteiro_memory.stores.failures import unexpected

    db = tmp_path / "memory.db"
    SQLiteStore(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    waiter = sqlite3.connect(db, timeout=0, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError) as raised:
        waiter.execute("BEGIN IMMEDIATE")
    holder.execute("ROLLBACK")
    holder.close()
    waiter.close()
    mapped = unexpected(raised.value)
    assert isinstance(mapped, StoreUnavailable)
    assert "database is locked" in str(mapped)
    assert "SQLITE_BUSY" in str(mapped)
