"""The search arm and the early-stop recall, against floors on the same index.

5. ``search`` of the two-token query, limit 10, over N live records: at most
   1.5x the same term index queried by hand for its top 10 (one SQL
   statement summing the BM25 weights, the statistics read from the index's
   own rows), for N = 100,000 and 1,000,000 by default.
6. ``recall`` limit 10 (decay none), which reads live records in confidence
   order and stops early, over the largest N: at most 0.25x the full-scan
   ranking recall ran before (every live record scored and sorted in SQL).

A store of N records is built once through ``record_many`` and kept under
the system's temporary directory (``roteiro-bench-search/``), so later runs
reuse it; delete the folder to rebuild.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from measure import Check, cpu_ratio_check, measure_runs
from targets import RECALL_LIMIT, Report, _steady, diagnose
from workload import QUERY, Sizes, build_episodic

from roteiro_memory.stores.sqlite.migrations import SCHEMA_VERSION
from roteiro_memory.stores.sqlite.store import SQLiteStore

__all__ = ["EARLY_RECALL_BOUND", "SEARCH_BOUND", "search_checks"]

SEARCH_BOUND = 1.5
EARLY_RECALL_BOUND = 0.25
CACHE = Path(tempfile.gettempdir()) / "roteiro-bench-search"


def _store(records: int, sizes: Sizes, report: Report) -> SQLiteStore:
    """A store holding ``records`` live records, built once and kept."""
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"search-{records}-v{SCHEMA_VERSION}.db"
    if path.exists():
        store = SQLiteStore(path)
        report(f"search store: {records:,} live records, reused {path}")
        return store
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    start = time.perf_counter()
    store = SQLiteStore(partial)
    build_episodic(store, replace(sizes, records=records))
    store.close()
    partial.rename(path)
    report(f"search store: {records:,} live records, built in {time.perf_counter() - start:.0f} s")
    return SQLiteStore(path)


def search_checks(
    backend: Any, sizes: Sizes, report: Report, debug: Report | None, counts: list[int]
) -> list[Check]:
    checks: list[Check] = []
    largest = max(counts)
    for records in counts:
        store = _store(records, sizes, report)
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
            cpu_ratio_check(
                f"search 2-token limit=10, {records:,}",
                times["search"],
                times["floor"],
                SEARCH_BOUND,
            )
        )
        if records == largest:
            checks.append(
                cpu_ratio_check(
                    f"recall early stop vs full, {records:,}",
                    times["early stop"],
                    times["full scan"],
                    EARLY_RECALL_BOUND,
                )
            )
    return checks
