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
    # What COPY's text format escapes: tabs, line breaks, backslashes, \N.
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
