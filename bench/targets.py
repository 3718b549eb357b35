"""The four performance targets, written once against any benchmark backend.

Each function builds its scenario through the store's own operations where
that is affordable (graph, records) and through the backend's bulk loader
where it is not (a 256 MB cache tier), times the subject against its floor,
and returns the checks.  Nothing here names a database engine.
"""

from __future__ import annotations

import contextlib
import cProfile
import gc
import io
import itertools
import pstats
import resource
import time
import tracemalloc
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol

from measure import Check, Trial, cpu_ratio_check, measure_runs
from workload import (
    MIB,
    QUERY,
    CacheRow,
    Sizes,
    build_episodic,
    cache_rows,
    initial_nodes,
    memory_writes,
    settle_nodes,
)

from roteiro_memory.semantics import AnchorState

__all__ = [
    "Backend",
    "recall_checks",
    "record_many_checks",
    "sweep_checks",
    "sweep_memory",
]

RECALL_LIMIT = 10
RECALL_BOUND = 1.0
SWEEP_BOUND = 1.5
SWEEP_MEMORY_BOUND_MIB = 32.0
RECORD_MANY_BOUND = 2.0

Report = Callable[[str], None]
SweepChild = Callable[[str, int, str], dict[str, Any]]
"""Runs :func:`sweep_memory` in a fresh process: (locator, budget, mode)."""


class Backend(Protocol):
    """What the targets need from a backend (see ``sqlite_backend``)."""

    name: str

    def locator(self, label: str) -> str: ...
    def create(self, label: str) -> Any: ...
    def open(self, locator: str) -> Any: ...
    def clone(self, source: str, label: str) -> str: ...
    def discard(self, label: str) -> None: ...
    def size_bytes(self, locator: str) -> int: ...
    def load_cache(
        self, store: Any, rows: Iterable[CacheRow], *, ticks: int, generation: int
    ) -> None: ...
    def anchor_states(self, store: Any, tier: str) -> dict[str, int]: ...
    def cache_keys(self, store: Any) -> set[str]: ...
    def written_rows(self, store: Any) -> dict[str, list[tuple[Any, ...]]]: ...
    def recall_floor(self, store: Any) -> int: ...
    def sweep_floor(self, store: Any, doomed: Sequence[str]) -> int: ...
    def insert_floor(self, store: Any, rows: dict[str, list[tuple[Any, ...]]]) -> None: ...
    def statements(self, store: Any, action: Callable[[], object]) -> list[str]: ...
    def plan(self, store: Any, statement: str) -> Iterator[str]: ...


def _states(counts: dict[str, int]) -> str:
    return ", ".join(f"{state.value} {counts.get(state.value, 0):,}" for state in AnchorState)


def _steady(action: Callable[[], object]) -> Trial:
    """A trial with nothing to prepare."""
    return lambda: contextlib.nullcontext(action)


def diagnose(
    backend: Backend, store: Any, name: str, action: Callable[[], object], out: Report
) -> None:
    """Run ``action`` once, printing the statements it ran, their plans and
    where the Python time went."""
    profiler = cProfile.Profile()

    def traced() -> None:
        profiler.enable()
        try:
            action()
        finally:
            profiler.disable()

    out(f"--- {name}: statements and plans")
    for statement, times in _runs(backend.statements(store, traced)):
        repeated = f" (and {times - 1:,} more like it)" if times > 1 else ""
        out(f"  {statement[:400]}{' ...' if len(statement) > 400 else ''}{repeated}")
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            for step in backend.plan(store, statement):
                out(f"      plan: {step}")
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(12)
    out(f"--- {name}: profile (own time first)")
    for line in text.getvalue().splitlines():
        if line.strip() and not line.startswith(("   Ordered by", "         ")):
            out(f"  {line}")


def _runs(statements: list[str]) -> Iterator[tuple[str, int]]:
    """Consecutive statements of one shape (an ``executemany``) as one."""
    shape = lambda text: text[:48]  # noqa: E731
    for _, group in itertools.groupby(statements, key=shape):
        items = list(group)
        yield items[0], len(items)


# --- 1 and 2: recall ---------------------------------------------------------


def recall_checks(
    backend: Backend, sizes: Sizes, report: Report, debug: Report | None
) -> list[Check]:
    store = backend.create("episodic")
    try:
        start = time.perf_counter()
        live, matching = build_episodic(store, sizes)
        built = time.perf_counter() - start
        listing = store.recall(limit=1)
        if listing.live != live:
            raise RuntimeError(f"built {live} live records but the store counts {listing.live}")
        report(
            f"episodic tier: {listing.live:,} live + {listing.superseded:,} superseded records,"
            f" {sizes.nodes:,} nodes; built in {built:.1f} s"
        )
        report(
            f"  anchor states of live records: {_states(backend.anchor_states(store, 'episodic'))}"
        )
        report(
            f"  query {QUERY!r} matches {matching:,} live records ({100 * matching / live:.0f}%)"
        )
        trials = {
            "floor": _steady(lambda: backend.recall_floor(store)),
            "none": _steady(lambda: store.recall(decay="none", limit=RECALL_LIMIT)),
            "exponential": _steady(lambda: store.recall(decay="exponential", limit=RECALL_LIMIT)),
            "query": _steady(lambda: store.recall(QUERY, decay="none", limit=RECALL_LIMIT)),
        }
        times = measure_runs(trials, sizes.repeat, warmup=True)
        if debug is not None:
            diagnose(backend, store, "recall floor", lambda: backend.recall_floor(store), debug)
            for name in ("none", "exponential", "query"):
                with trials[name]() as action:
                    diagnose(backend, store, f"recall {name}", action, debug)
    finally:
        store.close()
        backend.discard("episodic")
    floor = times["floor"]
    return [
        cpu_ratio_check("recall decay=none limit=10", times["none"], floor, RECALL_BOUND),
        cpu_ratio_check(
            "recall decay=exponential limit=10", times["exponential"], floor, RECALL_BOUND
        ),
        cpu_ratio_check("recall 2-token query limit=10", times["query"], floor, RECALL_BOUND),
    ]


# --- 3: sweep ----------------------------------------------------------------


def _build_cache_tier(backend: Backend, sizes: Sizes, report: Report) -> str:
    """Build the tier once, closed, and return where it is."""
    start = time.perf_counter()
    store = backend.create("cache-tier")
    try:
        store.put_nodes(initial_nodes(sizes))
        # Entries are of generation 0 and the clock is at 1: the current-
        # generation pin holds nothing, so only the most recent entry is pinned.
        backend.load_cache(
            store, cache_rows(sizes, generation=0), ticks=sizes.cache_entries, generation=1
        )
        settle_nodes(store, sizes)
        stats = store.cache_stats(sizes.budget_bytes)
        states = backend.anchor_states(store, "cache")
    finally:
        store.close()
    tier = backend.locator("cache-tier")
    report(
        f"cache tier: {stats.entries:,} entries, {stats.bytes / MIB:.1f} MiB counted"
        f" ({backend.size_bytes(tier) / MIB:.0f} MiB stored), budget"
        f" {sizes.budget_bytes / MIB:.0f} MiB; built in {time.perf_counter() - start:.1f} s"
    )
    report(f"  anchor states of entries: {_states(states)}")
    return tier


@contextlib.contextmanager
def _copy_of(backend: Backend, tier: str, label: str) -> Iterator[Any]:
    """A store opened on a fresh copy of the tier, discarded afterwards."""
    store = backend.open(backend.clone(tier, label))
    try:
        yield store
    finally:
        store.close()
        backend.discard(label)


@contextlib.contextmanager
def _fresh(backend: Backend, sizes: Sizes, label: str) -> Iterator[Any]:
    """A fresh store holding the graph and a tree witness, discarded afterwards."""
    store = backend.create(label)
    try:
        store.put_nodes(initial_nodes(sizes))
        store.set_tree("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
        yield store
    finally:
        store.close()
        backend.discard(label)


def _on(
    stores: Callable[[], contextlib.AbstractContextManager[Any]], act: Callable[[Any], object]
) -> Trial:
    """A trial that acts on a store ``stores`` prepares."""

    @contextlib.contextmanager
    def trial() -> Iterator[Callable[[], object]]:
        with stores() as store:
            yield lambda: act(store)

    return trial


def sweep_checks(
    backend: Backend, sizes: Sizes, report: Report, debug: Report | None, child: SweepChild
) -> list[Check]:
    tier = _build_cache_tier(backend, sizes, report)
    budget = sizes.budget_bytes
    # One sweep on a copy says which keys go; the floor deletes those.
    with _copy_of(backend, tier, "sweep-probe") as store:
        before = backend.cache_keys(store)
        result = store.cache_sweep(budget)
        doomed = sorted(before - backend.cache_keys(store))
    report(
        f"  sweep: scanned {result.scanned:,}, pinned {result.pinned:,}, evicted"
        f" {result.evicted:,} ({result.freed_bytes / MIB:.1f} MiB), retained"
        f" {result.retained_bytes / MIB:.1f} MiB, over budget: {result.over_budget}"
    )

    def copy() -> contextlib.AbstractContextManager[Any]:
        return _copy_of(backend, tier, "sweep-run")

    acts: dict[str, Callable[[Any], object]] = {
        "floor": lambda s: backend.sweep_floor(s, doomed),
        "sweep": lambda s: s.cache_sweep(budget),
    }
    times = measure_runs(
        {name: _on(copy, act) for name, act in acts.items()}, sizes.repeat, warmup=False
    )
    if debug is not None:
        for name, act in acts.items():
            with copy() as s:
                diagnose(backend, s, f"sweep {name}", lambda: act(s), debug)  # noqa: B023
    memory = {}
    for mode in ("rss", "python"):
        locator = backend.clone(tier, "sweep-memory")
        try:
            memory[mode] = child(locator, budget, mode)
        finally:
            backend.discard("sweep-memory")
    backend.discard("cache-tier")
    rss, python = memory["rss"], memory["python"]
    return [
        cpu_ratio_check("sweep to budget", times["sweep"], times["floor"], SWEEP_BOUND),
        Check(
            "sweep peak RSS growth",
            rss["rss_growth"] / MIB,
            SWEEP_MEMORY_BOUND_MIB,
            " MiB",
            f"resident {rss['rss_before'] / MIB:.1f} MiB before, peak ({rss['peak_source']})"
            f" {rss['rss_after'] / MIB:.1f} MiB after, in a fresh process;"
            f" sweep took {rss['seconds'] * 1000:.0f} ms",
        ),
        Check(
            "sweep peak Python allocations",
            python["python_peak"] / MIB,
            SWEEP_MEMORY_BOUND_MIB,
            " MiB",
            "tracemalloc peak, in a second fresh process",
        ),
    ]


def sweep_memory(backend: Backend, locator: str, budget: int, mode: str) -> dict[str, Any]:
    """Sweep the store at ``locator`` and say how much memory that took.

    Meant for a fresh process.  ``rss`` measures peak resident growth alone;
    ``python`` traces Python allocations (whose bookkeeping would swell the
    resident size, hence a separate run).
    """
    store = backend.open(locator)
    gc.collect()
    before = _resident_bytes()
    peak_reset = _reset_peak()
    if mode == "python":
        tracemalloc.start()
    start = time.perf_counter()
    result = store.cache_sweep(budget)
    seconds = time.perf_counter() - start
    python_peak = tracemalloc.get_traced_memory()[1] if mode == "python" else 0
    tracemalloc.stop()
    after = _peak_bytes() if peak_reset else _maxrss_bytes()
    store.close()
    return {
        "rss_before": before,
        "rss_after": after,
        "rss_growth": after - before,
        "peak_source": "VmHWM" if peak_reset else "ru_maxrss",
        "python_peak": python_peak,
        "evicted": result.evicted,
        "seconds": seconds,
    }


# Peak resident size.  ru_maxrss is the obvious measure, but on Linux a child
# inherits its parent's peak across fork and exec, so a child of a large
# benchmark process would report the parent's size.  Where the kernel lets us,
# reset this process's peak to its current size just before the sweep
# (clear_refs "5") and read the peak back (VmHWM); elsewhere fall back to
# ru_maxrss over the resident size before.


def _maxrss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _resident_bytes() -> int:
    """Resident set size now (Linux), or the peak so far elsewhere."""
    now = _status_kib("VmRSS")
    return now if now is not None else _maxrss_bytes()


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
    except OSError:
        return False
    return _status_kib("VmHWM") is not None


def _peak_bytes() -> int:
    peak = _status_kib("VmHWM")
    return peak if peak is not None else _maxrss_bytes()


# --- 4: record_many ----------------------------------------------------------


def record_many_checks(
    backend: Backend, sizes: Sizes, report: Report, debug: Report | None
) -> list[Check]:
    writes = memory_writes(sizes, sizes.batch)
    with _fresh(backend, sizes, "insert-probe") as store:
        store.record_many(writes)
        rows = backend.written_rows(store)
    # The floor must write exactly what record_many wrote.
    with _fresh(backend, sizes, "insert-check") as store:
        backend.insert_floor(store, rows)
        if backend.written_rows(store) != rows:
            raise RuntimeError("the insert floor did not write what record_many wrote")
    report(f"record_many: {len(writes):,} records into a fresh store with {sizes.nodes:,} nodes")

    def fresh() -> contextlib.AbstractContextManager[Any]:
        return _fresh(backend, sizes, "insert-run")

    trials = {
        "floor": _on(fresh, lambda s: backend.insert_floor(s, rows)),
        "record_many": _on(fresh, lambda s: s.record_many(writes)),
    }
    times = measure_runs(trials, sizes.repeat, warmup=True)
    if debug is not None:
        with fresh() as store:
            diagnose(backend, store, "record_many", lambda: store.record_many(writes), debug)
    name = f"record_many of {len(writes):,}"
    return [cpu_ratio_check(name, times["record_many"], times["floor"], RECORD_MANY_BOUND)]
