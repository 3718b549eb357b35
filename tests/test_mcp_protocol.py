"""``roteiro-memory mcp`` answers as JSON-RPC 2.0 and MCP have it, not as the
SDK's conventions fall: every request answered once, by its own id and the
right code; no notification ever answered; no line able to keep the server
waiting at EOF; batches served where the negotiated revision has them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from agent_repo import GitRepo
from test_mcp_wire import INITIALIZE, INITIALIZED, answers, error_of, serve_lines

from roteiro_memory.agents.lines import INVALID_REQUEST, Batch, Reply, classify

if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing SDK fails
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def ping(request: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request, "method": "ping"}


def call(request: Any, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request, "method": "tools/call", "params": params}


def lines(*messages: Any) -> list[bytes]:
    return [m if isinstance(m, bytes) else json.dumps(m).encode() for m in messages]


def by_id(done: subprocess.CompletedProcess[bytes]) -> dict[Any, Any]:
    return {a["id"]: a for a in answers(done) if isinstance(a, dict)}


# --- A request is a request, or it is refused: nothing left owed -----------------


@pytest.mark.parametrize("member", ["error", "result"])
def test_classify_refuses_a_request_that_carries_a_response_member_by_its_id(member: str) -> None:
    line = json.dumps({**ping(5), member: {"code": 1, "message": "x"}}).encode()
    outcome = classify(line)
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    answer = json.loads(outcome.line)
    assert error_of(answer) == (5, INVALID_REQUEST)
    assert f'"method" beside "{member}"' in answer["error"]["message"]


def test_a_request_carrying_error_or_result_is_answered_and_end_of_input_ends_the_server(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The SDK reads such a line as a response and drops it: it was owed an
    answer nobody would write, and the server waited for it for ever."""
    remember = call(5, {"name": "remember", "arguments": {"kind": "lesson", "body": "probe"}})
    sent = lines(
        {**remember, "error": {"code": 1, "message": "x"}},
        {**INITIALIZE, "id": 9, "result": {}, "error": {"code": 1, "message": "x"}},
        ping(6),
    )
    done = serve_lines(repo, tmp_path / "m.db", sent, timeout=30)
    assert done.returncode == 0, done.stderr
    got = by_id(done)
    assert error_of(got[5]) == (5, INVALID_REQUEST)
    assert error_of(got[9]) == (9, INVALID_REQUEST)
    assert got[6]["result"] == {}


def test_a_notification_is_never_answered_whatever_its_params(
    repo: GitRepo, tmp_path: Path
) -> None:
    sent = lines(
        {"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1, 2]},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [5]},
        {"jsonrpc": "2.0", "method": "some/custom", "params": [1]},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": 7},
        {"jsonrpc": "2.0", "id": 30, "result": 5},
        ping(99),
    )
    done = serve_lines(repo, tmp_path / "m.db", sent)
    assert done.returncode == 0, done.stderr
    assert [a["id"] for a in answers(done)] == [0, 99]
    said = done.stderr.decode()
    assert "roteiro-memory: mcp: dropped 'some/custom': params:" in said
    assert "dropped 'notifications/roots/list_changed'" in said


def test_every_line_the_server_writes_on_stderr_names_it(repo: GitRepo, tmp_path: Path) -> None:
    """What the SDK logs (a notification of the right shape whose params its
    model refuses) is said as the server's own lines are: one line, named
    ``roteiro-memory: mcp:``, never a bare record or a traceback."""
    sent = lines(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {}}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": "x"}},
        {"jsonrpc": "2.0", "method": "some/custom", "params": [1]},
        ping(99),
    )
    done = serve_lines(repo, tmp_path / "m.db", sent)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.decode().splitlines() if "dropped" in line]
    assert len(said) == 3, said
    assert all(line.startswith("roteiro-memory: mcp: dropped '") for line in said), said
    assert "dropped 'notifications/cancelled'" in said[0]


def test_each_request_gets_the_code_of_what_is_wrong_with_it(repo: GitRepo, tmp_path: Path) -> None:
    """A method not served is -32601 whatever its params; params that are
    JSON-RPC's but not the method's (an array) are -32602; params that are
    not JSON-RPC's (a number) make no request, -32600."""
    sent = lines(
        call(13, [1]),
        {"jsonrpc": "2.0", "id": 14, "method": "completion/complete", "params": {}},
        {"jsonrpc": "2.0", "id": 15, "method": "completion/complete", "params": [1]},
        {"jsonrpc": "2.0", "id": 16, "method": "resources/list"},
        {"jsonrpc": "2.0", "id": 17, "method": "ping", "params": 5},
        {"jsonrpc": "2.0", "id": 18, "method": "tools/list", "params": ["x"]},
    )
    done = serve_lines(repo, tmp_path / "m.db", sent)
    assert done.returncode == 0, done.stderr
    got = by_id(done)
    codes = {n: got[n]["error"]["code"] for n in range(13, 19)}
    assert codes == {
        13: INVALID_PARAMS,
        14: METHOD_NOT_FOUND,
        15: METHOD_NOT_FOUND,
        16: METHOD_NOT_FOUND,
        17: INVALID_REQUEST,
        18: INVALID_PARAMS,
    }
    assert "tools/call takes an object" in got[13]["error"]["message"]
    assert "'completion/complete'" in got[14]["error"]["message"]


def test_a_request_before_initialize_is_told_initialize_must_come_first(
    repo: GitRepo, tmp_path: Path
) -> None:
    """Only initialize and ping are answered before initialize; the SDK said -32602 "Invalid
    request parameters", naming nothing -- and took a bare initialized
    notification for a handshake."""
    sent = lines(
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        ping(3),
        INITIALIZED,
        call(4, {"name": "list", "arguments": {}}),
        {"jsonrpc": "2.0", "id": 5, "method": "no/such"},
        INITIALIZE,
        call(6, {"name": "list", "arguments": {}}),
    )
    done = serve_lines(repo, tmp_path / "m.db", sent, revision=None)
    assert done.returncode == 0, done.stderr
    got = by_id(done)
    for refused in (2, 4):
        assert error_of(got[refused]) == (refused, INVALID_REQUEST)
        assert "initialize must come first" in got[refused]["error"]["message"]
    assert got[3]["result"] == {}
    assert error_of(got[5]) == (5, METHOD_NOT_FOUND)
    assert got[6]["result"]["isError"] is False


def test_a_second_initialize_is_refused_and_the_negotiated_revision_holds(
    repo: GitRepo, tmp_path: Path
) -> None:
    """A second initialize was answered and renegotiated the session: asking
    for 2025-03-26 switched batches on in a 2025-06-18 session."""
    again = {
        **INITIALIZE,
        "id": 10,
        "params": {**INITIALIZE["params"], "protocolVersion": "2025-03-26"},
    }
    sent = lines(again, [ping(11), ping(12)], ping(13))
    done = serve_lines(repo, tmp_path / "m.db", sent, revision="2025-06-18")
    assert done.returncode == 0, done.stderr
    got = answers(done)
    assert got[0]["result"]["protocolVersion"] == "2025-06-18"
    assert error_of(got[1]) == (10, INVALID_REQUEST)
    said = got[1]["error"]["message"]
    assert "already initialized" in said
    assert "2025-06-18" in said
    (batch,) = [a for a in got if isinstance(a, list)]
    assert "(2025-06-18) has no batches" in batch[0]["error"]["message"]
    assert by_id(done)[13]["result"] == {}


def test_an_initialize_refused_for_its_params_may_be_sent_again(
    repo: GitRepo, tmp_path: Path
) -> None:
    wrong = {**INITIALIZE, "id": 1, "params": {**INITIALIZE["params"], "protocolVersion": 5}}
    done = serve_lines(repo, tmp_path / "m.db", lines(wrong, INITIALIZE), revision=None)
    assert done.returncode == 0, done.stderr
    got = by_id(done)
    assert error_of(got[1]) == (1, INVALID_PARAMS)
    assert got[0]["result"]["protocolVersion"] == INITIALIZE["params"]["protocolVersion"]


ENVELOPE_KEY = "io.modelcontextprotocol/protocolVersion"


@pytest.mark.parametrize(
    "envelope",
    [
        {ENVELOPE_KEY: "2026-07-28"},  # no client capabilities: not the whole envelope
        {ENVELOPE_KEY: "2025-06-18", "io.modelcontextprotocol/clientCapabilities": {}},
        {ENVELOPE_KEY: "garbage"},
        {ENVELOPE_KEY: None},
    ],
)
def test_only_a_whole_envelope_naming_a_handshake_free_revision_skips_initialize(
    repo: GitRepo, tmp_path: Path, envelope: dict[str, Any]
) -> None:
    """Any request carrying the envelope's version key before initialize was
    taken for the handshake-free era's, and the first one fixed the
    connection in it: later pings were -32602 and initialize -32022."""
    meta = {"_meta": envelope}
    sent = lines(
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": meta},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": meta},
        ping(3),
        INITIALIZE,
        call(4, {"name": "list", "arguments": {}}),
    )
    done = serve_lines(repo, tmp_path / "m.db", sent, revision=None)
    assert done.returncode == 0, done.stderr
    got = by_id(done)
    assert got[1]["result"] == {}
    assert error_of(got[2]) == (2, INVALID_REQUEST)
    assert "initialize must come first" in got[2]["error"]["message"]
    assert got[3]["result"] == {}
    assert got[0]["result"]["protocolVersion"] == INITIALIZE["params"]["protocolVersion"]
    assert got[4]["result"]["isError"] is False


def test_a_whole_envelope_naming_2026_07_28_is_served_without_initialize(
    repo: GitRepo, tmp_path: Path
) -> None:
    meta = {ENVELOPE_KEY: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    sent = lines(call(1, {"name": "list", "arguments": {}, "_meta": meta}))
    done = serve_lines(repo, tmp_path / "m.db", sent, revision=None)
    assert done.returncode == 0, done.stderr
    assert by_id(done)[1]["result"]["isError"] is False


def test_an_id_holding_a_lone_surrogate_is_refused_with_id_null(
    repo: GitRepo, tmp_path: Path
) -> None:
    """``"\\udfff"`` (an escape) and the six characters ``\\udfff`` were both
    answered as the latter: two requests, one id.  Only the second is one an
    answer can carry back."""
    sent = [
        b'{"jsonrpc":"2.0","id":"\\udfff","method":"ping"}',
        b'{"jsonrpc":"2.0","id":"\\\\udfff","method":"ping"}',
    ]
    done = serve_lines(repo, tmp_path / "m.db", sent)
    assert done.returncode == 0, done.stderr
    got = answers(done)[1:]
    refused = [a for a in got if "error" in a]
    assert [error_of(a) for a in refused] == [(None, INVALID_REQUEST)]
    assert "lone surrogate (U+DFFF" in refused[0]["error"]["message"]
    assert [a["id"] for a in got if "result" in a] == ["\\udfff"]


# --- Batches: served under 2025-03-26, refused elsewhere --------------------------


def test_classify_hands_a_batch_back_with_the_errors_its_elements_are_owed() -> None:
    outcome = classify(json.dumps([ping(1), 12, INITIALIZED]).encode())
    assert isinstance(outcome, Batch)
    assert [m.id for m in outcome.messages] == [1, None]
    assert [error_of(e) for e in outcome.refused] == [(None, INVALID_REQUEST)]


def test_a_batch_is_answered_in_one_array_when_the_session_negotiated_2025_03_26(
    repo: GitRepo, tmp_path: Path
) -> None:
    remember = call(3, {"name": "remember", "arguments": {"kind": "lesson", "body": "batched"}})
    sent = lines(
        [ping(2), remember, INITIALIZED, 12],
        [INITIALIZED, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}],
        [ping(4), ping(4), {**INITIALIZE, "id": 5}],
        ping(6),
    )
    done = serve_lines(repo, tmp_path / "m.db", sent, revision="2025-03-26")
    assert done.returncode == 0, done.stderr
    got = answers(done)
    assert got[0]["result"]["protocolVersion"] == "2025-03-26"
    # The batch of notifications is answered with nothing; a batch waiting
    # for a call may be answered after one read later.
    batches = [a for a in got if isinstance(a, list)]
    batches.sort(key=lambda batch: 2 not in [a["id"] for a in batch])
    assert len(batches) == 2
    first = {str(a["id"]): a for a in batches[0]}
    assert set(first) == {"2", "3", "None"}
    assert first["2"]["result"] == {}
    assert first["3"]["result"]["isError"] is False
    assert error_of(first["None"]) == (None, INVALID_REQUEST)
    second = sorted(map(str, map(error_of, [a for a in batches[1] if "error" in a])))
    assert second == [str((4, INVALID_REQUEST)), str((5, INVALID_REQUEST))]
    assert [a["id"] for a in batches[1] if "result" in a] == [4]
    assert sorted(a["id"] for a in got if isinstance(a, dict)) == [0, 6]
    listed = repo.cli("list", "--json", "--db", str(tmp_path / "m.db"))
    assert [r["body"] for r in json.loads(listed.stdout)["result"]["records"]] == ["batched"]


@pytest.mark.parametrize("revision", [None, "2024-11-05", "2025-06-18", "2025-11-25"])
def test_a_batch_is_refused_whole_under_a_revision_without_batches(
    repo: GitRepo, tmp_path: Path, revision: str | None
) -> None:
    done = serve_lines(repo, tmp_path / "m.db", lines([ping(2), ping(3)]), revision=revision)
    assert done.returncode == 0, done.stderr
    (batch,) = [a for a in answers(done) if isinstance(a, list)]
    assert sorted(map(str, map(error_of, batch))) == [
        str((2, INVALID_REQUEST)),
        str((3, INVALID_REQUEST)),
    ]
    expected = "before initialize" if revision is None else f"({revision}) has no batches"
    assert expected in batch[0]["error"]["message"]
