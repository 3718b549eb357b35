"""The integrity check of an SQLite store, as the findings of
:mod:`roteiro_memory.check`.

:func:`check_connection` checks through a connection already open, inside
the caller's read transaction; a file is checked read-only by
:mod:`.checkfile`, through :func:`integrity_findings` and :func:`judge`.
Either reports, one finding per offending row:

* SQLite's own ``integrity_check`` and ``foreign_key_check``;
* a migrations table no version writes, a schema newer than this version
  knows, or migrations missing (never, from a file: an older store is
  judged as migrated, :func:`judge`);
* a column, an index or a trigger of this version's schema that is
  missing (a table missing a column has its rows left unjudged);
* the record, supersession and cache rules of :mod:`roteiro_memory.check`,
  including kinds and confidences, which SQLite's type affinity lets a
  store hold whatever the CHECK constraints say;
* an id sequence that is not an integer, behind the largest id (ids would
  be handed out twice), or at the end of 64 bits (no record can be added);
* any stored value an export line cannot carry in its column (binary data,
  a non-finite real, text where a number belongs): what ``export``, or an
  ``import`` of its output, would trip on.
* a term index that disagrees with the records (:mod:`roteiro_memory.stores.sql.indexcheck`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from roteiro_memory import semantics as sem
from roteiro_memory.check import (
    Finding,
    MemoryRow,
    Report,
    cache_findings,
    clock_of,
    memory_findings,
    migration_fails,
    missing_tables,
    schema_findings,
    sequence_findings,
    supersession,
)
from roteiro_memory.collector import paused
from roteiro_memory.errors import Corrupt, excerpt
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import indexcheck
from roteiro_memory.stores.sql.dialects import SQLITE
from roteiro_memory.stores.sqlite.migrations import (
    SCHEMA_VERSION,
    created_objects,
    recognised,
    stored_standing,
)
from roteiro_memory.stores.sqlite.text import undecodable_kept
from roteiro_memory.transfer import holds

__all__ = ["Migrated", "check_connection", "integrity_findings", "judge"]

_TABLES = (
    "nodes",
    "sync_state",
    "agent_memory",
    "agent_cache",
    "agent_cache_clock",
    *cols.DERIVED_TABLES,
)


Migrated = Callable[[], AbstractContextManager[sqlite3.Connection]]
"""Opens a private copy of the store being checked, migrated as opening the
store would migrate it, for the length of a ``with`` block; raises
:class:`~roteiro_memory.errors.Corrupt` when the migration fails."""


def check_connection(conn: sqlite3.Connection) -> list[Finding]:
    """Every problem found through an open connection to a store."""
    with paused():  # every row at once, and no cycle among them
        return integrity_findings(conn) + judge(conn).findings


def integrity_findings(conn: sqlite3.Connection) -> list[Finding]:
    """What SQLite's integrity check finds; a row of it may hold several
    lines, each its own finding."""
    return [
        Finding("store", None, f"SQLite integrity check: {line}")
        for row in conn.execute("PRAGMA integrity_check")
        if row[0] != "ok"
        for line in str(row[0]).splitlines()
        if line.strip() and not line.startswith("*** in database")
    ]


def judge(conn: sqlite3.Connection, migrated: Migrated | None = None) -> Report:
    """Every problem but SQLite's integrity check's: whether the database is
    a store at all, SQLite's foreign-key check, and the store's invariants.
    Given ``migrated``, a store an earlier version wrote has its invariants
    judged on the copy that opens -- this version's rules on this version's
    schema, as the next command to open the store finds it -- and a
    migration that fails there is one finding, as opening would fail."""
    why = recognised(conn)
    if why is not None:
        # Recognised by the rule opening uses: another tool's tables are not
        # judged by this store's rules.
        return Report([Finding("store", None, f"not a roteiro-memory store {why}")])
    findings = [
        Finding(table, f"rowid {rowid}", f"references a missing {parent} row")
        for table, rowid, parent, _ in conn.execute("PRAGMA foreign_key_check")
        if table != "agent_memory"  # reported with more detail by supersession
    ]
    found = stored_standing(conn)
    if migrated is None or found is None or not found.older:
        return Report(findings + _invariants(conn))
    with contextlib.ExitStack() as stack:
        try:
            copy = stack.enter_context(migrated())
        except Corrupt as error:
            return Report([*findings, migration_fails(found, SCHEMA_VERSION, error)])
        return Report(findings + _invariants(copy), (found.version, SCHEMA_VERSION))


def _invariants(conn: sqlite3.Connection) -> list[Finding]:
    """The store's own rules, over its schema and rows; text that is not
    UTF-8 is read so that the rules name its row (:mod:`.text`)."""
    with undecodable_kept(conn):
        return _judged(conn)


def _judged(conn: sqlite3.Connection) -> list[Finding]:
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    findings = _schema(conn, tables)
    findings.extend(missing_tables(tables, _TABLES))
    gaps, broken = _missing_columns(conn, tables)
    findings.extend(gaps)
    tables -= broken  # what reads their rows would fail: the other tables are judged
    findings.extend(_missing_objects(conn, tables))
    if "agent_memory" in tables:
        findings.extend(_records(conn, tables))
        findings.extend(supersession(conn))
        if set(cols.DERIVED_TABLES) <= tables:
            findings.extend(indexcheck.check(conn, SQLITE))
    if "agent_cache" in tables and "agent_cache_clock" in tables:
        findings.extend(_cache(conn))
    findings.extend(_values(conn, tables))
    return findings


def _missing_columns(conn: sqlite3.Connection, tables: set[str]) -> tuple[list[Finding], set[str]]:
    """Each column of this version's schema missing from a table that is
    there (dropped by hand), and those tables: no read of their rows can
    run, so their rules are not judged, and the other tables' still are.
    ``schema_migrations`` is read before (:func:`_schema`)."""
    out: list[Finding] = []
    broken: set[str] = set()
    for table, columns in cols.TABLES.items():
        if table == "schema_migrations" or table not in tables:
            continue
        present = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
        for column in columns:
            if column.name not in present:
                broken.add(table)
                out.append(
                    Finding(
                        table,
                        None,
                        f"column {column.name} is missing: commands that read its rows fail, "
                        "and the check judges none of them",
                    )
                )
    return out, broken


_MISSING_OBJECT = {
    "index": "what reads by it reads the whole table instead",
    "trigger": (
        "a process of an earlier version still open on the store could write a term too "
        "long to be held as it is, unrefused"
    ),
}
"""What a store loses with an index or a trigger of its schema."""


def _missing_objects(conn: sqlite3.Connection, tables: set[str]) -> list[Finding]:
    """Each index and trigger of this version's schema that is not in the
    store (dropped by hand: no command drops one, and opening never makes
    one again), on a table that is there.  Judged only of a store at this
    version's schema: an older one is judged as migrated, and a newer
    one's schema is its version's."""
    found = stored_standing(conn)
    if found is None or not found.current:
        return []
    present = set(
        conn.execute("SELECT type, name FROM sqlite_master WHERE type IN ('index', 'trigger')")
    )
    return [
        Finding(
            table,
            None,
            f"{kind} {name} is missing: {_MISSING_OBJECT[kind]} (export and import the store "
            "to restore it)",
        )
        for name, (kind, table) in created_objects().items()
        if table in tables and (kind, name) not in present
    ]


_CHUNK_ROWS = 65_536
"""Rows judged at a time by :func:`_values`."""


def _values(conn: sqlite3.Connection, tables: set[str]) -> list[Finding]:
    """Each stored value an export line could not carry in its column, in
    row order.  Read a chunk of rows at a time, a column whose values all
    plainly hold (:func:`_plainly_holds`) is passed whole; the values of any
    other are judged one by one by :func:`~roteiro_memory.transfer.holds`.
    The term index's tables are no export's (:data:`~.columns.DERIVED_TABLES`):
    the index check compares what they hold with the records instead."""
    out: list[Finding] = []
    for table, columns in cols.TABLES.items():
        if table == "schema_migrations" or table in cols.DERIVED_TABLES or table not in tables:
            continue
        key = columns[0].name
        cursor = conn.execute(f"SELECT {cols.select_list(columns)} FROM {table} ORDER BY {key}")
        while rows := cursor.fetchmany(_CHUNK_ROWS):
            bad = sorted(
                (at, place)
                for place, column in enumerate(columns)
                if not _plainly_holds(column, [row[place] for row in rows])
                for at, row in enumerate(rows)
                if not holds(column, row[place])
            )
            for at, place in bad:
                row, column = rows[at], columns[place]
                expected = column.type.__name__ + (" or null" if column.nullable else "")
                out.append(
                    Finding(
                        table,
                        f"{key} {row[0]!r}",
                        f"{column.name} holds {row[place]!r}, which this version never writes "
                        f"(expected {expected}): export would refuse it",
                    )
                )
    return out


def _plainly_holds(column: cols.Column, values: list[Any]) -> bool:
    """Whether every value of ``values`` is one :func:`holds` accepts in
    ``column``, judged a whole column at a time: every value of the column's
    type (an integer too, for a float column) or null where null is allowed,
    integers within 64 bits, text that UTF-8 can carry.  False sends the
    column to the value-by-value judgement, which finds the same."""
    kinds = set(map(type, values))
    allowed = {column.type, int} if column.type is float else {column.type}
    if column.nullable:
        allowed.add(type(None))
    if not kinds <= allowed:
        return False
    if int in kinds:
        ints = [value for value in values if type(value) is int]
        if not sem.fits_int64(min(ints)) or not sem.fits_int64(max(ints)):
            return False
    if column.type is str:
        texts = [value for value in values if value is not None]
        if not "".join(texts).isascii():
            return all(sem.is_utf8(text) for text in texts)
    return True


def _schema(conn: sqlite3.Connection, tables: set[str]) -> list[Finding]:
    found = stored_standing(conn)
    if found is None:
        return [Finding("schema_migrations", None, "table is missing: not a roteiro-memory store")]
    return schema_findings(found)


def _records(conn: sqlite3.Connection, tables: set[str]) -> list[Finding]:
    names = cols.names(cols.RECORD_CHECKED)
    rows = [
        cols.decode(names, row)
        for row in conn.execute(
            f"SELECT {cols.select_list(cols.RECORD_CHECKED)} FROM agent_memory ORDER BY id"
        )
    ]
    out = memory_findings(MemoryRow.of(r, r["search"]) for r in rows)
    largest = max([0, *(r["id"] for r in rows)])
    if "sqlite_sequence" in tables:
        seq_row = conn.execute(
            "SELECT seq FROM sqlite_sequence WHERE name = 'agent_memory'"
        ).fetchone()
        seq = seq_row[0] if seq_row else 0
        if type(seq) is not int:
            out.append(
                Finding(
                    "sqlite_sequence",
                    "agent_memory",
                    f"sequence holds {excerpt(seq)}, not a whole number: no id can be "
                    "handed out, and export would refuse it",
                )
            )
        else:
            out += sequence_findings("sqlite_sequence", "agent_memory", "sequence", seq, largest)
    return out


def _cache(conn: sqlite3.Connection) -> list[Finding]:
    clocks = conn.execute("SELECT ticks, generation FROM agent_cache_clock").fetchall()
    out, ticks, generation = clock_of(clocks)
    if not (isinstance(ticks, int) and isinstance(generation, int)):
        out.append(
            Finding("agent_cache_clock", "id 0", "ticks or generation is not a whole number")
        )
        return out
    names = cols.names(cols.CACHE_CHECKED)
    rows = conn.execute(
        f"SELECT {cols.select_list(cols.CACHE_CHECKED)} FROM agent_cache ORDER BY key"
    )
    return out + cache_findings(ticks, generation, (cols.decode(names, row) for row in rows))
