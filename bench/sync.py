"""Sync time on a synthetic repository, through the installed console script.

    python bench/sync.py                      # 10,000 files, 2,000 of them Python
    python bench/sync.py --files 2000 --python 400 --repeat 3

Builds a committed repository in a temporary directory, then times
``roteiro-memory sync`` into a fresh store (cold: every Python file parsed),
again with nothing changed, and after editing one Python file, each
interleaved with the floor: a Python process that runs ``git status`` on the
same tree and exits.  A sync with nothing changed must start Python and walk
the working tree as that does, so the ratio says what the graph costs on top
(listing the index, hashing the tree).  Then, for scale, what a reading
command pays for the same question once the tree has settled: ``recall
--json``, which the stat cache answers without git
(``roteiro_memory/repo/statcache.py``).  Exit status 0 when the
nothing-changed sync is within its bound.
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

from measure import Check, child_cpu_median, interleave, ratio_check

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

UNCHANGED_BOUND = 3.0
"""A sync with nothing changed, over Python running ``git status``."""

PY_TEMPLATE = '''\
"""Module {n}."""

import functools


class Widget{n}:
    """A widget."""

    def __init__(self, size: int) -> None:
        self.size = size

    @functools.cached_property
    def area(self) -> int:
        return self.size * self.size

    def grow(self, by: int) -> "Widget{n}":
        return Widget{n}(self.size + by)


def make_{n}(size: int = {n}) -> Widget{n}:
    def clamp(value: int) -> int:
        return max(0, value)

    return Widget{n}(clamp(size))
'''


def build(root: Path, files: int, python: int) -> None:
    for index in range(files):
        folder = root / f"pkg{index % 50:02d}" / f"sub{index % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        if index < python:
            (folder / f"mod{index}.py").write_text(PY_TEMPLATE.format(n=index))
        else:
            (folder / f"data{index}.txt").write_text(f"line {index}\n" * 20)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "synthetic")


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL)


def run(root: Path, argv: list[str]) -> Callable[[], object]:
    def action() -> object:
        return subprocess.run(argv, cwd=root, env=ENV, check=True, stdout=subprocess.DEVNULL)

    return action


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--python", type=int, default=2_000)
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    script = shutil.which("roteiro-memory")
    if script is None:
        sys.stderr.write("bench/sync.py: the roteiro-memory console script is not installed\n")
        return 2
    with tempfile.TemporaryDirectory(prefix="roteiro-sync-") as scratch:
        root = Path(scratch) / "repo"
        root.mkdir()
        build(root, options.files, options.python)
        stores = Path(scratch) / "stores"
        stores.mkdir()
        status = [
            sys.executable,
            "-c",
            "import subprocess; subprocess.run(['git', 'status', '--porcelain'], check=True,"
            " stdout=subprocess.DEVNULL)",
        ]
        counter = iter(range(1_000_000))

        @contextlib.contextmanager
        def cold() -> Iterator[Callable[[], object]]:
            db = stores / f"cold{next(counter)}.db"
            yield run(root, [script, "sync", "--db", str(db)])
            db.unlink()

        warm_db = stores / "warm.db"
        subprocess.run(
            [script, "sync", "--db", str(warm_db)],
            cwd=root,
            env=ENV,
            check=True,
            stdout=subprocess.DEVNULL,
        )

        @contextlib.contextmanager
        def unchanged() -> Iterator[Callable[[], object]]:
            yield run(root, [script, "sync", "--db", str(warm_db)])

        edited = root / "pkg00" / "sub0" / "mod0.py"
        original = edited.read_text()
        flips = iter(range(1_000_000))

        @contextlib.contextmanager
        def one_edit() -> Iterator[Callable[[], object]]:
            edited.write_text(original + f"\n\ndef extra_{next(flips)}():\n    pass\n")
            yield run(root, [script, "sync", "--db", str(warm_db)])

        @contextlib.contextmanager
        def floor() -> Iterator[Callable[[], object]]:
            yield run(root, status)

        cold_times = interleave({"cold": cold, "git status": floor}, 3, warmup=True)
        edited.write_text(original)
        steady = interleave(
            {"unchanged": unchanged, "git status": floor}, options.repeat, warmup=True
        )
        edits = interleave({"one edit": one_edit, "git status": floor}, options.repeat, warmup=True)
        edited.write_text(original)
        # The floor's git status rewrites the index while an entry is newer
        # than it (git's racy entries) -- and the index is one of the files the
        # stat cache stands on.  Once the edits are older than that, one more
        # refresh and the index stays as it is, as on a tree nobody is editing.
        time.sleep(2.2)
        git(root, "status", "--porcelain")
        run(root, [script, "add", "the widget grows by whole units", "--db", str(warm_db)])()
        time.sleep(2.2)  # the stat cache's racy window (RACY_NS), and a margin
        run(root, [script, "recall", "--json", "--db", str(warm_db)])()
        if not (root / ".git" / "roteiro" / "statcache.json").exists():
            raise SystemExit("bench/sync.py: the settled recall wrote no stat cache")

        @contextlib.contextmanager
        def cached() -> Iterator[Callable[[], object]]:
            yield run(root, [script, "recall", "--json", "--db", str(warm_db)])

        vouched = interleave({"cached": cached, "git status": floor}, options.repeat, warmup=True)
        cpu_sync = child_cpu_median(
            [script, "sync", "--db", str(warm_db)], root, ENV, options.repeat
        )
        cpu_status = child_cpu_median(status, root, ENV, options.repeat)

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.0f} ms"

    print(f"synthetic repository: {options.files} files, {options.python} of them Python")
    print(f"  cold sync (fresh store)       {ms(cold_times['cold'])}  (median of 3)")
    print(f"  sync, nothing changed         {ms(steady['unchanged'])}")
    print(f"  sync, one Python file edited  {ms(edits['one edit'])}")
    print(f"  python running git status     {ms(steady['git status'])}  (the floor)")
    check: Check = ratio_check(
        "sync, nothing changed", steady["unchanged"], steady["git status"], UNCHANGED_BOUND
    )
    print(check.line())
    ratio = statistics.median(vouched["cached"]) / statistics.median(vouched["git status"])
    print(
        f"  recall --json, nothing changed, the stat cache vouching: {ms(vouched['cached'])}, "
        f"{ratio:.2f}x the floor (for scale)"
    )
    print(
        f"  CPU time, nothing changed (user+sys, git children included): "
        f"{cpu_sync * 1000:.0f} ms vs the floor's {cpu_status * 1000:.0f} ms"
    )
    return 0 if check.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
