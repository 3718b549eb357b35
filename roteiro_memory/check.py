"""The integrity rules of a store, as findings a hook can reuse.

This module holds the rules and their messages only, over rows a store has
read (and decoded); each database store reads its own rows and calls them
(:mod:`roteiro_memory.stores.sqlite.check`,
:mod:`roteiro_memory.stores.postgres.check`), so a rule and its message
exist once.  The rules, one :class:`Finding` per offending row:

* a migrations table no version writes (:mod:`roteiro_memory.standing`, the
  rule opening a store refuses one by too), a schema newer than this version knows, or
  migrations missing;
* supersession pointers that dangle, fork (two records superseded by one),
  point backwards (to an id not newer), or form a cycle, and timestamps
  without pointers; a timestamp's form is judged, never the order of two
  (they are the writers' wall clocks, PROTOCOL's P-created-at: a record
  written where the clock was ahead may be superseded where it is behind);
* ids that are not positive, kinds outside the vocabulary, confidences
  outside [0, 1], scopes, bodies and anchors a write would refuse, search
  text that disagrees with its record;
* an id sequence behind the largest id, or at the end of 64 bits;
* cache entries a write would refuse (an anchor too long), whose ``bytes``
  disagree with their payload, and clocks behind the entries they stamped
  (or two entries sharing one tick).  A payload is any text: the store takes
  any (PROTOCOL's ``cache.put``), and only ``cache put`` on the command line
  asks for JSON;
* (the term index's own rules are the index's:
  :mod:`roteiro_memory.stores.sql.indexcheck`).

:func:`check_store` checks an open store through its own
:meth:`~roteiro_memory.store.Store.check`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, LiteralString, Protocol

from roteiro_memory import eviction
from roteiro_memory import semantics as sem
from roteiro_memory.errors import RoteiroError, excerpt
from roteiro_memory.standing import Standing

__all__ = [
    "CacheRow",
    "Finding",
    "MemoryRow",
    "Report",
    "cache_findings",
    "check_store",
    "clock_of",
    "memory_findings",
    "migration_fails",
    "missing_tables",
    "row_label",
    "schema_findings",
    "sequence_findings",
    "supersession",
    "supersession_findings",
]


@dataclass(frozen=True)
class Finding:
    """One problem: the table, the row it is in (None for the whole store),
    and what is wrong."""

    table: str
    row: str | None
    problem: str

    def __str__(self) -> str:
        where = f"{self.table} {self.row}" if self.row is not None else self.table
        return f"{where}: {self.problem}"

    def to_json(self) -> dict[str, str | None]:
        return {"table": self.table, "row": self.row, "problem": self.problem}


@dataclass(frozen=True)
class Report:
    """What a check found, and for a store an earlier version wrote, judged
    as the next command to open it will find it once migrated, the schema
    it is at and the one that opening migrates it to (None otherwise)."""

    findings: list[Finding]
    migrates: tuple[int, int] | None = None


class _Checkable(Protocol):
    """A store (:class:`~roteiro_memory.store.Store`, which this module does
    not import: the contract imports these findings)."""

    def check(self) -> list[Finding]: ...


def check_store(store: _Checkable) -> list[Finding]:
    """Every problem found in the open ``store``; empty when it is healthy.
    (An SQLite file is checked without opening it as a store by
    :func:`roteiro_memory.stores.sqlite.checkfile.check_file`.)"""
    return store.check()


# The store invariants themselves, over rows each backend has read (and, for
# PostgreSQL, decoded): the SQLite and PostgreSQL checks share every rule
# below, so a rule and its message exist once.


class _Executes(Protocol):
    """A connection that runs a query with no parameters and yields its rows
    (SQLite's and psycopg's alike)."""

    def execute(self, query: LiteralString, /) -> Iterable[Sequence[Any]]: ...


def schema_findings(standing: Standing) -> list[Finding]:
    """What a store's :class:`Standing` says is wrong with it: rows no
    version wrote, versions newer than this version knows, and migrations
    of this version's never applied."""
    if standing.damage is not None:
        return [
            Finding(
                "schema_migrations",
                None,
                f"{standing.damage}: no roteiro-memory records its migrations so; the table "
                "is damaged, and opening the store refuses it",
            )
        ]
    out = [
        Finding(
            "schema_migrations",
            f"version {v}",
            f"schema version {v} is newer than this version knows (up to {standing.version}); "
            "upgrade roteiro-memory",
        )
        for v in standing.newer
    ]
    out.extend(
        Finding("schema_migrations", f"version {v}", f"migration {name!r} was never applied")
        for v, name, _ in standing.pending
    )
    return out


def migration_fails(standing: Standing, newest: int, error: object) -> Finding:
    """The finding for an older store (:attr:`Standing.older`) whose
    migration, tried where the check judges it as migrated, fails with
    ``error``: opening it would fail the same way."""
    said = (
        f"opening the store migrates it from schema {standing.version} to {newest}, and that "
        f"fails: {error}"
    )
    return Finding("schema_migrations", None, said)


def row_label(table: str, key: object) -> str:
    """How a finding names a row of ``table`` by its key: ``id 3`` for a
    record, ``key 'k'`` for a cache entry."""
    return f"id {key}" if table == "agent_memory" else f"key {key!r}"


def missing_tables(present: set[str], required: Iterable[str]) -> list[Finding]:
    """Each of the ``required`` tables that is not ``present``: a finding of
    its own, the rules over its rows left unjudged."""
    return [Finding(table, None, "table is missing") for table in required if table not in present]


@dataclass(frozen=True)
class MemoryRow:
    """One ``agent_memory`` row as stored (text already decoded).
    ``vocabulary`` is its ``(kind, confidence)``, judged by the vocabulary
    whatever a schema's constraints say (None: not judged)."""

    id: int
    scope: object
    anchor_key: Any
    anchor_path: Any
    body: object
    search: object
    superseded_by: object
    superseded_at: object
    vocabulary: tuple[object, object] | None = None
    created_at: object = None
    """Judged when it is text, as every store and export holds it."""

    @classmethod
    def of(cls, row: Mapping[str, Any], search: object) -> MemoryRow:
        """A row read by column name (a store's, an export's), its kind and
        confidence judged by the vocabulary."""
        return cls(
            row["id"],
            row["scope"],
            row["anchor_key"],
            row["anchor_path"],
            row["body"],
            search,
            row["superseded_by"],
            row["superseded_at"],
            vocabulary=(row["kind"], row["confidence"]),
            created_at=row.get("created_at"),
        )


def memory_findings(rows: Iterable[MemoryRow | Finding]) -> list[Finding]:
    """Every problem in each row of ``agent_memory``, in order; a row the
    reader could not decode comes as its finding, passed through."""
    out: list[Finding] = []
    for row in rows:
        if isinstance(row, Finding):
            out.append(row)
        else:
            out.extend(_memory_row(row))
    return out


def _memory_row(row: MemoryRow) -> list[Finding]:
    out: list[Finding] = []
    where = row_label("agent_memory", row.id)
    if row.id <= 0:
        out.append(
            Finding("agent_memory", where, f"id {row.id} is not positive: ids are issued from 1")
        )
    if row.vocabulary is not None:
        kind, confidence = row.vocabulary
        if kind not in sem.KIND_TOKENS:
            out.append(
                Finding(
                    "agent_memory",
                    where,
                    f"unknown kind {kind!r}: expected one of {', '.join(sem.KIND_TOKENS)}",
                )
            )
        if confidence is not None and (
            not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0
        ):
            out.append(
                Finding("agent_memory", where, f"confidence {confidence!r} is outside [0, 1]")
            )
    scope, body = row.scope, row.body
    if not isinstance(scope, str) or not isinstance(body, str):
        out.append(Finding("agent_memory", where, "scope or body is not text"))
        return out
    key, path = row.anchor_key, row.anchor_path
    try:
        anchor = key if isinstance(key, str) else None
        sem.validate_write(sem.MemoryKind.LESSON, scope, body, None, anchor=anchor)
    except RoteiroError as error:
        out.append(Finding("agent_memory", where, f"a write would refuse it: {error}"))
    if not all(value is None or isinstance(value, str) for value in (key, path)):
        out.append(Finding("agent_memory", where, "anchor_key or anchor_path is not text"))
    elif row.search != sem.search_text(body, key, path):
        out.append(
            Finding(
                "agent_memory",
                where,
                "search text disagrees with its body and anchor: queries would miss it",
            )
        )
    if key is None and path is not None:
        out.append(
            Finding(
                "agent_memory",
                where,
                f"anchor_path {excerpt(path)} without an anchor_key: no write gives an "
                "unanchored record a path, and search would find it by words it does not show",
            )
        )
    for name, value in (("created_at", row.created_at), ("superseded_at", row.superseded_at)):
        if isinstance(value, str) and not is_timestamp(value):
            out.append(
                Finding(
                    "agent_memory",
                    where,
                    f"{name} {excerpt(value)} is not a UTC time as YYYY-MM-DD HH:MM:SS, the form"
                    " the store writes (e.g. 2026-03-01 12:00:05)",
                )
            )
    if (row.superseded_by is None) != (row.superseded_at is None):
        out.append(
            Finding(
                "agent_memory",
                where,
                "superseded_by and superseded_at disagree: one is set, the other is not",
            )
        )
    return out


_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} (?:[01][0-9]|2[0-3]):[0-9]{2}:[0-9]{2}")
"""The shape of :data:`~roteiro_memory.fields.TIMESTAMP_FORMAT`'s times, in
ASCII digits, hours 00 to 23 (``fromisoformat`` of Python 3.12 and later reads
``24:00:00`` as the next midnight)."""


def is_timestamp(value: str) -> bool:
    """Whether ``value`` is a real time written exactly as
    :data:`~roteiro_memory.fields.TIMESTAMP_FORMAT` writes it: its shape
    (:data:`_TIMESTAMP`; protocol.schema.json's pattern alone would take
    month 13, a parser alone other shapes of time and other scripts' digits),
    then its calendar (``datetime.fromisoformat``: no February 30th, no
    second 60).  A tenth of ``strptime``'s cost: a check reads two times of
    every record."""
    if _TIMESTAMP.fullmatch(value) is None:
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def sequence_findings(
    table: str, row: str | None, noun: str, sequence: int, largest: int
) -> list[Finding]:
    """An id ``sequence`` (the last id issued, the ``noun`` a store calls it)
    behind the ``largest`` id held, so ids would be issued twice, or at the
    largest 64-bit id, so no record can be added."""
    out = []
    if sequence < largest:
        out.append(
            Finding(
                table,
                row,
                f"{noun} {sequence} is behind the largest id {largest}: ids would be reused",
            )
        )
    if sequence >= sem.INT64_MAX:
        out.append(
            Finding(
                table,
                row,
                f"{noun} {sequence} is at the largest 64-bit id: no record can be added",
            )
        )
    return out


def supersession(conn: _Executes) -> list[Finding]:
    """The supersession pointers of ``agent_memory``, read through ``conn``
    and judged by :func:`supersession_findings`."""
    pointers = conn.execute(
        "SELECT id, superseded_by FROM agent_memory WHERE superseded_by IS NOT NULL"
    )
    pairs = [(row[0], row[1]) for row in pointers]
    ids = {row[0] for row in conn.execute("SELECT id FROM agent_memory")}
    return supersession_findings(pairs, ids)


def supersession_findings(pointers: Iterable[tuple[int, object]], ids: set[int]) -> list[Finding]:
    """Supersession pointers (``(id, superseded_by)`` for each record that has
    one) that are not ids, dangle, point backwards, fork or cycle, given the
    ``ids`` of every record."""
    successors: dict[int, int] = {}
    out: list[Finding] = []
    for row_id, successor in pointers:
        if isinstance(successor, int):
            successors[row_id] = successor
        else:
            out.append(
                Finding("agent_memory", f"id {row_id}", f"superseded_by {successor!r} is not an id")
            )
    by_successor: dict[int, list[int]] = {}
    for row_id, successor in sorted(successors.items()):
        by_successor.setdefault(successor, []).append(row_id)
        if successor not in ids:
            out.append(
                Finding(
                    "agent_memory",
                    f"id {row_id}",
                    f"superseded by {successor}, which does not exist (a dangling pointer)",
                )
            )
        elif successor <= row_id:
            out.append(
                Finding(
                    "agent_memory",
                    f"id {row_id}",
                    f"superseded by {successor}, which is not newer than it",
                )
            )
    for successor, predecessors in sorted(by_successor.items()):
        if len(predecessors) > 1:
            listed = ", ".join(str(p) for p in predecessors)
            out.append(
                Finding(
                    "agent_memory",
                    f"id {successor}",
                    f"supersedes {len(predecessors)} records ({listed}): a fork, where a "
                    "record supersedes at most one",
                )
            )
    # Each record has at most one successor, so following pointers from any
    # record either ends or enters exactly one cycle.
    state: dict[int, int] = {}
    for start in sorted(successors):
        path: list[int] = []
        node: int | None = start
        while node is not None and node in successors and state.get(node) is None:
            state[node] = 1
            path.append(node)
            node = successors[node]
        if node is not None and state.get(node) == 1:
            cycle = path[path.index(node) :]
            chain = " -> ".join(str(n) for n in [*cycle, node])
            out.append(Finding("agent_memory", f"id {min(cycle)}", f"supersession cycle: {chain}"))
        for visited in path:
            state[visited] = 2
    return out


def clock_of(rows: Sequence[Sequence[Any]]) -> tuple[list[Finding], Any, Any]:
    """The cache clock's ticks and generation, read from the ``(ticks,
    generation)`` rows of ``agent_cache_clock``, and a finding unless there
    is exactly one: a store is made with its clock row, and every cache
    write takes it.  Without one, the entries are judged against a clock at 0."""
    found = (
        []
        if len(rows) == 1
        else [
            Finding("agent_cache_clock", None, f"expected exactly one clock row, found {len(rows)}")
        ]
    )
    ticks, generation = (rows[0][0], rows[0][1]) if rows else (0, 0)
    return found, ticks, generation


CacheRow = Mapping[str, Any]
"""One ``agent_cache`` row as stored (text already decoded), by column name:
key, fingerprint, json, bytes, generation, last_used, hits, anchor_key."""


def cache_findings(
    ticks: int, generation: int, entries: Iterable[CacheRow | Finding]
) -> list[Finding]:
    """Every problem in each ``agent_cache`` row, in order, against the clock's
    ``ticks`` and ``generation``; a row the reader could not decode comes as
    its finding, passed through."""
    out: list[Finding] = []
    if ticks < 0 or generation < 0:
        out.append(
            Finding(
                "agent_cache_clock",
                "id 0",
                f"ticks {ticks} and generation {generation}: a clock starts at 0 and counts up",
            )
        )
    # Like the id sequence: a count at the largest 64-bit integer has no next
    # step (SQLite would make it a real number, which every later cache
    # operation trips on).
    for name, value in (("ticks", ticks), ("generation", generation)):
        if value >= sem.INT64_MAX:
            stops = eviction.CLOCK_STOPS[name]
            out.append(
                Finding(
                    "agent_cache_clock",
                    "id 0",
                    f"{name} {value} is at the largest 64-bit integer: {stops}",
                )
            )
    seen_ticks: dict[int, object] = {}
    for entry in entries:
        if isinstance(entry, Finding):
            out.append(entry)
            continue
        key, fingerprint, payload = entry["key"], entry["fingerprint"], entry["json"]
        size, entry_generation = entry["bytes"], entry["generation"]
        last_used, hits = entry["last_used"], entry["hits"]
        where = row_label("agent_cache", key)
        counters = {
            "bytes": size,
            "generation": entry_generation,
            "last_used": last_used,
            "hits": hits,
        }
        wrong = [name for name, value in counters.items() if not isinstance(value, int)]
        if wrong:
            out.append(Finding("agent_cache", where, f"{', '.join(wrong)} not a whole number"))
            continue
        if isinstance(key, str) and isinstance(fingerprint, str) and isinstance(payload, str):
            anchor = entry.get("anchor_key")
            try:
                sem.check_anchor(anchor if isinstance(anchor, str) else None)
                actual = eviction.cache_entry_bytes(key, fingerprint, payload)
            except RoteiroError as error:
                out.append(Finding("agent_cache", where, f"a write would refuse it: {error}"))
            else:
                if size != actual:
                    out.append(
                        Finding(
                            "agent_cache",
                            where,
                            f"bytes is {size} but its key, fingerprint and json are {actual} bytes",
                        )
                    )
        else:
            out.append(Finding("agent_cache", where, "key, fingerprint or json is not text"))
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
        if entry_generation < 0 or last_used < 0:
            out.append(
                Finding(
                    "agent_cache",
                    where,
                    f"generation {entry_generation} and last used {last_used}: an entry is"
                    " stamped by the cache clock, which starts at 0",
                )
            )
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
