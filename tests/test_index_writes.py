"""What a write reads of the term index: a record's ordinal is found by
bisecting its cell's members segments, and a cell's next ordinal comes from
its last one, so the cost of ``record``, a supersession and ``forget`` does
not grow with the cell (a cell of a million-record store holds thousands of
members segments).  Only where a forget indexed a record out of id order
(or for a record never indexed) is a record looked for in every segment of
its cell, and its postings still go."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

from roteiro_memory.store import Store
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.sql import index, postings
from roteiro_memory.stores.sqlite.store import SQLiteStore

WHOLE_CELL = re.compile(r"FROM memory_members WHERE", re.IGNORECASE)
"""A statement reading a cell's members segments by the cell alone: every one."""


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A store of members segments of 4 records and a recent tier of 6: 400
    records of one cell make 100 segments."""
    with (
        patch.object(index, "RECENT_RECORDS", 6),
        patch.object(postings, "MEMBER_ORDINALS", 4),
        patch.object(postings, "SEGMENT_ORDINALS", 64),
        patch.object(postings, "TAIL_POSTINGS", 4),
        SQLiteStore(tmp_path / "m.db") as store,
    ):
        yield store


@pytest.fixture
def stores(sqlite: SQLiteStore) -> list[Store]:
    """The model store, then ``sqlite``: written alike, searched alike."""
    return [ModelStore(), sqlite]


def _fill(stores: list[Store], count: int) -> None:
    for n in range(count):
        for store in stores:
            # Bodies of one length and no confidence: every record in one cell.
            store.record("lesson", f"cache word{n:04d} timeout")


def _whole_cell_reads(store: SQLiteStore) -> list[str]:
    seen: list[str] = []
    store.connection.set_trace_callback(seen.append)
    return seen


def _same(stores: list[Store], query: str) -> None:
    found = [[(r.record.id, r.score) for r in s.search(query).results] for s in stores]
    assert found[1] == found[0], query
    assert stores[1].check() == []


def test_a_superseded_or_forgotten_record_is_found_without_reading_its_whole_cell(
    sqlite: SQLiteStore, stores: list[Store]
) -> None:
    _fill(stores, 400)
    traced = _whole_cell_reads(sqlite)
    for store in stores:
        store.record("lesson", "lock retry timeout", supersedes=3)
        store.record("lesson", "lock retry flaky", supersedes=201)
        store.forget(397)
        store.forget(120)
        store.record_many([])
    assert traced, "no statement was traced"
    assert [s for s in traced if WHOLE_CELL.search(s)] == []
    members = [s for s in traced if "memory_members" in s and s.lstrip().startswith("SELECT")]
    # Bisection over 100 segments: a handful of statements a write, not one a segment.
    assert 0 < len(members) <= 4 * 10
    for query in ("cache", "word0003", "word0201 timeout", "word0120", "word0397 lock"):
        _same(stores, query)


def test_a_record_indexed_out_of_id_order_is_found_in_every_segment_of_its_cell(
    sqlite: SQLiteStore, stores: list[Store]
) -> None:
    _fill(stores, 3)
    for store in stores:
        # 4 supersedes 2 while 2 waits in the recent tier: 2 gets no ordinal.
        store.record("lesson", "lock word0002 retry", supersedes=2)
    _fill(stores, 41)  # the recent tier merges, and merges again
    for store in stores:
        store.forget(4)  # 2 is live again, indexed after records newer than it
    _fill(stores, 40)
    first_ids = [
        postings.first_member(ids[:8])
        for (ids,) in sqlite.connection.execute("SELECT ids FROM memory_members")
    ]
    assert 2 not in first_ids  # so no bisection can end where 2 is
    traced = _whole_cell_reads(sqlite)
    for store in stores:
        store.record("lesson", "lock retry flaky", supersedes=2)
    assert [s for s in traced if WHOLE_CELL.search(s)], "2 was found by bisection"
    for query in ("word0002", "cache word0002", "lock"):
        _same(stores, query)


def _members_rows(store: SQLiteStore) -> Any:
    return store.connection.execute("SELECT COUNT(*) FROM memory_members").fetchone()[0]


def test_a_cells_next_ordinal_follows_its_last_members_segment(
    sqlite: SQLiteStore, stores: list[Store]
) -> None:
    _fill(stores, 100)
    traced = _whole_cell_reads(sqlite)
    _fill(stores, 100)
    assert [s for s in traced if WHOLE_CELL.search(s)] == []
    assert _members_rows(sqlite) == 50
    for query in ("cache", "word0150", "word0099 word0100"):
        _same(stores, query)
