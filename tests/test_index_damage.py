"""The term index damaged behind the store's back, in ways its bytes still
parse: the check names the row, and a search or a write that meets it fails
as :class:`Corrupt` naming the table -- never a wrong answer served, and
never another exception."""

from __future__ import annotations

import struct
from array import array
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest

from roteiro_memory.errors import Corrupt
from roteiro_memory.store import MemoryWrite
from roteiro_memory.stores.sql import index, postings
from roteiro_memory.stores.sqlite.store import SQLiteStore


@pytest.fixture
def small(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A store whose every posting goes straight to a segment of 16 ordinals."""
    with ExitStack() as stack:
        stack.enter_context(patch.object(index, "RECENT_RECORDS", 1))
        stack.enter_context(patch.object(postings, "TAIL_POSTINGS", 1))
        stack.enter_context(patch.object(postings, "SEGMENT_ORDINALS", 16))
        store = stack.enter_context(SQLiteStore(tmp_path / "m.db"))
        yield store


def _tables(store: SQLiteStore) -> set[str]:
    return {finding.table for finding in store.check()}


def test_check_finds_postings_moved_to_other_ordinals_of_the_same_sum(
    small: SQLiteStore,
) -> None:
    """0b1001 -> 0b0110: the ordinals 0 and 3 become 1 and 2, whose sum is
    the same; the check's sum weighs each ordinal's square too."""
    for body in ("cache lock", "cache retry", "cache retry", "cache lock"):
        small.record("lesson", body)
    conn = small.connection
    (blob,) = conn.execute("SELECT postings FROM memory_segments WHERE term = 'lock'").fetchone()
    assert bytes(blob) == bytes([postings.BITMAP, 0, 0, 0b1001])
    conn.execute(
        "UPDATE memory_segments SET postings = ? WHERE term = 'lock'",
        (bytes([postings.BITMAP, 0, 0, 0b0110]),),
    )
    assert "memory_segments" in _tables(small)


def test_a_count_past_its_segment_is_corrupt_not_another_postings(small: SQLiteStore) -> None:
    """A count's offset is two bytes wide: one past the segment's ordinals
    would land on a posting of a later segment."""
    for _ in range(24):
        small.record("lesson", "cache lock")
    conn = small.connection
    cell, blob = conn.execute(
        "SELECT cell, postings FROM memory_segments WHERE term = 'cach' AND segment = 0"
    ).fetchone()
    damaged = struct.pack("<BHHI", blob[0], 1, 20, 5) + bytes(blob[3:])
    conn.execute(
        "UPDATE memory_segments SET postings = ? WHERE term = 'cach' AND cell = ? AND segment = 0",
        (damaged, cell),
    )
    with pytest.raises(Corrupt, match=r"^memory_segments term 'cach' cell \d+ segment 0: "):
        small.search("cache")
    assert "memory_segments" in _tables(small)


def test_check_finds_a_superseded_records_member_a_forget_would_restore(
    small: SQLiteStore,
) -> None:
    small.record("lesson", "cache lock")
    small.record("lesson", "cache retry", supersedes=1)
    conn = small.connection
    cell, segment, lengths = conn.execute(
        "SELECT cell, segment, lengths FROM memory_members ORDER BY cell LIMIT 1"
    ).fetchone()
    held = array(postings.MEMBER_LENGTH, lengths)
    held[0] += 7
    conn.execute(
        "UPDATE memory_members SET lengths = ? WHERE cell = ? AND segment = ?",
        (held.tobytes(), cell, segment),
    )
    assert "memory_members" in _tables(small)


def test_a_tails_posting_at_no_member_is_named_by_the_tail(tmp_path: Path) -> None:
    """The tail of ``lock`` names ordinal 5 of a cell of two members: the
    check and the search both name ``memory_cells``, where the tail is."""
    with SQLiteStore(tmp_path / "m.db") as store, patch.object(index, "RECENT_RECORDS", 1):
        store.record("lesson", "cache lock")
        store.record("lesson", "cache retry")
        conn = store.connection
        conn.execute(
            "UPDATE memory_cells SET tail = ? WHERE term = 'lock'",
            (postings.TAIL.pack(5, 1),),
        )
        strays = [f for f in store.check() if "ordinal 5" in (f.row or "")]
        assert [f.table for f in strays] == ["memory_cells"]
        with pytest.raises(Corrupt, match=r"^memory_cells term 'lock' cell \d+: a posting at"):
            store.search("lock")


def test_a_tail_naming_an_ordinal_twice_is_corrupt_not_two_postings(tmp_path: Path) -> None:
    """A rare term's tail names one ordinal twice where ``memory_cells``
    counts two postings: the search fails naming the cell's row, never
    scoring the record twice or answering with one posting fewer."""
    with SQLiteStore(tmp_path / "m.db") as store, patch.object(index, "RECENT_RECORDS", 1):
        store.record("lesson", "cache lock")
        store.record("lesson", "cache retry")
        store.connection.execute(
            "UPDATE memory_cells SET tail = ?, postings = 2 WHERE term = 'lock'",
            (postings.TAIL.pack(0, 1) * 2,),
        )
        with pytest.raises(
            Corrupt, match=r"^memory_cells term 'lock' cell \d+: counts 2 postings, where its"
        ):
            store.search("lock")


@pytest.mark.parametrize(
    ("damage", "action"),
    [
        ("UPDATE memory_recent SET terms = ?", "write"),
        ("UPDATE memory_recent SET length = 4294967296", "write"),
        ("UPDATE memory_stats SET live = 0", "search"),
        ("UPDATE memory_stats SET live_terms = 0", "search"),
        ("UPDATE memory_members SET ids = substr(ids, 1, 12)", "write"),
        ("UPDATE memory_members SET segment = 'x'", "search"),
        ("UPDATE memory_segments SET segment = 'x'", "search"),
        ("UPDATE memory_segments SET segment = 2147483647", "search"),
        ("UPDATE memory_cells SET tail = ?", "search"),
        ("UPDATE memory_cells SET cell = -1 - cell WHERE term = 'cach'", "search"),
        ("UPDATE memory_cells SET max_tf = 'zz' WHERE term = 'cach'", "search"),
        ("UPDATE memory_cells SET postings = 'abc' WHERE term = 'cach'", "search"),
        ("UPDATE memory_recent SET cell = -5", "search"),
        ("UPDATE memory_recent SET cell = 'x'", "search"),
        ("UPDATE memory_recent SET length = 'x'", "search"),
        ("UPDATE memory_stats SET live = 'abc'", "search"),
        ("UPDATE memory_stats SET records = 'x'", "search"),
    ],
)
def test_damaged_numbers_in_the_index_are_corrupt_or_named(
    tmp_path: Path, damage: str, action: str
) -> None:
    """Counts past any a write makes, a huge segment number or ordinal,
    text where a number belongs, a cell no write makes: Corrupt naming the
    damaged table (never a failure of the code that met it), and the
    snapshot and the check still finish."""
    params: tuple[Any, ...] = ()
    if "SET terms" in damage:
        params = (f"\ncach\t{2**32}",)
    elif "SET tail" in damage:
        params = (postings.TAIL.pack(2**31, 1),)
    with SQLiteStore(tmp_path / "m.db") as store:
        with patch.object(postings, "TAIL_POSTINGS", 1), patch.object(index, "RECENT_RECORDS", 4):
            store.record_many([_write("cache lock"), _write("cache retry")] * 2)
        store.record("lesson", "cache lock")  # waits in the recent tier
        store.connection.execute(damage, params)
        act: Callable[[], object] = (
            (lambda: store.record_many([_write("cache retry")] * index.RECENT_RECORDS))
            if action == "write"
            else (lambda: store.search("cache lock retry"))
        )
        with pytest.raises(Corrupt, match=r"^memory_\w+ .*; the term index is damaged"):
            act()
        assert store.snapshot()
        assert store.check()


def _write(body: str) -> MemoryWrite:
    return MemoryWrite("lesson", body)


def test_a_segment_cut_short_fails_the_search_rather_than_losing_postings(tmp_path: Path) -> None:
    """A bitmap one byte short still parses, as fewer postings: the search
    counts what it decoded against what ``memory_cells`` counts, and fails
    naming the row rather than answering without the records it lost."""
    with SQLiteStore(tmp_path / "m.db") as store:
        store.record_many([_write(f"cache lock w{n}") for n in range(300)])
        conn = store.connection
        conn.execute(
            "UPDATE memory_segments SET postings = substr(postings, 1, length(postings) - 1)"
            " WHERE term = 'lock'"
        )
        with pytest.raises(
            Corrupt, match=r"^memory_cells term 'lock' cell \d+: counts \d+ postings, where its"
        ):
            store.search("lock", limit=0)
        conn.execute("DELETE FROM memory_segments WHERE term = 'lock'")
        with pytest.raises(Corrupt, match=r"^memory_cells term 'lock' cell \d+: .* none are held"):
            store.search("lock")
        assert "memory_segments" in _tables(store)


@pytest.mark.parametrize("confidence", ["9e999", "-9e999"], ids=["infinity", "minus-infinity"])
@pytest.mark.parametrize("live", [True, False], ids=["live", "superseded"])
def test_a_confidence_no_number_bounds_is_a_finding_of_its_row_not_a_failed_check(
    tmp_path: Path, confidence: str, live: bool
) -> None:
    """A confidence planted past the constraints that is no finite number
    has no cell in the term index to be compared with: the check names the
    record's confidence, as for one outside [0, 1], rather than fail on it
    (OverflowError, an "unexpected failure")."""
    with SQLiteStore(tmp_path / "m.db") as store:
        first = store.record("lesson", "cache lock", confidence=0.5)
        if not live:
            store.record("lesson", "cache retry", supersedes=first)
        conn = store.connection
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute(f"UPDATE agent_memory SET confidence = {confidence} WHERE id = ?", (first,))
        problems = [f"{f.table} {f.row}: {f.problem}" for f in store.check()]
    assert any(
        problem.startswith(f"agent_memory id {first}: confidence ")
        and "is outside [0, 1]" in problem
        for problem in problems
    ), problems


def test_a_records_wrong_postings_are_named_in_every_table_that_holds_them(
    tmp_path: Path,
) -> None:
    """A record deleted by hand leaves postings in a rare term's tail
    (``memory_cells``) and a common term's segment (``memory_segments``).
    The check named one of the two, whichever a set of hashed strings met
    first -- another table from one run to the next.  It names both, in
    the same order every run."""
    import os
    import subprocess
    import sys

    path = tmp_path / "m.db"
    common = ("cache", "lock", "retry", "parser", "widget", "index")
    with SQLiteStore(path) as store:
        store.record_many(
            [
                MemoryWrite("lesson", f"{common[n % 6]} {common[(n + 1) % 6]} rare{n}")
                for n in range(300)
            ]
        )
        conn = store.connection
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("DELETE FROM agent_memory WHERE id = 100")
        found = {f.table for f in store.check() if f.row == "id 100"}
    assert found == {"memory_cells", "memory_segments"}, found
    script = "from roteiro_memory.stores.sqlite.checkfile import check_file; import sys; " + (
        "print([str(f) for f in check_file(sys.argv[1])])"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            check=True,
        ).stdout
        for seed in range(6)
    }
    assert len(runs) == 1, runs
