"""Timing and bounds: interleaved repetitions, and what a check reports.

Every target is a ratio against a floor measured in the same run, on the same
data, with the floor and the subject runs interleaved (and their order
alternated) so a neighbour's load lands on both alike.  A ratio is taken
between medians.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

__all__ = ["Check", "Trial", "interleave", "ratio_check"]

Trial = Callable[[], AbstractContextManager[Callable[[], object]]]
"""Prepares one run (untimed) and yields the action to time; cleans up after."""


def interleave(trials: dict[str, Trial], repeat: int, *, warmup: bool) -> dict[str, list[float]]:
    """Seconds per run of each trial, ``repeat`` runs each, interleaved."""
    names = list(trials)
    if warmup:
        for name in names:
            with trials[name]() as action:
                action()
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeat):
        for name in names if round_ % 2 == 0 else reversed(names):
            with trials[name]() as action:
                gc.collect()
                start = time.perf_counter()
                action()
                times[name].append(time.perf_counter() - start)
    return times


@dataclass(frozen=True)
class Check:
    """One measured value against its bound."""

    name: str
    value: float
    bound: float
    unit: str
    detail: str

    @property
    def ok(self) -> bool:
        return self.value <= self.bound

    def line(self) -> str:
        verdict = "ok" if self.ok else "OVER"
        value = f"{self.value:.2f}{self.unit}"
        bound = f"{self.bound:.2f}{self.unit}"
        return f"  {self.name:<34} {value:>11}  bound {bound:>9}  {verdict:<4}  {self.detail}"


def ratio_check(name: str, subject: list[float], floor: list[float], bound: float) -> Check:
    """Median subject time over median floor time."""
    mid_subject, mid_floor = statistics.median(subject), statistics.median(floor)
    best = min(subject) / min(floor)
    return Check(
        name=name,
        value=mid_subject / mid_floor,
        bound=bound,
        unit="x",
        detail=(
            f"{mid_subject * 1000:9.1f} ms vs floor {mid_floor * 1000:8.1f} ms"
            f"  (median of {len(subject)}; min/min {best:.2f}x)"
        ),
    )
