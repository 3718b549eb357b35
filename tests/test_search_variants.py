"""The search section has teeth: each wrong reading of it in tests/search_variants.py fails.

An implementer working from PROTOCOL.md alone makes choices the page must
settle; each variant makes one of them otherwise, and some search case (or
the search property) must fail it, so the page's words and the suite agree.
"""

from __future__ import annotations

from typing import Any

import pytest
from search_variants import IDENTICAL, VARIANTS

from roteiro_memory.suite.cases import Case, load_cases
from roteiro_memory.suite.drivers import InProcessBackend
from roteiro_memory.suite.runner import run_case


@pytest.fixture(scope="module")
def search_cases() -> list[Case]:
    return [case for case in load_cases() if "search" in case.requires]


def _failing(variant: type, cases: list[Case]) -> list[str]:
    backend = InProcessBackend(variant(), variant.__name__)
    return [case.id for case in cases if run_case(case, backend).status == "failed"]


def test_there_are_32_variants() -> None:
    assert len(VARIANTS) == 32


@pytest.mark.parametrize("name", sorted(set(VARIANTS) - IDENTICAL))
def test_a_wrong_reading_of_the_search_rules_fails_a_case(
    name: str, search_cases: list[Case], record_property: Any
) -> None:
    failing = _failing(VARIANTS[name], search_cases)
    record_property("caught_by", " ".join(failing))
    assert failing, f"{name} ({VARIANTS[name].flaw}) passes every search case"


@pytest.mark.parametrize("name", sorted(IDENTICAL))
def test_a_reading_that_computes_the_same_bits_passes(name: str, search_cases: list[Case]) -> None:
    assert _failing(VARIANTS[name], search_cases) == []
