"""Export from SQLite, import into PostgreSQL, and back: nothing changes.

The export of a store is the same text whichever backend holds it, so a
round trip through the other backend reproduces the snapshot exactly: ids
(including ones forgotten and never reused), timestamps, supersession
pointers, captured anchors, cache entries with their hits and ticks, the
clocks, the id sequence and the tree witness.
"""

from __future__ import annotations

from pathlib import Path

import pg_server
import pytest

from roteiro_memory.results import GraphNode
from roteiro_memory.store import MemoryWrite, Store
from roteiro_memory.stores.postgres.store import PostgresStore
from roteiro_memory.stores.sqlite.store import SQLiteStore
from roteiro_memory.transfer import ImportRefused, export_lines, import_lines, read_export


def _busy(store: Store) -> None:
    """A store with something in every table and every clock moved."""
    store.put_nodes(
        [
            GraphNode("file:a.py", "file", "a.py", "a.py", "b1"),
            GraphNode("sym:a.py::f", "function", "f", "a.py", None),
            GraphNode("n\x00ul", None, None, None, "\x00"),
        ]
    )
    store.set_tree("tree-1")
    first = store.record("lesson", "one", anchor="file:a.py", confidence=0.25)
    store.record("decision", "two \u00e9 \U0001f600 \x00", supersedes=first, scope="team")
    ids = store.record_many(
        [
            MemoryWrite("pattern", f"batch {i}", anchor="sym:a.py::f", confidence=i / 7)
            for i in range(7)
        ]
        + [MemoryWrite("attempt", "tail", anchor="gone")]
    )
    store.record("outcome", "supersedes in batch", supersedes=ids[2])
    # A body of what text formats escape: tabs, line breaks, backslashes, \N.
    store.record("lesson", "tab\there\nnext \\N back\\slash \\. \r batch")
    newest = store.record("outcome", "forgotten soon", supersedes=ids[3])
    store.forget(newest)
    store.cache_put("k1", "fp", '{"a": 1}', anchor="file:a.py")
    store.cache_put("k2", "fp", "[]")
    store.cache_put("k\x003", "f\x00p", '"\x00"', anchor="nowhere")
    store.cache_get("k1")
    store.cache_sweep(1 << 20)
    store.cache_put("k4", "fp", "{}")
    store.put_nodes([GraphNode("file:a.py", "file", "a.py", "a.py", "b2")])


def _index(store: Store) -> tuple[object, object]:
    """What the index holds, as either backend shows it (records written
    after an import differ in their timestamps, so they are left out)."""
    shown = store.snapshot()
    return shown["memory_stats"], shown["memory_postings"]


def _found(store: Store, query: str) -> list[tuple[int, float]]:
    return [(r.record.id, r.score) for r in store.search(query).results]


def _copy(source: Store, target: Store) -> list[str]:
    lines = list(export_lines(source))
    import_lines(target, read_export(lines))
    return lines


@pytest.fixture
def pg() -> PostgresStore:
    return pg_server.throwaway_store()


def test_sqlite_to_postgres_to_sqlite_reproduces_the_snapshot(
    tmp_path: Path, pg: PostgresStore
) -> None:
    with SQLiteStore(tmp_path / "a.db") as a, SQLiteStore(tmp_path / "b.db") as b:
        _busy(a)
        try:
            from_sqlite = _copy(a, pg)
            from_postgres = _copy(pg, b)
        finally:
            pg.close()
        assert from_postgres == from_sqlite
        assert b.snapshot() == a.snapshot()
        assert _found(b, "batch back slash") == _found(a, "batch back slash")
        # And the copy goes on as the original would: the next id is the same.
        assert b.record("lesson", "after") == a.record("lesson", "after")


def test_postgres_to_sqlite_to_postgres_reproduces_the_snapshot(
    tmp_path: Path, pg: PostgresStore
) -> None:
    other = pg_server.throwaway_store()
    try:
        _busy(pg)
        with SQLiteStore(tmp_path / "mid.db") as middle:
            there = _copy(pg, middle)
            back = _copy(middle, other)
        assert back == there
        assert other.snapshot() == pg.snapshot()
        assert _found(other, "batch back slash") == _found(pg, "batch back slash")
        assert other.record("lesson", "after") == pg.record("lesson", "after")
        assert [r.record.id for r in other.recall("batch", decay="exponential:2").results] == [
            r.record.id for r in pg.recall("batch", decay="exponential:2").results
        ]
    finally:
        other.close()
        pg.close()


def test_an_imported_index_is_the_one_writes_build(tmp_path: Path, pg: PostgresStore) -> None:
    """Segments of many cells, counts above 1 beside them, supersessions: the
    index an import loads (by COPY on PostgreSQL) passes the store's check,
    scores every search as the exported store did, and takes writes after."""
    import random

    rng = random.Random(5)
    words = ["alpha", "beta", "gamma", "retry", "socket", "tab\tx", "back\\slash", "\u00e9"]
    writes = [
        MemoryWrite("lesson", " ".join(rng.choice(words) for _ in range(rng.randint(1, 8))))
        for _ in range(1_500)
    ]
    writes[7] = MemoryWrite("lesson", "alpha" + " huge" * 300)
    try:
        with SQLiteStore(tmp_path / "a.db") as a, SQLiteStore(tmp_path / "b.db") as b:
            ids = a.record_many(writes)
            for n in range(0, 1_500, 97):
                a.record("lesson", "alpha superseding", supersedes=ids[n])
            _copy(a, pg)
            _copy(a, b)
            loaded = pg.connection.execute("SELECT COUNT(*) FROM memory_segments").fetchone()
            assert loaded[0] > 10  # the segments of many cells were loaded
            for store in (a, b, pg):
                assert store.check() == []
            assert b.snapshot() == a.snapshot()
            assert pg.snapshot()["agent_memory"] == a.snapshot()["agent_memory"]
            assert _index(pg) == _index(a)
            for query in ("alpha", "huge", "back slash", "tab", "\u00e9 retry"):
                assert _found(pg, query) == _found(b, query) == _found(a, query)
            for store in (a, b, pg):
                store.record_many([MemoryWrite("lesson", "alpha" + " huge" * 300)] * 70)
                assert store.check() == []
            assert _index(pg) == _index(a)
    finally:
        pg.close()


def test_round_trip_of_an_empty_store(tmp_path: Path, pg: PostgresStore) -> None:
    with SQLiteStore(tmp_path / "a.db") as a, SQLiteStore(tmp_path / "b.db") as b:
        try:
            _copy(a, pg)
            _copy(pg, b)
        finally:
            pg.close()
        assert b.snapshot() == a.snapshot()


def test_import_into_a_non_empty_postgres_store_is_refused_and_changes_nothing(
    tmp_path: Path, pg: PostgresStore
) -> None:
    try:
        with SQLiteStore(tmp_path / "a.db") as a:
            _busy(a)
            lines = list(export_lines(a))
        pg.cache_put("mine", "fp", "{}")
        before = pg.snapshot()
        with pytest.raises(ImportRefused, match="not empty"):
            import_lines(pg, read_export(lines))
        assert pg.snapshot() == before
    finally:
        pg.close()


def test_a_confidence_reads_back_exactly_whatever_float_digits_the_session_sets() -> None:
    """A session set to ``extra_float_digits = 0`` (PostgreSQL 11's
    default, or a role's setting) writes a double rounded to 15 digits:
    the store reads what it wrote, to the last bit, and exports it so."""
    pg_server.require_server()
    setup = pg_server.throwaway_store()
    try:
        options = "options=-c%20extra_float_digits%3D0"
        dsn = f"{setup.dsn}{'&' if '?' in setup.dsn else '?'}{options}&schema={setup.schema}"
        confidence = 0.12345678901234568
        with PostgresStore(dsn) as store:
            written = store.record("lesson", "exact", confidence=confidence)
            record = store.get(written)
            assert record is not None
            assert record.confidence == confidence
            assert f'"confidence": {confidence!r}' in "".join(store.export_lines())
    finally:
        setup.close()
