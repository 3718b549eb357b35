"""Timing and bounds: interleaved repetitions, and what a check reports.

Every target is a ratio against a floor measured in the same run, on the same
data, with the floor and the subject runs interleaved (and their order
alternated) so a neighbour's load lands on both alike.  Ratios are taken
between medians, of wall time (:func:`ratio_check`) or of this process's CPU
time, user + system (:func:`cpu_ratio_check`).  CPU time suits in-process work
on a machine shared with test runs, where wall time mostly measures how long
we waited for a core; it does not count child processes, so a subject that
runs a command must use wall time.
"""

from __future__ import annotations

import gc
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Check",
    "Timing",
    "Trial",
    "cpu_ratio_check",
    "floor_line",
    "interleave",
    "measure_runs",
    "ratio_check",
    "report",
    "wall_ratio_check",
]

Trial = Callable[[], AbstractContextManager[Callable[[], object]]]
"""Prepares one run (untimed) and yields the action to time; cleans up after."""


@dataclass
class Timing:
    """Seconds per run, wall-clock and CPU, in run order."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)


def measure_runs(trials: dict[str, Trial], repeat: int, *, warmup: bool) -> dict[str, Timing]:
    """``repeat`` timed runs of each trial, interleaved, after one untimed run
    of each when ``warmup``."""
    names = list(trials)
    if warmup:
        for name in names:
            with trials[name]() as action:
                action()
    times = {name: Timing() for name in names}
    for round_ in range(repeat):
        for name in names if round_ % 2 == 0 else reversed(names):
            with trials[name]() as action:
                gc.collect()
                wall, cpu = time.perf_counter(), time.process_time()
                action()
                times[name].cpu.append(time.process_time() - cpu)
                times[name].wall.append(time.perf_counter() - wall)
    return times


def interleave(trials: dict[str, Trial], repeat: int, *, warmup: bool) -> dict[str, list[float]]:
    """Wall seconds per run of each trial, as :func:`measure_runs` times them."""
    return {
        name: timing.wall for name, timing in measure_runs(trials, repeat, warmup=warmup).items()
    }


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
    """Median subject wall time over median floor wall time."""
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


def wall_ratio_check(name: str, subject: Timing, floor: Timing, bound: float) -> Check:
    """:func:`ratio_check` of the timings' wall times."""
    return ratio_check(name, subject.wall, floor.wall, bound)


def cpu_ratio_check(name: str, subject: Timing, floor: Timing, bound: float) -> Check:
    """Median subject CPU time over median floor CPU time, wall times beside."""
    cpu_s, cpu_f = statistics.median(subject.cpu), statistics.median(floor.cpu)
    wall_s, wall_f = statistics.median(subject.wall), statistics.median(floor.wall)
    return Check(
        name=name,
        value=cpu_s / cpu_f,
        bound=bound,
        unit="x",
        detail=(
            f"cpu {cpu_s * 1000:6.0f} vs {cpu_f * 1000:6.0f} ms;"
            f" wall {wall_s * 1000:6.0f} vs {wall_f * 1000:6.0f} ms ({wall_s / wall_f:.2f}x);"
            f" medians of {len(subject.cpu)}"
        ),
    )


def floor_line(wall: list[float], cpu: float | None = None) -> str:
    """The floor's own time, so a reader of the ratios sees which machine
    (and which load) they were measured on."""
    mid = statistics.median(wall)
    spent = "" if cpu is None else f", CPU {cpu * 1000:.1f} ms"
    return (
        f"floor: python -c pass takes {mid * 1000:.1f} ms (median of {len(wall)}, "
        f"min {min(wall) * 1000:.1f} ms{spent}) -- Python {platform.python_version()} "
        f"on {platform.machine()} {sys.platform}, load average "
        f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )


def child_cpu_median(argv: list[str], cwd: Path, env: Mapping[str, str], repeat: int) -> float:
    """Median CPU seconds (user + sys) of running ``argv``, its own children
    included: less sensitive than wall time to neighbours competing for the
    cores."""
    spent = []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        spent.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return statistics.median(spent)


def report(label: str, checks: list[Check]) -> int:
    """Print every check and a summary line; the exit status (1 when any is over)."""
    for item in checks:
        print(item.line())
    failed = [c.name for c in checks if not c.ok]
    print(f"{label}: {len(checks) - len(failed)}/{len(checks)} within bounds")
    return 1 if failed else 0
