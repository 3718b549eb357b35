"""Performance targets of the store, each a ratio against a floor.

    python bench/run.py            # the full sizes: 1 to 3 minutes, ~5 GB of scratch I/O
    python bench/run.py --quick    # a small smoke run, well under a minute
    python bench/run.py --records 50000 --repeat 7 --profile

Builds its own data in a temporary directory and prints each measured value
beside its bound, then one summary line.  Exit status 0 when every value is
within its bound, 1 when any is over, 2 on a usage error.

Targets (bounds are ratios of median CPU times, floor and subject interleaved;
wall times are printed beside them):

1. ``recall`` with limit 10, decay ``none`` and ``exponential``, over the live
   records of a store that also holds superseded ones and anchors in all five
   states: at most 1.0x fetching the live rows' ranking inputs with one plain
   SELECT.
2. The same recall with a two-token query: at most 1.0x the same floor.
3. ``cache_sweep`` of a full tier to half its size: at most 1.5x reading the
   sweep's columns and deleting the same keys in one transaction; and peak
   memory growth during the sweep at most 32 MiB, measured in a fresh process.
4. ``record_many`` of a batch: at most 2.0x a bare ``executemany`` INSERT of
   the same rows -- the records and the term index rows written with them.
5. ``search``, limit 10, of four query shapes over 100,000 and 1,000,000
   live records: within 10x tantivy and 0.25x the previous version's search,
   each result checked against an exhaustive scorer; the index against
   FTS5's, ``record()`` and the build against FTS5's, latencies from 10,000
   records up, what a query's words cost and ``roteiro-check-store`` against
   ``PRAGMA integrity_check`` (``bench/search.py``, ``bench/searchcost.py``).
6. ``recall`` limit 10 that stops early, over the largest of those: at most
   0.25x the full-scan ranking it replaced.

The scenarios and floors are backend-agnostic where they can be
(``workload``, ``targets``); what is specific to SQLite is in
``sqlite_backend``.  Another backend adds a module like it and an entry in
:data:`BACKENDS`.  ``--profile`` prints, to stderr, each subject's statements
with their query plans and a profile of where its Python time went.
"""

from __future__ import annotations

import argparse
import enum
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from measure import Check
from search import search_checks, shape_checks
from sqlite_backend import SQLiteBackend
from targets import Backend, recall_checks, record_many_checks, sweep_checks, sweep_memory
from workload import MIB, QUICK, Sizes

BACKENDS: dict[str, Callable[[Path], Backend]] = {"sqlite": SQLiteBackend}
"""Benchmark backends by name, each built from the scratch directory.
PostgreSQL is not among them: ``--postgres [DSN]`` runs ``bench/postgres.py``
after SQLite (recall, sweep and search, with the same ``--search-records``),
whose ratios are of wall-clock time, since the server does the work in
another process."""
TARGETS = ("recall", "sweep", "record_many", "search")


class ExitCode(enum.IntEnum):
    OK = 0
    """Every measured value is within its bound."""
    OVER = 1
    """At least one value is over its bound."""
    USAGE = 2
    """The command line was wrong (argparse's own status)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bench/run.py", description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument("--records", type=int, help="live records (default 100000)")
    parser.add_argument("--nodes", type=int, help="graph nodes (default 10000)")
    parser.add_argument("--cache-entries", type=int, help="cache entries (default 65536)")
    parser.add_argument("--payload", type=int, help="bytes per cache payload (default 4096)")
    parser.add_argument("--budget-mib", type=int, help="sweep budget in MiB (default 128)")
    parser.add_argument("--batch", type=int, help="records per record_many (default 10000)")
    parser.add_argument("--repeat", type=int, help="timed runs of each (default 7)")
    parser.add_argument(
        "--only", choices=TARGETS, action="append", help="run only this target (repeatable)"
    )
    parser.add_argument("--dir", type=Path, help="scratch directory (default: a temporary one)")
    parser.add_argument(
        "--profile", action="store_true", help="print statements, plans and profiles to stderr"
    )
    parser.add_argument(
        "--postgres",
        metavar="DSN",
        nargs="?",
        const="",
        help="also measure recall, sweep and search on PostgreSQL (bench/postgres.py), at DSN"
        " or on a server it starts when none is given",
    )
    add_search_records(parser)
    # Internal: the fresh process the sweep's memory is measured in.
    parser.add_argument("--sweep-memory", nargs=4, help=argparse.SUPPRESS)
    return parser


def _sizes(args: argparse.Namespace) -> Sizes:
    sizes = QUICK if args.quick else Sizes()
    chosen = {
        "records": args.records,
        "nodes": args.nodes,
        "cache_entries": args.cache_entries,
        "payload_bytes": args.payload,
        "budget_bytes": args.budget_mib * MIB if args.budget_mib is not None else None,
        "batch": args.batch,
        "repeat": args.repeat,
    }
    return replace(sizes, **{name: value for name, value in chosen.items() if value is not None})


def add_search_records(parser: argparse.ArgumentParser) -> None:
    """``--search-records``, read by :func:`_search_counts`: one option for
    this script and ``bench/postgres.py``."""
    parser.add_argument(
        "--search-records",
        type=int,
        action="append",
        metavar="N",
        help="live records for the search and early-stop recall targets (repeatable;"
        " default 100000 and 1000000, 20000 with --quick)",
    )


def _search_counts(args: argparse.Namespace) -> list[int]:
    """The record counts of the search targets."""
    chosen: list[int] | None = args.search_records
    return chosen or ([20_000] if args.quick else [100_000, 1_000_000])


def _sweep_child(backend: str, scratch: Path) -> Any:
    """Run the sweep's memory measurement in a fresh interpreter."""

    def child(locator: str, budget: int, mode: str) -> dict[str, Any]:
        command = [
            sys.executable,
            str(Path(__file__).resolve()),
            "--sweep-memory",
            backend,
            locator,
            str(budget),
            mode,
        ]
        done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=scratch)
        if done.returncode != 0:
            raise RuntimeError(f"sweep memory process failed:\n{done.stderr}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        return result

    return child


def _run(
    backend: Backend,
    sizes: Sizes,
    only: Sequence[str],
    profile: bool,
    search_counts: Sequence[int] = (),
) -> list[Check]:
    def report(line: str) -> None:
        print(line, flush=True)

    def debug(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    trace = debug if profile else None
    checks: list[Check] = []
    if "recall" in only:
        checks += recall_checks(backend, sizes, report, trace)
        _show(checks[-3:])
    if "sweep" in only:
        child = _sweep_child(backend.name, Path(backend.locator("x")).parent)
        checks += sweep_checks(backend, sizes, report, trace, child)
        _show(checks[-3:])
    if "record_many" in only:
        checks += record_many_checks(backend, sizes, report, trace)
        _show(checks[-1:])
    if "search" in only:
        scratch = Path(backend.locator("x")).parent
        checks += shape_checks(backend, sizes, report, list(search_counts), scratch)
        found = search_checks(backend, sizes, report, trace, list(search_counts), verified=True)
        checks += found
        _show(found)
    return checks


def _show(checks: Sequence[Check]) -> None:
    for check in checks:
        print(check.line(), flush=True)


def _summary(checks: Sequence[Check]) -> str:
    over = [check for check in checks if not check.ok]
    if not over:
        return f"bench: {len(checks)}/{len(checks)} within bounds"
    named = "; ".join(
        f"{c.name} {c.value:.2f}{c.unit.strip()} > {c.bound:.2f}{c.unit.strip()}" for c in over
    )
    return f"bench: {len(over)} of {len(checks)} over bound: {named}"


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.sweep_memory is not None:
        name, locator, budget, mode = args.sweep_memory
        result = sweep_memory(BACKENDS[name](Path(locator).parent), locator, int(budget), mode)
        print(json.dumps(result))
        return ExitCode.OK
    sizes = _sizes(args)
    only = args.only or list(TARGETS)
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="roteiro-bench-", dir=args.dir) as scratch:
        backend = BACKENDS["sqlite"](Path(scratch))
        print(
            f"bench: backend {backend.name}, {sizes.repeat} timed runs each, scratch {scratch}",
            flush=True,
        )
        counts = _search_counts(args)
        checks = _run(backend, sizes, only, args.profile, counts)
    if args.postgres is not None:
        import postgres

        pg_only = [target for target in only if target in postgres.TARGETS]
        checks += postgres.run_checks(args.postgres or None, sizes, pg_only, counts)
    print(_summary(checks), flush=True)
    return ExitCode.OK if all(check.ok for check in checks) else ExitCode.OVER


if __name__ == "__main__":
    sys.exit(main())
