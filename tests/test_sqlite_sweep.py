"""The SQLite sweep decides in SQL from the narrow columns, never payloads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roteiro_memory import GraphNode, ModelStore, SQLiteStore, eviction
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sql.dialects import SQLITE


def _tier(store: SQLiteStore | ModelStore) -> None:
    store.put_nodes([GraphNode("sym:a", blob="b1"), GraphNode("sym:u", blob=None)])
    for n in range(12):
        anchor = (None, "sym:a", "sym:gone", "sym:u")[n % 4]
        store.cache_put(f"k{n:02}", "fp", "x" * (10 * n), anchor=anchor)
    store.put_nodes([GraphNode("sym:a", blob="b2")])  # drift what anchored to sym:a
    for n in (3, 7):
        store.cache_get(f"k{n:02}")


def test_every_statement_of_the_sweep_names_no_payload_column(tmp_path: Path) -> None:
    """Traced, not inspected: whatever SQL the sweep runs never reads ``json``,
    ``fingerprint`` or ``hits`` -- the stored ``bytes`` decides."""
    store = SQLiteStore(tmp_path / "memory.db")
    _tier(store)
    store.cache_sweep(10**9)  # advance the generation so nothing is generation-pinned
    statements: list[str] = []
    store.connection.set_trace_callback(statements.append)
    swept = store.cache_sweep(200)
    store.connection.set_trace_callback(None)
    assert swept.evicted > 0
    reads = [s for s in statements if "agent_cache" in s]
    assert reads, "the sweep touched the cache table"
    for statement in reads:
        for column in ("json", "fingerprint", "hits"):
            assert not re.search(rf"\b{column}\b", statement), statement


@pytest.mark.parametrize("budget", [0, 100, 200, 350, 500, 10**9])
def test_sql_sweep_matches_the_model_entry_for_entry(tmp_path: Path, budget: int) -> None:
    """Pins, order and the stopping point decided in SQL agree with the model,
    which decides them in Python from the same rules."""
    sqlite, model = SQLiteStore(tmp_path / "memory.db"), ModelStore()
    for store in (sqlite, model):
        _tier(store)
        store.cache_sweep(10**9)
        store.cache_put("fresh", "fp", "y" * 50)  # current generation, applies: pinned
    assert sqlite.cache_sweep(budget) == model.cache_sweep(budget)
    assert sqlite.cache_entries() == model.cache_entries()


def test_sql_pin_and_order_render_the_semantics(tmp_path: Path) -> None:
    """The rendered pin and eviction order give, row for row, what
    ``is_pinned`` and ``eviction_key`` give in Python."""
    store = SQLiteStore(tmp_path / "memory.db")
    _tier(store)
    applies = sqlexpr.applies_expr(
        anchor_key="c.anchor_key", anchor_blob="c.anchor_blob", node_key="n.key", node_blob="n.blob"
    )
    pinned = sqlexpr.pinned_expr(SQLITE, applies=applies, key="c.key", generation="c.generation")
    order = sqlexpr.eviction_order({"applies": applies, "last_used": "c.last_used", "key": "c.key"})
    entries = store.cache_entries()
    mru = max(entries, key=lambda e: (e.last_used, e.key))
    rows = store.connection.execute(
        f"SELECT c.key, {pinned} FROM agent_cache c LEFT JOIN nodes n ON n.key = c.anchor_key"
        f" ORDER BY {order}",
        {"mru": mru.key, "cache_generation": 0},
    ).fetchall()
    expected_order = sorted(
        entries,
        key=lambda e: eviction.eviction_key(e.anchor_state.applies, e.last_used, e.key),
    )
    assert [key for key, _ in rows] == [e.key for e in expected_order]
    by_key = {e.key: e for e in entries}
    for key, pin in rows:
        entry = by_key[key]
        expected = eviction.is_pinned(entry is mru, entry.generation, 0, entry.anchor_state.applies)
        assert bool(pin) is expected, key
