"""Running one conformance case against one backend.

:func:`run_case` resets the backend, runs the case's steps in order and returns
an :class:`Outcome`: passed, failed (with the step, op, arguments, expected and
actual values, and the backend's stderr tail when it has one) or skipped (a
capability the backend did not declare).  It raises nothing for a
non-conforming backend: a wrong answer, a crash or a hang is a failed outcome.

This module does not import pytest.
"""

from __future__ import annotations

import difflib
import json
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from roteiro_memory.suite.cases import Case, Check, Step
from roteiro_memory.suite.errors import BackendFailure, OpError
from roteiro_memory.suite.shapes import response_problem, result_problem

__all__ = [
    "Backend",
    "BackendFailure",
    "OpError",
    "Outcome",
    "format_outcome",
    "headline",
    "resolve_path",
    "run_case",
]

JSON = Any
Status = Literal["passed", "failed", "skipped"]


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


@dataclass(frozen=True)
class Outcome:
    """What running one case against one backend came to."""

    case_id: str
    status: Status
    message: str = ""
    step: int | None = None
    line: int | None = None
    op: str | None = None
    args: JSON = None
    path: str | None = None
    expected: JSON = None
    actual: JSON = None
    stderr: str | None = None
    duration: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_json(self) -> dict[str, JSON]:
        return {
            "case": self.case_id,
            "status": self.status,
            "message": self.message,
            "step": self.step,
            "line": self.line,
            "op": self.op,
            "args": self.args,
            "path": self.path,
            "expected": self.expected,
            "actual": self.actual,
            "stderr": self.stderr,
            "duration": round(self.duration, 6),
        }


class _Mismatch(Exception):
    def __init__(self, message: str, path: str | None, expected: JSON, actual: JSON) -> None:
        self.message = message
        self.path = path
        self.expected = expected
        self.actual = actual
        super().__init__(message)


_MISSING = object()


# --- Paths and references ----------------------------------------------------


def resolve_path(value: JSON, path: str) -> JSON:
    """The value at a dotted ``path`` (``$`` is the whole value; a number
    indexes a list; ``#`` is the length so far).  Raises KeyError naming the
    first part that is not there."""
    if path == "$":
        return value
    current = value
    walked: list[str] = []
    for part in path.split("."):
        if part == "#" and isinstance(current, (list, dict)):
            current = len(current)
        elif isinstance(current, list) and _is_index(part):
            index = int(part)
            if not -len(current) <= index < len(current):
                raise KeyError(f"{'.'.join([*walked, part])}: the list has {len(current)} item(s)")
            current = current[index]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            kind = type(current).__name__ if current is not None else "null"
            raise KeyError(f"{'.'.join([*walked, part])}: not present (found a {kind} there)")
        walked.append(part)
    return current


def _is_index(part: str) -> bool:
    return part.lstrip("-").isdigit()


def _substitute(value: JSON, saved: Mapping[str, JSON]) -> JSON:
    if isinstance(value, dict):
        if set(value) == {"$ref"}:
            name, _, rest = str(value["$ref"]).partition(".")
            return resolve_path(saved[name], rest or "$")
        if set(value) == {"$repeat", "times"}:
            return str(value["$repeat"]) * int(value["times"])
        return {k: _substitute(v, saved) for k, v in value.items()}
    if isinstance(value, list):
        return [_substitute(v, saved) for v in value]
    return value


# --- Comparison ----------------------------------------------------------------


def json_equal(a: JSON, b: JSON) -> bool:
    """JSON equality: booleans are not numbers, 1 equals 1.0, key order is moot."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def render(value: JSON) -> str:
    """A value as compact JSON for messages."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def structure_diff(expected: JSON, actual: JSON) -> str | None:
    """A unified diff of two structures, or None for scalars."""
    if not isinstance(expected, (dict, list)) or not isinstance(actual, (dict, list)):
        return None
    lines_e = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    lines_a = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    diff = difflib.unified_diff(lines_e, lines_a, "expected", "actual", lineterm="", n=2)
    return "\n".join(diff)


def _at(result: JSON, path: str) -> JSON:
    try:
        return resolve_path(result, path)
    except KeyError as error:
        raise _Mismatch(f"path {error.args[0]}", path, "(a value)", _MISSING) from None


def _project(items: Sequence[JSON], key: str | None, path: str) -> list[JSON]:
    if key is None:
        return list(items)
    out = []
    for index, item in enumerate(items):
        try:
            out.append(resolve_path(item, key))
        except KeyError as error:
            raise _Mismatch(
                f"item {index} of {path} has no {key!r} ({error.args[0]})", path, key, item
            ) from None
    return out


def _check(check: Check, result: JSON, saved: Mapping[str, JSON]) -> None:
    expected = _substitute(check.value, saved)
    actual = _at(result, check.path)
    if check.kind == "expect":
        if not json_equal(expected, actual):
            raise _Mismatch(f"{check.path} differs", check.path, expected, actual)
    elif check.kind == "approx":
        is_number = isinstance(actual, (int, float)) and not isinstance(actual, bool)
        if not is_number or not math.isclose(
            actual, expected, rel_tol=check.tolerance, abs_tol=check.tolerance
        ):
            raise _Mismatch(
                f"{check.path} is not within {check.tolerance:g} of {expected!r}",
                check.path,
                expected,
                actual,
            )
    elif check.kind == "types":
        if not _has_json_type(actual, expected):
            raise _Mismatch(
                f"{check.path} is not of JSON type {expected}",
                check.path,
                expected,
                f"{_json_type(actual)} {render(actual)}",
            )
    else:
        _check_members(check, expected, actual)


def _json_type(value: JSON) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _has_json_type(value: JSON, type_name: str) -> bool:
    actual = _json_type(value)
    return actual == type_name or (type_name == "number" and actual == "integer")


def _check_members(check: Check, expected: list[JSON], actual: JSON) -> None:
    if isinstance(actual, dict) and check.kind in ("contains", "absent") and check.key is None:
        members: list[JSON] = list(actual)
        what = "keys of"
    elif isinstance(actual, list):
        members = _project(actual, check.key, check.path)
        what = "items of" if check.key is None else f"{check.key} of the items of"
    else:
        raise _Mismatch(
            f"{check.path} is not a list{' or an object' if check.kind != 'order' else ''}",
            check.path,
            "(a list)",
            actual,
        )
    label = f"{what} {check.path}"
    if check.kind == "order":
        if not json_equal(expected, members):
            raise _Mismatch(f"{label} are not in the expected order", check.path, expected, members)
        return
    for value in expected:
        present = any(json_equal(value, m) for m in members)
        if check.kind == "contains" and not present:
            raise _Mismatch(f"{render(value)} is not among the {label}", check.path, value, members)
        if check.kind == "absent" and present:
            raise _Mismatch(f"{render(value)} is among the {label}", check.path, value, members)


# --- Running -----------------------------------------------------------------


def run_case(case: Case, backend: Backend) -> Outcome:
    """Run ``case`` on a freshly reset ``backend``."""
    started = time.perf_counter()
    try:
        declared = backend.capabilities()
    except (OpError, BackendFailure) as error:
        return Outcome(
            case.id,
            "failed",
            f"hello failed, so the backend's capabilities are unknown: {error}",
            stderr=getattr(error, "stderr", None) or backend.stderr_tail(),
        )
    missing = [c for c in case.requires if c not in declared]
    if missing:
        return Outcome(
            case.id,
            "skipped",
            f"backend {backend.name!r} does not declare the capability "
            f"{', '.join(repr(m) for m in missing)} this case requires "
            f"(declared: {', '.join(sorted(declared)) or 'none'})",
        )
    excluded = [c for c in case.without if c in declared]
    if excluded:
        return Outcome(
            case.id,
            "skipped",
            f"backend {backend.name!r} declares {', '.join(repr(c) for c in excluded)}; this "
            "case checks a backend that does not (its ops must be Unsupported)",
        )
    if any(step.raw is not None for step in case.steps) and not speaks_wire(backend):
        return Outcome(
            case.id,
            "skipped",
            f"backend {backend.name!r} is driven in-process; this case sends raw wire lines",
        )
    try:
        outcome = _run_steps(case, backend)
    except RecursionError:
        # A result nested deeper than Python can walk: the backend's fault.
        outcome = Outcome(
            case.id, "failed", "a result is nested too deeply to compare", op=None, args=None
        )
    return Outcome(**{**outcome.__dict__, "duration": time.perf_counter() - started})


def _run_steps(case: Case, backend: Backend) -> Outcome:
    saved: dict[str, JSON] = {}
    try:
        backend.call("reset", {})
    except (OpError, BackendFailure) as error:
        return Outcome(
            case.id,
            "failed",
            f"reset failed before the first step: {error}",
            step=0,
            op="reset",
            args={},
            stderr=getattr(error, "stderr", None) or backend.stderr_tail(),
        )
    for step in case.steps:
        try:
            args = _substitute(dict(step.args), saved)
        except KeyError as error:
            return _failed(case, step, backend, f"a $ref in args: {error.args[0]}", step.args)
        try:
            _run_step(step, args, backend, saved)
        except _Mismatch as mismatch:
            return _failed(
                case,
                step,
                backend,
                mismatch.message,
                args,
                path=mismatch.path,
                expected=mismatch.expected,
                actual=None if mismatch.actual is _MISSING else mismatch.actual,
            )
        except BackendFailure as failure:
            return _failed(case, step, backend, failure.message, args, stderr=failure.stderr)
    return Outcome(case.id, "passed")


def _failed(
    case: Case,
    step: Step,
    backend: Backend,
    message: str,
    args: JSON,
    *,
    path: str | None = None,
    expected: JSON = None,
    actual: JSON = None,
    stderr: str | None = None,
) -> Outcome:
    return Outcome(
        case.id,
        "failed",
        message,
        step=step.number,
        line=step.line,
        op=step.op,
        args=args,
        path=path,
        expected=expected,
        actual=actual,
        stderr=stderr if stderr is not None else backend.stderr_tail(),
    )


def speaks_wire(backend: Backend) -> bool:
    """Whether ``backend`` takes raw request lines (``send_raw``)."""
    return bool(getattr(backend, "speaks_wire", False))


def _run_step(step: Step, args: JSON, backend: Backend, saved: dict[str, JSON]) -> None:
    if step.raw is not None:
        response = backend.send_raw(step.raw)  # type: ignore[attr-defined]  # see speaks_wire
        shape = response_problem(response)
        if shape is not None:
            where, problem = shape
            raise _Mismatch(
                f"the response breaks protocol.schema.json at {where}: {problem}",
                where,
                "(a response as protocol.schema.json gives it)",
                response,
            )
        _check_and_save(step, response, saved)
        return
    try:
        result = backend.call(step.op, args)
    except OpError as error:
        if step.error is None:
            raise _Mismatch(
                f"{step.op} failed with {error.kind} ({error.message}), expected success",
                None,
                "success",
                {"error": error.kind, "message": error.message},
            ) from None
        if error.kind != step.error:
            raise _Mismatch(
                f"{step.op} failed with {error.kind} ({error.message}), expected {step.error}",
                "error",
                step.error,
                error.kind,
            ) from None
        result = None
    else:
        if step.error is not None:
            raise _Mismatch(
                f"{step.op} succeeded, expected it to fail with {step.error}",
                "error",
                step.error,
                result,
            )
        shape = result_problem(step.op, result)
        if shape is not None:
            where, problem = shape
            raise _Mismatch(
                f"{step.op}: the result breaks protocol.schema.json at {where}: {problem}",
                where,
                "(the shape protocol.schema.json gives)",
                None,
            )
    _check_and_save(step, result, saved)
    _compare_snapshots(step, backend, saved)


def _check_and_save(step: Step, result: JSON, saved: dict[str, JSON]) -> None:
    for check in step.checks:
        try:
            _check(check, result, saved)
        except KeyError as error:
            raise _Mismatch(f"a $ref in {check.kind}: {error.args[0]}", None, None, None) from None
    for name, path in step.save.items():
        saved[name] = _at(result, path)


def _compare_snapshots(step: Step, backend: Backend, saved: dict[str, JSON]) -> None:
    for snapshot_name, want_equal in ((step.unchanged, True), (step.changed, False)):
        if snapshot_name is None:
            continue
        name = snapshot_name
        try:
            after = backend.call("store.snapshot", {})
        except OpError as error:
            raise _Mismatch(
                f"store.snapshot after the step failed with {error.kind}: {error.message}",
                None,
                "a snapshot",
                error.kind,
            ) from None
        if json_equal(after, saved[name]) != want_equal:
            if want_equal:
                raise _Mismatch(
                    f"the store changed: the snapshot after {step.op} differs from {name!r}",
                    f"snapshot {name}",
                    saved[name],
                    after,
                )
            raise _Mismatch(
                f"the snapshot after {step.op} equals {name!r}: the change is not visible",
                f"snapshot {name}",
                "a different snapshot",
                after,
            )


def _short(value: JSON, width: int = 80) -> str:
    text = render(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def headline(outcome: Outcome) -> str:
    """A failed outcome in one line: the first mismatch
    (``results.0.anchor_penalty: expected 0.25, actual 0.0``), else the message's
    first line.  It leads the failure's block and pytest's ``-ra`` line."""
    if outcome.path is not None:
        return (
            f"{outcome.path}: expected {_short(outcome.expected)}, actual {_short(outcome.actual)}"
        )
    first = outcome.message.splitlines()[0] if outcome.message else outcome.status
    return first if len(first) <= 200 else first[:197] + "..."


def format_outcome(
    case: Case, outcome: Outcome, *, clause: str | None = None, style: str = "long"
) -> str:
    """A failed or skipped outcome as an assertion message in the case's terms,
    led by its :func:`headline`.  ``style`` ``short`` keeps the step, the op and
    expected against actual (no clause, diff or stderr); ``line`` is the
    headline at the case's file and line."""
    where = f"{case.file}:{outcome.line or case.line}"
    if style == "line":
        return f"{where}: {headline(outcome)}"
    if style == "short" and outcome.status == "failed":
        lines = [headline(outcome), f"case {case.id}, step {outcome.step} at {where}"]
        if outcome.op is not None:
            lines.append(f"  op: {outcome.op} {_short(outcome.args, 200)}")
        if outcome.path is None:
            lines.append(f"  {outcome.message}")
        return "\n".join(lines)
    lines = [headline(outcome)] if outcome.status == "failed" else []
    lines.append(f"case {case.id}: {case.title}")
    lines.append(f"  clause: {clause or case.clause}")
    lines.append(f"  invariant: {case.invariant}")
    if case.rules:
        lines.append(f"  rules: {', '.join(case.rules)} (conformance/PROTOCOL.md)")
    if outcome.status == "skipped":
        lines.append(f"  skipped: {outcome.message}")
        return "\n".join(lines)
    if outcome.step is not None:
        where = f"{case.file}:{outcome.line}" if outcome.line else str(case.file)
        lines.append(f"  step {outcome.step} at {where}")
        lines.append(f"  op: {outcome.op} {render(outcome.args)}")
    else:
        lines.append(f"  at {case.file}:{case.line}")
    lines.append(f"  {outcome.message}")
    if outcome.path is not None or outcome.expected is not None or outcome.actual is not None:
        if outcome.path is not None:
            lines.append(f"  path:     {outcome.path}")
        lines.append(f"  expected: {render(outcome.expected)}")
        lines.append(f"  actual:   {render(outcome.actual)}")
        diff = structure_diff(outcome.expected, outcome.actual)
        if diff:
            lines.append("  diff (expected -> actual):")
            lines.extend(f"    {line}" for line in diff.splitlines())
    if outcome.stderr:
        lines.append("  backend stderr (last lines):")
        lines.extend(f"    | {line}" for line in outcome.stderr.splitlines())
    return "\n".join(lines)
