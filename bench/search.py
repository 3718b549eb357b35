"""The search arm and the early-stop recall, against floors on the same index.

5. ``search`` of the two-token query, limit 10, over N live records: at most
   1.5x the same term index queried by hand for its top 10 (one SQL
   statement summing the BM25 weights, the statistics read from the index's
   own rows), for N = 100,000 and 1,000,000 by default.
6. ``recall`` limit 10 (decay none), which reads live records in confidence
   order and stops early, over the largest N: at most 0.25x the full-scan
   ranking recall ran before (every live record scored and sorted in SQL),
   with the same ids in the same order.

Written once for any backend with the methods below (``sqlite_backend``,
``postgres_backend``).  A store of N records is built once through
``record_many`` and kept by the backend (``keep``), so later runs reuse it:
SQLite keeps a file under the system's temporary directory
(``roteiro-bench-search/``), PostgreSQL a database on its server (see
``bench/postgres.py``).  Ratios are of CPU time on SQLite, of wall-clock
time on PostgreSQL (``ratio``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from measure import Check, Timing, cpu_ratio_check, measure_runs
from targets import RECALL_LIMIT, Backend, Report, _steady, diagnose
from workload import QUERY, Sizes, build_episodic

__all__ = ["EARLY_RECALL_BOUND", "SEARCH_BOUND", "SearchBackend", "search_checks"]

SEARCH_BOUND = 1.5
EARLY_RECALL_BOUND = 0.25

Ratio = Callable[[str, Timing, Timing, float], Check]
"""How a subject's timings are judged against its floor's."""


class SearchBackend(Backend, Protocol):
    """What the search targets need beyond :class:`targets.Backend`."""

    def keep(self, label: str, build: Callable[[Any], object]) -> tuple[str, bool]: ...
    def search_floor(self, store: Any, query: str) -> list[tuple[int, float]]: ...
    def frequencies(self, store: Any, terms: Sequence[str]) -> dict[str, int]: ...
    def recall_full_scan(self, store: Any) -> list[int]: ...


def _store(backend: SearchBackend, records: int, sizes: Sizes, report: Report) -> Any:
    """A store holding ``records`` live records, built once and kept."""
    start = time.perf_counter()
    locator, built = backend.keep(
        f"search-{records}", lambda store: build_episodic(store, replace(sizes, records=records))
    )
    if built:
        report(
            f"search store: {records:,} live records, built in {time.perf_counter() - start:.0f} s"
        )
    else:
        report(f"search store: {records:,} live records, reused {locator}")
    return backend.open(locator)


def search_checks(
    backend: SearchBackend,
    sizes: Sizes,
    report: Report,
    debug: Report | None,
    counts: list[int],
    *,
    ratio: Ratio = cpu_ratio_check,
    prefix: str = "",
) -> list[Check]:
    """Targets 5 and 6 over stores of ``counts`` live records, the early
    stop over the largest; check names start with ``prefix``."""
    checks: list[Check] = []
    largest = max(counts)
    for records in counts:
        store = _store(backend, records, sizes, report)
        try:
            # The floor ranks by relevance alone; the arm multiplies in the
            # evidence, so their top 10 may differ while the work is the same.
            found = store.search(QUERY, limit=RECALL_LIMIT)
            report(
                f"  live {found.live:,}; query terms {found.terms}; document frequencies"
                f" {backend.frequencies(store, found.terms or [])}"
            )
            trials = {
                "floor": _steady(lambda: backend.search_floor(store, QUERY)),  # noqa: B023
                "search": _steady(lambda: store.search(QUERY, limit=RECALL_LIMIT)),  # noqa: B023
            }
            if records == largest:
                trials["full scan"] = _steady(lambda: backend.recall_full_scan(store))  # noqa: B023
                trials["early stop"] = _steady(lambda: store.recall(limit=RECALL_LIMIT))  # noqa: B023
                early = store.recall(limit=RECALL_LIMIT)
                if backend.recall_full_scan(store) != [r.record.id for r in early.results]:
                    raise RuntimeError("the early-stop recall differs from the full scan")
            times = measure_runs(trials, sizes.repeat, warmup=True)
            if debug is not None:
                for name, trial in trials.items():
                    with trial() as action:
                        diagnose(backend, store, f"{name} over {records:,}", action, debug)
        finally:
            store.close()
        checks.append(
            ratio(
                f"{prefix}search 2-token limit=10, {records:,}",
                times["search"],
                times["floor"],
                SEARCH_BOUND,
            )
        )
        if records == largest:
            checks.append(
                ratio(
                    f"{prefix}recall early stop vs full, {records:,}",
                    times["early stop"],
                    times["full scan"],
                    EARLY_RECALL_BOUND,
                )
            )
    return checks
