"""The search as it was before the term index of cells (:data:`PREVIOUS`),
measured in the same run as today's.

The code of that commit is taken out of this repository (``git archive``)
into a folder kept beside the bench's stores, and runs in a child process
whose ``roteiro_memory`` is that folder's: the two versions cannot share one
process.  The child builds its own store of the same records (the workload
is this checkout's ``bench/workload.py``, which both versions can run) and
keeps it, and answers one request a line on its standard input::

    {"op": "open", "records": N}      -> {"path": ..., "built": bool, "seconds": s}
    {"op": "search", "query": Q}      -> {"cpu": s, "wall": s, "results": [[id, score], ...]}

Each search is timed in the child, CPU and wall, after a collection as the
parent makes before each run it times, so the parent can interleave them
with its own trials and take medians of both alike.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

PREVIOUS = "9d74660"
"""The last commit whose search summed every posting in SQL."""
PREVIOUS_TOKENIZER = "punct+fold+stop+stem"
"""The tokenizer :data:`PREVIOUS` indexes with: its results are this
version's only while this version's tokenizer is the same."""
ROOT = Path(__file__).resolve().parent.parent
KEPT = Path(tempfile.gettempdir()) / "roteiro-bench-search"


def checkout() -> Path:
    """The code of :data:`PREVIOUS`, extracted once."""
    folder = KEPT / f"code-{PREVIOUS}"
    if (folder / "roteiro_memory").is_dir():
        return folder
    KEPT.mkdir(exist_ok=True)
    partial = folder.with_suffix(".partial")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", PREVIOUS, "roteiro_memory"],
        check=True,
        capture_output=True,
    ).stdout
    with tempfile.TemporaryFile() as handle:
        handle.write(archive)
        handle.seek(0)
        with tarfile.open(fileobj=handle) as tar:
            tar.extractall(partial, filter="data")
    partial.rename(folder)
    return folder


class Previous:
    """The previous version's search, in a child process."""

    def __init__(self, repeat_sizes: dict[str, Any]) -> None:
        env = {**os.environ, "PYTHONPATH": str(checkout())}
        self.child = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(repeat_sizes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=Path(__file__).resolve().parent,
        )

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self.child.stdin is not None
        assert self.child.stdout is not None
        self.child.stdin.write(json.dumps(request) + "\n")
        self.child.stdin.flush()
        line = self.child.stdout.readline()
        if not line:
            raise RuntimeError(f"the {PREVIOUS} search process ended (status {self.child.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.child.stdin is not None:
            self.child.stdin.close()
        self.child.wait()


def _child(sizes_json: str) -> None:
    """Serve requests with the previous version's store."""
    from dataclasses import replace

    from workload import Sizes, build_episodic

    import roteiro_memory
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    if not Path(roteiro_memory.__file__).resolve().is_relative_to(checkout()):
        raise SystemExit(f"expected {PREVIOUS}'s code, got {roteiro_memory.__file__}")
    sizes = replace(Sizes(), **json.loads(sizes_json))
    store = None
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "open":
            records = request["records"]
            path = KEPT / f"previous-{PREVIOUS}-search-{records}.db"
            start = time.perf_counter()
            built = not path.exists()
            if built:
                partial = path.with_suffix(".partial")
                partial.unlink(missing_ok=True)
                fresh = SQLiteStore(partial)
                build_episodic(fresh, replace(sizes, records=records))
                fresh.close()
                partial.rename(path)
            if store is not None:
                store.close()
            store = SQLiteStore(path)
            answer: dict[str, Any] = {
                "path": str(path),
                "built": built,
                "seconds": time.perf_counter() - start,
                "bytes": path.stat().st_size,
            }
        else:
            assert store is not None
            gc.collect()  # as the parent collects before each run it times
            wall, cpu = time.perf_counter(), time.process_time()
            found = store.search(request["query"], limit=request.get("limit", 10))
            cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
            answer = {
                "cpu": cpu,
                "wall": wall,
                "results": [[r.record.id, r.score] for r in found.results],
            }
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        _child(sys.argv[2])
