"""The wire driver's bounds and rules: a request is written within its deadline,
stderr is kept to a bounded tail, and a response is strict JSON whose ``id``
is the request's own JSON integer (PROTOCOL "The wire form")."""

from __future__ import annotations

import io
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from roteiro_memory.suite.drivers import STDERR_LINE_CHARS, STDERR_LINES, SubprocessBackend
from roteiro_memory.suite.runner import BackendFailure

STOPS_READING = """
import json, sys, time
for raw in sys.stdin.buffer:
    request = json.loads(raw)
    print(json.dumps({"id": request["id"], "ok": True, "result": None}), flush=True)
    if request["op"] == "reset":
        time.sleep(600)  # reads nothing more
"""

ANSWERS = """
import json, sys
template = sys.argv[1]
for raw in sys.stdin.buffer:
    request = json.loads(raw)
    if request["op"] == "reset":
        print(json.dumps({"id": request["id"], "ok": True, "result": None}), flush=True)
        continue
    print(template.replace("ID", str(request["id"])), flush=True)
"""

FLOODS_STDERR = """
import json, sys
for raw in sys.stdin.buffer:
    request = json.loads(raw)
    if request["op"] == "memory.list":
        sys.stderr.buffer.write(b"x" * (20 * 1024 * 1024) + b"\\nEND\\n")
        sys.stderr.buffer.flush()
    print(json.dumps({"id": request["id"], "ok": True, "result": None}), flush=True)
"""

STARTS = 60.0
"""How long a request waits where the test is not about a timeout: the
request that starts a program waits for its start too, which takes a loaded
machine seconds (half a second for these few lines at a load of 12 on two
cores), so a test of a 1 s timeout gives the hanging request alone that
timeout."""


def _program(tmp_path: Path, text: str) -> str:
    path = tmp_path / "program.py"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_program_that_stops_reading_its_input_fails_the_request_within_the_timeout(
    tmp_path: Path,
) -> None:
    """A request longer than the pipe holds, to a program reading nothing:
    the write waits on the same deadline as the answer, then the program is
    killed and the next case starts it afresh."""
    backend = SubprocessBackend([sys.executable, _program(tmp_path, STOPS_READING)], timeout=STARTS)
    caught: list[BaseException] = []

    def record() -> None:
        try:
            backend.call("memory.record", {"kind": "lesson", "body": "x" * 65536})
        except BaseException as error:
            caught.append(error)

    try:
        backend.call("reset", {})  # the program started
        backend.timeout = 1.0
        started = time.monotonic()
        caller = threading.Thread(target=record, daemon=True)
        caller.start()
        caller.join(20)
        assert not caller.is_alive(), "the request never ended"
        assert time.monotonic() - started < 10
        assert len(caught) == 1
        assert isinstance(caught[0], BackendFailure)
        assert "no response within 1s" in caught[0].message
        assert "restarted" in caught[0].message
        assert backend.restarts == 1
        backend.timeout = STARTS
        assert backend.call("reset", {}) is None
    finally:
        backend.close()


def test_stderr_is_kept_to_a_bounded_tail_however_long_its_lines(tmp_path: Path) -> None:
    backend = SubprocessBackend([sys.executable, _program(tmp_path, FLOODS_STDERR)], timeout=STARTS)
    try:
        backend.call("reset", {})
        backend.call("memory.list", {})
        deadline = time.monotonic() + 20
        while not (backend.stderr_tail() or "").endswith("END") and time.monotonic() < deadline:
            time.sleep(0.05)
        tail = backend.stderr_tail() or ""
    finally:
        backend.close()
    assert tail.splitlines()[-2:] == ["x" * STDERR_LINE_CHARS, "END"]
    assert len(tail) <= STDERR_LINES * (STDERR_LINE_CHARS + 1)


def test_the_stderr_reader_ends_quietly_when_its_stream_is_closed() -> None:
    backend = SubprocessBackend(["unused"])
    stream = io.BufferedReader(io.BytesIO(b"said\n"))
    stream.close()
    backend.output.pump_err(stream)  # no ValueError escapes the reader's thread
    assert backend.stderr_tail() is None


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ('{"id": ID, "ok": true, "result": NaN}', "the token NaN is not JSON"),
        ('{"id": ID, "ok": true, "result": {"n": -Infinity}}', "the token -Infinity is not JSON"),
        ('{"id": ID, "ok": true, "result": "\\ud800"}', "lone surrogate (U+D800)"),
        ('{"id": ID, "ok": true, "result": ["\\udfff x"]}', "lone surrogate (U+DFFF)"),
    ],
)
def test_a_response_that_is_not_strict_json_fails_the_request(
    tmp_path: Path, answer: str, problem: str
) -> None:
    """[P-wire-line] responses are UTF-8 JSON, [P-wire-json] strict JSON: a
    lenient parser's NaN or a lone surrogate is a broken response, not a value."""
    argv = [sys.executable, _program(tmp_path, ANSWERS), answer]
    backend = SubprocessBackend(argv, timeout=STARTS)
    try:
        backend.call("reset", {})
        with pytest.raises(BackendFailure) as caught:
            backend.call("memory.list", {})
    finally:
        backend.close()
    assert "the response is not strict JSON" in caught.value.message
    assert problem in caught.value.message


def test_a_surrogate_pair_escape_is_strict_json(tmp_path: Path) -> None:
    answer = '{"id": ID, "ok": true, "result": "\\ud83d\\ude00"}'
    argv = [sys.executable, _program(tmp_path, ANSWERS), answer]
    backend = SubprocessBackend(argv, timeout=STARTS)
    try:
        backend.call("reset", {})
        assert backend.call("memory.list", {}) == "\U0001f600"
    finally:
        backend.close()


@pytest.mark.parametrize("echoed", ["ID.0", "true", '"ID"'])
def test_a_response_id_echoes_the_request_id_as_the_same_json_integer(
    tmp_path: Path, echoed: str
) -> None:
    """[P-wire-id]: ``1.0`` and ``true`` equal 1 in Python, not in JSON (the
    first request's id is 1)."""
    answer = '{"id": ' + echoed + ', "ok": true, "result": null}'
    backend = SubprocessBackend(
        [sys.executable, _program(tmp_path, ANSWERS), answer], timeout=STARTS
    )
    try:
        with pytest.raises(BackendFailure) as caught:
            backend.call("memory.list", {})
    finally:
        backend.close()
    assert "does not echo the request's id" in caught.value.message


LEAVES_A_CHILD = """
import json, os, sys, time
pid_file = sys.argv[1]
child = os.fork()
if child == 0:
    time.sleep(600)  # holds the program's stdout and stderr open
    os._exit(0)
with open(pid_file, "w") as out:
    out.write(str(child))
for raw in sys.stdin.buffer:
    request = json.loads(raw)
    if request["op"] == "memory.list":
        time.sleep(600)  # hangs: the request fails and the program is killed
    print(json.dumps({"id": request["id"], "ok": True, "result": None}), flush=True)
    if request["op"] == "shutdown":
        sys.exit(0)
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (an unreaped zombie is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _ends_within(seconds: float, action: Callable[[], object]) -> bool:
    runner = threading.Thread(target=action, daemon=True)
    runner.start()
    runner.join(seconds)
    return not runner.is_alive()


def test_a_program_whose_child_keeps_its_pipes_open_is_ended_with_its_child(
    tmp_path: Path,
) -> None:
    """Killing a program for a failed request, and closing it at the end of a
    run, end every process it started and never wait on pipes a child of it
    still holds: the run ends and leaves no process of the program behind."""
    pid_file = tmp_path / "child.pid"
    argv = [sys.executable, _program(tmp_path, LEAVES_A_CHILD), str(pid_file)]
    backend = SubprocessBackend(argv, timeout=STARTS)
    children: list[int] = []
    failures: list[BackendFailure] = []

    def hang_then_restart() -> None:
        backend.call("reset", {})
        children.append(int(pid_file.read_text(encoding="ascii")))
        backend.timeout = 1.0
        try:
            backend.call("memory.list", {})
        except BackendFailure as failure:
            failures.append(failure)
        backend.timeout = STARTS
        backend.call("reset", {})
        children.append(int(pid_file.read_text(encoding="ascii")))

    try:
        assert _ends_within(60, hang_then_restart), "killing the hung program never ended"
        assert len(failures) == 1
        assert "no response within 1s" in failures[0].message
    finally:
        assert _ends_within(60, backend.close), "closing the program never ended"
    deadline = time.monotonic() + 30
    while any(map(_running, children)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(children) == 2
    assert not [pid for pid in children if _running(pid)]


BREAKS = """
import json, sys
mode = sys.argv[1]
out = sys.stdout.buffer
for raw in sys.stdin.buffer:
    request = json.loads(raw)
    rid = request["id"]
    answer = {"id": rid, "ok": True, "result": None}
    if request["op"] == "memory.get":
        if mode == "close":
            sys.exit(0)
        if mode == "exit-after":
            out.write(json.dumps(answer).encode() + b"\\n")
            out.flush()
            sys.exit(0)
        said = {
            "garbage": b"not json",
            "latin-1": b'{"id": %d, "ok": true, "result": "caf\\xe9"}' % rid,
            "surrogate-bytes": b'{"id": %d, "ok": true, "result": "\\xed\\xa0\\x80"}' % rid,
            "wrong-id": b'{"id": 999, "ok": true, "result": null}',
            "no-result": b'{"id": %d, "ok": true}' % rid,
            "array": b"[1, 2]",
        }[mode]
        out.write(said + b"\\n")
        out.flush()
        continue
    out.write(json.dumps(answer).encode() + b"\\n")
    out.flush()
    if request["op"] == "shutdown":
        sys.exit(2)
"""


@pytest.mark.parametrize(
    ("mode", "said", "rule"),
    [
        ("close", "the program closed its output without answering (exit status 0", "response"),
        ("exit-after", "memory.list: the program had exited with status 0", "response"),
        ("garbage", "the response is not a JSON line", "response"),
        ("latin-1", "the response is not UTF-8 (invalid continuation byte at byte", "line"),
        ("surrogate-bytes", "the response is not UTF-8 (invalid continuation byte at byte", "line"),
        ("wrong-id", "id 999 does not echo the request's id", "id"),
        ("no-result", "'ok': true without 'result'", "response"),
        ("array", "the response breaks the protocol (not a JSON object", "response"),
    ],
)
def test_a_wire_failure_cites_the_protocol_rule_it_breaks(
    tmp_path: Path, mode: str, said: str, rule: str
) -> None:
    """[P-wire-line], [P-wire-id], [P-wire-response]: a response that breaks
    the wire form fails the request naming what it broke and the rule."""
    backend = SubprocessBackend([sys.executable, _program(tmp_path, BREAKS), mode], timeout=STARTS)
    failures: list[BackendFailure] = []
    try:
        backend.call("reset", {})
        for op, args in (("memory.get", {"id": 1}), ("memory.list", {})):
            try:
                backend.call(op, args)
            except BackendFailure as failure:
                failures.append(failure)
                break
            deadline = time.monotonic() + 10
            while backend.pid is not None and time.monotonic() < deadline:
                time.sleep(0.01)  # "exit-after" ends the program after its answer
    finally:
        backend.close()
    assert len(failures) == 1
    assert said in failures[0].message
    assert f"PROTOCOL [P-wire-{rule}]" in failures[0].message


def test_an_answer_starting_with_a_byte_order_mark_breaks_the_line_rule() -> None:
    """[P-wire-line]: a line is UTF-8 JSON, and RFC 8259 forbids a byte-order
    mark before JSON text sent; ``json.loads`` given bytes dropped it unsaid.
    The failure says so in the library's one wording of that refusal."""
    mutant = Path(__file__).with_name("wire_mutant.py")
    backend = SubprocessBackend([sys.executable, str(mutant), "get-marked"], timeout=STARTS)
    try:
        backend.call("reset", {})
        assert backend.call("memory.list", {})["records"] == []
        with pytest.raises(BackendFailure) as caught:
            backend.call("memory.get", {"id": 1})
    finally:
        backend.close()
    assert caught.value.message.startswith(
        "memory.get: the response starts with a byte-order mark (U+FEFF): expected UTF-8 JSON "
        "text without one (PROTOCOL [P-wire-line]): '\\ufeff{"
    ), caught.value.message


def test_a_program_that_ends_badly_after_shutdown_cites_the_wire_end_rule(tmp_path: Path) -> None:
    """[P-wire-end]: an answered shutdown ends the program with status 0."""
    backend = SubprocessBackend(
        [sys.executable, _program(tmp_path, BREAKS), "close"], timeout=STARTS
    )
    try:
        backend.call("reset", {})
        with pytest.raises(BackendFailure) as caught:
            backend.send_raw('{"id": 7, "op": "shutdown"}')
    finally:
        backend.close()
    assert "shutdown: the program exited with status 2, not 0" in caught.value.message
    assert "PROTOCOL [P-wire-end]" in caught.value.message
