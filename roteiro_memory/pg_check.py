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

import sqlite3
from typing import TYPE_CHECKING, Any, cast

from roteiro_memory import semantics as sem
from roteiro_memory.check import Finding, _supersession
from roteiro_memory.errors import RoteiroError
from roteiro_memory.pg_migrations import MIGRATIONS, SCHEMA_VERSION
from roteiro_memory.postgres import PostgresStore

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
        # The pointer rules are the SQLite check's own, over the same rows;
        # they use nothing but execute() and iteration, which psycopg shares.
        findings += _supersession(cast(sqlite3.Connection, conn))
        findings += _cache(conn)
    finally:
        conn.execute("COMMIT")
    return findings


def _schema(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    applied = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    out = [
        Finding(
            "schema_migrations",
            f"version {v}",
            f"schema version {v} is newer than this version knows (up to {SCHEMA_VERSION}); "
            "upgrade roteiro-memory",
        )
        for v in sorted(applied)
        if v > SCHEMA_VERSION
    ]
    out.extend(
        Finding("schema_migrations", f"version {v}", f"migration {name!r} was never applied")
        for v, name, _ in MIGRATIONS
        if v not in applied
    )
    return out


def _text(raw: bytes | None) -> str | None:
    """Stored UTF-8 as text; raises UnicodeDecodeError when it is not."""
    return None if raw is None else bytes(raw).decode("utf-8", "surrogatepass")


def _records(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    out: list[Finding] = []
    rows = conn.execute(
        "SELECT id, scope, anchor_key, anchor_path, body, search, superseded_by, superseded_at"
        " FROM agent_memory ORDER BY id"
    )
    largest = 0
    for row_id, scope, key, path, body, search, by, at in rows:
        largest = max(largest, row_id)
        where = f"id {row_id}"
        try:
            texts = [_text(value) for value in (scope, key, path, body, search)]
        except UnicodeDecodeError:
            out.append(Finding("agent_memory", where, "a text column is not UTF-8"))
            continue
        scope_text, key_text, path_text, body_text, search_text = texts
        try:
            sem.validate_write(sem.MemoryKind.LESSON, scope_text or "", body_text or "", None)
        except RoteiroError as error:
            out.append(Finding("agent_memory", where, f"a write would refuse it: {error}"))
        if search_text != sem.search_text(body_text or "", key_text, path_text):
            out.append(
                Finding(
                    "agent_memory",
                    where,
                    "search text disagrees with its body and anchor: queries would miss it",
                )
            )
        if (by is None) != (at is None):
            out.append(
                Finding(
                    "agent_memory",
                    where,
                    "superseded_by and superseded_at disagree: one is set, the other is not",
                )
            )
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


def _cache(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    out: list[Finding] = []
    clock = conn.execute("SELECT ticks, generation FROM agent_cache_clock WHERE id = 0").fetchone()
    if clock is None:
        return [Finding("agent_cache_clock", None, "the clock row is missing")]
    ticks, generation = clock
    seen_ticks: dict[int, str] = {}
    rows = conn.execute(
        "SELECT key, fingerprint, json, bytes, generation, last_used, hits FROM agent_cache"
        " ORDER BY key"
    )
    for raw_key, raw_fingerprint, raw_json, size, entry_generation, last_used, hits in rows:
        try:
            key, fingerprint, payload = (
                _text(v) or "" for v in (raw_key, raw_fingerprint, raw_json)
            )
        except UnicodeDecodeError:
            out.append(Finding("agent_cache", repr(bytes(raw_key)), "a text column is not UTF-8"))
            continue
        where = f"key {key!r}"
        actual = sem.cache_entry_bytes(key, fingerprint, payload)
        if size != actual:
            out.append(
                Finding(
                    "agent_cache",
                    where,
                    f"bytes is {size} but its key, fingerprint and json are {actual} bytes",
                )
            )
        if last_used > ticks:
            out.append(
                Finding(
                    "agent_cache",
                    where,
                    f"last used at tick {last_used}, but the clock is behind it at {ticks}",
                )
            )
        if entry_generation > generation:
            out.append(
                Finding(
                    "agent_cache",
                    where,
                    f"written in generation {entry_generation}, but the clock is behind it "
                    f"at {generation}",
                )
            )
        if hits < 0:
            out.append(Finding("agent_cache", where, f"hits {hits} is negative"))
        if last_used in seen_ticks:
            out.append(
                Finding(
                    "agent_cache",
                    where,
                    f"shares tick {last_used} with {seen_ticks[last_used]!r}: each use takes "
                    "its own tick",
                )
            )
        seen_ticks.setdefault(last_used, key)
    return out
