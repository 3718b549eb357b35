"""``roteiro-memory pack`` on a large store: the session-start digest answers
within a second, at the default budget and at the largest one.

    python bench/pack.py                     # 100,000 records, 7 runs each
    python bench/pack.py --records 20000 --repeat 5

The store is ``bench/hooks.py``'s (every kind, half anchored, one in fifty
superseded), with a twentieth of its anchors' nodes then changed, so there
are records about changed code to find.  Each run is the installed console
script, as a session-start hook runs it, with ``--no-sync`` (the store has
no repository to sync from).  Wall time is printed beside the command's CPU
time (user + system) and ``python -c pass`` run interleaved, for scale; the
verdict is on CPU time, which a shared machine's load disturbs least.
Exit status 0 when both budgets are within the bound.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from hooks import ENV, build_store, script
from measure import Check, floor_line, interleave, report

BOUND_S = 1.0


def change_some_nodes(path: Path) -> None:
    """A twentieth of the anchored nodes get another blob: their records drift."""
    from roteiro_memory.results import GraphNode
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    with SQLiteStore(path) as store:
        store.put_nodes(
            GraphNode(f"py:pkg/mod{n}.py::Client.get", path=f"pkg/mod{n}.py", blob=f"x{n}")
            for n in range(0, 500, 20)
        )


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(prog="bench/pack.py", description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    from roteiro_memory.app.pack import DEFAULT_PACK_BUDGET, MAX_BUDGET

    with tempfile.TemporaryDirectory(prefix="roteiro-bench-pack-") as folder:
        store = Path(folder) / "memory.db"
        started = time.perf_counter()
        build_store(store, args.records)
        change_some_nodes(store)
        print(f"store: {args.records:,} records, built in {time.perf_counter() - started:.1f} s")
        budgets = {"default": DEFAULT_PACK_BUDGET, "largest": MAX_BUDGET}
        cpu: dict[str, list[float]] = {name: [] for name in budgets}
        stale: dict[str, int] = {}

        def trial(name: str) -> Callable[[], contextlib.AbstractContextManager[object]]:
            argv = [*script("roteiro-memory"), "pack", "--no-sync", "--db", str(store)]
            argv += ["--budget", str(budgets[name])]

            @contextlib.contextmanager
            def run() -> Iterator[Callable[[], object]]:
                def action() -> object:
                    before = _cpu()
                    done = subprocess.run(argv, env=ENV, check=True, capture_output=True, text=True)
                    cpu[name].append(_cpu() - before)
                    _, _, changed = done.stdout.partition("## Changed since recorded")
                    stale[name] = changed.count("\n- ")
                    return done

                yield action

            return run

        @contextlib.contextmanager
        def floor() -> Iterator[Callable[[], object]]:
            yield lambda: subprocess.run([sys.executable, "-c", "pass"], env=ENV, check=True)

        times = interleave(
            {"floor": floor, **{name: trial(name) for name in budgets}},
            args.repeat,
            warmup=True,
        )
    print(floor_line(times["floor"]))
    checks = []
    for name, budget in budgets.items():
        wall = statistics.median(times[name])
        checks.append(
            Check(
                name=f"pack --budget {budget} ({name})",
                value=statistics.median(cpu[name][1:]),
                bound=BOUND_S,
                unit=" s",
                detail=f"cpu (median of {args.repeat}); wall median {wall:.2f} s; "
                f"{stale[name]} records about changed code shown",
            )
        )
    return report("pack", checks)


if __name__ == "__main__":
    raise SystemExit(main())
