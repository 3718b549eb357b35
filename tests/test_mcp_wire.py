"""``roteiro-memory mcp`` on its stdio: every line answered, everything read
answered before it exits, a client that goes away a quiet end, and a server
that cannot start saying why in a form the host shows."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from agent_repo import GitRepo, mcp_session

from roteiro_memory.agents.lines import (
    INVALID_REQUEST,
    MAX_DEPTH,
    PARSE_ERROR,
    Batch,
    Forward,
    Reply,
    classify,
    refuse_batch,
)
from roteiro_memory.exitcodes import ExitCode

if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing SDK fails
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def remember(request: int, body: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request,
        "method": "tools/call",
        "params": {"name": "remember", "arguments": {"kind": "lesson", "body": body}},
    }


def serve_lines(
    repo: GitRepo,
    db: Path,
    lines: list[bytes],
    *,
    revision: str | None = "2025-11-25",
    timeout: float = 120,
) -> subprocess.CompletedProcess[bytes]:
    """Pipe ``lines`` (after the handshake negotiating ``revision``; None: no
    handshake) into a server, then close its input."""
    initialize = {**INITIALIZE, "params": {**INITIALIZE["params"], "protocolVersion": revision}}
    handshake = [json.dumps(m).encode() for m in (initialize, INITIALIZED)] if revision else []
    return subprocess.run(
        [sys.executable, "-m", "roteiro_memory", "mcp", "--db", str(db)],
        input=b"".join(line + b"\n" for line in [*handshake, *lines]),
        capture_output=True,
        cwd=repo.root,
        env=repo.env,
        timeout=timeout,
        check=False,
    )


def answers(done: subprocess.CompletedProcess[bytes]) -> list[Any]:
    return [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]


def error_of(answer: Any) -> tuple[Any, int]:
    return answer["id"], answer["error"]["code"]


SURROGATE_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""The escape of a surrogate in JSON text (its backslash not itself escaped):
what ``json.dumps`` writes for a lone surrogate, and strict parsers
(serde_json, Go's) refuse.  ``\\\\ud800``, an escaped backslash before
``ud800``, is the six characters of that escape, and is not one."""


def strict_json_line(line: bytes) -> Any:
    """The message one outgoing line carries, read as a strict parser reads
    it: strict UTF-8, one line, JSON, and no escaped surrogate."""
    text = line.decode("utf-8")
    assert "\n" not in text.removesuffix("\n"), text
    assert SURROGATE_ESCAPE.search(text) is None, text
    return json.loads(text)


# --- classify: what a line is, before the SDK sees it ---------------------------


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"not json", PARSE_ERROR),
        (b"", PARSE_ERROR),
        (b"  \r\n", PARSE_ERROR),
        (b"\xff\xfe{}", PARSE_ERROR),
        (b"[" * 100_000 + b"]" * 100_000, PARSE_ERROR),
        (b"42", INVALID_REQUEST),
        (b'"tools/list"', INVALID_REQUEST),
        (b"[]", INVALID_REQUEST),
        (b'{"id": 3, "method": "tools/list"}', INVALID_REQUEST),
        (b'{"jsonrpc": "1.0", "id": 3, "method": "tools/list"}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 7}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": 1}', INVALID_REQUEST),
        (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', INVALID_REQUEST),
    ],
)
def test_classify_answers_every_line_that_is_not_a_message(line: bytes, code: int) -> None:
    outcome = classify(line)
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    assert outcome.line.endswith(b"\n")
    answer = json.loads(outcome.line)
    assert answer["jsonrpc"] == "2.0"
    assert answer["error"]["code"] == code
    assert answer["error"]["message"]


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', '"id" is true:'),
        (b'{"jsonrpc": "2.0", "id": {"a": null}, "method": "ping"}', '"id" is {"a": null}:'),
        (b'{"jsonrpc": 2, "id": 1, "method": "ping"}', '"jsonrpc" is 2,'),
        (b'{"jsonrpc": "2.0", "id": 1, "method": false}', '"method" is false,'),
        (b"1e999", "Invalid Request: Infinity,"),
    ],
)
def test_classify_shows_the_value_it_refuses_as_json_not_as_python(line: bytes, shown: str) -> None:
    """The sender wrote JSON: ``true`` and ``null``, not ``True`` and ``None``."""
    outcome = classify(line)
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    assert shown in json.loads(outcome.line)["error"]["message"]


def test_classify_names_a_byte_order_mark_in_its_own_words() -> None:
    """Python's reader said "Unexpected UTF-8 BOM (decode using utf-8-sig)",
    a remedy for Python code, not for the client that sent the line."""
    outcome = classify(b"\xef\xbb\xbf" + json.dumps(INITIALIZE).encode())
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    error = json.loads(outcome.line)["error"]
    assert error["code"] == PARSE_ERROR
    assert error["message"] == (
        "Parse error: the line starts with a byte-order mark (U+FEFF): "
        "expected UTF-8 JSON text without one"
    )


def test_classify_keeps_the_id_of_an_invalid_request_when_it_is_usable() -> None:
    outcome = classify(b'{"id": "abc", "method": "tools/list"}')
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    assert error_of(json.loads(outcome.line)) == ("abc", INVALID_REQUEST)


def test_classify_refuses_nesting_past_the_depth_limit_by_id() -> None:
    deep = b'{"a":' * MAX_DEPTH + b"1" + b"}" * MAX_DEPTH
    line = b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": ' + deep + b"}"
    outcome = classify(line)
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    assert error_of(json.loads(outcome.line)) == (5, INVALID_REQUEST)
    shallow = b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"a": [1]}}'
    assert isinstance(classify(shallow), Forward)


def test_a_batch_refused_whole_is_answered_by_request_and_notifications_not_at_all() -> None:
    batch = json.dumps(
        [
            {"jsonrpc": "2.0", "id": 7, "method": "tools/list"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            12,
        ]
    ).encode()
    outcome = classify(batch)
    assert isinstance(outcome, Batch)
    assert [m.id for m in outcome.messages] == [7, None]
    refused = refuse_batch(outcome, "2025-06-18")
    assert refused.line is not None
    answered = json.loads(refused.line)
    assert sorted(map(str, map(error_of, answered))) == [
        str((7, INVALID_REQUEST)),
        str((None, INVALID_REQUEST)),
    ]
    assert "revision (2025-06-18) has no batches" in answered[1]["error"]["message"]
    only_notifications = classify(json.dumps([INITIALIZED]).encode())
    assert isinstance(only_notifications, Batch)
    assert refuse_batch(only_notifications, None) == Reply(None)


def test_classify_forwards_a_message_with_its_request_id() -> None:
    assert classify(json.dumps(remember(9, "x")).encode()) == Forward(remember(9, "x"), 9)
    assert classify(json.dumps(INITIALIZED).encode()) == Forward(INITIALIZED, None)
    # A response's id may be null (an error about a line with no usable id).
    answer = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "x"}}
    assert classify(json.dumps(answer).encode()) == Forward(answer, None)


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        (
            {"jsonrpc": "caf\u00e9 \ud800", "id": 1, "method": "ping"},
            '"jsonrpc" is "caf\u00e9 \\ud800", expected "2.0"',
        ),
        ({"jsonrpc": "2.0", "id": {"\udfff": 1}, "method": "ping"}, '"id" is {"\\udfff": 1}:'),
        ({"id": "a\ud800", "method": "ping"}, 'no "jsonrpc" member'),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "\ud800"}, '"params" is "\\ud'),
    ],
)
def test_a_line_refused_before_the_sdk_quoting_a_lone_surrogate_is_strict_utf8_json(
    message: Any, shown: str
) -> None:
    """A refusal quoting a value or an object's name that holds a lone
    surrogate shows it as the six characters of its escape (``\\ud800``):
    UTF-8 cannot carry the surrogate, and a strict parser refuses its escape
    too.  Other text it quotes is written as it is (``caf\u00e9``)."""
    outcome = classify(json.dumps(message).encode())
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    error = strict_json_line(outcome.line)
    assert shown in error["error"]["message"]
    assert error["id"] == (message["id"] if isinstance(message["id"], int) else None)


# --- The server, end to end --------------------------------------------------------


def test_every_malformed_line_gets_an_answer(repo: GitRepo, tmp_path: Path) -> None:
    sent = [
        b"not json",
        b"",
        b"[]",
        json.dumps([{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}]).encode(),
        b'{"id": 3, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}',
        b"[" * 100_000 + b"]" * 100_000,
        b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": "x"}',
        b'{"jsonrpc": "2.0", "id": 8, "method": "ping"}',
    ]
    done = serve_lines(repo, tmp_path / "m.db", sent)
    assert done.returncode == 0, done.stderr
    got = answers(done)
    assert got[0]["id"] == 0
    assert "result" in got[0]
    batch = [a for a in got[1:] if isinstance(a, list)]
    assert [[error_of(x) for x in b] for b in batch] == [[(7, INVALID_REQUEST)]]
    singles = sorted(
        (str(a["id"]), a["error"]["code"] if "error" in a else "ok")
        for a in got[1:]
        if isinstance(a, dict)
    )
    assert singles == sorted(
        [
            ("None", PARSE_ERROR),
            ("None", PARSE_ERROR),
            ("None", INVALID_REQUEST),
            ("3", INVALID_REQUEST),
            ("None", INVALID_REQUEST),
            ("None", PARSE_ERROR),
            ("6", INVALID_REQUEST),
            ("8", "ok"),
        ]
    )


def test_a_request_with_params_of_the_wrong_shape_is_told_which(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The SDK refuses such a request as "Invalid request parameters",
    naming nothing; the answer names the member and what it should be, and
    the server goes on answering."""
    call = '{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": %s}'
    sent = [
        (call % (3, '{"name": 5}')).encode(),
        (call % (4, '{"name": "list", "arguments": [1, 2]}')).encode(),
        b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call"}',
        b'{"jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {"cursor": 5}}',
        b'{"jsonrpc": "2.0", "id": 7, "method": "no/such", "params": {}}',
        (call % (8, '{"name": "list", "arguments": {}}')).encode(),
    ]
    done = serve_lines(repo, tmp_path / "m.db", sent)
    assert done.returncode == 0, done.stderr
    by_id = {a["id"]: a for a in answers(done) if isinstance(a, dict)}
    said = {n: by_id[n]["error"]["message"] for n in (3, 4, 5, 6)}
    assert said == {
        3: "Invalid params: params.name: Input should be a valid string",
        4: "Invalid params: params.arguments: Input should be a valid dictionary",
        5: "Invalid params: params: Field required",
        6: "Invalid params: params.cursor: Input should be a valid string",
    }
    assert {by_id[n]["error"]["code"] for n in (3, 4, 5, 6)} == {-32602}
    assert by_id[7]["error"]["code"] == -32601
    assert by_id[8]["result"]["isError"] is False


def test_a_lone_surrogate_in_a_body_is_refused_in_words_and_stores_nothing(
    repo: GitRepo, tmp_path: Path
) -> None:
    line = json.dumps(remember(4, "\ud800 retry")).encode()  # json.dumps escapes it
    assert b"\\ud800" in line
    done = serve_lines(repo, tmp_path / "m.db", [line])
    assert done.returncode == 0, done.stderr
    (answer,) = [a for a in answers(done) if a["id"] == 4]
    assert answer["result"]["isError"] is True
    assert answer["result"]["structuredContent"]["error"]["kind"] == "InvalidBody"
    assert "lone surrogate" in answer["result"]["content"][0]["text"]
    listed = repo.cli("list", "--json", "--db", str(tmp_path / "m.db"), "--all")
    assert json.loads(listed.stdout)["result"]["records"] == []


def test_a_lone_surrogate_in_an_anchor_or_a_revision_or_an_empty_one_is_a_bad_request(
    repo: GitRepo, tmp_path: Path
) -> None:
    """A path, key or revision holding a lone surrogate names nothing: each
    is refused in words (it was an "unexpected failure"), nothing stored."""
    calls = [
        ("remember", {"kind": "lesson", "body": "x", "anchor": "src/\ud800.py"}),
        ("remember", {"kind": "lesson", "body": "x", "anchor": "file:\ud800"}),
        ("list", {"anchor": "\udfff"}),
        ("touched", {"rev": "\ud800"}),
        ("touched", {"rev": ""}),
    ]
    lines = [
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": n,
                "method": "tools/call",
                "params": {"name": name, "arguments": arguments},
            }
        ).encode()
        for n, (name, arguments) in enumerate(calls, 10)
    ]
    done = serve_lines(repo, tmp_path / "m.db", lines)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    by_id = {a["id"]: a["result"] for a in answers(done) if a.get("id", 0) >= 10}
    assert sorted(by_id) == [10, 11, 12, 13, 14]
    for result in by_id.values():
        assert result["isError"] is True
        assert result["structuredContent"]["error"]["kind"] == "BadRequest"
    assert "is not UTF-8 text" in by_id[10]["content"][0]["text"]
    assert "a lone surrogate, which no revision name holds" in by_id[13]["content"][0]["text"]
    assert "invalid revision ''" in by_id[14]["content"][0]["text"]  # not taken for HEAD
    listed = repo.cli("list", "--json", "--db", str(tmp_path / "m.db"), "--all")
    assert json.loads(listed.stdout)["result"]["records"] == []


def test_a_lone_surrogate_in_a_query_is_refused_not_searched_without_it(
    repo: GitRepo, tmp_path: Path
) -> None:
    """A query holding a lone surrogate is not Unicode: refused in words, as
    every other text argument is, rather than searched as the words around it."""
    call = {
        "jsonrpc": "2.0",
        "id": 10,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "cache\ud800"}},
    }
    done = serve_lines(
        repo,
        tmp_path / "m.db",
        [json.dumps(remember(4, "cache lock")).encode(), json.dumps(call).encode()],
    )
    assert done.returncode == 0, done.stderr
    (result,) = [a["result"] for a in answers(done) if a.get("id") == 10]
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["kind"] == "BadRequest"
    assert (
        "invalid argument 'query' 'cache\\ud800': it holds a lone surrogate (U+D800 at"
        " character 5), which is not Unicode text" in result["content"][0]["text"]
    )


def test_an_mcp_line_quoting_a_lone_surrogate_is_strict_utf8_json(
    repo: GitRepo, tmp_path: Path
) -> None:
    """Whatever in a message holds a lone surrogate -- a tool's argument, an
    argument's name, the tool's name, the method, the id, a member the line
    is refused for -- every line the server writes is UTF-8 JSON a strict
    parser (serde_json, Go's) reads: what it quotes shows the surrogate as
    the six characters of its escape, as the store's wire does."""

    def tool(request: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        params = {"name": name, "arguments": arguments}
        return {"jsonrpc": "2.0", "id": request, "method": "tools/call", "params": params}

    sent: list[Any] = [
        tool(10, "remember", {"kind": "lesson", "body": "caf\u00e9 \ud800"}),
        tool(11, "search", {"query": "cache\udfff"}),
        tool(12, "list", {"\ud800": 1}),
        tool(13, "no\ud800tool", {}),
        {"jsonrpc": "2.0", "id": 14, "method": "no/\ud800"},
        {"jsonrpc": "\ud800", "id": 15, "method": "ping"},
        {"jsonrpc": "2.0", "id": 16, "method": "ping", "params": "\ud800"},
    ]
    done = serve_lines(repo, tmp_path / "m.db", [json.dumps(m).encode() for m in sent])
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split(b"\n")
    assert lines.pop() == b""
    got = [strict_json_line(line) for line in lines]
    by_id = {a["id"]: a for a in got}
    assert set(by_id) == {0, 10, 11, 12, 13, 14, 15, 16}
    said = {n: by_id[n]["result"]["content"][0]["text"] for n in (10, 11, 12)}
    assert "invalid body 'caf\u00e9 \\ud800'" in said[10]
    assert "invalid argument 'query' 'cache\\udfff'" in said[11]
    assert "unknown argument '\\ud800'" in said[12]
    assert all(by_id[n]["result"]["isError"] for n in (10, 11, 12))
    assert by_id[13]["error"]["code"] == -32602
    assert "no tool 'no\\ud800tool'" in by_id[13]["error"]["message"]
    assert by_id[14]["error"]["code"] == -32601
    assert "no/\\ud800" in by_id[14]["error"]["message"]
    assert '"jsonrpc" is "\\ud800"' in by_id[15]["error"]["message"]
    assert '"params" is "\\ud800"' in by_id[16]["error"]["message"]


def test_end_of_input_answers_every_call_already_received(repo: GitRepo, tmp_path: Path) -> None:
    """20 writes piped, then EOF: 20 records stored and 20 answers written."""
    done = serve_lines(
        repo,
        tmp_path / "m.db",
        [json.dumps(remember(n, f"lesson {n}")).encode() for n in range(1, 21)],
    )
    assert done.returncode == 0, done.stderr
    got = answers(done)
    assert sorted(a["id"] for a in got) == list(range(21))
    assert all(not a["result"].get("isError") for a in got[1:])
    listed = repo.cli("list", "--json", "--db", str(tmp_path / "m.db"), "--limit", "0")
    assert len(json.loads(listed.stdout)["result"]["records"]) == 20


def test_a_client_that_goes_away_mid_call_is_a_quiet_exit(repo: GitRepo, tmp_path: Path) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "roteiro_memory", "mcp", "--db", str(tmp_path / "m.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=repo.root,
        env=repo.env,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    assert server.stderr is not None
    server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == 0
    calls = [INITIALIZED] + [remember(n, f"lesson {n}") for n in range(1, 31)]
    server.stdin.write(b"".join(json.dumps(c).encode() + b"\n" for c in calls))
    server.stdin.flush()
    server.stdout.close()  # the client stops reading while its calls run ...
    time.sleep(0.2)
    server.stdin.close()  # ... and goes away
    assert server.wait(timeout=60) == 0
    assert server.stderr.read() == b""


def test_missing_sdk_names_the_command_that_installs_it(repo: GitRepo, tmp_path: Path) -> None:
    for hidden in ("mcp", "anyio"):
        hide = (
            f"import sys; sys.modules[{hidden!r}] = None; "
            "from roteiro_memory.cli import main; sys.exit(main(sys.argv[1:]))"
        )
        done = subprocess.run(
            [sys.executable, "-c", hide, "mcp", "--db", str(tmp_path / "m.db")],
            cwd=repo.root,
            env=repo.env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        assert done.returncode == 2, done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith("roteiro-memory: error: ")
        assert f"{sys.executable} -m pip install 'mcp" in line, line
        assert "traceback" not in done.stderr.lower()


def test_repo_option_and_variable_serve_a_repository_started_elsewhere(
    repo: GitRepo, tmp_path: Path
) -> None:
    added = repo.cli("add", "served from elsewhere", "--anchor", "src/app/retry.py")
    assert added.returncode == 0, added.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    away = GitRepo.__new__(GitRepo)
    away.root, away.env = elsewhere, repo.env

    async def main(args: list[str], env: dict[str, str] | None) -> Any:
        async with mcp_session(away, args, env=env) as session:
            result = await session.call_tool("search", {"query": "elsewhere"})
            return result.structured_content

    by_option = anyio.run(main, ["-m", "roteiro_memory", "mcp", "--repo", str(repo.root)], None)
    by_env = anyio.run(
        main,
        ["-m", "roteiro_memory", "mcp"],
        {**repo.env, "ROTEIRO_MEMORY_REPO": str(repo.root / "src")},
    )
    for found in (by_option, by_env):
        assert [r["record"]["body"] for r in found["results"]] == ["served from elsewhere"]


def _initialize_outside_a_repository(
    tmp_path: Path, message: dict[str, Any] | bytes, *options: str
) -> subprocess.CompletedProcess[bytes]:
    """The server started outside any repository, sent ``message`` (bytes: as they are)."""
    nowhere = tmp_path / "nowhere"
    nowhere.mkdir(exist_ok=True)
    line = message if isinstance(message, bytes) else json.dumps(message).encode()
    return subprocess.run(
        [sys.executable, "-m", "roteiro_memory", "mcp", *options],
        input=line + b"\n",
        cwd=nowhere,
        env={k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
        | {"GIT_CEILING_DIRECTORIES": str(tmp_path)},
        capture_output=True,
        timeout=60,
        check=False,
    )


def test_a_server_that_cannot_start_answers_initialize_with_why(tmp_path: Path) -> None:
    """Outside any repository: one line on stderr, and the same words as the
    answer to ``initialize``, which is what the host shows."""
    done = _initialize_outside_a_repository(tmp_path, INITIALIZE)
    assert done.returncode == 3
    (line,) = done.stderr.decode().splitlines()
    assert "is not inside a git repository" in line
    assert "--repo DIR" in line
    (answer,) = answers(done)
    assert answer["id"] == 0
    assert answer["error"]["message"] == line.replace("roteiro-memory: error: ", "roteiro-memory: ")


@pytest.mark.parametrize(
    "options",
    [
        ("--json",),
        ("--json", "--repo", "no-such-folder"),
        ("--json", "--db", "not-a-store.txt"),
        ("--json", "--bogus"),
        ("--bogus",),
    ],
)
def test_stdout_carries_mcp_messages_only_when_the_server_cannot_start(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    """Under --json the CLI's error envelope followed the JSON-RPC answer on
    stdout, which the stdio transport keeps for MCP messages."""
    (tmp_path / "nowhere").mkdir()
    (tmp_path / "nowhere" / "not-a-store.txt").write_text("plain text\n")
    done = _initialize_outside_a_repository(tmp_path, INITIALIZE, *options)
    assert done.returncode in (ExitCode.USAGE, 3)
    (line,) = done.stderr.decode().splitlines()
    assert line.startswith("roteiro-memory: error: ")
    for answer in answers(done):  # none at all for a command line that does not parse
        assert answer["jsonrpc"] == "2.0"
        assert answer["error"]["message"] == line.replace(
            "roteiro-memory: error: ", "roteiro-memory: "
        )
    if "--bogus" in options:
        assert done.stdout == b""


def test_a_server_that_cannot_start_answers_an_id_holding_a_lone_surrogate_as_null(
    tmp_path: Path,
) -> None:
    """No answer can carry back an id holding a lone surrogate, as every
    answer has it: the refusal of such an ``initialize`` is said with id null."""
    done = _initialize_outside_a_repository(tmp_path, {**INITIALIZE, "id": "init\ud800"})
    assert done.returncode == 3
    answer = strict_json_line(done.stdout)
    assert answer["id"] is None
    assert "is not inside a git repository" in answer["error"]["message"]


@pytest.mark.parametrize(
    "line",
    [
        b"\xef\xbb\xbf" + json.dumps(INITIALIZE).encode(),
        json.dumps(
            {**INITIALIZE, "params": {**INITIALIZE["params"], "x": "\ud800"}}, ensure_ascii=False
        ).encode("utf-8", "surrogatepass"),
    ],
    ids=["byte-order-mark", "encoded-lone-surrogate"],
)
def test_a_server_that_cannot_start_answers_only_a_line_the_server_reads_as_a_request(
    tmp_path: Path, line: bytes
) -> None:
    """The refusal reads the first line as the server reads every line
    (``classify``): one that is not UTF-8 JSON text without a byte-order mark
    is no request, so it is not answered as one; stderr still says why."""
    refused = classify(line)
    assert isinstance(refused, Reply)
    assert refused.line is not None
    assert json.loads(refused.line)["error"]["code"] == PARSE_ERROR
    done = _initialize_outside_a_repository(tmp_path, line)
    assert done.returncode == 3
    (said,) = done.stderr.decode().splitlines()
    assert "is not inside a git repository" in said
    assert done.stdout == b""


@pytest.mark.parametrize("stderr", ["open", "closed", "full"])
def test_an_interrupted_server_exits_130_whatever_stderr_can_take(
    repo: GitRepo, tmp_path: Path, stderr: str
) -> None:
    """Ctrl-C ends the server with 130 and says so on stderr; with stderr
    closed or full, saying so failed and the server exited 3 as an
    unexpected failure."""

    def prepare() -> None:
        # As from a terminal: a run started in the background (``cmd &``)
        # passes SIGINT on ignored, and the server rightly keeps ignoring it.
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if stderr == "closed":
            os.close(2)
        elif stderr == "full":
            os.dup2(os.open("/dev/full", os.O_WRONLY), 2)

    server = subprocess.Popen(
        [sys.executable, "-m", "roteiro_memory", "mcp", "--db", str(tmp_path / "m.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if stderr == "open" else None,
        cwd=repo.root,
        env=repo.env,
        preexec_fn=prepare,
    )
    assert server.stdin is not None
    assert server.stdout is not None
    server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
    server.stdin.flush()
    assert json.loads(server.stdout.readline())["id"] == INITIALIZE["id"]  # serving
    server.send_signal(signal.SIGINT)
    # Its input stays open until it has exited: Ctrl-C alone ends it (an
    # end of input racing the signal would be a clean end, exit 0).
    server.wait(timeout=60)
    _, said = server.communicate(timeout=60)
    assert server.returncode == ExitCode.INTERRUPTED
    if stderr == "open":
        assert said.decode().splitlines() == ["roteiro-memory: mcp: interrupted"]


@pytest.mark.parametrize("ending", [False, True])
def test_a_read_that_fails_once_the_server_is_ending_says_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], ending: bool
) -> None:
    """Ctrl-C marks the wire gone and closes it under the read still
    waiting beside: that read's failure (a closed descriptor) is the
    server's own ending, which it has told already, so it adds no second
    line; a read that fails while the server serves is told."""
    from roteiro_memory.agents.wire import Wire

    monkeypatch.setattr(Wire, "_claim", lambda self, fd, mode: os.open(os.devnull, mode))
    wire = Wire()

    def closed_under_it() -> bytes:
        wire.gone = ending  # as the main thread does, then closes the wire
        raise OSError(9, "Bad file descriptor")

    monkeypatch.setattr(wire, "_readline", closed_under_it)

    async def deliver(_: object) -> None:
        raise AssertionError("nothing was read to deliver")

    try:
        anyio.run(wire.pump, deliver)
    finally:
        wire._reader.close()
        os.close(wire._in)
        os.close(wire._out)
    told = "roteiro-memory: mcp: cannot read from the client: [Errno 9] Bad file descriptor\n"
    assert capsys.readouterr().err == ("" if ending else told)


@pytest.mark.parametrize("where", ["id", "argument"])
def test_a_number_too_long_to_read_is_refused_by_id_saying_so(where: str) -> None:
    """JSON sets no limit to a number's digits, and Python reads at most
    4,300: the line is JSON, so it is a request, refused by its id and
    saying what is wrong -- not a parse error answering no request, in
    words about a Python function the client cannot call."""
    huge = "1" + "0" * 5000
    if where == "id":
        line = f'{{"jsonrpc": "2.0", "id": {huge}, "method": "ping"}}'.encode()
        expected_id = None  # no id to carry back: none is usable
    else:
        arguments = f'{{"name": "get", "arguments": {{"id": {huge}}}}}'
        line = f'{{"jsonrpc": "2.0", "id": 55, "method": "tools/call", "params": {arguments}}}'
        expected_id = 55
        line = line.encode()
    outcome = classify(line)
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    answer = json.loads(outcome.line)
    assert error_of(answer) == (expected_id, INVALID_REQUEST)
    said = answer["error"]["message"]
    assert "5,001 digits" in said
    assert "sys." not in said


@pytest.mark.parametrize(
    ("message", "said", "answered"),
    [
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "remember",'
            b' "arguments": {"kind": "lesson", "body": "b", "kind": "decision"}}}',
            'the member "kind" appears twice in "params.arguments"',
            7,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "method": "tools/list"}',
            'the member "method" appears twice in the message',
            7,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 7, "id": 8, "method": "ping"}',
            'the member "id" appears twice in the message',
            None,
        ),
    ],
    ids=["arguments", "method", "id"],
)
def test_classify_refuses_a_member_named_twice_naming_it(
    message: bytes, said: str, answered: int | None
) -> None:
    """The last value was taken, as Python's parser keeps it: a remember
    whose kind was given twice stored a decision."""
    outcome = classify(message)
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    answer = json.loads(outcome.line)
    assert answer["id"] == answered
    assert answer["error"]["code"] == INVALID_REQUEST
    assert answer["error"]["message"].startswith(f"Invalid Request: {said}; "), answer


@pytest.mark.parametrize(
    "message",
    [
        b'{"jsonrpc": "2.0", "kind": 1, "kind": 2, "id": 7, "id": 8, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 7, "id": 8, "method": 5}',
        b'{"jsonrpc": "2.0", "id": 7, "id": 8}',
    ],
    ids=["after another member named twice", "beside another fault", "no method"],
)
def test_an_id_named_twice_is_never_answered_by_either(message: bytes) -> None:
    """Which of two ids the sender meant is unknown, whichever member was
    repeated first and whatever else the message gets wrong: the refusal
    is answered with a null id, never with the last one the parser kept."""
    outcome = classify(message)
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    answer = json.loads(outcome.line)
    assert answer["error"]["code"] == INVALID_REQUEST
    assert answer["id"] is None, answer


def test_classify_refuses_in_a_batch_only_the_message_naming_a_member_twice() -> None:
    line = (
        b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"},'
        b' {"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"a": 1, "a": 2}}]'
    )
    outcome = classify(line)
    assert isinstance(outcome, Batch)
    assert [m.id for m in outcome.messages] == [1]
    (refused,) = outcome.refused
    assert refused["id"] == 2
    assert 'the member "a" appears twice in "params"' in refused["error"]["message"]


def test_remember_with_a_member_named_twice_stores_nothing(repo: GitRepo, tmp_path: Path) -> None:
    """Through the server: refused before any tool runs, and the server
    serves on."""
    call = (
        b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "remember",'
        b' "arguments": {"kind": "lesson", "body": "twice", "kind": "decision"}}}'
    )
    done = serve_lines(repo, tmp_path / "m.db", [call, json.dumps(remember(6, "once")).encode()])
    assert done.returncode == 0, done.stderr
    by_id = {a["id"]: a for a in answers(done)}
    assert error_of(by_id[5]) == (5, INVALID_REQUEST)
    assert by_id[6]["result"]["isError"] is False
    listed = repo.cli("list", "--json", "--db", str(tmp_path / "m.db"), "--all")
    assert [r["body"] for r in json.loads(listed.stdout)["result"]["records"]] == ["once"]


def test_a_member_named_twice_is_found_in_memory_linear_in_the_line() -> None:
    """The refusal names where the object is, but only that object's place
    is written out: a long member name over many values, with a member named
    twice after them, once held the name's length for every value (400 MB
    for this 40 kB line; a 400 kB one took 20 GB and a hundred seconds)."""
    import tracemalloc

    name, values = "k" * 20_000, ",".join(["0"] * 20_000)
    head = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": '
    line = f'{head}{{"{name}": [{values}], "z": [{{"a": 1}}, {{"a": 1, "a": 2}}]}}}}'.encode()
    tracemalloc.start()
    try:
        outcome = classify(line)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 1024 * 1024, f"{peak:,} bytes at the peak"
    assert isinstance(outcome, Reply)
    assert outcome.line is not None
    said = json.loads(outcome.line)["error"]["message"]
    assert 'the member "a" appears twice in "params.z[1]"' in said, said
