"""Running one conformance case against one backend.

:func:`run_case` resets the backend, runs the case's steps in order and returns
an :class:`Outcome`: passed, failed or skipped (a capability the backend did
not declare).  A failed outcome holds every breach the case found, each with
its step, op, arguments, expected and actual values: a step that answers
wrongly is recorded and the case goes on, unless the store may no longer be
in the state the later steps assume (a write that should have been refused
was not, a snapshot changed) or a later step needs a value the wrong answer
did not give -- then the case stops there and says why.  It raises nothing
for a non-conforming backend: a wrong answer, a crash or a hang is a failed
outcome.

This module does not import pytest.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

from roteiro_memory.suite.cases import Case, Step, refs_in
from roteiro_memory.suite.checks import (
    MISSING,
    Mismatch,
    Unresolved,
    apply_check,
    json_equal,
    render,
    resolve_path,
    substitute,
    value_at,
)
from roteiro_memory.suite.errors import BackendFailure, CaseFileError, OpError
from roteiro_memory.suite.failures import format_outcome, headline
from roteiro_memory.suite.numbers import score_problems
from roteiro_memory.suite.outcomes import Breach, Outcome, Status
from roteiro_memory.suite.shapes import response_problem, result_problem
from roteiro_memory.suite.vocabulary import ERROR_KINDS, PURE_OPS

__all__ = [
    "Backend",
    "BackendFailure",
    "Breach",
    "OpError",
    "Outcome",
    "Status",
    "end_of_case",
    "format_outcome",
    "headline",
    "json_equal",
    "render",
    "resolve_path",
    "run_case",
    "speaks_wire",
]

JSON = Any


@runtime_checkable
class Backend(Protocol):
    """What the runner drives: PROTOCOL ops by name.

    ``call`` returns the op's JSON result, raises :class:`OpError` for a
    refusal and :class:`BackendFailure` when no answer could be had.
    """

    name: str

    def call(self, op: str, args: Mapping[str, JSON]) -> JSON: ...

    def capabilities(self) -> frozenset[str]: ...

    def stderr_tail(self) -> str | None: ...

    def close(self) -> None: ...


def _failed(
    case: Case,
    breaches: list[Breach],
    stderr: str | None,
    stopped: str | None = None,
) -> Outcome:
    first = breaches[0]
    return Outcome(
        case.id,
        "failed",
        first.message,
        step=first.step,
        line=first.line,
        op=first.op,
        args=first.args,
        path=first.path,
        expected=first.expected,
        actual=first.actual,
        stderr=stderr,
        breaches=tuple(breaches),
        steps=len(case.steps),
        stopped=stopped,
    )


# --- Running -----------------------------------------------------------------


def run_case(case: Case, backend: Backend) -> Outcome:
    """Run ``case`` on a freshly reset ``backend``.  A ``$ref`` that names
    nothing in the value it was saved from raises :class:`CaseFileError`:
    the case, not the backend, is at fault."""
    started = time.perf_counter()
    try:
        declared = backend.capabilities()
    except (OpError, BackendFailure) as error:
        return Outcome(
            case.id,
            "failed",
            f"hello failed, so the backend's capabilities are unknown: {error}",
            stderr=getattr(error, "stderr", None) or backend.stderr_tail(),
            steps=len(case.steps),
        )
    skipped = _skip_reason(case, backend, declared)
    if skipped is not None:
        return Outcome(case.id, "skipped", skipped, steps=len(case.steps))
    try:
        outcome = _run_steps(case, backend)
    except RecursionError:
        # A result nested deeper than Python can walk: the backend's fault.
        outcome = Outcome(case.id, "failed", "a result is nested too deeply to compare")
    return Outcome(**{**outcome.__dict__, "duration": time.perf_counter() - started})


def _skip_reason(case: Case, backend: Backend, declared: frozenset[str]) -> str | None:
    missing = [c for c in case.requires if c not in declared]
    if missing:
        return (
            f"backend {backend.name!r} does not declare the capability "
            f"{', '.join(repr(m) for m in missing)} this case requires "
            f"(declared: {', '.join(sorted(declared)) or 'none'})"
        )
    excluded = [c for c in case.without if c in declared]
    if excluded:
        return (
            f"backend {backend.name!r} declares {', '.join(repr(c) for c in excluded)}; this "
            "case checks a backend that does not (its ops must be Unsupported)"
        )
    if any(step.raw is not None for step in case.steps) and not speaks_wire(backend):
        return f"backend {backend.name!r} is driven in-process; this case sends raw wire lines"
    return None


def _breach(step: Step, args: JSON, mismatch: Mismatch) -> Breach:
    actual = None if mismatch.actual is MISSING else mismatch.actual
    return Breach(
        step.number,
        step.line,
        step.op,
        args,
        mismatch.message,
        path=mismatch.path,
        expected=mismatch.expected,
        actual=actual,
        sent=step.raw,
    )


def _step_breach(step: Step | None, args: JSON, message: str) -> Breach:
    """A breach of ``step`` as it was sent (None: the case's reset)."""
    if step is None:
        return Breach(0, None, "reset", {}, message)
    return Breach(step.number, step.line, step.op, args, message, sent=step.raw)


_Sent = tuple[int, Step | None, JSON]
"""The backend's count of requests sent once a step (None: the reset) ran,
and that step's arguments."""


def _mark(sent: list[_Sent], backend: Backend, step: Step | None, args: JSON) -> None:
    """Note how many requests were sent once ``step`` ran (a raw line's
    included), where the backend counts them (``requests_sent``)."""
    last = getattr(backend, "requests_sent", None)
    if isinstance(last, int):
        sent.append((last, step, args))


def _sender(sent: list[_Sent], failure: BackendFailure) -> tuple[Step | None, JSON] | None:
    """The earlier step of this case (None: its reset) whose request ``failure``
    found answered twice, by the requests each step sent (raw lines with
    an integer id among them); None when the failure is the step under way's
    own (or a request before the case)."""
    request = failure.answered_twice
    if request is None or not sent:
        return None
    start, _, _ = sent[0]
    for last, step, args in sent[1:]:
        if start < request <= last:
            return step, args
        start = last
    return None


def _run_steps(case: Case, backend: Backend) -> Outcome:
    saved: dict[str, JSON] = {}
    sent: list[_Sent] = []
    _mark(sent, backend, None, {})
    try:
        backend.call("reset", {})
    except (OpError, BackendFailure) as error:
        breach = _step_breach(None, {}, f"reset failed before the first step: {error}")
        return _failed(case, [breach], getattr(error, "stderr", None) or backend.stderr_tail())
    _mark(sent, backend, None, {})
    breaches: list[Breach] = []
    unsaved: dict[str, int] = {}
    """Names a wrongly answered step did not save, with that step's number."""
    stderr: str | None = None
    ran: tuple[Step, JSON] | None = None
    """The last step sent, with its arguments."""
    for index, step in enumerate(case.steps):
        needed = sorted(name for name in _names_used(step) if name in unsaved)
        if needed:
            return _answered_once(
                case,
                backend,
                ran,
                _failed(
                    case,
                    breaches,
                    backend.stderr_tail(),
                    _not_run(
                        case, index, f"{needed[0]!r}, which step {unsaved[needed[0]]} did not give"
                    ),
                ),
            )
        found: list[Mismatch] = []
        try:
            args = substitute(dict(step.args), saved)
            ran = (step, args)
            _run_step(step, args, backend, saved, found)
            _mark(sent, backend, step, args)
        except Unresolved as missing:
            raise CaseFileError(
                case.file, str(missing), line=step.line, case_id=case.id, path=f"steps[{index}]"
            ) from None
        except BackendFailure as failure:
            earlier = _sender(sent, failure)
            unrun = index + 1
            if earlier is None:
                breaches.append(_step_breach(step, args, failure.message))
            else:
                # An earlier step's request answered twice: that step broke the
                # protocol, and this one had no answer, so it did not run either.
                breaches.append(_step_breach(*earlier, failure.message))
                breaches.sort(key=lambda breach: breach.step or 0)
                unrun = index
            later = (
                _not_run(case, unrun, "a backend that answered")
                if unrun < len(case.steps)
                else None
            )
            return _failed(case, breaches, failure.stderr or backend.stderr_tail(), later)
        breaches.extend(_breach(step, args, mismatch) for mismatch in found)
        for name in step.save:
            if name not in saved:
                unsaved[name] = step.number
        if any(mismatch.fatal for mismatch in found):
            stopped = None
            if index + 1 < len(case.steps):
                stopped = _not_run(case, index + 1, "the store as the case left it before")
            return _answered_once(
                case, backend, ran, _failed(case, breaches, backend.stderr_tail(), stopped)
            )
        if found and stderr is None:
            stderr = backend.stderr_tail()
    if breaches:
        return _answered_once(case, backend, ran, _failed(case, breaches, stderr))
    return _answered_once(case, backend, ran, Outcome(case.id, "passed", steps=len(case.steps)))


_CASE_END = "the case's last step"
"""What a case's end-of-case check (:func:`end_of_case`) comes after."""


def end_of_case(backend: Backend, after: str) -> BackendFailure | None:
    """The check every run of steps ends with -- a case's, a property's
    sequence's, a durability entry's instance's: what the backend did after
    its last answer that breaks PROTOCOL, or None.  Today that is an answer
    no request asked for -- a request answered twice ([P-wire-response]),
    which ``check_answered_once`` (a wire backend's) finds without a wait --
    so that the run that sent the request fails for it, not the next one.
    The failure's message says it came ``after`` that run's end, in the
    run's own terms: the case's last step, the sequence's last step, the
    entry's last op on one instance."""
    check = getattr(backend, "check_answered_once", None)
    if check is None:
        return None
    try:
        check()
    except BackendFailure as failure:
        return BackendFailure(
            f"after {after}, {failure.message}",
            failure.stderr,
            answered_twice=failure.answered_twice,
        )
    return None


def _answered_once(
    case: Case, backend: Backend, ran: tuple[Step, JSON] | None, outcome: Outcome
) -> Outcome:
    """``outcome``, with one more breach on the last step sent when the
    end-of-case check (:func:`end_of_case`) fails, so that this case fails
    for it, not the next one."""
    failure = end_of_case(backend, _CASE_END)
    if failure is not None:
        step, args = ran if ran is not None else (None, {})
        breach = _step_breach(step, args, failure.message)
        stderr = failure.stderr or outcome.stderr
        return _failed(case, [*outcome.breaches, breach], stderr, outcome.stopped)
    return outcome


def _not_run(case: Case, index: int, needing: str) -> str:
    first, last = case.steps[index].number, case.steps[-1].number
    which = f"step {first}" if first == last else f"steps {first}-{last}"
    return f"{which} not run: they need {needing}"


def _names_used(step: Step) -> Iterator[str]:
    """The saved names a step refers to, in its args and its checks."""
    for value in (dict(step.args), *(check.value for check in step.checks)):
        yield from (ref.partition(".")[0] for ref in refs_in(value))
    for name in (step.unchanged, step.changed):
        if name is not None:
            yield name


def speaks_wire(backend: Backend) -> bool:
    """Whether ``backend`` takes raw request lines (``send_raw``)."""
    return bool(getattr(backend, "speaks_wire", False))


def _undefined_kind(step: Step, error: OpError) -> Mismatch | None:
    """[P-error-kinds]: a kind outside PROTOCOL's list is a breach of its own,
    whatever the step expected."""
    if error.kind in ERROR_KINDS:
        return None
    return Mismatch(
        f"{step.op} failed with error kind {error.kind!r}, which PROTOCOL does not define "
        f"(its kinds: {', '.join(ERROR_KINDS)}); message: {error.message}",
        "error.kind",
        step.error or "success",
        error.kind,
        fatal=step.error is None and step.op not in PURE_OPS,
    )


def _run_step(
    step: Step, args: JSON, backend: Backend, saved: dict[str, JSON], found: list[Mismatch]
) -> None:
    """Run one step, adding what it answered wrongly to ``found``."""
    if step.raw is not None:
        response = backend.send_raw(step.raw)  # type: ignore[attr-defined]  # see speaks_wire
        shape = response_problem(response)
        if shape is not None:
            where, problem = shape
            found.append(
                Mismatch(
                    f"the response breaks protocol.schema.json at {where}: {problem}",
                    where,
                    "(a response as protocol.schema.json gives it)",
                    response,
                )
            )
        _check_and_save(step, response, saved, found)
        return
    try:
        result = backend.call(step.op, args)
    except OpError as error:
        undefined = _undefined_kind(step, error)
        if undefined is not None:
            found.append(undefined)
        elif step.error is None:
            found.append(
                Mismatch(
                    f"{step.op} failed with {error.kind} ({error.message}), expected success",
                    None,
                    "success",
                    {"error": error.kind, "message": error.message},
                    fatal=step.op not in PURE_OPS,
                )
            )
        elif error.kind != step.error:
            found.append(
                Mismatch(
                    f"{step.op} failed with {error.kind} ({error.message}), expected {step.error}",
                    "error",
                    step.error,
                    error.kind,
                )
            )
        _compare_snapshots(step, backend, saved, found)
        return
    if step.error is not None:
        found.append(
            Mismatch(
                f"{step.op} succeeded, expected it to fail with {step.error}",
                "error",
                step.error,
                result,
                fatal=step.op not in PURE_OPS,
            )
        )
        return
    shape = result_problem(step.op, result)
    if shape is not None:
        where, problem = shape
        found.append(
            Mismatch(
                f"{step.op}: the result breaks protocol.schema.json at {where}: {problem}",
                where,
                "(the shape protocol.schema.json gives)",
                None,
            )
        )
    for path, expected, actual in score_problems(step.op, result):
        found.append(
            Mismatch(
                f"{path} does not follow from its own result's numbers, bit for bit: "
                + (
                    "relevance * (c^(7/8) * anchor_penalty * decay_factor), c the"
                    " base_confidence [P-search-score, P-search-numbers]"
                    if step.op == "memory.search"
                    else "(base_confidence * anchor_penalty * decay_factor) [P-search-numbers]"
                ),
                path,
                expected,
                actual,
            )
        )
    _check_and_save(step, result, saved, found)
    _compare_snapshots(step, backend, saved, found)


def _check_and_save(
    step: Step, result: JSON, saved: dict[str, JSON], found: list[Mismatch]
) -> None:
    for check in step.checks:
        try:
            apply_check(check, result, saved)
        except Mismatch as mismatch:
            found.append(mismatch)
    for name, path in step.save.items():
        try:
            saved[name] = value_at(result, path)
        except Mismatch as mismatch:
            found.append(mismatch)


def _compare_snapshots(
    step: Step, backend: Backend, saved: dict[str, JSON], found: list[Mismatch]
) -> None:
    for snapshot_name, want_equal in ((step.unchanged, True), (step.changed, False)):
        if snapshot_name is None:
            continue
        name = snapshot_name
        try:
            after = backend.call("store.snapshot", {})
        except OpError as error:
            found.append(
                Mismatch(
                    f"store.snapshot after the step failed with {error.kind}: {error.message}",
                    None,
                    "a snapshot",
                    error.kind,
                    fatal=True,
                )
            )
            return
        if json_equal(after, saved[name]) == want_equal:
            continue
        if want_equal:
            found.append(
                Mismatch(
                    f"the store changed: the snapshot after {step.op} differs from {name!r}",
                    f"snapshot {name}",
                    saved[name],
                    after,
                    fatal=True,
                )
            )
        else:
            found.append(
                Mismatch(
                    f"the snapshot after {step.op} equals {name!r}: the change is not visible",
                    f"snapshot {name}",
                    "a different snapshot",
                    after,
                    fatal=True,
                )
            )
