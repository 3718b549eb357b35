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
3. ``search`` of the two-token query, limit 10, over 100,000 and 1,000,000
   live records (``--search-records``; 20,000 with ``--quick``): at most 1.5x
   the term index queried by hand for its top 10; and ``recall`` limit 10
   that stops early, over the largest: at most 0.25x the full-scan ranking,
   with the same ids (``bench/search.py``).

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
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from measure import Check, measure_runs, ratio_check, wall_ratio_check
from run import _search_counts, _sizes, add_search_records
from search import search_checks
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
from workload import QUERY, Sizes, build_episodic

ROOT = Path(__file__).resolve().parent.parent
KEPT_CLUSTER = Path(
    tempfile.gettempdir() if len(tempfile.gettempdir()) <= 60 else "/tmp", "roteiro-bench-pg"
)
"""Where the server started without ``--dsn`` keeps its cluster (a short
path: the server's socket lives in it)."""
TARGETS = ("recall", "sweep", "search")


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
            found = search_checks(
                backend,
                sizes,
                lambda line: print(line, flush=True),
                None,
                list(search_counts),
                ratio=wall_ratio_check,
                prefix="pg ",
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
