"""Sixteen connections writing one PostgreSQL store at once.

Each connection writes 500 records -- every fifth superseding one of its own
earlier records, every seventh racing the others to supersede one of a shared
set of seed records -- interleaved with cache puts and gets, while another
connection sweeps the cache with a small budget and a reader checks that the
ids it sees are always exactly 1..newest.  Afterwards every record is
accounted for, ids are unique and increasing per writer, every race had one
winner, the cache clock counted every access once, and ``check`` is clean.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pg_server

from roteiro_memory.check import check_store
from roteiro_memory.errors import AlreadySuperseded
from roteiro_memory.eviction import cache_entry_bytes
from roteiro_memory.stores.postgres.store import PostgresStore

WRITERS = 16
RECORDS = 500
SEEDS = 40
KEYS_PER_WRITER = 12
SWEEP_BUDGET = 3_000
JOIN_SECONDS = 300.0


class Writer:
    """One connection's share of the work, and what it saw."""

    def __init__(self, dsn: str, me: int, gate: threading.Barrier, seeds: list[int]) -> None:
        self.dsn, self.me, self.gate, self.seeds = dsn, me, gate, seeds
        self.ids: list[int] = []
        self.won: dict[int, int] = {}
        self.lost = 0
        self.puts = 0
        self.hits = 0
        self.pin_violations: list[str] = []
        self.errors: list[str] = []

    def run(self) -> None:
        store = _attempt(self.errors, "open", lambda: PostgresStore(self.dsn))
        if store is None:
            return
        try:
            self.gate.wait()
            for i in range(RECORDS):
                self._step(store, i)
        except BaseException as error:  # reported through self.errors, asserted empty
            self.errors.append(f"writer {self.me}: {type(error).__name__}: {error}")
        finally:
            store.close()

    def _step(self, store: PostgresStore, i: int) -> None:
        if i % 7 == 3:
            seed = self.seeds[(i // 7 + self.me) % len(self.seeds)]
            try:
                new_id = store.record("decision", f"w{self.me} takes seed {seed}", supersedes=seed)
            except AlreadySuperseded:
                self.lost += 1
            else:
                self.ids.append(new_id)
                self.won[seed] = new_id
        else:
            own = self.ids[-4] if i % 5 == 4 and len(self.ids) >= 4 else None
            superseded = own is not None and any(own == w for w in self.won.values())
            target = None if superseded else own
            self.ids.append(store.record("lesson", f"w{self.me} r{i}", supersedes=target))
        key = f"w{self.me}-k{i % KEYS_PER_WRITER}"
        before = store.cache_stats(0).generation
        store.cache_put(key, "fp", f'{{"i": {i}}}')
        self.puts += 1
        entry = store.cache_get(key)
        if entry is not None:
            self.hits += 1
        else:
            # An entry put at generation g is pinned through the sweep at g;
            # only a second sweep may evict it.
            after = store.cache_stats(0).generation
            if after < before + 2:
                self.pin_violations.append(
                    f"writer {self.me}: {key} put at generation >= {before} was gone at {after}"
                )


def _attempt(errors: list[str], what: str, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except Exception as error:  # reported through errors, asserted empty
        errors.append(f"{what}: {type(error).__name__}: {error}")
        return None


def test_sixteen_writers_lose_nothing_and_ids_stay_ordered() -> None:
    pg_server.require_server()
    setup = pg_server.throwaway_store()
    try:
        seeds = [setup.record("lesson", f"seed {n}") for n in range(SEEDS)]
        assert seeds == list(range(1, SEEDS + 1))
        _run(setup, seeds)
    finally:
        setup.close()


def _run(setup: PostgresStore, seeds: list[int]) -> None:
    dsn = f"{setup.dsn}{'&' if '?' in setup.dsn else '?'}schema={setup.schema}"
    gate = threading.Barrier(WRITERS + 2)
    writers = [Writer(dsn, me, gate, seeds) for me in range(WRITERS)]
    done = threading.Event()
    side_errors: list[str] = []
    sweeps: list[int] = []
    reads = [0]

    def sweeper() -> None:
        store = _attempt(side_errors, "sweeper open", lambda: PostgresStore(dsn))
        if store is None:
            return
        try:
            gate.wait()
            while not done.is_set():
                result = store.cache_sweep(SWEEP_BUDGET)
                sweeps.append(result.evicted)
        except BaseException as error:  # reported through side_errors
            side_errors.append(f"sweeper: {type(error).__name__}: {error}")
        finally:
            store.close()

    def reader() -> None:
        store = _attempt(side_errors, "reader open", lambda: PostgresStore(dsn))
        if store is None:
            return
        try:
            gate.wait()
            while not done.is_set():
                # One snapshot: the newest id and the whole store's counts.
                # Ids are committed in order, so they are exactly 1..newest.
                listing = store.list(include_superseded=True, limit=1)
                newest = listing.records[0].id if listing.records else 0
                if listing.live + listing.superseded != newest:
                    side_errors.append(
                        f"reader saw {listing.live + listing.superseded} records "
                        f"but the newest id {newest}: an id below it was not yet visible"
                    )
                    return
                reads[0] += 1
        except BaseException as error:  # reported through side_errors
            side_errors.append(f"reader: {type(error).__name__}: {error}")
        finally:
            store.close()

    threads = [threading.Thread(target=w.run, name=f"writer-{w.me}") for w in writers]
    threads += [threading.Thread(target=sweeper), threading.Thread(target=reader)]
    for thread in threads:
        thread.start()
    for thread in threads[:WRITERS]:
        thread.join(JOIN_SECONDS)
    done.set()
    for thread in threads[WRITERS:]:
        thread.join(JOIN_SECONDS)
    assert not any(t.is_alive() for t in threads), "a connection wedged (deadlock?)"

    errors = [e for w in writers for e in w.errors] + side_errors
    assert errors == []
    assert [v for w in writers for v in w.pin_violations] == []
    assert sweeps, "the sweeper never ran"
    assert reads[0] > 0, "the reader never read"

    # Every record accounted for: the seeds and each writer's ids, nothing else.
    written = [i for w in writers for i in w.ids]
    assert len(written) == len(set(written))
    for w in writers:
        assert w.ids == sorted(w.ids), f"writer {w.me} got ids out of order"
    listing = setup.list(include_superseded=True)
    stored = sorted(r.id for r in listing.records)
    assert stored == list(range(1, SEEDS + len(written) + 1))
    assert set(stored) == set(seeds) | set(written)
    attempts = sum(len(range(3, RECORDS, 7)) for _ in writers)
    assert sum(len(w.won) for w in writers) + sum(w.lost for w in writers) == attempts

    # Every race for a seed had exactly one winner, and the pointer says so.
    winners = Counter(seed for w in writers for seed in w.won)
    assert all(count == 1 for count in winners.values())
    assert set(winners) == set(seeds)
    by_id = {r.id: r for r in listing.records}
    for w in writers:
        for seed, new_id in w.won.items():
            assert by_id[seed].superseded_by == new_id
    # Pointers are whole: every successor exists, is newer, and is live or
    # superseded in turn; live + superseded counts the store.
    for record in listing.records:
        if record.superseded_by is not None:
            assert record.superseded_by in by_id
            assert record.superseded_by > record.id
            assert record.superseded_at is not None
    assert listing.live + listing.superseded == len(stored)
    assert listing.superseded == sum(1 for r in listing.records if r.superseded_by is not None)

    # The cache clock counted every put and hit exactly once.
    snapshot = setup.snapshot()
    clock = snapshot["agent_cache_clock"][0]
    assert clock["ticks"] == sum(w.puts + w.hits for w in writers)
    assert clock["generation"] == len(sweeps)
    entries = setup.cache_entries()
    assert len({e.last_used for e in entries}) == len(entries)
    for entry in entries:
        assert entry.bytes == cache_entry_bytes(entry.key, entry.fingerprint, entry.json)
    assert snapshot["agent_memory_ids"] == [{"id": 0, "last_id": len(stored)}]
    assert check_store(setup) == []


def test_writers_are_served_whatever_isolation_the_session_defaults_to() -> None:
    """A server, role or database may default its transactions to
    ``serializable``: writes still run read committed, so writers that
    meet at the id counter's row lock wait for each other, as documented,
    and none fails with a serialization error."""
    pg_server.require_server()
    setup = pg_server.throwaway_store()
    try:
        options = "options=-c%20default_transaction_isolation%3Dserializable"
        dsn = f"{setup.dsn}{'&' if '?' in setup.dsn else '?'}{options}&schema={setup.schema}"
        gate = threading.Barrier(4)
        errors: list[str] = []
        written: list[int] = []

        def write(me: int) -> None:
            store = _attempt(errors, "open", lambda: PostgresStore(dsn))
            if store is None:
                return
            try:
                gate.wait()
                for i in range(40):
                    written.append(store.record("lesson", f"w{me} r{i}"))
            except Exception as error:  # reported through errors, asserted empty
                errors.append(f"writer {me}: {type(error).__name__}: {error}")
            finally:
                store.close()

        threads = [threading.Thread(target=write, args=(me,)) for me in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(JOIN_SECONDS)
        assert errors == []
        assert sorted(written) == list(range(1, 161))
        assert len(setup.list(limit=0).records) == 160
    finally:
        setup.close()
