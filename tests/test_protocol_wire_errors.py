"""The wire form of roteiro.conformance/v1: one test per error kind PROTOCOL
names, stores that cannot be read, and malformed requests (BadRequest),
driven through a real subprocess.
"""

# ruff: noqa: F401, F811 -- the wire_servers fixtures are imported, then requested by name

from __future__ import annotations

import json
import os
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from wire import WireServer, request_line, run_lines, server_argv
from wire_servers import backend, file_digest, refused, server, shared

from roteiro_memory.errors import ERROR_KINDS
from roteiro_memory.semantics import MAX_BODY_BYTES
from roteiro_memory.stores.sqlite.store import SQLiteStore

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
    assert repr(args["kind"]) in refused(shared, op, args, "InvalidKind")


@pytest.mark.parametrize(
    "scope", ["", " repo", "repo ", "re\u0000po", "a\u0085b", "x" * 129, "é" * 65]
)
def test_invalid_scope(shared: WireServer, scope: str) -> None:
    refused(
        shared, "memory.record", {"kind": "lesson", "body": "b", "scope": scope}, "InvalidScope"
    )


@pytest.mark.parametrize("body", ["", " \t\n", "\u3000\u2028", "x" * (MAX_BODY_BYTES + 1)])
def test_invalid_body(shared: WireServer, body: str) -> None:
    refused(shared, "memory.record", {"kind": "lesson", "body": body}, "InvalidBody")


@pytest.mark.parametrize(
    "literal", ["1.5", "-0.01", "2", "1e400", "-1e400", "1" + "0" * 4_300, "-" + "9" * 5_000]
)
def test_invalid_confidence(shared: WireServer, literal: str) -> None:
    """Out of [0, 1], including literals too large for a double (read as
    infinities, which are not the NaN/Infinity tokens JSON forbids) and
    integers of more digits than Python converts."""
    line = b'{"id": 9, "op": "memory.record", "args": {"kind": "lesson", "body": "b", '
    line += b'"confidence": ' + literal.encode() + b"}}"
    before = shared.ok("store.snapshot")
    response = shared.raw(line)
    assert response["id"] == 9
    assert response["error"]["kind"] == "InvalidConfidence", response
    assert shared.ok("store.snapshot") == before


@pytest.mark.parametrize("token", ["none:5", "linear:soon", "linear:", " none", "clock", ""])
def test_invalid_decay(shared: WireServer, token: str) -> None:
    refused(shared, "memory.recall", {"decay": token}, "InvalidDecay")


@pytest.mark.parametrize(
    "env", ["", " ", "-1", "1.5", "1_0", "abc", "1 0", "\u0661", "++1", "17592186044416"]
)
def test_invalid_budget(shared: WireServer, env: str) -> None:
    refused(shared, "cache.budget", {"env": env}, "InvalidBudget")


@pytest.mark.parametrize(
    ("op", "args"),
    [
        ("memory.forget", {"id": 999}),
        ("memory.forget", {"id": 2**63}),
        ("memory.record", {"kind": "lesson", "body": "b", "supersedes": 999}),
    ],
)
def test_not_found(shared: WireServer, op: str, args: dict[str, Any]) -> None:
    refused(shared, op, args, "NotFound")


def test_already_superseded(shared: WireServer) -> None:
    args = {"kind": "lesson", "body": "again", "supersedes": 1}
    refused(shared, "memory.record", args, "AlreadySuperseded")


def test_write_faults_are_reported_kind_scope_body_confidence_supersedes(
    shared: WireServer,
) -> None:
    faults = {"kind": "rumour", "scope": "", "body": "", "confidence": 9, "supersedes": 999}
    expected = ["InvalidKind", "InvalidScope", "InvalidBody", "InvalidConfidence", "NotFound"]
    fixes = {"kind": "lesson", "scope": "repo", "body": "b", "confidence": 0.5}
    for field, kind in zip(
        ["kind", "scope", "body", "confidence", "supersedes"], expected, strict=True
    ):
        refused(shared, "memory.record", dict(faults), kind)
        if field in fixes:
            faults[field] = fixes[field]


def test_serving_a_file_that_is_not_a_store_exits_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("these are my notes\n")
    digest = file_digest(path)
    responses, stderr, code = run_lines(server_argv("sqlite", path), [request_line(1, "hello")])
    assert code != 0
    assert responses == []
    assert len(stderr.splitlines()) == 1, stderr
    assert str(path) in stderr
    assert "Traceback" not in stderr
    assert file_digest(path) == digest


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
        assert "rumour" in refused(server, "memory.get", {"id": 2}, "Corrupt")
        refused(server, "memory.list", None, "Corrupt")
        refused(server, "memory.recall", {"query": "x"}, "Corrupt")
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
        "Unavailable": test_a_store_locked_by_another_writer_is_unavailable_over_the_wire,
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
    ("huge-integer", b'{"id": 1, "op": "memory.get", "args": {"id": ' + b"9" * 5000 + b"}}", 1),
    ("huge-integer-id", b'{"id": ' + b"9" * 5000 + b', "op": "hello"}', None),
    (
        "integer-of-4300-digits",
        b'{"id": 1, "op": "memory.get", "args": {"id": ' + b"9" * 4300 + b"}}",
        1,
    ),
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
        "surrogate-in-a-repeated-name",
        b'{"id": 3, "op": "memory.record", "args": {"kind": "lesson", "body": "\\ud800",'
        b' "body": "ok"}}',
        None,
    ),
    (
        "surrogate-deep-in-a-repeated-name",
        b'{"id": 3, "op": "graph.remove_nodes", "args": {"keys": ["\\udc00"]},'
        b' "args": {"keys": []}}',
        None,
    ),
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


def test_bad_request_a_byte_order_mark_is_named(shared: WireServer) -> None:
    """Not Python's words ("Unexpected UTF-8 BOM (decode using utf-8-sig)")."""
    response = shared.raw(b'\xef\xbb\xbf{"id": 1, "op": "hello"}')
    assert response["error"]["message"] == (
        "the request starts with a byte-order mark (U+FEFF): expected UTF-8 JSON text without one"
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({"id": None}, "argument 'id' must be an integer, not null"),
        ({"id": True}, "argument 'id' must be an integer, not true"),
        ({"id": [1.5]}, "argument 'id' must be an integer, not [1.5]"),
    ],
)
def test_a_wrong_type_is_shown_as_json_writes_it(
    shared: WireServer, args: dict[str, Any], said: str
) -> None:
    """The sender wrote JSON: a refusal quotes ``null`` and ``true``, not
    Python's ``None`` and ``True``, with the article English wants."""
    response = shared.raw(_request("memory.get", args))
    assert response["error"]["message"] == f"memory.get: {said}", response


@pytest.mark.parametrize(
    "line",
    [
        b'{"id": 3, "op": "memory.get", "args": {"id": 1, "\\ud800": 0}}',
        b'{"id": 3, "op": "hello", "\\udfff": 1}',
        b'{"id": 3, "op": "graph.put_nodes", "args": {"nodes": [{"key": "k", "\\udbff": 1}]}}',
    ],
    ids=["argument", "request field", "node field"],
)
def test_a_response_quoting_a_lone_surrogate_is_strict_utf8_json(line: bytes) -> None:
    """A refusal naming a key that holds a lone surrogate shows its escape
    as text: UTF-8 cannot carry the code point, and a strict parser refuses
    the escape ``\\ud800`` as well [P-wire-response]."""
    from roteiro_memory.protocol import Ops, handle_line
    from roteiro_memory.stores.model import ModelStore

    response, _ = handle_line(Ops(ModelStore()), line)
    assert "\\ud8" not in response.replace("\\\\", "")
    answer = json.loads(response.encode("utf-8").decode("utf-8"))
    assert (answer["id"], answer["error"]["kind"]) == (3, "BadRequest")
    assert re.search(r"\\u(d800|dfff|dbff)", answer["error"]["message"]), answer


# --- database failures: answered, and the server keeps serving ------------


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

    from roteiro_memory.stores.postgres.dsn import split_schema

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


def test_a_store_locked_by_another_writer_is_unavailable_over_the_wire(tmp_path: Path) -> None:
    """A sound store that cannot be written now (another process holds the
    write lock past the wait) is Unavailable, never Corrupt: nobody should
    repair a store that is not damaged.  The server then goes on serving."""
    db = tmp_path / "memory.db"
    SQLiteStore(db).close()
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        argv = [*server_argv("sqlite", db)]
        lines = [request_line(1, "memory.record", {"kind": "lesson", "body": "x"})]
        lines.append(request_line(2, "hello"))
        env = {**os.environ, "ROTEIRO_MEMORY_BUSY_TIMEOUT_MS": "50"}
        responses, stderr, status = run_lines(argv, lines, env=env)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert status == 0, stderr
    refused, hello = responses
    assert refused["ok"] is False
    assert refused["error"]["kind"] == "Unavailable"
    assert "busy" in refused["error"]["message"]
    assert hello["ok"] is True


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


def test_a_request_line_past_the_bound_is_refused_unheld_and_the_next_is_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A line that never ends (``protocol < /dev/zero``) filled memory until
    the process died; now no read asks for more than the bound and one byte,
    the line is refused by its length and the rest of it dropped, and the
    request after it is answered as usual."""
    import io

    from roteiro_memory import protocol
    from roteiro_memory.stores.model import ModelStore

    monkeypatch.setattr(protocol, "MAX_LINE_BYTES", 64)
    asked: list[int] = []

    class Input(io.BytesIO):
        def readline(self, size: int | None = -1) -> bytes:
            asked.append(-1 if size is None else size)
            return super().readline(size)

    hello = b'{"id": 2, "op": "hello"}\n'
    source = Input(b'{"id": 1, "op": "hello", "args": {"x": "' + b"a" * 500 + b'"}}\n' + hello)
    sink = io.StringIO()
    assert protocol.serve(ModelStore(), source, sink) == 0
    answers = [json.loads(line) for line in sink.getvalue().splitlines()]
    assert [a["id"] for a in answers] == [None, 2]
    assert answers[0]["error"]["kind"] == "BadRequest"
    assert "over 64 bytes" in answers[0]["error"]["message"]
    assert answers[1]["ok"] is True
    assert asked
    assert all(0 < size <= 65 for size in asked), asked
