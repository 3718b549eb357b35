"""The integrity check of a PostgreSQL store, as the same findings.

The rules are :mod:`roteiro_memory.check`'s, over the same rows the SQLite
check reads, their text decoded: one
:class:`~roteiro_memory.check.Finding` per offending row for a table that is
missing, the schema version and the ranking's own function, stored text that
is not UTF-8, kinds, confidences, scopes, bodies and times a write would
refuse (whatever the schema's constraints say: they can be dropped), search
text that disagrees with its record, graph and sync text that is not
UTF-8, supersession pointers that dangle, fork,
point backwards or cycle, timestamps without pointers, cache sizes that
disagree with their payloads, a missing clock or id counter row, clocks
behind the entries they stamped or two entries sharing one tick, and an id
counter behind the largest id.  A table whose columns are not the schema's
is one finding, as SQLite's check reports a file it cannot read as a store.

:func:`check_connection` runs inside the store's read snapshot
(:meth:`PostgresStore.check <roteiro_memory.stores.postgres.store.PostgresStore.check>`);
nothing is changed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roteiro_memory.check import (
    Finding,
    MemoryRow,
    cache_findings,
    clock_of,
    memory_findings,
    missing_tables,
    schema_findings,
    sequence_findings,
    supersession,
)
from roteiro_memory.collector import paused
from roteiro_memory.standing import standing
from roteiro_memory.stores.postgres.migrations import MIGRATIONS
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import indexcheck
from roteiro_memory.stores.sql.dialects import POSTGRES
from roteiro_memory.stores.sql.expressions import PRODUCT

if TYPE_CHECKING:
    import psycopg

__all__ = ["check_connection"]

_CHECKED_NAMES = cols.names(cols.RECORD_CHECKED)
_TEXT = ("scope", "anchor_key", "anchor_path", "body", "search")
"""The record columns it judges that are stored as UTF-8 ``bytea``."""
_CACHE_NAMES = cols.names(cols.CACHE_CHECKED)


def check_connection(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    """Every problem found through ``conn``, inside the caller's read
    snapshot; empty when the store is healthy."""
    import psycopg

    findings: list[Finding] = []
    with paused():  # every row at once, and no cycle among them
        try:
            _check(conn, findings)
        except psycopg.Error as error:
            if error.sqlstate not in _UNREADABLE:
                raise
            said = str(error).strip().splitlines()[0]
            findings.append(Finding("store", None, f"cannot be read as a store ({said})"))
    return findings


_TABLES = (*cols.TABLES, "agent_memory_ids")
"""Every table a store holds: both stores' own, and the id counter."""
_UNREADABLE = frozenset({"42P01", "42703", "42883", "42804", "42846"})
"""The SQLSTATEs of a query the schema cannot answer (a table, column or
function missing, a column of another type): damage, not a failure to read."""


def _check(conn: psycopg.Connection[tuple[Any, ...]], findings: list[Finding]) -> None:
    present = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    tables = {row[0] for row in present}
    findings += missing_tables(tables, _TABLES)
    if "schema_migrations" in tables:
        findings += _schema(conn)
    if {"agent_memory", "agent_memory_ids"} <= tables:
        findings += _records(conn)
        findings += supersession(conn)
        if set(cols.DERIVED_TABLES) <= tables:
            findings += indexcheck.check(conn, POSTGRES)
    if {"agent_cache", "agent_cache_clock"} <= tables:
        findings += _cache(conn)
    findings += _graph_text(conn, tables)


def _schema(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    found = standing(rows, MIGRATIONS)
    return schema_findings(found) + _product(conn, found.version)


def _product(conn: psycopg.Connection[tuple[Any, ...]], version: int) -> list[Finding]:
    """The function ranking multiplies the rare factors with (migration 12),
    as that migration made it: dropped or replaced, a recall that reaches
    it fails or ranks otherwise than every other backend."""
    if version < 12:
        return []
    body = next(sql for version, _, sql in MIGRATIONS if version == 12).split("$body$")[1]
    found = conn.execute(
        "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = current_schema() AND p.proname = %s",
        (PRODUCT,),
    ).fetchall()
    if [row[0] for row in found] == [body]:
        return []
    said = "is missing" if not found else "is not the one migration 12 made"
    remedy = "export the store and import it into a new one to make it again"
    return [Finding("function", PRODUCT, f"{said}; {remedy}")]


def _text(raw: bytes | memoryview | None) -> str | None:
    """Stored UTF-8 as text; raises UnicodeDecodeError when it is not."""
    return None if raw is None else POSTGRES.untext(raw)


def _graph_text(conn: psycopg.Connection[tuple[Any, ...]], tables: set[str]) -> list[Finding]:
    """Each text value of the code graph and the sync witness that is not
    UTF-8, in its row: an export would refuse it (the records' and the
    cache's text is judged with their rows)."""
    out: list[Finding] = []
    for table, columns in (("nodes", cols.NODES), ("sync_state", cols.SYNC_STATE)):
        if table not in tables:
            continue
        key, texts = columns[0].name, [c.name for c in columns if c.type is str]
        rows = conn.execute(f"SELECT {', '.join([key, *texts])} FROM {table} ORDER BY {key}")
        for row in rows:
            for name, raw in zip(texts, row[1:], strict=True):
                try:
                    _text(raw)
                except UnicodeDecodeError:
                    out.append(Finding(table, _label(key, row[0]), f"{name} is not UTF-8"))
    return out


def _label(key: str, raw: Any) -> str:
    """A row named by its key, as stored when it is not UTF-8 itself."""
    try:
        value = _text(raw) if isinstance(raw, bytes | memoryview) else raw
    except UnicodeDecodeError:
        value = bytes(raw)
    return f"{key} {value!r}"


def _records(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    rows = conn.execute(
        f"SELECT {cols.select_list(cols.RECORD_CHECKED)} FROM agent_memory ORDER BY id"
    ).fetchall()
    out = memory_findings(_decoded_record(row) for row in rows)
    largest = max([0, *(row[0] for row in rows)])
    counter = conn.execute("SELECT last_id FROM agent_memory_ids WHERE id = 0").fetchone()
    if counter is None:
        return [*out, Finding("agent_memory_ids", None, "the id counter row is missing")]
    return out + sequence_findings("agent_memory_ids", None, "id counter", counter[0], largest)


def _decoded_record(raw: tuple[Any, ...]) -> MemoryRow | Finding:
    row = cols.decode(_CHECKED_NAMES, raw)
    try:
        row.update((name, _text(row[name])) for name in _TEXT)
    except UnicodeDecodeError:
        return Finding("agent_memory", f"id {row['id']}", "a text column is not UTF-8")
    return MemoryRow.of(row, row["search"])


def _cache(conn: psycopg.Connection[tuple[Any, ...]]) -> list[Finding]:
    clocks = conn.execute("SELECT ticks, generation FROM agent_cache_clock").fetchall()
    out, ticks, generation = clock_of(clocks)
    rows = conn.execute(
        f"SELECT {cols.select_list(cols.CACHE_CHECKED)} FROM agent_cache ORDER BY key"
    )
    return out + cache_findings(ticks, generation, (_decoded_entry(row) for row in rows))


def _decoded_entry(raw: tuple[Any, ...]) -> dict[str, Any] | Finding:
    row = cols.decode(_CACHE_NAMES, raw)
    try:
        for name in ("key", "fingerprint", "json", "anchor_key"):
            row[name] = _text(row[name])
    except UnicodeDecodeError:
        return Finding("agent_cache", repr(bytes(raw[0])), "a text column is not UTF-8")
    return row
