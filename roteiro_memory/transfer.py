"""Export and import of a whole store as JSON Lines.

The first line is a header: the format, the schema version, the id sequence,
the cache clock and the tree witness.  Then one line per graph node
(``"type": "node"``), per record (``"record"``, every column: id, pointers,
timestamps, captured anchor) and per cache entry (``"cache"``).  Import goes
into an empty store only, in one transaction, and reproduces the exported
store exactly: the snapshot after equals the snapshot of the source.  Every
line is checked before anything is written; a bad one is refused by number.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from roteiro_memory import semantics as sem
from roteiro_memory.errors import Corrupt, RoteiroError, Unsupported, excerpt
from roteiro_memory.store import Store
from roteiro_memory.stores.sqlite.migrations import SCHEMA_VERSION
from roteiro_memory.stores.sqlite.store import SQLiteStore

__all__ = [
    "EXPORT_FORMAT",
    "Export",
    "ImportRefused",
    "export_lines",
    "import_lines",
    "read_export",
]

EXPORT_FORMAT = "roteiro-memory.export/v1"

_RECORD = (
    ("id", int, False),
    ("scope", str, False),
    ("kind", str, False),
    ("anchor_key", str, True),
    ("anchor_blob", str, True),
    ("anchor_path", str, True),
    ("body", str, False),
    ("confidence", float, True),
    ("tree", str, True),
    ("created_at", str, False),
    ("superseded_by", int, True),
    ("superseded_at", str, True),
)
_CACHE = (
    ("key", str, False),
    ("fingerprint", str, False),
    ("json", str, False),
    ("bytes", int, False),
    ("generation", int, False),
    ("last_used", int, False),
    ("hits", int, False),
    ("anchor_key", str, True),
    ("anchor_blob", str, True),
)
_NODE = (
    ("key", str, False),
    ("kind", str, True),
    ("name", str, True),
    ("path", str, True),
    ("blob", str, True),
)


class ImportRefused(RoteiroError, ValueError):
    """An import that would not reproduce a store: a bad line, or a store
    that is not empty."""

    kind = "BadRequest"


def _connection(store: Store) -> sqlite3.Connection:
    if not isinstance(store, SQLiteStore):
        raise Unsupported(f"export and import work on SQLite stores, not {store.name!r}")
    return store.connection


_LINES = (
    ("node", "nodes", _NODE, "key"),
    ("record", "agent_memory", _RECORD, "id"),
    ("cache", "agent_cache", _CACHE, "key"),
)
"""``(type, table, columns, order)`` of the lines after the header, in the
order an export writes them."""
_DEFERRED = ("superseded_by", "superseded_at")
"""A record's columns written once every record exists (see :func:`_pointer_rows`)."""
_NODE_UPSERT = (
    " ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, name = excluded.name,"
    " path = excluded.path, blob = excluded.blob"
)
"""How an imported node replaces one already there."""


def _names(spec: Sequence[tuple[str, type, bool]]) -> list[str]:
    return [name for name, _, _ in spec]


def _insert(table: str, names: Sequence[str], mark: str) -> str:
    """An INSERT of ``names`` into ``table``, each bound by ``mark``."""
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join([mark] * len(names))})"


def _export_header(
    sequence: int | None, ticks: int, generation: int, witness: dict[str, Any] | None
) -> str:
    return json.dumps(
        {
            "format": EXPORT_FORMAT,
            "schema_version": SCHEMA_VERSION,
            "sequence": sequence,
            "clock": {"ticks": ticks, "generation": generation},
            "witness": witness,
        }
    )


def _export_items(
    select: Callable[[str], Iterable[Sequence[Any]]], decode: Callable[[Any], Any]
) -> Iterator[str]:
    """The lines after the header: ``select(sql)`` runs a query, ``decode``
    turns a stored value into its JSON value."""
    for type_, table, spec, order in _LINES:
        names = _names(spec)
        for row in select(f"SELECT {', '.join(names)} FROM {table} ORDER BY {order}"):
            item = {name: decode(value) for name, value in zip(names, row, strict=True)}
            yield json.dumps({"type": type_, **item})


def _record_rows(parsed: Export, bind: Callable[[str, Any], Any]) -> list[list[Any]]:
    """The rows inserting ``parsed``'s records, by id, with their search text
    and without pointers; ``bind(column, value)`` is how a value is stored."""
    return [
        [
            *(None if n in _DEFERRED else bind(n, r[n]) for n in _names(_RECORD)),
            bind("search", sem.search_text(r["body"], r["anchor_key"], r["anchor_path"])),
        ]
        for r in sorted(parsed.records, key=lambda r: r["id"])
    ]


def _pointer_rows(parsed: Export) -> list[tuple[Any, Any, Any]]:
    """``(superseded_by, superseded_at, id)`` of each superseded record."""
    return [
        (r["superseded_by"], r["superseded_at"], r["id"])
        for r in parsed.records
        if r["superseded_by"] is not None
    ]


def _counts(parsed: Export) -> dict[str, int]:
    return {"nodes": len(parsed.nodes), "records": len(parsed.records), "cache": len(parsed.cache)}


def _exportable(value: Any) -> Any:
    """A stored SQLite value as JSON carries it; a value this version never
    writes (binary data, a non-finite real) is refused rather than exported."""
    if isinstance(value, bytes) or (isinstance(value, float) and not math.isfinite(value)):
        raise Corrupt(
            f"the store holds {excerpt(value)}, which this version never writes; "
            "run `roteiro-memory check` to find the row"
        )
    return value


def export_lines(store: Store) -> Iterator[str]:
    """The store as JSON Lines, header first, read in one transaction."""
    from roteiro_memory.stores.postgres.store import PostgresStore  # imports no driver

    if isinstance(store, PostgresStore):
        from roteiro_memory.stores.postgres import transfer as pg_transfer

        yield from pg_transfer.export_lines(store)
        return
    conn = _connection(store)
    conn.execute("BEGIN")
    try:
        seq = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'agent_memory'").fetchone()
        clock = conn.execute(
            "SELECT ticks, generation FROM agent_cache_clock WHERE id = 0"
        ).fetchone()
        if clock is None:
            raise Corrupt(
                "agent_cache_clock: the cache clock row is missing; run `roteiro-memory check`"
            )
        ticks, generation = (_exportable(value) for value in clock)
        witness = conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
        header = _export_header(
            _exportable(seq[0]) if seq else None,
            ticks,
            generation,
            {"tree": _exportable(witness[0])} if witness else None,
        )
        lines = [header, *_export_items(conn.execute, _exportable)]
    finally:
        conn.execute("COMMIT")
    yield from lines


@dataclass
class Export:
    """A parsed, checked export."""

    header: dict[str, Any]
    nodes: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    cache: list[dict[str, Any]] = field(default_factory=list)


def _typed(value: Any, kind: type, nullable: bool) -> bool:
    """Whether ``value`` is of ``kind`` as a store can hold it: integers within
    64 bits, numbers within a double, text that UTF-8 can carry."""
    if value is None:
        return nullable
    if kind is float:
        if isinstance(value, int) and not isinstance(value, bool):
            return sem.fits_int64(value)
        return isinstance(value, float)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool) and sem.fits_int64(value)
    if kind is str:
        return isinstance(value, str) and sem.is_utf8(value)
    return isinstance(value, kind)


def _fields(number: int, item: dict[str, Any], spec: Sequence[tuple[str, type, bool]]) -> None:
    expected = {name for name, _, _ in spec} | {"type"}
    extra = sorted(set(item) - expected)
    if extra:
        raise ImportRefused(
            f"line {number}: unknown field {excerpt(extra[0])} in a {item['type']} line"
        )
    for name, kind, nullable in spec:
        if name not in item:
            raise ImportRefused(f"line {number}: {item['type']} line lacks {name!r}")
        if not _typed(item[name], kind, nullable):
            allowed = kind.__name__ + (" or null" if nullable else "")
            raise ImportRefused(
                f"line {number}: {item['type']} field {name!r} is {excerpt(item[name])}, "
                f"expected {allowed}"
            )


def read_export(lines: Iterable[str]) -> Export:
    """Parse and check every line of an export; :class:`ImportRefused` naming
    the first bad one."""
    parsed: Export | None = None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            raise ImportRefused(f"line {number}: not JSON") from None
        if not isinstance(item, dict):
            raise ImportRefused(f"line {number}: expected a JSON object")
        if parsed is None:
            parsed = Export(_header(number, item))
            continue
        type_ = item.get("type")
        if type_ == "node":
            _fields(number, item, _NODE)
            parsed.nodes.append(item)
        elif type_ == "record":
            _fields(number, item, _RECORD)
            _record(number, item)
            parsed.records.append(item)
        elif type_ == "cache":
            _fields(number, item, _CACHE)
            _cache(number, item)
            parsed.cache.append(item)
        else:
            raise ImportRefused(
                f"line {number}: unknown line type {excerpt(type_)}: expected node, record or cache"
            )
    if parsed is None:
        raise ImportRefused(
            f"empty input: expected an export starting with a {EXPORT_FORMAT} header"
        )
    _pointers(parsed)
    return parsed


def _header(number: int, item: dict[str, Any]) -> dict[str, Any]:
    if item.get("format") != EXPORT_FORMAT:
        raise ImportRefused(
            f"line {number}: not a roteiro-memory export (format {excerpt(item.get('format'))}, "
            f"expected {EXPORT_FORMAT!r})"
        )
    version = item.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ImportRefused(
            f"line {number}: exported at schema version {excerpt(version)}, newer than this "
            f"version knows ({SCHEMA_VERSION}); upgrade roteiro-memory to import it"
        )
    clock = item.get("clock")
    if not (
        isinstance(clock, dict)
        and all(_typed(clock.get(k), int, False) and clock[k] >= 0 for k in ("ticks", "generation"))
    ):
        raise ImportRefused(f"line {number}: header clock must hold whole ticks and generation")
    sequence = item.get("sequence")
    if sequence is not None and not (_typed(sequence, int, False) and sequence >= 0):
        raise ImportRefused(f"line {number}: header sequence must be a whole number or null")
    witness = item.get("witness")
    if witness is not None and not (
        isinstance(witness, dict) and _typed(witness.get("tree"), str, True)
    ):
        raise ImportRefused(f'line {number}: header witness must be null or {{"tree": ...}}')
    return item


def _record(number: int, item: dict[str, Any]) -> None:
    if item["id"] <= 0:
        raise ImportRefused(f"line {number}: record id {item['id']} is not positive")
    try:
        sem.validate_write(item["kind"], item["scope"], item["body"], item["confidence"])
    except RoteiroError as error:
        raise ImportRefused(f"line {number}: record {item['id']}: {error}") from None
    if (item["superseded_by"] is None) != (item["superseded_at"] is None):
        raise ImportRefused(
            f"line {number}: record {item['id']}: superseded_by and superseded_at must be "
            "both set or both null"
        )


def _cache(number: int, item: dict[str, Any]) -> None:
    actual = sem.cache_entry_bytes(item["key"], item["fingerprint"], item["json"])
    if item["bytes"] != actual:
        raise ImportRefused(
            f"line {number}: cache entry {excerpt(item['key'])} says {item['bytes']} bytes but its "
            f"key, fingerprint and json are {actual}; run `roteiro-memory check` on the source"
        )


def _pointers(parsed: Export) -> None:
    ids = [r["id"] for r in parsed.records]
    if len(set(ids)) != len(ids):
        raise ImportRefused("records: an id appears twice")
    known = set(ids)
    successors: set[int] = set()
    for record in parsed.records:
        by = record["superseded_by"]
        if by is None:
            continue
        if by not in known or by <= record["id"]:
            raise ImportRefused(
                f"record {record['id']}: superseded by {by}, which is not a newer exported record"
            )
        if by in successors:
            raise ImportRefused(f"record {by} supersedes more than one record")
        successors.add(by)
    sequence = parsed.header.get("sequence") or 0
    if ids and max(ids) > sequence:
        raise ImportRefused(f"header sequence {sequence} is behind record id {max(ids)}")
    keys = [c["key"] for c in parsed.cache]
    if len(set(keys)) != len(keys):
        raise ImportRefused("cache: a key appears twice")


def import_lines(store: Store, parsed: Export) -> dict[str, int]:
    """Load ``parsed`` into ``store``, which must be empty; all or nothing."""
    from roteiro_memory.stores.postgres.store import PostgresStore  # imports no driver

    if isinstance(store, PostgresStore):
        from roteiro_memory.stores.postgres import transfer as pg_transfer

        return pg_transfer.import_lines(store, parsed)
    conn = _connection(store)
    conn.execute("BEGIN IMMEDIATE")
    try:
        _require_empty(conn)
        # The graph is replaced whole.  (Not by json_each over the kept keys:
        # SQLite's JSON functions end a string at U+0000, which a key may hold.)
        conn.execute("DELETE FROM nodes")
        node_names = _names(_NODE)
        conn.executemany(
            _insert("nodes", node_names, "?") + _NODE_UPSERT,
            [[n[name] for name in node_names] for n in parsed.nodes],
        )
        conn.execute("DELETE FROM sync_state")
        witness = parsed.header.get("witness")
        if witness is not None:
            conn.execute("INSERT INTO sync_state (id, tree) VALUES (0, ?)", (witness.get("tree"),))
        conn.executemany(
            _insert("agent_memory", [*_names(_RECORD), "search"], "?"),
            _record_rows(parsed, lambda _, value: value),
        )
        conn.executemany(
            "UPDATE agent_memory SET superseded_by = ?, superseded_at = ? WHERE id = ?",
            _pointer_rows(parsed),
        )
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'agent_memory'")
        if parsed.header.get("sequence") is not None:
            conn.execute(
                "INSERT INTO sqlite_sequence (name, seq) VALUES ('agent_memory', ?)",
                (parsed.header["sequence"],),
            )
        cache_names = _names(_CACHE)
        conn.executemany(
            _insert("agent_cache", cache_names, "?"),
            [[c[n] for n in cache_names] for c in parsed.cache],
        )
        clock = parsed.header["clock"]
        conn.execute(
            "UPDATE agent_cache_clock SET ticks = ?, generation = ? WHERE id = 0",
            (clock["ticks"], clock["generation"]),
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return _counts(parsed)


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
