"""The cache tier's writes and counts, in SQL over a :class:`~.dialects.Dialect`.

Every function runs inside the transaction its caller
(:class:`~.store.SQLStore`) opened and locked.  A write ticks the clock
first, by the one statement that takes the clock row's lock where locks are
taken per row, so every cache write and the sweep take it before the table.
The sweep decides in SQL from the narrow columns
(:data:`~.columns.SWEEP_COLS`): one aggregate for what the tier holds and
pins, then the candidates streamed in eviction order only until the tier
fits, so no payload is read and no row is held.
"""

from __future__ import annotations

from roteiro_memory import eviction
from roteiro_memory.errors import Corrupt
from roteiro_memory.results import CacheStats, CacheSweep
from roteiro_memory.semantics import INT64_MAX
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sql.columns import CACHE_FROM

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

    from roteiro_memory.stores.sql.dialects import Dialect

__all__ = ["APPLIES", "put", "stats", "sweep", "touch"]

APPLIES = sqlexpr.applies_expr(
    anchor_key="c.anchor_key", anchor_blob="c.anchor_blob", node_key="n.key", node_blob="n.blob"
)
"""Whether a cache entry's anchor applies, over :data:`~.columns.CACHE_FROM`."""
_ORDER_BY = {"applies": APPLIES, "last_used": "c.last_used", "key": "c.key"}
EVICTION_ORDER = sqlexpr.eviction_order(_ORDER_BY)
"""The sweep's candidates, first to go first; byte keys sort as their strings do."""
MOST_RECENTLY_USED = sqlexpr.most_recently_used(_ORDER_BY)


def _clock(row: Sequence[Any] | None, names: tuple[str, ...]) -> list[int]:
    """The values ``names`` of the cache clock's one row, which only a hand deletes."""
    if row is None:
        raise Corrupt(
            "agent_cache_clock: the cache clock row is missing; "
            "run `roteiro-memory check` on the store"
        )
    return [
        cols.stored("agent_cache_clock", 0, name, value, int)
        for name, value in cols.decode(names, row).items()
    ]


def _step(conn: Any, name: str, returning: tuple[str, ...]) -> list[int]:
    """Advance the clock's ``name`` by one (:func:`~roteiro_memory.eviction.advanced`
    says when it cannot: at the largest 64-bit integer) and read ``returning``."""
    row = conn.execute(
        f"UPDATE agent_cache_clock SET {name} = {name} + 1 WHERE id = 0 AND {name} < {INT64_MAX}"
        f" RETURNING {', '.join(returning)}"
    ).fetchone()
    if row is None:
        held = conn.execute(f"SELECT {name} FROM agent_cache_clock WHERE id = 0").fetchone()
        eviction.advanced(name, _clock(held, (name,))[0])  # raises: it has no next
    return _clock(row, returning)


def generation(conn: Any) -> int:
    """The cache generation."""
    row = conn.execute("SELECT generation FROM agent_cache_clock WHERE id = 0").fetchone()
    return _clock(row, ("generation",))[0]


def put(
    conn: Any, d: Dialect, key: str, fingerprint: str, json: str, anchor: str | None, size: int
) -> None:
    """Write or replace the entry ``key`` at the next tick (a replacement
    keeps its hits), its anchor's blob taken from the graph now."""
    tick, current = _step(conn, "ticks", ("ticks", "generation"))
    blob = None
    if anchor is not None:
        node = conn.execute(f"SELECT blob FROM nodes WHERE key = {d.mark}", (d.text(anchor),))
        found = node.fetchone()
        blob = cols.stored("nodes", anchor, "blob", d.read(found[0]), str, True) if found else None
    written = cols.AGENT_CACHE
    conn.execute(
        cols.insert("agent_cache", written, d.mark)
        + cols.upsert(written, "key", kept=("hits",), target=d.keyed("key")),
        (
            d.text(key),
            d.text(fingerprint),
            size,
            current,
            tick,
            0,
            d.optional(anchor),
            d.optional(blob),
            d.text(json),
        ),
    )


def touch(conn: Any, d: Dialect, key: str) -> None:
    """Record an access to the entry ``key`` at the next tick."""
    [tick] = _step(conn, "ticks", ("ticks",))
    conn.execute(
        f"UPDATE agent_cache SET hits = hits + 1, last_used = {d.mark} WHERE key = {d.mark}",
        (tick, d.text(key)),
    )


def stats(conn: Any, d: Dialect, budget_bytes: int) -> CacheStats:
    """What the tier holds against ``budget_bytes``."""
    row = conn.execute("SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM agent_cache").fetchone()
    entries, held = (d.whole(value) for value in row)
    return CacheStats(
        entries=entries, bytes=held, budget_bytes=budget_bytes, generation=generation(conn)
    )


def sweep(conn: Any, d: Dialect, budget_bytes: int, narrow: Callable[[Any], object]) -> CacheSweep:
    """Evict down to ``budget_bytes`` by the semantics' order, then advance
    the generation.  ``narrow(conn)`` reads every entry's narrow columns,
    raising Corrupt for the first that holds a type this version never
    writes: it is called when the aggregate finds one, so such a store is
    reported rather than swept."""
    # Advanced first, in the transaction that evicts: refused (at the largest
    # 64-bit integer) before anything goes.
    [new_generation] = _step(conn, "generation", ("generation",))
    current = new_generation - 1
    mru = conn.execute(
        f"SELECT c.key FROM agent_cache c ORDER BY {MOST_RECENTLY_USED} LIMIT 1"
    ).fetchone()
    params = {"mru": mru[0] if mru else None, "cache_generation": current}
    pinned_sql = sqlexpr.pinned_expr(d, applies=APPLIES, key="c.key", generation="c.generation")
    totals = conn.execute(
        f"SELECT COUNT(*), COALESCE(SUM(c.bytes), 0), COALESCE(SUM({pinned_sql}), 0),"
        f" COALESCE(SUM({d.damaged_cache}), 0){CACHE_FROM}",
        params,
    ).fetchone()
    scanned, held, pinned, damaged = (d.whole(value) for value in totals)
    if damaged:
        narrow(conn)  # raises Corrupt, naming the first damaged row
    candidates = conn.execute(
        f"SELECT c.key, c.bytes{CACHE_FROM} WHERE ({pinned_sql}) = 0 ORDER BY {EVICTION_ORDER}",
        params,
    )
    doomed: list[tuple[Any, int]] = []

    def sizes() -> Iterator[int]:
        for key, size in candidates:
            doomed.append((key, size))
            yield size

    evict = eviction.evictions_until_fits(sizes(), held, budget_bytes)
    candidates.close()
    del doomed[evict:]
    d.delete_keys(conn, "agent_cache", "key", sorted(key for key, _ in doomed))
    freed = sum(size for _, size in doomed)
    retained = held - freed
    return CacheSweep(
        budget_bytes=budget_bytes,
        scanned=scanned,
        pinned=pinned,
        evicted=evict,
        freed_bytes=freed,
        retained_bytes=retained,
        over_budget=retained > budget_bytes,
        generation=new_generation,
    )
