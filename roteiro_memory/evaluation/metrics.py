"""Retrieval metrics from gold keys only: exact fractions, judge-free.

Every metric but nDCG is a mean of rationals and is kept as a
:class:`~fractions.Fraction`, so a result is the same numerator and
denominator on every machine.  nDCG has logarithms in it; it is summed in
query order and rounded to :data:`NDCG_DIGITS` decimals, which makes it
deterministic too.  Definitions are in ``docs/eval.md``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["KS", "NDCG_DIGITS", "Aggregate", "QueryOutcome", "dcg_discount"]

KS: tuple[int, ...] = (1, 3, 5, 10)
"""The cut-offs every metric is reported at."""

NDCG_DIGITS = 6
"""Decimals nDCG is rounded to: the one metric that is not a fraction."""


def dcg_discount(rank: int) -> float:
    """The gain weight at 1-based ``rank``: ``1 / log2(rank + 1)``."""
    return 1.0 / math.log2(rank + 1)


@dataclass(frozen=True)
class QueryOutcome:
    """One query's ranked keys (best first, each key once) against its gold,
    with how many of the top results were noise at each cut-off."""

    ranked: tuple[str, ...]
    gold: frozenset[str]
    noise: Mapping[int, int]
    seconds: float
    duplicates: Mapping[int, int] = field(default_factory=dict)
    """How many of the first k results repeat one ranked above them."""
    lines: int = 0
    """How many results were returned, up to the largest k."""

    def __post_init__(self) -> None:
        if not self.gold:
            raise ValueError("a scored query needs at least one gold key; exclude it instead")

    def hits(self, k: int) -> int:
        return len(self.gold.intersection(self.ranked[:k]))

    def ndcg(self, k: int) -> float:
        """Binary-gain nDCG@k, the ideal putting every gold key first."""
        dcg = sum(dcg_discount(i) for i, key in enumerate(self.ranked[:k], 1) if key in self.gold)
        ideal = sum(dcg_discount(i) for i in range(1, min(k, len(self.gold)) + 1))
        return dcg / ideal

    def reciprocal_rank(self, k: int) -> Fraction:
        for i, key in enumerate(self.ranked[:k], 1):
            if key in self.gold:
                return Fraction(1, i)
        return Fraction(0)


@dataclass
class Aggregate:
    """Running sums over the queries of one arm and one style."""

    queries: int = 0
    empty: int = 0
    any_hits: dict[int, int] = field(default_factory=dict)
    all_hits: dict[int, int] = field(default_factory=dict)
    evidence: dict[int, Fraction] = field(default_factory=dict)
    ndcg: dict[int, float] = field(default_factory=dict)
    mrr: dict[int, Fraction] = field(default_factory=dict)
    noise: dict[int, int] = field(default_factory=dict)
    shown: dict[int, int] = field(default_factory=dict)
    repeats: dict[int, int] = field(default_factory=dict)
    lines: dict[int, int] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)

    def add(self, outcome: QueryOutcome) -> None:
        self.queries += 1
        self.empty += not outcome.ranked
        self.seconds.append(outcome.seconds)
        for k in KS:
            hits = outcome.hits(k)
            self.any_hits[k] = self.any_hits.get(k, 0) + (hits > 0)
            self.all_hits[k] = self.all_hits.get(k, 0) + (hits == len(outcome.gold))
            share = Fraction(hits, len(outcome.gold))
            self.evidence[k] = self.evidence.get(k, Fraction(0)) + share
            self.ndcg[k] = self.ndcg.get(k, 0.0) + outcome.ndcg(k)
            self.mrr[k] = self.mrr.get(k, Fraction(0)) + outcome.reciprocal_rank(k)
            self.noise[k] = self.noise.get(k, 0) + outcome.noise.get(k, 0)
            self.shown[k] = self.shown.get(k, 0) + min(k, len(outcome.ranked))
            self.repeats[k] = self.repeats.get(k, 0) + outcome.duplicates.get(k, 0)
            self.lines[k] = self.lines.get(k, 0) + min(k, outcome.lines)

    def _mean(self, total: Fraction | int) -> Fraction:
        return Fraction(total) / self.queries

    def metrics(self) -> dict[str, Fraction | float | None]:
        """Each metric by name (``recall_any@5``, ...); None where undefined."""
        if not self.queries:
            return {}
        out: dict[str, Fraction | float | None] = {}
        for k in KS:
            out[f"recall_any@{k}"] = self._mean(self.any_hits[k])
            out[f"recall_all@{k}"] = self._mean(self.all_hits[k])
            out[f"evidence_recall@{k}"] = self._mean(self.evidence[k])
            out[f"ndcg@{k}"] = round(self.ndcg[k] / self.queries, NDCG_DIGITS)
            out[f"mrr@{k}"] = self._mean(self.mrr[k])
            out[f"noise@{k}"] = Fraction(self.noise[k], self.shown[k]) if self.shown[k] else None
            lines = self.lines[k]
            out[f"duplicates@{k}"] = Fraction(self.repeats[k], lines) if lines else None
        out["empty"] = self._mean(self.empty)
        return out

    def median_ms(self) -> float | None:
        return statistics.median(self.seconds) * 1000.0 if self.seconds else None


def exact(value: Fraction | float | None) -> object:
    """A metric as JSON: ``[numerator, denominator]`` for a fraction."""
    if isinstance(value, Fraction):
        return [value.numerator, value.denominator]
    return value


def as_float(value: object) -> float | None:
    """A JSON metric (``[n, d]`` or a number) as a float, for display."""
    if isinstance(value, list):
        return float(Fraction(value[0], value[1]))
    if isinstance(value, (int, float)):
        return float(value)
    return None


def noise_counts(flags: Sequence[bool]) -> dict[int, int]:
    """How many of the first k results are noise, for each k in :data:`KS`."""
    return {k: sum(flags[:k]) for k in KS}


def first_occurrences(keys: Iterable[str]) -> tuple[str, ...]:
    """``keys`` with each key kept at its first (best) position only."""
    seen: set[str] = set()
    out = []
    for key in keys:
        if key not in seen:
            seen.add(key)
            out.append(key)
    return tuple(out)
