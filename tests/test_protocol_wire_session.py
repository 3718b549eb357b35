"""The wire form of roteiro.conformance/v1: the session (hello, reset,
shutdown, end of input) and the framing (one response per line, in order,
UTF-8 whatever the locale), driven through a real subprocess.
"""

# ruff: noqa: F401, F811 -- the wire_servers fixtures are imported, then requested by name

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from wire import WireServer, request_line, run_lines, server_argv
from wire_servers import BACKENDS, argv_for, backend, server, shared

from roteiro_memory.store import STORE_CAPABILITIES as CAPABILITIES

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
    responses, stderr, code = run_lines(argv_for(backend_name, tmp_path), lines)
    assert responses == [{"id": 1, "ok": True, "result": None}], stderr
    assert code == 0, stderr


def test_shutdown_from_a_live_session_ends_the_output(server: WireServer) -> None:
    server.ok("hello")
    assert server.call("shutdown") == {"id": 2, "ok": True, "result": None}
    assert server.end_of_output()
    assert server.process.wait(timeout=30) == 0


@pytest.mark.parametrize("backend_name", BACKENDS)
def test_end_of_input_exits_zero(backend_name: str, tmp_path: Path) -> None:
    responses, stderr, code = run_lines(
        argv_for(backend_name, tmp_path), [request_line(5, "hello")]
    )
    assert [r["id"] for r in responses] == [5]
    assert code == 0, stderr
    assert stderr == ""
    empty, stderr, code = run_lines(argv_for(backend_name, tmp_path), [])
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
    responses, stderr, code = run_lines(argv_for(backend_name, tmp_path), lines)
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
    responses, stderr, code = run_lines(argv_for(backend, tmp_path), lines)
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
    responses, stderr, code = run_lines(argv_for(backend, tmp_path), lines, env=env)
    assert code == 0, stderr
    assert responses[1]["result"]["body"] == body


# --- reset of a store the server did not fill -----------------------------------


def _team_store(path: Path) -> None:
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    store = SQLiteStore(path)
    try:
        store.record(kind="lesson", body="the team's lesson")
    finally:
        store.close()


def test_reset_of_a_store_holding_data_is_refused(tmp_path: Path) -> None:
    """``protocol --db FILE`` over a store that held records when it started
    refuses reset with BadRequest, names the flag, and erases nothing."""
    db = tmp_path / "team.db"
    _team_store(db)
    lines = [request_line(1, "reset"), request_line(2, "memory.list")]
    responses, _, status = run_lines(server_argv("sqlite", db), lines)
    assert status == 0
    assert responses[0]["ok"] is False
    assert responses[0]["error"]["kind"] == "BadRequest"
    assert "--allow-reset" in responses[0]["error"]["message"]
    assert responses[1]["result"]["live"] == 1


def test_allow_reset_lets_the_server_erase_a_store_holding_data(tmp_path: Path) -> None:
    db = tmp_path / "team.db"
    _team_store(db)
    argv = [*server_argv("sqlite", db), "--allow-reset"]
    responses, _, _ = run_lines(argv, [request_line(1, "reset"), request_line(2, "memory.list")])
    assert responses[0] == {"id": 1, "ok": True, "result": None}
    assert responses[1]["result"]["live"] == 0


def test_a_store_the_server_made_may_always_be_reset(tmp_path: Path) -> None:
    """The default temporary store, or a new ``--db`` file, is the server's own."""
    write = request_line(2, "memory.record", {"kind": "lesson", "body": "b"})
    lines = [request_line(1, "reset"), write, request_line(3, "reset")]
    for argv in (server_argv("sqlite"), server_argv("sqlite", tmp_path / "new.db")):
        responses, _, _ = run_lines(argv, lines)
        assert [r["ok"] for r in responses] == [True, True, True]
