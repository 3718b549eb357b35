"""A failure's block in the case's terms: every breach, values quoted bounded."""

from __future__ import annotations

from roteiro_memory.suite.cases import load_cases
from roteiro_memory.suite.failures import OP_WIDTH, format_outcome, headline
from roteiro_memory.suite.runner import Breach, Outcome


def _case(case_id: str = "integer-arguments-have-64-bit-ranges"):  # type: ignore[no-untyped-def]
    return next(case for case in load_cases() if case.id == case_id)


def test_an_op_line_is_cut_at_a_readable_length() -> None:
    """A 65 KiB body would otherwise print as one line of 65 KiB."""
    case = _case()
    breach = Breach(2, 10, "memory.record", {"body": "x" * 5000}, "succeeded, expected BadRequest")
    outcome = Outcome(case.id, "failed", breach.message, step=2, breaches=(breach,), steps=3)
    op_line = next(line for line in format_outcome(case, outcome).splitlines() if "op:" in line)
    assert len(op_line) <= OP_WIDTH + 40
    assert op_line.endswith("characters)")


def test_a_raw_step_shows_the_line_it_sent() -> None:
    case = _case("the-request-id-must-be-an-integer")
    sent = '{"id": "7", "op": "hello"}'
    breach = Breach(
        1, 5, "(raw)", {}, "ok differs", path="ok", expected=False, actual=True, sent=sent
    )
    text = format_outcome(
        case, Outcome(case.id, "failed", "ok differs", breaches=(breach,), steps=1)
    )
    assert f"  sent: {sent}" in text.splitlines()


def test_the_headline_counts_the_breaches() -> None:
    case = _case()
    breaches = tuple(
        Breach(step, step, "memory.get", {}, "differs", path="$", expected=None, actual=1)
        for step in (2, 3, 3)
    )
    outcome = Outcome(case.id, "failed", "differs", path="$", actual=1, breaches=breaches, steps=18)
    assert headline(outcome) == "$: expected null, actual 1 (and 2 more breaches: 2 of 18 steps)"
