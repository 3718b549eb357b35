"""Beneath the store contract, SQLite only: the columns the sweep reads and
the SQL the ranking runs, pinned to the Python rules.

These take the ``sqlite_store`` fixture rather than ``store``.
"""

from __future__ import annotations

import contextlib
import pathlib
import sqlite3

import pytest
from hypothesis import given
from hypothesis import strategies as st
from store_states import five_states

from roteiro_memory import semantics as sem
from roteiro_memory.semantics import AnchorState, Decay
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sql.columns import CACHE_COLS, SWEEP_COLS
from roteiro_memory.stores.sql.dialects import SQLITE
from roteiro_memory.stores.sqlite.store import SQLiteStore

# --- SQLite only: beneath the contract ------------------------------------------------
#
# These look at the SQLite backend's columns and SQL directly, so they take the
# ``sqlite_store`` fixture rather than ``store``.


def _raw_put(store: SQLiteStore, key: str, stored_bytes: int, payload: int, last_used: int) -> None:
    """An entry whose stored ``bytes`` is independent of its payload."""
    store.connection.execute(
        "INSERT INTO agent_cache (key, fingerprint, json, bytes, generation, last_used, hits)"
        " VALUES (?, 'fp', ?, ?, 0, ?, 0)",
        (key, "x" * payload, stored_bytes, last_used),
    )


def _advance_clock(store: SQLiteStore) -> None:
    """Past the generation raw rows are written in, so none is generation-pinned."""
    store.connection.execute("UPDATE agent_cache_clock SET generation = 5")


def test_sqlite_sweep_totals_the_bytes_column_and_never_the_payload(
    sqlite_store: SQLiteStore,
) -> None:
    """By ``bytes``, ``heavy`` alone goes; by payload, ``light`` would go too."""
    _advance_clock(sqlite_store)
    _raw_put(sqlite_store, "heavy", 1000, 1, 1)
    _raw_put(sqlite_store, "light", 10, 1000, 2)
    _raw_put(sqlite_store, "mru", 0, 0, 3)

    swept = sqlite_store.cache_sweep(500)

    assert swept.evicted == 1, "a payload-measuring sweep would have taken `light` as well"
    assert swept.freed_bytes == 1000, "the stored size, not the 1 byte `heavy` holds"
    assert swept.retained_bytes == 10
    assert [row.key for row in sqlite_store.sweep_rows()] == ["light", "mru"]


def test_sqlite_sweep_query_names_no_payload_column() -> None:
    for forbidden in ("json", "fingerprint", "hits"):
        assert forbidden not in SWEEP_COLS, f"the sweep must not read {forbidden}"
    for required in (
        "c.key",
        "c.bytes",
        "c.generation",
        "c.last_used",
        "c.anchor_key",
        "c.anchor_blob",
    ):
        assert required in SWEEP_COLS, f"the sweep needs {required}"
    assert "c.json" in CACHE_COLS, "the full read is the one that carries the payload"


def test_sqlite_sweep_and_full_read_agree_row_for_row(sqlite_store: SQLiteStore) -> None:
    conn = sqlite_store.connection
    _advance_clock(sqlite_store)
    conn.execute("INSERT INTO nodes (key, kind, name, blob) VALUES ('sym:a', 'fn', 'a', 'blob1')")
    _raw_put(sqlite_store, "unanchored", 10, 4, 1)
    conn.execute(
        "INSERT INTO agent_cache"
        " (key, fingerprint, json, bytes, generation, last_used, hits, anchor_key, anchor_blob)"
        " VALUES ('valid', 'fp', '{}', 20, 0, 2, 0, 'sym:a', 'blob1'),"
        " ('drifted', 'fp', '{}', 30, 1, 3, 0, 'sym:a', 'blob-old'),"
        " ('vanished', 'fp', '{}', 40, 2, 4, 0, 'sym:gone', 'blob1'),"
        " ('unverifiable', 'fp', '{}', 50, 3, 5, 0, 'sym:a', NULL)"
    )
    narrow = sqlite_store.sweep_rows()
    full = sqlite_store.cache_entries()
    assert [(r.key, r.bytes, r.generation, r.last_used, r.anchor_state) for r in narrow] == [
        (e.key, e.bytes, e.generation, e.last_used, e.anchor_state) for e in full
    ]
    assert {r.anchor_state for r in narrow} == set(AnchorState), "every state exercised"


def test_sqlite_sweep_breaks_least_recently_used_ties_by_key(sqlite_store: SQLiteStore) -> None:
    """Ticks are unique through the API, so a tie needs raw rows to show."""
    _advance_clock(sqlite_store)
    _raw_put(sqlite_store, "b", 10, 1, 1)
    _raw_put(sqlite_store, "a", 10, 1, 1)
    _raw_put(sqlite_store, "mru", 10, 1, 2)
    assert sqlite_store.cache_sweep(20).evicted == 1
    assert [row.key for row in sqlite_store.sweep_rows()] == ["b", "mru"]


def test_sqlite_forget_reports_restored_predecessors_ascending(
    sqlite_store: SQLiteStore,
) -> None:
    """The API supersedes one record per write; raw pointers show the order."""
    ids = [sqlite_store.record("lesson", f"r{n}") for n in range(4)]
    sqlite_store.connection.execute(
        "UPDATE agent_memory SET superseded_by = ? WHERE id IN (?, ?, ?)",
        (ids[3], ids[2], ids[0], ids[1]),
    )
    assert sqlite_store.forget(ids[3]).restored == ids[:3]


DECAYS = [Decay.none(), *(Decay.parse(t) for t in ("linear", "linear:0", "linear:1"))]


DECAYS += [Decay.parse(t) for t in ("linear:7", "exponential", "exponential:0")]


DECAYS += [Decay.parse(t) for t in ("exponential:3", f"exponential:{sem.U64_MAX}")]


def _sql_scores(
    conn: sqlite3.Connection, decay: Decay, generation: int, source: str, columns: dict[str, str]
) -> list[tuple[int, float]]:
    expr, params = sqlexpr.score_expr(decay, SQLITE, **columns)
    rows = conn.execute(f"SELECT id, {expr} FROM {source}", {**params, "generation": generation})
    return [(row[0], row[1]) for row in rows]


@pytest.mark.parametrize("decay", DECAYS, ids=str)
def test_sqlite_ranking_in_sql_agrees_with_python_bit_for_bit(
    sqlite_store: SQLiteStore, decay: Decay
) -> None:
    confidences = [None, 0.0, 1.0, 0.1, 1 / 3, 0.7, 5e-324, 0.999999]
    five_states(sqlite_store)
    for n in range(30):
        sqlite_store.record(
            "lesson",
            f"filler {n}",
            anchor=["sym:valid", "sym:drift", "sym:gone", "sym:unv", None][n % 5],
            confidence=confidences[n % len(confidences)],
        )
    generation = sqlite_store.recall().generation
    records = {r.id: r for r in sqlite_store.list().records}
    scores = _sql_scores(
        sqlite_store.connection,
        decay,
        generation,
        "agent_memory m LEFT JOIN nodes n ON n.key = m.anchor_key",
        {
            "confidence": "m.confidence",
            "id_column": "m.id",
            "anchor_key": "m.anchor_key",
            "anchor_blob": "m.anchor_blob",
            "node_key": "n.key",
            "node_blob": "n.blob",
        },
    )
    assert {records[i].anchor_state for i, _ in scores} == set(AnchorState)
    for record_id, sql_score in scores:
        record = records[record_id]
        python = sem.score(
            sem.base_confidence(record.confidence),
            sem.anchor_penalty(record.anchor_state),
            decay.factor(sem.record_age(generation, record_id)),
        )
        assert float(sql_score).hex() == python.hex(), f"record {record_id} under {decay}"
    recalled = sqlite_store.recall(decay=decay)
    assert [r.record.id for r in recalled.results] == [
        i for i, _ in sorted(scores, key=lambda p: sem.rank_key(p[1], p[0]))
    ]


@given(
    confidence=st.none() | st.floats(min_value=0.0, max_value=1.0),
    record_id=st.integers(min_value=1, max_value=2**62),
    newer=st.integers(min_value=0, max_value=2**62 - 1),  # the generation fits in 64 bits
    decay=st.sampled_from(["none", "linear", "exponential"]).flatmap(
        lambda mode: (
            st.just(Decay.none())
            if mode == "none"
            else st.integers(0, sem.U64_MAX).map(lambda p: Decay(mode, p))
        )
    ),
    anchor=st.sampled_from(
        [
            (None, None, None, None),
            ("k", "b1", "k", "b1"),
            ("k", "b1", "k", "b2"),
            ("k", "b1", None, None),
            ("k", None, "k", "b1"),
            ("k", "b1", "k", None),
        ]
    ),
)
def test_sqlite_score_expression_equals_python_score_for_any_terms(
    confidence: float | None,
    record_id: int,
    newer: int,
    decay: Decay,
    anchor: tuple[str | None, str | None, str | None, str | None],
) -> None:
    generation = record_id + newer
    anchor_key, anchor_blob, node_key, node_blob = anchor
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        source = (
            "(SELECT :c AS confidence, :i AS id, :ak AS anchor_key, :ab AS anchor_blob,"
            " :nk AS node_key, :nb AS node_blob)"
        )
        expr, params = sqlexpr.score_expr(
            decay,
            SQLITE,
            confidence="confidence",
            id_column="id",
            anchor_key="anchor_key",
            anchor_blob="anchor_blob",
            node_key="node_key",
            node_blob="node_blob",
        )
        (sql_score,) = conn.execute(
            f"SELECT {expr} FROM {source}",
            {
                **params,
                "generation": generation,
                "c": confidence,
                "i": record_id,
                "ak": anchor_key,
                "ab": anchor_blob,
                "nk": node_key,
                "nb": node_blob,
            },
        ).fetchone()
    state = sem.resolve_anchor(anchor_key, anchor_blob, node_key is not None, node_blob)
    python = sem.score(
        sem.base_confidence(confidence), sem.anchor_penalty(state), decay.factor(newer)
    )
    assert float(sql_score).hex() == python.hex()


@pytest.mark.parametrize("name", ["file:other.db", "file:other.db?mode=memory", "file:x?vfs=nope"])
def test_a_store_named_like_a_uri_is_the_file_of_that_name(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """SQLite may read a file name starting ``file:`` as a URI; a store is
    always the file named, and another file beside it is left as it was."""
    monkeypatch.chdir(tmp_path)
    other = tmp_path / "other.db"
    SQLiteStore(other).close()
    before = other.read_bytes()
    store = SQLiteStore(name)
    try:
        store.record("lesson", "where does this go")
    finally:
        store.close()
    assert other.read_bytes() == before
    reopened = SQLiteStore(tmp_path / name)
    try:
        assert [r.body for r in reopened.list().records] == ["where does this go"]
    finally:
        reopened.close()
