"""A case's outcome in the case's own terms: the one-line headline and the
block a failure prints, every breach with its step, op, expected and actual.

Values are quoted bounded -- an op line at :data:`OP_WIDTH` characters, a raw
request line at :data:`SENT_WIDTH` -- so one huge argument cannot bury the
rest of the block.

This module does not import pytest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roteiro_memory.suite.checks import render, structure_diff
from roteiro_memory.suite.outcomes import Breach, Outcome

if TYPE_CHECKING:
    from roteiro_memory.suite.cases import Case

__all__ = ["OP_WIDTH", "SENT_WIDTH", "format_outcome", "headline", "short"]

JSON = Any
OP_WIDTH = 240
"""Longest op line a failure prints (an argument may be 65 KiB of body)."""
SENT_WIDTH = 240
"""Longest raw request line a failure prints."""


def short(value: JSON, width: int = 80) -> str:
    """``value`` as compact JSON, cut to ``width`` characters."""
    text = render(value)
    return _cut(text, width)


def _cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return f"{text[: width - 3]}... ({len(text)} characters)"


def _first_line(outcome: Outcome) -> str:
    if outcome.path is not None:
        return f"{outcome.path}: expected {short(outcome.expected)}, actual {short(outcome.actual)}"
    first = outcome.message.splitlines()[0] if outcome.message else outcome.status
    return first if len(first) <= 200 else first[:197] + "..."


def headline(outcome: Outcome) -> str:
    """A failed outcome in one line: the first mismatch
    (``results.0.anchor_penalty: expected 0.25, actual 0.0``), else the message's
    first line, with how many steps breached when more than one did.  It leads
    the failure's block and pytest's ``-ra`` line."""
    first = _first_line(outcome)
    more = len(outcome.breaches) - 1
    if more > 0:
        first += f" (and {more} more breach{'es' if more > 1 else ''}: {outcome.tally()})"
    return first


def _op_line(breach: Breach, width: int) -> str:
    if breach.sent is not None:
        return f"  sent: {_cut(breach.sent, SENT_WIDTH)}"
    return f"  op: {breach.op} {short(breach.args, width)}"


def _breach_lines(case: Case, breach: Breach) -> list[str]:
    where = f"{case.file}:{breach.line}" if breach.line else str(case.file)
    lines = [f"  step {breach.step} at {where}", _op_line(breach, OP_WIDTH)]
    lines.append(f"  {breach.message}")
    if breach.path is not None or breach.expected is not None or breach.actual is not None:
        if breach.path is not None:
            lines.append(f"  path:     {breach.path}")
        lines.append(f"  expected: {_cut(render(breach.expected), 2000)}")
        lines.append(f"  actual:   {_cut(render(breach.actual), 2000)}")
        diff = structure_diff(breach.expected, breach.actual)
        if diff:
            lines.append("  diff (expected -> actual):")
            lines.extend(f"    {line}" for line in diff.splitlines()[:80])
    return lines


def format_outcome(
    case: Case, outcome: Outcome, *, clause: str | None = None, style: str = "long"
) -> str:
    """A failed or skipped outcome as an assertion message in the case's terms,
    led by its :func:`headline`.  ``style`` ``short`` keeps each breach's step,
    op and message (no clause, diff or stderr); ``line`` is the headline at
    the case's file and line."""
    where = f"{case.file}:{outcome.line or case.line}"
    if style == "line":
        return f"{where}: {headline(outcome)}"
    if style == "short" and outcome.status == "failed":
        lines = [headline(outcome)]
        for breach in outcome.breaches or ():
            lines.append(f"case {case.id}, step {breach.step} at {case.file}:{breach.line}")
            if breach.op is not None:
                lines.append(_op_line(breach, 200))
            lines.append(f"  {breach.message}")
        if not outcome.breaches:
            lines.append(f"case {case.id} at {where}: {outcome.message}")
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
    if outcome.breaches:
        if len(outcome.breaches) > 1:
            lines.append(f"  {len(outcome.breaches)} breaches, in {outcome.tally()}:")
        for breach in outcome.breaches:
            lines.extend(_breach_lines(case, breach))
    else:
        lines.append(f"  at {case.file}:{case.line}")
        lines.append(f"  {outcome.message}")
    if outcome.stopped:
        lines.append(f"  {outcome.stopped}")
    if outcome.stderr:
        lines.append("  backend stderr (last lines):")
        lines.extend(f"    | {line}" for line in outcome.stderr.splitlines())
    return "\n".join(lines)
