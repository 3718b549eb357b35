"""The integrity check of a PostgreSQL store, as the same findings.

What the schema cannot rule out is checked here, one
:class:`~roteiro_memory.check.Finding` per offending row, like the SQLite
check: the schema version, stored text that is not UTF-8, scopes and bodies a
write would refuse, search text that disagrees with its record, supersession
pointers that dangle, fork, point backwards or cycle, timestamps without
pointers, cache sizes that disagree with their payloads, clocks behind the
entries they stamped or two entries sharing one tick, and an id counter
behind the largest id.  (Kinds, confidences and the clock rows are held by
CHECK constraints and keys; a store that breaks them was not written by
this version and is reported by the read that meets it.)

Everything is read in one read-only snapshot; nothing is changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roteiro_memory.check import (
    Finding,
    MemoryRow,
    cache_findings,
    memory_findings,
    schema_findings,
    supersession,
)
from roteiro_memory.stores.postgres.migrations import MIGRATIONS, SCHEMA_VERSION
from roteiro_memory.stores.postgres.store import PostgresStore

if TYPE_CHECKING:
    import psycopg

__all__ = ["check_postgres"]


def check_postgres(store: PostgresStore) -> list[Finding]:
    """Every problem found in ``store``; empty when it is healthy."""
    conn = store.connection
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        findings = _schema(conn)
        findings += _records(conn)
        # The rules are the SQLite check's own, over the same (decoded) rows.
        findings += supersession(conn)
        findings += _cache(conn)
    finally:
        conn.execute("COMMIT")
    return findings


def _schema(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    return schema_findings(applied, MIGRATIONS, SCHEMA_VERSION)


def _text(raw: bytes | None) -> str | None:
    """Stored UTF-8 as text; raises UnicodeDecodeError when it is not."""
    return None if raw is None else bytes(raw).decode("utf-8", "surrogatepass")


def _records(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    rows = conn.execute(
        "SELECT id, scope, anchor_key, anchor_path, body, search, superseded_by, superseded_at"
        " FROM agent_memory ORDER BY id"
    ).fetchall()
    out = memory_findings(_decoded_record(row) for row in rows)
    largest = max([0, *(row[0] for row in rows)])
    counter = conn.execute("SELECT last_id FROM agent_memory_ids WHERE id = 0").fetchone()
    last_id = counter[0] if counter else 0
    if last_id < largest:
        out.append(
            Finding(
                "agent_memory_ids",
                None,
                f"id counter {last_id} is behind the largest id {largest}: ids would be reused",
            )
        )
    return out


def _decoded_record(row: tuple[Any, ...]) -> MemoryRow | Finding:
    row_id, scope, key, path, body, search, by, at = row
    try:
        texts = [_text(value) for value in (scope, key, path, body, search)]
    except UnicodeDecodeError:
        return Finding("agent_memory", f"id {row_id}", "a text column is not UTF-8")
    scope_text, key_text, path_text, body_text, search_text = texts
    return MemoryRow(
        row_id, scope_text or "", key_text, path_text, body_text or "", search_text, by, at
    )


def _cache(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    clock = conn.execute("SELECT ticks, generation FROM agent_cache_clock WHERE id = 0").fetchone()
    if clock is None:
        return [Finding("agent_cache_clock", None, "the clock row is missing")]
    ticks, generation = clock
    rows = conn.execute(
        "SELECT key, fingerprint, json, bytes, generation, last_used, hits FROM agent_cache"
        " ORDER BY key"
    )
    return cache_findings(ticks, generation, (_decoded_entry(row) for row in rows))


def _decoded_entry(row: tuple[Any, ...]) -> tuple[Any, ...] | Finding:
    raw_key, raw_fingerprint, raw_json, *counters = row
    try:
        texts = [_text(v) or "" for v in (raw_key, raw_fingerprint, raw_json)]
    except UnicodeDecodeError:
        return Finding("agent_cache", repr(bytes(raw_key)), "a text column is not UTF-8")
    return (*texts, *counters)
