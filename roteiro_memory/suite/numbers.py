"""A result's score follows from its own numbers ([P-search-numbers]).

PROTOCOL lets ``ln`` and the power of exponential decay be merely faithful,
so a relevance or decay factor may differ from the reference's in the last
place; but the score a result reports must be, bit for bit, the product of
the numbers the same result reports: ``base_confidence * anchor_penalty *
decay_factor``, and for search ``relevance *`` that.  Every number a faithful
choice allows is :mod:`roteiro_memory.faithful`'s to list.

This module does not import pytest.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["score_problems"]

JSON = Any


def score_problems(op: str, result: JSON) -> Iterator[tuple[str, float, JSON]]:
    """``(path, expected, actual)`` for each result of a recall or search
    whose ``score`` does not follow, bit for bit, from the numbers the result
    itself reports: ``base_confidence * anchor_penalty * decay_factor``, and
    for search ``relevance *`` that."""
    if op not in ("memory.recall", "memory.search") or not isinstance(result, dict):
        return
    for index, item in enumerate(result.get("results") or ()):
        try:
            evidence = item["base_confidence"] * item["anchor_penalty"] * item["decay_factor"]
            expected = item["relevance"] * evidence if op == "memory.search" else evidence
        except (KeyError, TypeError):
            continue  # the shape check names it
        if not (isinstance(item.get("score"), float | int) and item["score"] == expected):
            yield f"results.{index}.score", expected, item.get("score")
