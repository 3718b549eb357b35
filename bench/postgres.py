"""The recall and sweep targets against the PostgreSQL backend.

    python bench/postgres.py                 # starts a server itself (a kept cluster)
    python bench/postgres.py --dsn postgresql://HOST/postgres
    python bench/postgres.py --quick
    python bench/postgres.py --only search --search-records 100000

The scenarios, sizes and floors are those of ``run.py`` (see its docstring),
on PostgreSQL (``postgres_backend``):

1. ``recall`` with limit 10 (decay ``none``, ``exponential``, and a two-token
   query) over 100,000 live records: at most 1.0x fetching the live rows'
   ranking inputs with one plain SELECT.
2. ``cache_sweep`` of a full tier to its budget: at most 1.5x reading the
   sweep's columns and deleting the same keys in one transaction.
3. ``search`` limit 10 of the four query shapes of ``bench/search.py`` over
   100,000 and 1,000,000 live records (``--search-records``; 20,000 with
   ``--quick``): each at most 1.0x a ``tsvector`` column with a GIN index
   ranked by ``ts_rank_cd`` for its top 10 (any of the words), every run
   checking the results equal the exhaustive scorer's and that the search
   stopped early; the term index at most 2x the GIN index and its tsvector
   column; at 100,000, ``import`` of an export at most 3x COPY of the same
   records' text into the floor's table and building its GIN index.  And
   ``recall`` limit 10 that stops early, over the largest: at most 0.25x
   the full-scan ranking, with the same ids.

Ratios are of wall-clock medians, floor and subject interleaved: the work is
split between this process and the server, so this process's CPU time alone
would say little.  Without ``--dsn`` the server is started with ``initdb`` and
``pg_ctl`` (``tests/pg_server.py``) on a cluster kept in
``roteiro-bench-pg/`` under the system's temporary directory, and stopped
after; without the binaries the run says so and exits 0, measuring nothing.
Exit status 0 when every ratio is within its bound, 1 when one is over.

The search stores take long to build (1,000,000 records through
``record_many``), so each is built once and kept as a database of its own,
``roteiro_bench_search_<N>_v<schema version>``, vacuumed and analyzed; a later
run on the same server (the kept cluster, or ``--dsn``) reuses it; the
1,000,000-record one takes about 12 minutes and 5 GB.  Drop the
database to rebuild one, or delete ``roteiro-bench-pg/`` (with no server
running on it) to start from an empty cluster; every other database a run
makes is dropped when its target is done.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from measure import Check, measure_runs, ratio_check, wall_ratio_check
from run import _search_counts, _sizes, add_search_records
from search import ABSENT_WORD, NO_POSTING, SHAPES, exhaustive, kept_store, search_checks, verify
from targets import (
    RECALL_BOUND,
    RECALL_LIMIT,
    SWEEP_BOUND,
    _build_cache_tier,
    _copy_of,
    _on,
    _states,
    _steady,
)
from workload import QUERY, RARE_WORD, Sizes, build_episodic

ROOT = Path(__file__).resolve().parent.parent
KEPT_CLUSTER = Path(
    tempfile.gettempdir() if len(tempfile.gettempdir()) <= 60 else "/tmp", "roteiro-bench-pg"
)
"""Where the server started without ``--dsn`` keeps its cluster (a short
path: the server's socket lives in it)."""
TARGETS = ("recall", "sweep", "search")
SHAPE_BOUND = 1.0
INDEX_BOUND = 2.0
IMPORT_BOUND = 3.0


def shape_checks(backend: object, sizes: Sizes, counts: Sequence[int]) -> list[Check]:
    """Target 3's shapes, sizes and import, on PostgreSQL (wall time)."""
    from postgres_backend import PostgresBackend

    assert isinstance(backend, PostgresBackend)
    checks: list[Check] = []

    def report(line: str) -> None:
        print(line, flush=True)

    for records in counts:
        store = kept_store(backend, records, sizes, report)
        try:
            made = backend.fts_floor(store)
            if made is not None:
                report(f"  tsvector + GIN floor built in {made:.1f} s")
            verify(store, report, exhaustive(store))
            ours, theirs = backend.index_bytes(store), backend.fts_bytes(store)
            checks.append(
                Check(
                    f"pg index size vs GIN + tsvector, {records:,}",
                    ours / theirs,
                    INDEX_BOUND,
                    "x",
                    f"{ours / 2**20:.1f} MiB vs {theirs / 2**20:.1f} MiB",
                )
            )
            print(checks[-1].line(), flush=True)
            for name, query in SHAPES.items():
                trials = {
                    "floor": _steady(lambda q=query, s=store: backend.fts_search(s, q)),
                    "search": _steady(lambda q=query, s=store: s.search(q, limit=RECALL_LIMIT)),
                }
                if query == RARE_WORD:
                    if store.search(ABSENT_WORD, limit=RECALL_LIMIT).results:
                        raise RuntimeError(f"a record holds {ABSENT_WORD!r}")
                    trials[NO_POSTING] = _steady(
                        lambda s=store: s.search(ABSENT_WORD, limit=RECALL_LIMIT)
                    )
                times = measure_runs(trials, sizes.repeat, warmup=True)
                checks.append(
                    wall_ratio_check(
                        f"pg search {name} vs ts_rank_cd, {records:,}",
                        times["search"],
                        times["floor"],
                        SHAPE_BOUND,
                    )
                )
                print(checks[-1].line(), flush=True)
                if NO_POSTING in times:
                    least = statistics.median(times[NO_POSTING].wall)
                    floor = statistics.median(times["floor"].wall)
                    print(
                        f"  floor: a search of a word no record holds costs {least * 1000:.2f} ms"
                        f" (wall), {least / floor:.2f}x ts_rank_cd's rare-token search, where"
                        f" the bound is {SHAPE_BOUND:.2f}x",
                        flush=True,
                    )
            if records == 100_000:
                checks.append(_import_check(backend, store, sizes))
                print(checks[-1].line(), flush=True)
        finally:
            store.close()
    return checks


def _import_check(backend: Any, store: Any, sizes: Sizes) -> Check:
    """``import`` of the store's export into a fresh store, against COPY of
    the same records' text and a GIN index over it (wall, medians)."""
    from postgres_backend import _floor_rows, fts_load

    from roteiro_memory.transfer import read_export

    parsed = read_export(list(store.export_lines()))
    rows = _floor_rows(store)
    imported: list[float] = []
    copied: list[float] = []
    for _ in range(max(1, min(sizes.repeat, 3))):
        fresh = backend.create("import-run")
        try:
            start = time.perf_counter()
            fresh.import_export(parsed)
            imported.append(time.perf_counter() - start)
            conn = fresh.connection
            start = time.perf_counter()
            with conn.transaction():
                fts_load(conn, "import_floor", rows)
            copied.append(time.perf_counter() - start)
        finally:
            fresh.close()
            backend.discard("import-run")
    return ratio_check(f"pg import of {len(rows):,} vs COPY + GIN", imported, copied, IMPORT_BOUND)


def recall_checks(backend: object, sizes: Sizes) -> list[Check]:
    from postgres_backend import PostgresBackend

    assert isinstance(backend, PostgresBackend)
    store = backend.create("episodic")
    try:
        start = time.perf_counter()
        live, matching = build_episodic(store, sizes)
        store.connection.execute("VACUUM ANALYZE")
        listing = store.recall(limit=1)
        if listing.live != live:
            raise RuntimeError(f"built {live} live records but the store counts {listing.live}")
        print(
            f"episodic tier: {listing.live:,} live + {listing.superseded:,} superseded records,"
            f" {sizes.nodes:,} nodes; built in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        print(f"  anchor states: {_states(backend.anchor_states(store, 'episodic'))}")
        print(f"  query {QUERY!r} matches {matching:,} live records", flush=True)
        trials = {
            "floor": _steady(lambda: backend.recall_floor(store)),
            "none": _steady(lambda: store.recall(decay="none", limit=RECALL_LIMIT)),
            "exponential": _steady(lambda: store.recall(decay="exponential", limit=RECALL_LIMIT)),
            "query": _steady(lambda: store.recall(QUERY, decay="none", limit=RECALL_LIMIT)),
        }
        times = {
            name: t.wall for name, t in measure_runs(trials, sizes.repeat, warmup=True).items()
        }
    finally:
        store.close()
        backend.discard("episodic")
    floor = times["floor"]
    return [
        ratio_check("pg recall decay=none limit=10", times["none"], floor, RECALL_BOUND),
        ratio_check("pg recall exponential limit=10", times["exponential"], floor, RECALL_BOUND),
        ratio_check("pg recall 2-token query limit=10", times["query"], floor, RECALL_BOUND),
    ]


def sweep_checks(backend: object, sizes: Sizes) -> list[Check]:
    from postgres_backend import PostgresBackend

    assert isinstance(backend, PostgresBackend)
    tier = _build_cache_tier(backend, sizes, lambda line: print(line, flush=True))
    budget = sizes.budget_bytes
    with _copy_of(backend, tier, "sweep-probe") as store:
        before = backend.cache_keys(store)
        result = store.cache_sweep(budget)
        doomed = sorted(before - backend.cache_keys(store))
    print(
        f"  sweep: scanned {result.scanned:,}, pinned {result.pinned:,}, evicted"
        f" {result.evicted:,}, over budget: {result.over_budget}",
        flush=True,
    )

    def copy() -> contextlib.AbstractContextManager[object]:
        return _copy_of(backend, tier, "sweep-run")

    trials = {
        "floor": _on(copy, lambda s: backend.sweep_floor(s, doomed)),
        "sweep": _on(copy, lambda s: s.cache_sweep(budget)),
    }
    times = {name: t.wall for name, t in measure_runs(trials, sizes.repeat, warmup=False).items()}
    backend.discard("cache-tier")
    return [ratio_check("pg sweep to budget", times["sweep"], times["floor"], SWEEP_BOUND)]


@contextlib.contextmanager
def _server(dsn: str | None) -> Iterator[str | None]:
    """The DSN to measure against: ``dsn``, or that of a server started on
    :data:`KEPT_CLUSTER` and stopped after."""
    if dsn is not None:
        yield dsn
        return
    sys.path.insert(0, str(ROOT / "tests"))
    import pg_server  # type: ignore[import-not-found]  # tests/, put on the path above

    missing = pg_server.server_available()
    if missing is not None:
        print(f"bench/postgres.py: no server to measure against: {missing}")
        yield None
        return
    server = pg_server.PostgresServer(KEPT_CLUSTER)
    try:
        server.start()
        yield server.dsn()
    finally:
        server.stop()


def run_checks(
    dsn: str | None, sizes: Sizes, only: Sequence[str], search_counts: Sequence[int] = ()
) -> list[Check]:
    """Measure ``only`` (recall, sweep, search) on the server at ``dsn``, or
    on one started here; no checks when there is no server to be had.  The
    search targets run over stores of ``search_counts`` live records."""
    from postgres_backend import PostgresBackend

    checks: list[Check] = []
    with _server(dsn) as found:
        if found is None:
            return checks
        backend = PostgresBackend(found)
        print(f"bench: backend postgres, {sizes.repeat} timed runs each", flush=True)
        if "recall" in only:
            checks += recall_checks(backend, sizes)
            for check in checks[-3:]:
                print(check.line(), flush=True)
        if "sweep" in only:
            checks += sweep_checks(backend, sizes)
            print(checks[-1].line(), flush=True)
        if "search" in only and search_counts:
            checks += shape_checks(backend, sizes, search_counts)
            found = search_checks(
                backend,
                sizes,
                lambda line: print(line, flush=True),
                None,
                list(search_counts),
                ratio=wall_ratio_check,
                prefix="pg ",
                verified=True,
            )
            checks += found
            for check in found:
                print(check.line(), flush=True)
    return checks


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/postgres.py", description=__doc__)
    parser.add_argument(
        "--dsn", help="a server to use (default: start one on a cluster kept in roteiro-bench-pg/)"
    )
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--records", type=int, help="live records (default 100000)")
    parser.add_argument("--nodes", type=int)
    parser.add_argument("--cache-entries", type=int)
    parser.add_argument("--payload", type=int)
    parser.add_argument("--budget-mib", type=int)
    parser.add_argument("--batch", type=int)
    parser.add_argument("--repeat", type=int, help="timed runs of each (default 7)")
    add_search_records(parser)
    parser.add_argument("--only", choices=TARGETS, action="append")
    args = parser.parse_args(argv)
    checks = run_checks(args.dsn, _sizes(args), args.only or list(TARGETS), _search_counts(args))
    over = [c for c in checks if not c.ok]
    print(f"bench postgres: {len(checks) - len(over)}/{len(checks)} within bounds", flush=True)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
