"""Export and import for the PostgreSQL store, in the same JSON Lines format.

:mod:`roteiro_memory.transfer` owns the format and its checks; this module
only reads and writes a PostgreSQL schema's rows in it, so an export of
either backend imports into the other and reproduces the store exactly.  The
header's ``sequence`` is the id counter (null when no id was ever issued, as
SQLite reports it), and ``schema_version`` is the format's, shared by both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from roteiro_memory import semantics as sem
from roteiro_memory.migrations import SCHEMA_VERSION
from roteiro_memory.postgres import PostgresStore
from roteiro_memory.transfer import (
    _CACHE,
    _NODE,
    _RECORD,
    EXPORT_FORMAT,
    Export,
    ImportRefused,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["export_lines", "import_lines"]

_PLAIN_TEXT = frozenset({"kind", "created_at", "superseded_at"})
"""A record's columns stored as ``text``; every other string column of the
store is UTF-8 ``bytea`` (see :mod:`roteiro_memory.pg_migrations`)."""


def _names(spec: Sequence[tuple[str, type, bool]]) -> list[str]:
    return [name for name, _, _ in spec]


def _decoded(value: Any) -> Any:
    return bytes(value).decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def _bytea(value: Any) -> Any:
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value


def _record_value(name: str, value: Any) -> Any:
    return value if name in _PLAIN_TEXT else _bytea(value)


def export_lines(store: PostgresStore) -> Iterator[str]:
    """The store as JSON Lines, header first, read on one snapshot."""
    conn = store.connection
    lines: list[str] = []
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        last_id = conn.execute("SELECT last_id FROM agent_memory_ids WHERE id = 0").fetchone()
        clock = conn.execute("SELECT ticks, generation FROM agent_cache_clock WHERE id = 0")
        ticks, generation = clock.fetchone() or (0, 0)
        witness = conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
        header = {
            "format": EXPORT_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "sequence": last_id[0] if last_id and last_id[0] else None,
            "clock": {"ticks": ticks, "generation": generation},
            "witness": {"tree": _decoded(witness[0])} if witness else None,
        }
        lines.append(json.dumps(header))
        for type_, table, spec, order in (
            ("node", "nodes", _NODE, "key"),
            ("record", "agent_memory", _RECORD, "id"),
            ("cache", "agent_cache", _CACHE, "key"),
        ):
            names = _names(spec)
            rows = conn.execute(f"SELECT {', '.join(names)} FROM {table} ORDER BY {order}")
            for row in rows:
                item = {name: _decoded(value) for name, value in zip(names, row, strict=True)}
                lines.append(json.dumps({"type": type_, **item}))
    finally:
        conn.execute("COMMIT")
    yield from lines


def import_lines(store: PostgresStore, parsed: Export) -> dict[str, int]:
    """Load ``parsed`` into ``store``, which must be empty; all or nothing."""
    conn = store.connection
    conn.execute("BEGIN")
    try:
        # The locks every writer takes, so nothing interleaves with the load.
        conn.execute("SELECT 1 FROM agent_memory_ids WHERE id = 0 FOR UPDATE")
        conn.execute("SELECT 1 FROM agent_cache_clock WHERE id = 0 FOR UPDATE")
        _require_empty(conn)
        node_names = _names(_NODE)
        with conn.cursor() as cur:
            cur.execute("DELETE FROM nodes")
            cur.executemany(
                f"INSERT INTO nodes ({', '.join(node_names)})"
                f" VALUES ({', '.join(['%s'] * len(node_names))})"
                " ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, name = excluded.name,"
                " path = excluded.path, blob = excluded.blob",
                [[_bytea(node[n]) for n in node_names] for node in parsed.nodes],
            )
            cur.execute("DELETE FROM sync_state")
            witness = parsed.header.get("witness")
            if witness is not None:
                cur.execute(
                    "INSERT INTO sync_state (id, tree) VALUES (0, %s)",
                    (_bytea(witness.get("tree")),),
                )
            names = _names(_RECORD)
            deferred = ("superseded_by", "superseded_at")
            cur.executemany(
                f"INSERT INTO agent_memory ({', '.join(names)}, search)"
                f" VALUES ({', '.join(['%s'] * (len(names) + 1))})",
                [
                    [
                        *(None if n in deferred else _record_value(n, r[n]) for n in names),
                        _bytea(sem.search_text(r["body"], r["anchor_key"], r["anchor_path"])),
                    ]
                    for r in sorted(parsed.records, key=lambda r: r["id"])
                ],
            )
            cur.executemany(
                "UPDATE agent_memory SET superseded_by = %s, superseded_at = %s WHERE id = %s",
                [
                    (r["superseded_by"], r["superseded_at"], r["id"])
                    for r in parsed.records
                    if r["superseded_by"] is not None
                ],
            )
            cur.execute(
                "UPDATE agent_memory_ids SET last_id = %s WHERE id = 0",
                (parsed.header.get("sequence") or 0,),
            )
            cache_names = _names(_CACHE)
            cur.executemany(
                f"INSERT INTO agent_cache ({', '.join(cache_names)})"
                f" VALUES ({', '.join(['%s'] * len(cache_names))})",
                [[_bytea(c[n]) for n in cache_names] for c in parsed.cache],
            )
            clock = parsed.header["clock"]
            cur.execute(
                "UPDATE agent_cache_clock SET ticks = %s, generation = %s WHERE id = 0",
                (clock["ticks"], clock["generation"]),
            )
    except BaseException:
        if not conn.closed:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return {"nodes": len(parsed.nodes), "records": len(parsed.records), "cache": len(parsed.cache)}


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
