"""A result's score follows from its own numbers ([P-search-numbers]).

PROTOCOL lets ``ln`` and the power of exponential decay be merely faithful,
so a relevance or decay factor may differ from the reference's in the last
place; but the score a result reports must be, bit for bit, the product of
the numbers the same result reports: ``base_confidence * anchor_penalty *
decay_factor``, and for search ``relevance *`` that with the base confidence
tempered (:func:`search_evidence`).  Every number a faithful choice allows is
:mod:`roteiro_memory.faithful`'s to list.

This module does not import pytest.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

__all__ = ["score_problems", "search_evidence"]

JSON = Any


def search_evidence(base: float, penalty: float, factor: float) -> float:
    """PROTOCOL [P-search-score]'s bracket, as the page states it:
    ``(r2 * r4 * r8) * penalty * factor`` with ``r2 = sqrt(c)`` (``c`` the
    base confidence), ``r4 = sqrt(r2)``, ``r8 = sqrt(r4)``, left to right.  The
    suite states it itself, as it states the recall product, so that it
    checks a backend against the page rather than against the reference
    (``tests/test_search_numbers.py`` holds the two to the same doubles)."""
    r2 = math.sqrt(base)
    r4 = math.sqrt(r2)
    return r2 * r4 * math.sqrt(r4) * penalty * factor


def score_problems(op: str, result: JSON) -> Iterator[tuple[str, JSON, JSON]]:
    """``(path, expected, actual)`` for each result of a recall or search
    whose ``score`` does not follow, bit for bit, from the numbers the result
    itself reports: ``base_confidence * anchor_penalty * decay_factor``, and
    for search ``relevance *`` the same with the base confidence tempered
    (:func:`~roteiro_memory.lexical.search_evidence`)."""
    if op not in ("memory.recall", "memory.search") or not isinstance(result, dict):
        return
    for index, item in enumerate(result.get("results") or ()):
        try:
            base, penalty, factor = (
                item["base_confidence"],
                item["anchor_penalty"],
                item["decay_factor"],
            )
            if op == "memory.search":
                expected = item["relevance"] * search_evidence(base, penalty, factor)
            else:
                expected = base * penalty * factor
        except (KeyError, TypeError):
            continue  # the shape check names it
        except ValueError:  # no square root, so no score follows
            expected = "no score: base_confidence is negative"
        if not (isinstance(item.get("score"), float | int) and item["score"] == expected):
            yield f"results.{index}.score", expected, item.get("score")
