"""Export and import for the PostgreSQL store, in the same JSON Lines format.

:mod:`roteiro_memory.transfer` owns the format and its checks; this module
only reads and writes a PostgreSQL schema's rows in it, on a connection
inside the store's own transaction helpers, so an export of
either backend imports into the other and reproduces the store exactly.  The
header's ``sequence`` is the id counter (null when no id was ever issued, as
SQLite reports it), and ``schema_version`` is the format's, shared by both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from roteiro_memory.errors import Corrupt
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import index
from roteiro_memory.stores.sql.columns import NODES, SYNC_STATE, insert, select_all, upsert
from roteiro_memory.stores.sql.dialects import POSTGRES
from roteiro_memory.transfer import (
    CACHE,
    NODE,
    RECORD,
    Export,
    ImportRefused,
    counts,
    export_header,
    export_items,
    indexed_rows,
    record_rows,
    sealed,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["export_lines", "import_export"]

_PLAIN_TEXT = frozenset({"kind", "created_at", "superseded_at"})
"""A record's columns stored as ``text``; every other string column of the
store is UTF-8 ``bytea`` (see :mod:`roteiro_memory.stores.postgres.migrations`)."""


def _bytea(value: Any) -> Any:
    return POSTGRES.text(value) if isinstance(value, str) else value


def _record_column(name: str) -> Callable[[Any], Any] | None:
    """How a record's column is bound: as it is, or as ``bytea``."""
    return None if name in _PLAIN_TEXT else _bytea


def export_lines(conn: psycopg.Connection[tuple[Any, ...]]) -> Iterator[str]:
    """The store as JSON Lines, header first, read through ``conn`` (inside
    the caller's read snapshot)."""
    last_id = conn.execute("SELECT last_id FROM agent_memory_ids WHERE id = 0").fetchone()
    if last_id is None:
        raise Corrupt("agent_memory_ids: the id counter row is missing; run `roteiro-memory check`")
    clock = conn.execute("SELECT ticks, generation FROM agent_cache_clock WHERE id = 0").fetchone()
    witness = conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
    header = export_header(last_id[0] or None, clock, witness, POSTGRES.read)

    def select(table: str, columns: Sequence[cols.Column], order: str) -> Any:
        return conn.execute(select_all(table, columns, order))

    yield from sealed(header, export_items(select, POSTGRES.read))


def import_export(conn: psycopg.Connection[tuple[Any, ...]], parsed: Export) -> dict[str, int]:
    """Load ``parsed`` through ``conn`` (inside the caller's write
    transaction) into a store that must be empty."""
    # The locks every writer takes, so nothing interleaves with the load.
    conn.execute("SELECT 1 FROM agent_memory_ids WHERE id = 0 FOR UPDATE")
    conn.execute("SELECT 1 FROM agent_cache_clock WHERE id = 0 FOR UPDATE")
    _require_empty(conn)
    node_names = cols.names(NODE)
    with conn.cursor() as cur:
        cur.execute("DELETE FROM nodes")
        cur.executemany(
            insert("nodes", node_names, "%s") + upsert(NODES, "key", target=POSTGRES.keyed("key")),
            [[_bytea(node[n]) for n in node_names] for node in parsed.nodes],
        )
        cur.execute("DELETE FROM sync_state")
        witness = parsed.header.get("witness")
        if witness is not None:
            cur.execute(insert("sync_state", SYNC_STATE, "%s"), (0, _bytea(witness.get("tree"))))
        POSTGRES.load(
            cur.connection,
            "agent_memory",
            [*cols.names(RECORD), "search"],
            # With their pointers: a foreign key is checked once the COPY ends.
            record_rows(parsed, _record_column, pointers=True),
        )
        # Derived data: rebuilt, never exported; from the records as written here.
        index.rebuild(cur.connection, POSTGRES, indexed_rows(parsed))
        cur.execute(
            "UPDATE agent_memory_ids SET last_id = %s WHERE id = 0",
            (parsed.header.get("sequence") or 0,),
        )
        cache_names = cols.names(CACHE)
        cur.executemany(
            insert("agent_cache", cache_names, "%s"),
            [[_bytea(c[n]) for n in cache_names] for c in parsed.cache],
        )
        clock = parsed.header["clock"]
        cur.execute(
            "UPDATE agent_cache_clock SET ticks = %s, generation = %s WHERE id = 0",
            (clock["ticks"], clock["generation"]),
        )
    return counts(parsed)


def _require_empty(conn: psycopg.Connection[tuple[Any, ...]]) -> None:
    row = conn.execute(
        "SELECT (SELECT COUNT(*) FROM agent_memory), (SELECT COUNT(*) FROM agent_cache),"
        " (SELECT last_id FROM agent_memory_ids WHERE id = 0),"
        " (SELECT ticks FROM agent_cache_clock WHERE id = 0),"
        " (SELECT generation FROM agent_cache_clock WHERE id = 0)"
    ).fetchone()
    assert row is not None
    records, entries, last_id, ticks, generation = row
    if records or entries or last_id or ticks or generation:
        raise ImportRefused(
            f"the store is not empty ({records} records, {entries} cache entries, ids issued "
            f"up to {last_id}, cache clock at tick {ticks}); import only into a fresh store, "
            "e.g. a new schema: postgresql://HOST/DB?schema=NEW"
        )
