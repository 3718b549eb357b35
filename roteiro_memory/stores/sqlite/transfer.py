"""Export and import for the SQLite store, in the format of
:mod:`roteiro_memory.transfer`.

Both run on a connection inside the store's own transaction helpers (a read
snapshot for export, one write transaction for import), so they get the
store's rollback and error handling.  The header's ``sequence`` is
``sqlite_sequence``'s (null when no id was ever issued).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

from roteiro_memory.errors import Corrupt, excerpt
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import index
from roteiro_memory.stores.sql.columns import NODES, SYNC_STATE, insert, select_all, upsert
from roteiro_memory.stores.sql.dialects import SQLITE
from roteiro_memory.stores.sqlite.text import undecodable_kept
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
    pointer_rows,
    record_rows,
    sealed,
)

__all__ = ["export_lines", "import_export"]


def _exportable(value: Any) -> Any:
    """A stored SQLite value as JSON carries it; a value this version never
    writes (binary data, a non-finite real) is refused rather than exported;
    text that is not UTF-8, read as :func:`~.text.undecodable_kept` reads
    it, is refused by the export's own rule
    (:func:`~roteiro_memory.transfer.export_items`)."""
    if isinstance(value, bytes) or (isinstance(value, float) and not math.isfinite(value)):
        raise Corrupt(
            f"the store holds {excerpt(value)}, which this version never writes; "
            "run `roteiro-memory check`"
        )
    return value


def export_lines(conn: sqlite3.Connection) -> Iterator[str]:
    """The store as JSON Lines, header first, read through ``conn`` (inside
    the caller's read transaction)."""
    with undecodable_kept(conn):
        yield from _lines(conn)


def _lines(conn: sqlite3.Connection) -> Iterator[str]:
    seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'agent_memory'").fetchone()
    clock = conn.execute("SELECT ticks, generation FROM agent_cache_clock WHERE id = 0").fetchone()
    witness = conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
    header = export_header(seq[0] if seq else None, clock, witness, _exportable)

    def select(table: str, columns: Sequence[cols.Column], order: str) -> Any:
        return conn.execute(select_all(table, columns, order))

    yield from sealed(header, export_items(select, _exportable))


def import_export(conn: sqlite3.Connection, parsed: Export) -> dict[str, int]:
    """Load ``parsed`` through ``conn`` (inside the caller's write
    transaction) into a store that must be empty."""
    _require_empty(conn)
    # The graph is replaced whole.  (Not by json_each over the kept keys:
    # SQLite's JSON functions end a string at U+0000, which a key may hold.)
    conn.execute("DELETE FROM nodes")
    node_names = cols.names(NODE)
    conn.executemany(
        insert("nodes", node_names, "?") + upsert(NODES, "key"),
        [[n[name] for name in node_names] for n in parsed.nodes],
    )
    conn.execute("DELETE FROM sync_state")
    witness = parsed.header.get("witness")
    if witness is not None:
        conn.execute(insert("sync_state", SYNC_STATE, "?"), (0, witness.get("tree")))
    conn.executemany(
        insert("agent_memory", [*cols.names(RECORD), "search"], "?"),
        record_rows(parsed),
    )
    conn.executemany(
        "UPDATE agent_memory SET superseded_by = ?, superseded_at = ? WHERE id = ?",
        pointer_rows(parsed),
    )
    # Derived data: rebuilt, never exported; from the records as written here.
    index.rebuild(conn, SQLITE, indexed_rows(parsed))
    conn.execute("DELETE FROM sqlite_sequence WHERE name = 'agent_memory'")
    if parsed.header.get("sequence") is not None:
        conn.execute(
            "INSERT INTO sqlite_sequence (name, seq) VALUES ('agent_memory', ?)",
            (parsed.header["sequence"],),
        )
    cache_names = cols.names(CACHE)
    conn.executemany(
        insert("agent_cache", cache_names, "?"),
        [[c[n] for n in cache_names] for c in parsed.cache],
    )
    clock = parsed.header["clock"]
    conn.execute(
        "UPDATE agent_cache_clock SET ticks = ?, generation = ? WHERE id = 0",
        (clock["ticks"], clock["generation"]),
    )
    return counts(parsed)


def _require_empty(conn: sqlite3.Connection) -> None:
    records = conn.execute("SELECT COUNT(*) FROM agent_memory").fetchone()[0]
    entries = conn.execute("SELECT COUNT(*) FROM agent_cache").fetchone()[0]
    seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'agent_memory'").fetchone()
    ticks, generation = conn.execute(
        "SELECT ticks, generation FROM agent_cache_clock WHERE id = 0"
    ).fetchone()
    if records or entries or (seq and seq[0]) or ticks or generation:
        raise ImportRefused(
            f"the store is not empty ({records} records, {entries} cache entries, ids issued "
            f"up to {seq[0] if seq else 0}, cache clock at tick {ticks}); import only into a "
            "fresh store, e.g. --db NEW.db"
        )
