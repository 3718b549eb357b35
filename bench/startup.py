"""Start-up of the command line against ``python -c pass``.

    python bench/startup.py               # 10,000 records, 15 runs each
    python bench/startup.py --records 2000 --repeat 9

Builds a small committed repository whose store (in its git common directory,
where the command line looks) holds ``--records`` records, anchored to its
files and symbols, and syncs it once, so a run has nothing to sync; then lets
the tree settle (the stat cache is written only once every file changed more
than two seconds ago: ``roteiro_memory/repo/statcache.py``) and runs one
``recall`` to write it, as an agent's first call after a quiet moment does.
Then times, interleaved with ``python -c pass`` on the same interpreter:

1. ``roteiro-memory recall --json`` (the best 20, its default) -- the target: at most 3x;
   the stat cache vouches that nothing changed, so no git runs;
2. the same with ``--no-sync`` (no git at all), and
3. ``roteiro-memory recall --json --limit 0`` printing every record, for scale:
   that is encoding 10,000 records, not start-up, and has no bound; and
4. ``roteiro-memory sync``, which always asks git, for scale: what every
   command paid before the stat cache, and still pays after an edit.

Exit status 0 when the target is within its bound.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from measure import child_cpu_median, floor_line, interleave, ratio_check

BOUND = 3.0

ENV = {
    # Bytecode is cached, as in any installed package (this machine's
    # environment may switch that off): start-up, not compilation, is measured.
    **{
        k: v
        for k, v in os.environ.items()
        if not k.startswith("ROTEIRO_") and k != "PYTHONDONTWRITEBYTECODE"
    },
    "PYTHONPYCACHEPREFIX": os.path.join(tempfile.gettempdir(), "roteiro-bench-pycache"),
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

MODULE = """\
class Client{n}:
    def get(self, path):
        return path

    def post(self, path, body):
        return path, body


def helper{n}(value):
    return value + {n}
"""


def build(root: Path, records: int, script: str) -> None:
    for index in range(20):
        (root / f"mod{index}.py").write_text(MODULE.format(n=index))
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *argv], cwd=root, env=ENV, check=True)
    subprocess.run([script, "sync"], cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL)
    from roteiro_memory.store import MemoryWrite
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    kinds = ["lesson", "attempt", "decision", "pattern", "outcome"]
    anchors = [None]
    for index in range(20):
        anchors += [f"file:mod{index}.py", f"py:mod{index}.py::Client{index}.get"]
    with SQLiteStore(root / ".git" / "roteiro" / "memory.db") as store:
        store.record_many(
            MemoryWrite(
                kinds[i % 5],
                f"record {i}: the client retries on 503 and logs the request id",
                anchor=anchors[i % len(anchors)],
                confidence=(i % 10) / 10,
            )
            for i in range(records)
        )
    time.sleep(2.2)  # the stat cache's racy window (RACY_NS), and a margin
    subprocess.run(
        [script, "recall", "--json"], cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL
    )
    if not (root / ".git" / "roteiro" / "statcache.json").exists():
        raise SystemExit("bench/startup.py: the first recall wrote no stat cache")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    script = shutil.which("roteiro-memory")
    if script is None:
        sys.stderr.write("bench/startup.py: the roteiro-memory console script is not installed\n")
        return 2
    with tempfile.TemporaryDirectory(prefix="roteiro-startup-") as scratch:
        root = Path(scratch)
        build(root, options.records, script)

        def trial(
            argv: list[str],
        ) -> Callable[[], contextlib.AbstractContextManager[Callable[[], object]]]:
            @contextlib.contextmanager
            def prepared() -> Iterator[Callable[[], object]]:
                def action() -> object:
                    return subprocess.run(
                        argv, cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL
                    )

                yield action

            return prepared

        times = interleave(
            {
                "floor": trial([sys.executable, "-c", "pass"]),
                "recall": trial([script, "recall", "--json"]),
                "no-sync": trial([script, "recall", "--json", "--no-sync"]),
                "all": trial([script, "recall", "--json", "--limit", "0"]),
                "sync": trial([script, "sync", "--json"]),
            },
            options.repeat,
            warmup=True,
        )
        cpu = {
            name: child_cpu_median(argv, root, ENV, options.repeat)
            for name, argv in (
                ("floor", [sys.executable, "-c", "pass"]),
                ("recall", [script, "recall", "--json"]),
            )
        }
    print(f"store of {options.records} records, nothing to sync")
    print(floor_line(times["floor"], cpu["floor"]))
    target = ratio_check("recall --json", times["recall"], times["floor"], BOUND)
    print(target.line())
    print(ratio_check("  the same, --no-sync", times["no-sync"], times["floor"], BOUND).line())
    every = statistics.median(times["all"]) / statistics.median(times["floor"])
    print(f"  recall --json --limit 0 (all {options.records:,} records, for scale): {every:.2f}x")
    asked = statistics.median(times["sync"]) / statistics.median(times["floor"])
    print(f"  sync --json (asks git whatever the stat cache says, for scale): {asked:.2f}x")
    print(
        f"  CPU time (user+sys, this process and its git children): "
        f"{cpu['recall'] * 1000:.1f} ms vs floor {cpu['floor'] * 1000:.1f} ms = "
        f"{cpu['recall'] / cpu['floor']:.2f}x"
    )
    return 0 if target.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
