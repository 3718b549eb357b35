"""``cmd:`` backends: timeouts, deaths and protocol-breaking answers fail the
case that met them, restart the program and let the session go on."""

from __future__ import annotations

import shlex
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from roteiro_memory.suite.cases import Case, load_cases
from roteiro_memory.suite.drivers import SubprocessBackend, resolve_backend
from roteiro_memory.suite.runner import BackendFailure, OpError, run_case

pytest_plugins = ["pytester"]

PROGRAM = """
import json, sys, time
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.protocol import Ops, handle_line

ops = Ops(ModelStore())
for raw in sys.stdin.buffer:
    request = json.loads(raw)
    args = request.get("args") or {}
    print(f"log: {request['op']} {args}", file=sys.stderr, flush=True)
    if request["op"] == "memory.get" and args.get("id") == 11:
        time.sleep(60)
    if request["op"] == "memory.get" and args.get("id") == 13:
        print("dying on purpose", file=sys.stderr, flush=True)
        sys.exit(3)
    if request["op"] == "memory.get" and args.get("id") == 14:
        print("this is not json", flush=True)
        continue
    if request["op"] == "memory.get" and args.get("id") == 15:
        print(json.dumps({"id": 999, "ok": True, "result": None}), flush=True)
        continue
    response, done = handle_line(ops, raw.rstrip(b"\\n"))
    print(response, flush=True)
    if done:
        break
"""


HANG_S = 5.0
"""How long the request that hangs waits, well short of the hang's 60 s."""

STARTS = 60.0
"""How long every other request waits: the request that starts the program
waits for its start too, and these programs import the library, which took
up to 2 s at a load of 13 on two cores."""

SESSION_S = 20.0
"""The plugin's one timeout, for every request of a session that hangs once
and restarts the program three times: past what starting the program takes
on a loaded machine, well short of the hang's 60 s."""


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "flaky_store.py"
    path.write_text(PROGRAM, encoding="utf-8")
    return path


@pytest.fixture
def backend(program: Path) -> Iterator[SubprocessBackend]:
    opened = SubprocessBackend([sys.executable, str(program)], timeout=STARTS)
    try:
        yield opened
    finally:
        opened.close()


def _pid(backend: SubprocessBackend) -> int:
    assert backend._proc is not None
    return backend._proc.pid


def test_answers_and_refusals_pass_through(backend: SubprocessBackend) -> None:
    assert backend.call("reset", {}) is None
    assert backend.call("memory.record", {"kind": "lesson", "body": "x"}) == {"id": 1}
    with pytest.raises(OpError) as caught:
        backend.call("memory.forget", {"id": 9})
    assert caught.value.kind == "NotFound"
    assert "cache" in backend.capabilities()


def test_a_hung_program_times_out_and_is_restarted(backend: SubprocessBackend) -> None:
    backend.call("reset", {})
    first = _pid(backend)
    backend.timeout = HANG_S
    with pytest.raises(BackendFailure) as caught:
        backend.call("memory.get", {"id": 11})
    assert f"no response within {HANG_S:g}s (the program hung)" in caught.value.message
    assert "restarted" in caught.value.message
    assert caught.value.stderr is not None
    assert "log: memory.get {'id': 11}" in caught.value.stderr
    backend.timeout = STARTS
    assert backend.call("reset", {}) is None
    assert _pid(backend) != first
    assert backend.restarts == 1


def test_a_dying_program_reports_its_exit_status(backend: SubprocessBackend) -> None:
    backend.call("reset", {})
    with pytest.raises(BackendFailure) as caught:
        backend.call("memory.get", {"id": 13})
    assert "exit status 3" in caught.value.message
    assert caught.value.stderr is not None
    assert "dying on purpose" in caught.value.stderr
    assert backend.call("memory.record", {"kind": "lesson", "body": "x"}) == {"id": 1}


def test_a_line_that_is_not_json_is_quoted(backend: SubprocessBackend) -> None:
    backend.call("reset", {})
    with pytest.raises(BackendFailure) as caught:
        backend.call("memory.get", {"id": 14})
    assert (
        "the response is not a JSON line (PROTOCOL [P-wire-response]: one JSON object per "
        "line): 'this is not json'"
    ) in caught.value.message


def test_a_response_with_the_wrong_id_breaks_the_protocol(backend: SubprocessBackend) -> None:
    backend.call("reset", {})
    with pytest.raises(BackendFailure) as caught:
        backend.call("memory.get", {"id": 15})
    assert "breaks the protocol (id 999 does not echo the request's id" in caught.value.message
    assert '{"id": 999, "ok": true, "result": null}' in caught.value.message


def test_a_program_that_cannot_start_is_a_backend_failure(tmp_path: Path) -> None:
    missing = resolve_backend(f"cmd:{tmp_path / 'no-such-program'}")
    with pytest.raises(BackendFailure, match="cannot start"):
        missing.call("reset", {})


def test_the_session_goes_on_after_hang_death_and_garbage(
    pytester: pytest.Pytester, program: Path
) -> None:
    cases = pytester.mkdir("cases")
    steps = {
        "hangs": "{op: memory.get, args: {id: 11}}",
        "dies": "{op: memory.get, args: {id: 13}}",
        "garbles": "{op: memory.get, args: {id: 14}}",
        "fine": "{op: memory.record, args: {kind: lesson, body: x}, expect: {id: 1}}",
    }
    body = "cases:\n"
    for name in ("hangs", "fine-a", "dies", "fine-b", "garbles", "fine-c"):
        step = steps[name.split("-")[0]]
        body += textwrap.dedent(
            f"""\
              - id: {name}
                title: {name}
                clause: PROTOCOL wire form
                invariant: bad-request
                requires: [episodic]
                steps: [{step}]
            """
        )
    (cases / "wire.yaml").write_text(body, encoding="utf-8")
    result = pytester.runpytest(
        "--roteiro-conformance",
        "--roteiro-no-builtin-cases",
        "--roteiro-cases",
        str(cases),
        "--roteiro-backend",
        f"cmd:{shlex.join([sys.executable, str(program)])}",
        "--roteiro-timeout",
        f"{SESSION_S:g}",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=3, failed=3)
    text = result.stdout.str()
    assert f"memory.get: no response within {SESSION_S:g}s (the program hung)" in text
    assert "exit status 3" in text
    assert "| dying on purpose" in text
    assert "'this is not json'" in text
    assert "backend stderr (last lines):" in text


def test_the_whole_suite_passes_over_the_wire(pytester: pytest.Pytester) -> None:
    """The reference store behind its own protocol server: the wire path in CI."""
    server = shlex.join([sys.executable, "-m", "roteiro_memory", "protocol", "--backend", "sqlite"])
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance", "--roteiro-backend", f"cmd:{server}", "-p", "no:randomly"
    )
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes
    assert "errors" not in outcomes
    cases = load_cases()
    # Only the cases checking Unsupported skip: this server declares everything.
    unsupported = sum(1 for case in cases if case.without)
    assert outcomes["passed"] >= len(cases) - unsupported
    assert outcomes.get("skipped", 0) == unsupported
    result.stdout.fnmatch_lines(["episodic *full*"])


GREEDY = """
import sys
line = sys.stdin.buffer.readline()
request_id = line.split(b'"id": ')[1].split(b",")[0]
if sys.argv[1] == "deep":
    sys.stdout.buffer.write(b'{"id": ' + request_id + b', "ok": true, "result": ')
    sys.stdout.buffer.write(b"[" * 100_000 + b"]" * 100_000 + b"}\\n")
    sys.stdout.flush()
    sys.stdin.buffer.readline()
else:
    chunk = b"x" * 65536
    while True:
        sys.stdout.buffer.write(chunk)
"""


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("deep", "nested too deeply to read"),
        ("endless", f"longer than {16 * 1024 * 1024} bytes without ending its line"),
    ],
)
def test_an_endless_or_deep_answer_fails_the_request_with_bounded_memory(
    tmp_path: Path, mode: str, message: str
) -> None:
    """JSON nested 100,000 deep, or bytes with no newline: one bounded failure;
    the suite reads at most 16 MiB of a line."""
    import resource

    program = tmp_path / "greedy.py"
    program.write_text(GREEDY, encoding="utf-8")
    greedy = SubprocessBackend([sys.executable, str(program), mode], timeout=STARTS)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        with pytest.raises(BackendFailure) as caught:
            greedy.call("reset", {})
    finally:
        greedy.close()
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert message in caught.value.message
    assert len(caught.value.message) < 1000
    assert grown_kib < 200 * 1024


def test_a_deep_answer_fails_the_case_in_the_plugin(pytester: pytest.Pytester) -> None:
    """The case in progress fails; there is no INTERNALERROR."""
    program = pytester.path / "greedy.py"
    program.write_text(GREEDY, encoding="utf-8")
    backend = f"{shlex.quote(sys.executable)} {shlex.quote(str(program))} deep"
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance", "--roteiro-backend", f"cmd:{backend}", "-x"
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "nested too deeply" in result.stdout.str() + result.stderr.str()


TWICE = """
import json, sys
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.protocol import Ops, handle_line

ops = Ops(ModelStore())
for raw in sys.stdin.buffer:
    request = json.loads(raw)
    response, done = handle_line(ops, raw.rstrip(b"\\n"))
    said = (response + "\\n").encode()
    twice = request["op"] in ("memory.get", "shutdown") and request.get("args", {}) != {"id": 3}
    sys.stdout.buffer.write(said * 2 if twice else said)
    sys.stdout.buffer.flush()
    if done:
        break
"""


TWICE_CASES = {
    "last-answered-twice": "[{op: memory.record, args: {kind: lesson, body: x}},"
    " {op: memory.get, args: {id: 1}}]",
    "fine": "[{op: memory.record, args: {kind: lesson, body: x}, expect: {id: 1}}]",
    "first-answered-twice": "[{op: memory.get, args: {id: 1}}, {op: memory.list}]",
    "fine-b": "[{op: memory.record, args: {kind: lesson, body: x}, expect: {id: 1}}]",
    "shutdown-answered-twice": "[{op: memory.get, args: {id: 3}},"
    """ {raw: '{"id": 5, "op": "shutdown"}', expect: {ok: true}}]""",
    "fine-c": "[{op: memory.record, args: {kind: lesson, body: x}, expect: {id: 1}}]",
}
"""Cases run in this order against :data:`TWICE`, which answers every
``memory.get`` but that of id 3, and ``shutdown``, twice."""


def _twice_cases(tmp_path: Path, cases: dict[str, str] = TWICE_CASES) -> list[Case]:
    folder = tmp_path / "cases"
    folder.mkdir()
    body = "cases:\n" + "".join(
        f"  - {{id: {name}, title: t, clause: c, invariant: bad-request,"
        f" requires: [episodic], steps: {steps}}}\n"
        for name, steps in cases.items()
    )
    (folder / "twice.yaml").write_text(body, encoding="utf-8")
    return load_cases([folder], builtin=False)


def test_p_wire_response_an_answer_sent_twice_fails_the_case_that_asked(tmp_path: Path) -> None:
    """[P-wire-response]: a request answered twice fails its own case, at the
    step whose request it was -- even the last step's, and a shutdown's --
    naming the request; the next case's reset is not blamed.  The same
    verdict every run."""
    program = tmp_path / "twice.py"
    program.write_text(TWICE, encoding="utf-8")
    cases = _twice_cases(tmp_path)
    for _ in range(3):
        backend = SubprocessBackend([sys.executable, str(program)], timeout=STARTS)
        try:
            outcomes = {case.id: run_case(case, backend) for case in cases}
        finally:
            backend.close()
        assert {name: o.status for name, o in outcomes.items()} == {
            "last-answered-twice": "failed",
            "fine": "passed",
            "first-answered-twice": "failed",
            "fine-b": "passed",
            "shutdown-answered-twice": "failed",
            "fine-c": "passed",
        }
        last = outcomes["last-answered-twice"]
        assert (last.step, last.op) == (2, "memory.get")
        assert last.message.startswith(
            "after the case's last step, the hello sent to find a request answered twice: "
            "the program answered request "
        )
        assert "(memory.get) a second time, where the answer to request" in last.message
        assert "PROTOCOL [P-wire-response]" in last.message
        first = outcomes["first-answered-twice"]
        assert (first.step, first.op) == (1, "memory.get")
        assert first.stopped == "step 2 not run: they need a backend that answered"
        assert "the program answered request" in first.message
        assert "(memory.get) a second time" in first.message
        ended = outcomes["shutdown-answered-twice"]
        assert (ended.step, ended.op) == (2, "(raw)")
        assert "the program ended, having sent a line no request asked for" in ended.message
        assert '{"id":5,"ok":true,"result":null}' in ended.message


RAW_GET = """{raw: '{"id": ID, "op": "memory.get", "args": {"id": 1}}'}"""
RAW_TWICE_CASES = {
    "raw-answered-twice-before-a-call": f"[{RAW_GET.replace('ID', '3')}, {{op: memory.list}}]",
    "fine": "[{op: memory.record, args: {kind: lesson, body: x}, expect: {id: 1}}]",
    "raw-answered-twice-before-a-raw-line": "[{op: memory.record, args: {kind: lesson, body: x}},"
    f" {RAW_GET.replace('ID', '7')},"
    """ {raw: '{"id": 8, "op": "memory.list"}'}, {op: memory.list}]""",
    "fine-b": "[{op: memory.record, args: {kind: lesson, body: x}, expect: {id: 1}}]",
    "raw-answered-twice-last": f"[{RAW_GET.replace('ID', '9')}]",
    "fine-c": "[{op: memory.record, args: {kind: lesson, body: x}, expect: {id: 1}}]",
}
"""Cases run in this order, by a program started for them, against
:data:`TWICE`: each raw ``memory.get`` is answered twice.  The first case's
raw line has id 3, the id the driver's next request would have (hello 1,
reset 2)."""


def test_p_wire_response_a_raw_request_answered_twice_fails_the_raw_step(
    tmp_path: Path,
) -> None:
    """[P-wire-response]: a raw line that is a request (an integer id of the
    case's own) is recorded as answered like any request, so its second
    answer fails the raw step that sent it -- read by a call, by another raw
    line or by the end-of-case check -- rather than a later step as a wrong
    id; the driver numbers its own requests around the raw line's id, so the
    second answer is never taken for the answer to one of them.  No wait,
    and the same verdict every run."""
    program = tmp_path / "twice.py"
    program.write_text(TWICE, encoding="utf-8")
    cases = _twice_cases(tmp_path, RAW_TWICE_CASES)
    for _ in range(3):
        backend = SubprocessBackend([sys.executable, str(program)], timeout=STARTS)
        try:
            outcomes = {case.id: run_case(case, backend) for case in cases}
        finally:
            backend.close()
        assert {name: o.status for name, o in outcomes.items()} == {
            name: "passed" if name.startswith("fine") else "failed" for name in RAW_TWICE_CASES
        }
        by_call = outcomes["raw-answered-twice-before-a-call"]
        assert (by_call.step, by_call.op) == (1, "(raw)")
        assert by_call.stopped == "step 2 not run: they need a backend that answered"
        assert by_call.message.startswith(
            "memory.list: the program answered request 3 (memory.get, a raw line) a second "
            "time, where the answer to request 4 was due; PROTOCOL [P-wire-response]"
        ), by_call.message
        by_raw = outcomes["raw-answered-twice-before-a-raw-line"]
        assert (by_raw.step, by_raw.op) == (2, "(raw)")
        assert by_raw.stopped == "steps 3-4 not run: they need a backend that answered"
        assert by_raw.message.startswith(
            "raw line: the program answered request 7 (memory.get, a raw line) a second time, "
            "where the answer to request 8 was due; PROTOCOL [P-wire-response]"
        ), by_raw.message
        last = outcomes["raw-answered-twice-last"]
        assert (last.step, last.op) == (1, "(raw)")
        assert last.message.startswith(
            "after the case's last step, the hello sent to find a request answered twice: "
            "the program answered request 9 (memory.get, a raw line) a second time"
        ), last.message


def test_p_wire_response_an_answer_sent_twice_before_a_raw_line_fails_the_step_that_asked(
    tmp_path: Path,
) -> None:
    """[P-wire-response]: a raw line's response is read whatever its id, so
    the second answer to the step before was taken for it -- passing the raw
    step's expectations, its own answer then blamed on it at the end of the
    case as an id that does not echo.  The second answer fails the step
    whose request it was, and the raw step did not run.  The same verdict
    every run."""
    program = tmp_path / "twice.py"
    program.write_text(TWICE, encoding="utf-8")
    folder = tmp_path / "cases"
    folder.mkdir()
    steps = (
        "[{op: memory.record, args: {kind: lesson, body: x}}, {op: memory.get, args: {id: 1}},"
        """ {raw: '{"id": 9, "op": "memory.list", "args": {}}', expect: {ok: true}}]"""
    )
    (folder / "raw.yaml").write_text(
        "cases:\n  - {id: raw-after-twice, title: t, clause: c, invariant: bad-request,"
        f" requires: [episodic], steps: {steps}}}\n",
        encoding="utf-8",
    )
    (case,) = load_cases([folder], builtin=False)
    for _ in range(3):
        backend = SubprocessBackend([sys.executable, str(program)], timeout=STARTS)
        try:
            outcome = run_case(case, backend)
        finally:
            backend.close()
        assert (outcome.status, outcome.step, outcome.op) == ("failed", 2, "memory.get")
        said = "(memory.get) a second time, where the answer to request 9 was due"
        assert said in outcome.message, outcome.message
        assert outcome.stopped == "step 3 not run: they need a backend that answered"
