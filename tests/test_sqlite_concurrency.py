"""Many processes writing one SQLite store at once.

Eight OS processes, released together, each write 250 records (every fourth
superseding one of its own earlier records) interleaved with batches of four
written by one ``record_many``, cache puts, gets and sweeps, and reads of
their own newest record.  Writers queue on the
write lock instead of failing, so no caller may see ``database is locked``
or any other error, and nothing may be lost, duplicated or left half-linked.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from wire import WireServer, server_argv

from roteiro_memory.app.session import Session
from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.eviction import cache_entry_bytes
from roteiro_memory.results import GraphNode
from roteiro_memory.stores.sqlite.store import SQLiteStore

WORKERS = 8
RECORDS = 250
KEYS_PER_WORKER = 16
SWEEP_EVERY = 25
SWEEP_BUDGET = 2_000
BATCH_EVERY = 50
"""Every so often a worker also writes four records in one ``record_many``."""
BATCH = 4
WATCHDOG_SECONDS = 180.0
"""Kills every worker if the run wedges, so a deadlock fails instead of hanging."""

WORKER = r"""
import json
import random
import sys

from roteiro_memory.stores.sqlite.store import SQLiteStore
from roteiro_memory.store import MemoryWrite

db, me, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
keys, sweep_every, budget = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
batch_every = int(sys.argv[7])
rng = random.Random(me)
errors = []
ids = []
batches = []
puts = hits = sweeps = 0


def attempt(what, action):
    try:
        return action()
    except Exception as error:  # reported to the test, which asserts there are none
        errors.append(f"worker {me}, {what}: {type(error).__name__}: {error}")
        return None


store = SQLiteStore(db)
print("ready", flush=True)
sys.stdin.readline()  # the starting gun: every worker is open and waiting
for i in range(count):
    target = i - 3 if i % 4 == 3 else None
    body = f"w{me} r{i}" + ("" if target is None else f" supersedes r{target}")
    supersedes = None if target is None else ids[target]
    ids.append(
        attempt(
            f"record r{i}",
            lambda: store.record(
                "attempt", body, scope=f"w{me}", confidence=(i % 10) / 10, supersedes=supersedes
            ),
        )
    )
    key = f"w{me}-k{i % keys}"
    attempt(f"put {key}", lambda: store.cache_put(key, f"fp{i}", json.dumps({"i": i})))
    puts += 1
    other = f"w{rng.randrange(8)}-k{rng.randrange(keys)}"
    if attempt(f"get {other}", lambda: store.cache_get(other)) is not None:
        hits += 1
    if i % sweep_every == sweep_every - 1:
        attempt(f"sweep after r{i}", lambda: store.cache_sweep(budget))
        sweeps += 1
        own = attempt(f"list after r{i}", lambda: store.list(scope=f"w{me}", limit=1))
        if own is not None and [r.id for r in own.records] != [ids[-1]]:
            errors.append(f"worker {me} cannot read its own newest record r{i}: {own}")
    if i % batch_every == batch_every // 2:
        b = len(batches)
        writes = [MemoryWrite("pattern", f"w{me} b{b} n{k}", f"w{me}-batch") for k in range(3)]
        previous = batches[-1][0] if batches and batches[-1] else None
        writes.append(
            MemoryWrite("pattern", f"w{me} b{b} n3", f"w{me}-batch", supersedes=previous)
        )
        batches.append(attempt(f"batch b{b}", lambda: store.record_many(writes)) or [])
store.close()
print(json.dumps({"me": me, "ids": ids, "batches": batches, "errors": errors, "puts": puts,
                  "hits": hits, "sweeps": sweeps}), flush=True)
"""


def _run_workers(db: Path) -> list[dict[str, Any]]:
    argv_tail = [str(n) for n in (RECORDS, KEYS_PER_WORKER, SWEEP_EVERY, SWEEP_BUDGET, BATCH_EVERY)]
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(db), str(me), *argv_tail],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me in range(WORKERS)
    ]

    def kill_all() -> None:
        for worker in workers:
            worker.kill()

    watchdog = threading.Timer(WATCHDOG_SECONDS, kill_all)
    watchdog.start()
    try:
        for worker in workers:
            assert worker.stdout is not None
            ready = worker.stdout.readline()
            if ready != "ready\n":
                assert worker.stderr is not None
                raise AssertionError(f"a worker failed to open the store:\n{worker.stderr.read()}")
        for worker in workers:
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        reports = []
        for worker in workers:
            out, err = worker.communicate()
            assert worker.returncode == 0, f"worker exited {worker.returncode}:\n{err}"
            assert err == "", err
            reports.append(json.loads(out))
    finally:
        watchdog.cancel()
        kill_all()
    return reports


def test_eight_processes_share_one_store_without_loss_or_lock_errors(tmp_path: Path) -> None:
    db = tmp_path / "shared.db"
    SQLiteStore(db).close()  # the schema exists before the race on the data starts
    reports = _run_workers(db)

    errors = [error for report in reports for error in report["errors"]]
    assert errors == [], "\n".join(errors[:20])

    expected_bodies: dict[int, tuple[int, int, str]] = {}
    for report in reports:
        me, ids = report["me"], report["ids"]
        assert len(ids) == RECORDS
        assert all(isinstance(i, int) for i in ids)
        assert ids == sorted(ids), f"worker {me}'s ids do not increase in its own order"
        assert len(set(ids)) == RECORDS
        for i, record_id in enumerate(ids):
            body = f"w{me} r{i}" + (f" supersedes r{i - 3}" if i % 4 == 3 else "")
            expected_bodies[record_id] = (me, i, body)
    batches_expected = RECORDS // BATCH_EVERY
    batch_superseded: set[int] = set()
    for report in reports:
        me, batches = report["me"], report["batches"]
        assert len(batches) == batches_expected
        for b, batch in enumerate(batches):
            assert batch == list(range(batch[0], batch[0] + BATCH)), "a batch's ids interleaved"
            for k, record_id in enumerate(batch):
                assert record_id not in expected_bodies, "an id was handed to two writes"
                expected_bodies[record_id] = (me, -1, f"w{me} b{b} n{k}")
            if b:
                batch_superseded.add(batches[b - 1][0])
    total = WORKERS * (RECORDS + batches_expected * BATCH)
    assert len(expected_bodies) == total, "an id was handed to two writes"
    contiguous = [r["ids"][-1] - r["ids"][0] == RECORDS - 1 for r in reports]
    assert not all(contiguous), "the workers ran one after another, not at once"

    with SQLiteStore(db) as store:
        listing = store.list(include_superseded=True)
        records = {r.id: r for r in listing.records}
        assert len(listing.records) == total
        assert set(records) == set(expected_bodies)
        for record_id, (me, i, body) in expected_bodies.items():
            assert records[record_id].body == body
            assert records[record_id].scope == (f"w{me}" if i >= 0 else f"w{me}-batch")

        superseded = {r.id for r in records.values() if r.superseded_by is not None}
        expected_superseded = {
            report["ids"][i - 3] for report in reports for i in range(RECORDS) if i % 4 == 3
        } | batch_superseded
        assert superseded == expected_superseded
        for record in records.values():
            if record.superseded_by is None:
                assert record.superseded_at is None
                continue
            successor = records.get(record.superseded_by)
            assert successor is not None, f"record {record.id} points at a missing record"
            me, i, body = expected_bodies[record.id]
            if i >= 0:
                assert successor.body.endswith(f" supersedes r{i}")
            else:
                assert successor.body.endswith(" n3")
                assert body.endswith(" n0")
            assert expected_bodies[successor.id][0] == me
            assert record.superseded_at is not None
        assert (listing.live, listing.superseded) == (
            total - len(expected_superseded),
            len(expected_superseded),
        )

        clock = store.snapshot()["agent_cache_clock"]
        ticks = sum(r["puts"] + r["hits"] for r in reports)
        sweeps = sum(r["sweeps"] for r in reports)
        assert clock == [{"id": 0, "ticks": ticks, "generation": sweeps}]
        ticks_seen = Counter(entry.last_used for entry in store.cache_entries())
        assert all(n == 1 for n in ticks_seen.values()), "two accesses took the same tick"
        for entry in store.cache_entries():
            assert entry.bytes == cache_entry_bytes(entry.key, entry.fingerprint, entry.json)
        assert store.connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_two_protocol_servers_on_one_store_see_each_others_writes(tmp_path: Path) -> None:
    """Two programs serving one file are two views of one store: each write is
    visible to the other at once, and supersession is decided against both."""
    argv = server_argv("sqlite", tmp_path / "memory.db")
    with WireServer(argv) as first, WireServer(argv) as second:
        assert first.ok("memory.record", {"kind": "lesson", "body": "from the first"}) == {"id": 1}
        assert second.ok("memory.get", {"id": 1})["body"] == "from the first"
        assert second.ok("memory.record", {"kind": "lesson", "body": "b", "supersedes": 1}) == {
            "id": 2
        }
        refused = first.error("memory.record", {"kind": "lesson", "body": "c", "supersedes": 1})
        assert refused["kind"] == "AlreadySuperseded"
        assert [r["id"] for r in first.ok("memory.list")["records"]] == [2]
        first.ok("cache.put", {"key": "k", "fingerprint": "f", "json": "1"})
        assert second.ok("cache.get", {"key": "k"})["last_used"] == 1
        assert first.ok("cache.get", {"key": "k"})["hits"] == 1
        assert first.ok("store.snapshot") == second.ok("store.snapshot")
        assert first.ok("memory.record", {"kind": "lesson", "body": "d"}) == {"id": 3}


def _open_when_released(path: str, release: Any, results: Any) -> None:
    release.wait()
    try:
        SQLiteStore(path, busy_timeout_ms=5_000).close()
        results.put("opened")
    except Exception as error:  # reported to the test, which names it
        results.put(f"{type(error).__name__}: {error}")


def test_processes_opening_one_new_store_at_once_all_open_it(tmp_path: Path) -> None:
    """Switching a new file to WAL needs every other connection's lock gone:
    two processes switching it at once each hold what the other waits for,
    and SQLite answers one busy without waiting.  The store looks again
    instead of reporting a busy store (one trial in a dozen did)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    failures = []
    for trial in range(60):
        path = str(tmp_path / f"new-{trial}.db")
        release, results = context.Barrier(2), context.Queue()
        workers = [
            context.Process(target=_open_when_released, args=(path, release, results))
            for _ in range(2)
        ]
        for worker in workers:
            worker.start()
        outcomes = [results.get(timeout=60) for _ in workers]
        for worker in workers:
            worker.join(timeout=60)
        failures += [(trial, outcome) for outcome in outcomes if outcome != "opened"]
    assert not failures, failures[:3]


def _made_by_a_read(path: Path) -> Session:
    """A session that made the store at ``path`` for a read, as a first
    ``recall`` in a new clone does, and wrote nothing to it."""
    session = Session(str(path), sync=False)
    session.store()
    assert session.changed(by_request=True) is False
    return session


@pytest.mark.parametrize("written", ["a record", "graph nodes", "a cache entry"])
def test_a_store_a_failed_read_made_stays_when_another_process_wrote_to_it(
    tmp_path: Path, written: str
) -> None:
    """A read that made the store and found nothing removes the store again
    -- but not once another process has committed to it: that write was
    acknowledged, and is kept."""
    db = tmp_path / "memory.db"
    session = _made_by_a_read(db)
    other = SQLiteStore(db)
    if written == "a record":
        other.record("lesson", "acknowledged while the read ran")
    elif written == "graph nodes":
        other.put_nodes([GraphNode("file:a.py", "file", "a.py", "a.py", "b1")])
    else:
        other.cache_put("key", "fingerprint", "{}")
    other.close()
    session.close(failed=True)
    assert db.exists()
    with contextlib.closing(SQLiteStore(db)) as store:
        assert store.check() == []
        if written == "a record":
            assert [r.body for r in store.list().records] == ["acknowledged while the read ran"]


def test_a_store_a_failed_read_made_goes_when_nobody_wrote_to_it(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    session = _made_by_a_read(db)
    reader = SQLiteStore(db)  # open beside it, reading only
    assert reader.list().records == []
    session.close(failed=True)
    reader.close()
    assert sorted(tmp_path.iterdir()) == []


def test_a_write_to_a_store_a_failed_read_removed_is_refused_not_acknowledged(
    tmp_path: Path,
) -> None:
    """A process that opened the store before the read removed it finds the
    file gone when it writes: refused, so never acknowledged and lost."""
    db = tmp_path / "memory.db"
    session = _made_by_a_read(db)
    late = SQLiteStore(db)
    session.close(failed=True)
    assert not db.exists()
    with pytest.raises(StoreUnavailable, match="no longer there"):
        late.record("lesson", "written into a removed file")
    late.close()


def test_a_store_a_failed_read_made_stays_while_another_process_writes_to_it(
    tmp_path: Path,
) -> None:
    """Another process holding the write lock is writing: the store is kept,
    without waiting for the lock."""
    db = tmp_path / "memory.db"
    session = _made_by_a_read(db)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        session.close(failed=True)
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert db.exists()


def test_a_store_a_failed_read_made_and_cannot_remove_is_said_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removing the store again failing (a folder made read-only meanwhile)
    is said in one warning; the request's own outcome stands, no traceback."""
    db = tmp_path / "memory.db"
    said: list[str] = []
    session = Session(str(db), sync=False, warn=said.append)
    session.store()

    def refused(path: object, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("roteiro_memory.app.session.os.unlink", refused)
    session.close(failed=True)
    monkeypatch.undo()
    assert len(said) == 1
    assert "could not be removed again (Permission denied)" in said[0]
    assert db.exists()
    with contextlib.closing(SQLiteStore(db)) as store:
        assert store.check() == []


HOLDER = r"""
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("SELECT count(*) FROM agent_memory").fetchone()
print("read", flush=True)
sys.stdin.readline()
conn.close()
"""
"""Another process with a connection that has read the store, until told to close it."""

READ_LOCKED = r"""
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 510, 0x40000000 + 2)
except OSError:
    print("locked")
else:
    print("free")
"""
"""Whether some other process holds a lock on the store's shared byte range
(SQLite's unix VFS: where every reader of a WAL database holds its read lock)."""


def _read_locked(db: Path) -> bool:
    seen = subprocess.run(
        [sys.executable, "-c", READ_LOCKED, str(db)], capture_output=True, text=True, check=True
    )
    return seen.stdout == "locked\n"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX locks: SQLite's unix VFS")
def test_a_store_a_failed_read_made_stays_while_another_process_has_it_open(
    tmp_path: Path,
) -> None:
    """A process that has opened the store (and read it) may write to it
    next: removed under it, its write would be refused.  So the store stays
    while such a process is there, and goes once it has closed -- and this
    process's own lock on the store, the one that keeps others from removing
    it, holds until its connection is closed."""
    db = tmp_path / "memory.db"
    store = SQLiteStore(db)
    assert store.list().records == []
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    removed: list[Path] = []
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "read\n"
        assert store.discard(lambda: removed.append(db)) is False
    finally:
        holder.communicate("close\n", timeout=60)
    assert holder.returncode == 0
    assert removed == []
    assert db.exists()
    assert _read_locked(db)  # this process's, the holder having gone
    assert store.discard(lambda: removed.append(db)) is True
    assert removed == [db]
    store.close()
    assert not _read_locked(db)
