"""Wire servers that claim ``shared`` and ``crash`` and lose writes anyway.

Run as ``python tests/durability_mutants.py MODE`` through ``cmd:``; each keeps
the in-memory model and saves it (pickled) to the file
``ROTEIRO_CONFORMANCE_STORE`` names, so a restarted instance finds it:

* ``private-copy`` reads the file once, at start, and writes its whole copy
  back after every write, before answering: nothing acknowledged is lost to a
  kill, but instances sharing the file overwrite each other's writes -- the
  lost update;
* ``write-behind`` answers writes at once and saves only every
  :data:`BATCH` of them (and at shutdown): a SIGKILL loses what it
  acknowledged since the last save.

* ``torn-supersession`` saves like ``private-copy``, except that a
  supersession is saved without its predecessor's pointer, which waits for the
  next write: a SIGKILL in between leaves the successor stored and its
  predecessor live -- half applied.

``stale-reads`` instead serves the reference SQLite store at that path, which
shares and survives kills, but answers ``memory.list`` from what it listed
before until it writes itself: nothing is lost, yet a reader keeps seeing the
store as it was -- no serial order explains its answers.

``last-answered-twice`` serves that store too, but answers twice the last
request of an instance's part in an entry: a ``memory.list`` after the
instance's own writes (a shared writer's final listing) and the write of a
crash stream's body ``s<seed>-39`` (its last).  A second answer after the
last request is found only by the check every case ends with.  Given a
second argument, it waits that many seconds before answering each write: a
slow backend, whose flaw shows only at the stream's last write.

``tests/test_durability.py`` checks the durability entries fail on each and
pass on the reference.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roteiro_memory.protocol import Ops, handle_line
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.sqlite.store import SQLiteStore

MODES = ("private-copy", "write-behind", "torn-supersession", "stale-reads", "last-answered-twice")
BATCH = 8
READS = frozenset({"hello", "memory.get", "memory.list", "memory.recall", "store.snapshot"})


def _load(path: Path | None) -> ModelStore:
    if path is None or not path.exists():
        return ModelStore()
    with path.open("rb") as stream:
        loaded = pickle.load(stream)  # the file is this program's own
    assert isinstance(loaded, ModelStore)
    return loaded


def _save(store: ModelStore, path: Path | None) -> None:
    if path is None:
        return
    part = path.with_name(f"{path.name}.{os.getpid()}")
    with part.open("wb") as stream:
        pickle.dump(store, stream)
        stream.flush()
        os.fsync(stream.fileno())
    part.replace(path)


class StaleOps(Ops):
    """Lists from a cache that only this instance's own writes clear."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.listed: dict[str, Any] = {}

    def call(self, op: str, args: object = None) -> Any:
        if op == "memory.list":
            key = json.dumps(args, sort_keys=True)
            if key not in self.listed:
                self.listed[key] = super().call(op, args)
            return self.listed[key]
        if op not in READS:
            self.listed.clear()
        return super().call(op, args)


def _request(line: bytes) -> dict[str, Any]:
    try:
        request = json.loads(line)
    except ValueError:
        return {}
    return request if isinstance(request, dict) else {}


def _torn(before: ModelStore, request: dict[str, Any]) -> ModelStore:
    """``before`` with the successor ``request`` wrote, but no pointer to it."""
    args = request.get("args") or {}
    before.record(args["kind"], args["body"], scope=args.get("scope", "repo"))
    return before


def _serve_reference(ops: Ops, twice: bool, pause: float = 0.0) -> None:
    """Answer requests with ``ops``; when ``twice``, the last request of an
    instance's part (see the module docstring) twice; each write ``pause``
    seconds late."""
    wrote = False
    for raw in sys.stdin.buffer:
        line = raw.rstrip(b"\r\n")
        request = _request(line)
        response, done = handle_line(ops, line)
        op, body = request.get("op"), (request.get("args") or {}).get("body")
        last = (op == "memory.list" and wrote) or (
            op == "memory.record" and isinstance(body, str) and re.fullmatch(r"s\d+-39", body)
        )
        wrote = wrote or op == "memory.record"
        if op == "memory.record":
            time.sleep(pause)
        sys.stdout.write(f"{response}\n" * (2 if twice and last else 1))
        sys.stdout.flush()
        if done:
            break


def main(argv: Sequence[str]) -> int:
    if len(argv) not in (1, 2) or argv[0] not in MODES:
        sys.stderr.write(f"usage: durability_mutants.py {{{','.join(MODES)}}} [PAUSE]\n")
        return 2
    mode = argv[0]
    pause = float(argv[1]) if len(argv) == 2 else 0.0
    named = os.environ.get("ROTEIRO_CONFORMANCE_STORE")
    path = Path(named) if named else None
    claims = ("shared", "crash") if path is not None else ()
    if mode in ("stale-reads", "last-answered-twice"):
        reference = SQLiteStore(path) if path is not None else SQLiteStore.temporary()
        try:
            kind = StaleOps if mode == "stale-reads" else Ops
            ops = kind(reference, f"durability mutant {mode}", server_capabilities=claims)
            _serve_reference(ops, twice=mode == "last-answered-twice", pause=pause)
            return 0
        finally:
            reference.close()
    store = _load(path)
    ops = Ops(store, f"durability mutant {mode}", server_capabilities=claims)
    unsaved = 0
    for raw in sys.stdin.buffer:
        line = raw.rstrip(b"\r\n")
        request = _request(line)
        superseding = request.get("op") == "memory.record" and "supersedes" in (
            request.get("args") or {}
        )
        before = copy.deepcopy(store) if mode == "torn-supersession" and superseding else None
        response, done = handle_line(ops, line)
        if request.get("op") not in READS:
            unsaved += 1
        if before is not None and json.loads(response)["ok"]:
            _save(_torn(before, request), path)
            unsaved = 0
        elif unsaved and (mode != "write-behind" or unsaved >= BATCH or done):
            _save(store, path)
            unsaved = 0
        sys.stdout.write(response + "\n")
        sys.stdout.flush()
        if done:
            break
    _save(store, path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
