"""The numbers a search case allows are exactly those PROTOCOL [P-search-numbers] allows.

Each ``one_of`` of a search step lists every double a faithful ``ln`` and
power give through the exact operations, computed here from the store the
case builds; and what the suite allows is neither more nor less.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roteiro_memory import lexical
from roteiro_memory.faithful import (
    allowed_search_numbers,
    faithful,
    faithful_ln,
    faithful_power_of_half,
)
from roteiro_memory.stores.naming import open_store
from roteiro_memory.suite import numbers
from roteiro_memory.suite.cases import Case, load_cases
from roteiro_memory.suite.checks import substitute, value_at
from roteiro_memory.suite.drivers import InProcessBackend
from roteiro_memory.suite.numbers import score_problems


def _with_one_of() -> list[Case]:
    return [
        case
        for case in load_cases()
        if any(c.kind == "one_of" for step in case.steps for c in step.checks)
    ]


@pytest.mark.parametrize("case", _with_one_of(), ids=lambda case: case.id)
def test_one_of_lists_every_faithful_value(case: Case) -> None:
    backend = InProcessBackend(open_store("memory"), "memory")
    backend.call("reset", {})
    saved: dict[str, object] = {}
    for step in case.steps:
        result = backend.call(step.op, substitute(dict(step.args), saved))
        for name, path in step.save.items():
            saved[name] = value_at(result, path)
        listed = {c.path: c.value for c in step.checks if c.kind == "one_of"}
        if listed:
            allowed = allowed_search_numbers(backend.call("memory.list", {}), result)
            assert listed == {path: allowed[path] for path in listed}, step.line


def test_faithful_is_the_two_doubles_around_the_exact_value() -> None:
    assert faithful(Decimal(1) / Decimal(3)) == (
        math.nextafter(1 / 3, 0.0),
        1 / 3,
    ) or faithful(Decimal(1) / Decimal(3)) == (1 / 3, math.nextafter(1 / 3, 1.0))
    assert faithful(Decimal("0.25")) == (0.25,)
    assert math.log(1.2) in faithful_ln(1.2)
    assert faithful_power_of_half(2.0) == (0.25,)
    low, high = faithful_power_of_half(1 / 3)
    assert math.nextafter(low, 1.0) == high


def test_a_score_must_follow_from_its_own_numbers_bit_for_bit() -> None:
    item = {"relevance": 0.1, "base_confidence": 0.7, "anchor_penalty": 0.35, "decay_factor": 1.0}
    r2 = math.sqrt(0.7)
    r4 = math.sqrt(r2)
    tempered = r2 * r4 * math.sqrt(r4)
    right = 0.1 * (tempered * 0.35 * 1.0)
    regrouped = ((0.1 * tempered) * 0.35) * 1.0
    untempered = 0.1 * (0.7 * 0.35 * 1.0)
    assert len({right, regrouped, untempered}) == 3
    good = {"results": [{**item, "score": right}]}
    assert list(score_problems("memory.search", good)) == []
    for wrong in (regrouped, untempered):
        bad = {"results": [{**item, "score": wrong}]}
        assert list(score_problems("memory.search", bad)) == [("results.0.score", right, wrong)]


@settings(max_examples=500, deadline=None)
@given(
    st.floats(0.0, 1.0),
    st.sampled_from([1.0, 0.9, 0.35, 0.25]),
    st.floats(0.0, 1.0),
)
def test_the_suites_search_evidence_is_the_references(
    base: float, penalty: float, factor: float
) -> None:
    assert numbers.search_evidence(base, penalty, factor) == lexical.search_evidence(
        base, penalty, factor
    )


def test_no_search_score_follows_from_a_negative_confidence() -> None:
    item = {"relevance": 0.1, "base_confidence": -0.5, "anchor_penalty": 1.0, "decay_factor": 1.0}
    found = score_problems("memory.search", {"results": [{**item, "score": 0.0}]})
    assert list(found) == [("results.0.score", "no score: base_confidence is negative", 0.0)]
