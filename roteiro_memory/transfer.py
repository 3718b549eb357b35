"""Export and import of a whole store as JSON Lines.

The first line is a header: the format, the schema version, the id sequence,
the cache clock and the tree witness.  Then one line per graph node
(``"type": "node"``), per record (``"record"``, every column: id, pointers,
timestamps, captured anchor) and per cache entry (``"cache"``).  Import goes
into an empty store only, in one transaction, and reproduces the exported
store exactly: the snapshot after equals the snapshot of the source.  Every
line is checked before anything is written; a bad one is refused by number.

This module owns the format and its checks only; each database store reads
and writes its own rows in it (:mod:`roteiro_memory.stores.sqlite.transfer`,
:mod:`roteiro_memory.stores.postgres.transfer`), inside its own transaction
helpers, so an export of either imports into the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from roteiro_memory import semantics as sem
from roteiro_memory.errors import ImportRefused, RoteiroError, excerpt

__all__ = [
    "CACHE",
    "DEFERRED",
    "EXPORT_FORMAT",
    "EXPORT_SCHEMA_VERSION",
    "LINES",
    "NODE",
    "RECORD",
    "Export",
    "Field",
    "ImportRefused",
    "counts",
    "export_header",
    "export_items",
    "export_lines",
    "import_lines",
    "names",
    "pointer_rows",
    "read_export",
    "record_rows",
]

EXPORT_FORMAT = "roteiro-memory.export/v1"
EXPORT_SCHEMA_VERSION = 3
"""The schema version an export's header states: that of the columns it
carries, which both stores' schemas are at; a test keeps it equal to theirs."""


class Field(NamedTuple):
    """One field of a line, and the column it is stored in: its name, the
    Python type of what this version writes (``str``, ``int`` or
    ``float``), and whether it may be null."""

    name: str
    type: type
    nullable: bool = False


NODE: tuple[Field, ...] = (
    Field("key", str),
    Field("kind", str, True),
    Field("name", str, True),
    Field("path", str, True),
    Field("blob", str, True),
)
RECORD: tuple[Field, ...] = (
    Field("id", int),
    Field("scope", str),
    Field("kind", str),
    Field("anchor_key", str, True),
    Field("anchor_blob", str, True),
    Field("anchor_path", str, True),
    Field("body", str),
    Field("confidence", float, True),
    Field("tree", str, True),
    Field("created_at", str),
    Field("superseded_by", int, True),
    Field("superseded_at", str, True),
)
"""Every column of a record but its search text, which import derives again."""
CACHE: tuple[Field, ...] = (
    Field("key", str),
    Field("fingerprint", str),
    Field("json", str),
    Field("bytes", int),
    Field("generation", int),
    Field("last_used", int),
    Field("hits", int),
    Field("anchor_key", str, True),
    Field("anchor_blob", str, True),
)
"""Every column of a cache entry."""


def names(spec: Iterable[Field]) -> tuple[str, ...]:
    return tuple(field.name for field in spec)


LINES = (
    ("node", "nodes", NODE, "key"),
    ("record", "agent_memory", RECORD, "id"),
    ("cache", "agent_cache", CACHE, "key"),
)
"""``(type, table, columns, order)`` of the lines after the header, in the
order an export writes them."""
DEFERRED = ("superseded_by", "superseded_at")
"""A record's columns written once every record exists (see :func:`pointer_rows`)."""


def export_header(
    sequence: int | None, ticks: int, generation: int, witness: dict[str, Any] | None
) -> str:
    return json.dumps(
        {
            "format": EXPORT_FORMAT,
            "schema_version": EXPORT_SCHEMA_VERSION,
            "sequence": sequence,
            "clock": {"ticks": ticks, "generation": generation},
            "witness": witness,
        }
    )


def export_items(
    select: Callable[[str, Sequence[Field], str], Iterable[Sequence[Any]]],
    decode: Callable[[Any], Any],
) -> Iterator[str]:
    """The lines after the header: ``select(table, columns, order)`` reads a
    table's rows, ``decode`` turns a stored value into its JSON value."""
    for type_, table, spec, order in LINES:
        fields = names(spec)
        for row in select(table, spec, order):
            item = {name: decode(value) for name, value in zip(fields, row, strict=True)}
            yield json.dumps({"type": type_, **item})


def record_rows(parsed: Export, bind: Callable[[str, Any], Any]) -> list[list[Any]]:
    """The rows inserting ``parsed``'s records, by id, with their search text
    and without pointers; ``bind(column, value)`` is how a value is stored."""
    return [
        [
            *(None if n in DEFERRED else bind(n, r[n]) for n in names(RECORD)),
            bind("search", sem.search_text(r["body"], r["anchor_key"], r["anchor_path"])),
        ]
        for r in sorted(parsed.records, key=lambda r: r["id"])
    ]


def pointer_rows(parsed: Export) -> list[tuple[Any, Any, Any]]:
    """``(superseded_by, superseded_at, id)`` of each superseded record."""
    return [
        (r["superseded_by"], r["superseded_at"], r["id"])
        for r in parsed.records
        if r["superseded_by"] is not None
    ]


def counts(parsed: Export) -> dict[str, int]:
    return {"nodes": len(parsed.nodes), "records": len(parsed.records), "cache": len(parsed.cache)}


class _Transferable(Protocol):
    """A store (:class:`~roteiro_memory.store.Store`, which this module does
    not import: the contract imports this format)."""

    def export_lines(self) -> Iterator[str]: ...

    def import_export(self, parsed: Export) -> dict[str, int]: ...


def export_lines(store: _Transferable) -> Iterator[str]:
    """The store as JSON Lines, header first, read on one snapshot
    (:meth:`~roteiro_memory.store.Store.export_lines`)."""
    return store.export_lines()


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


def _fields(number: int, item: dict[str, Any], spec: Sequence[Field]) -> None:
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
            _fields(number, item, NODE)
            parsed.nodes.append(item)
        elif type_ == "record":
            _fields(number, item, RECORD)
            _record(number, item)
            parsed.records.append(item)
        elif type_ == "cache":
            _fields(number, item, CACHE)
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
    if not isinstance(version, int) or version > EXPORT_SCHEMA_VERSION:
        raise ImportRefused(
            f"line {number}: exported at schema version {excerpt(version)}, newer than this "
            f"version knows ({EXPORT_SCHEMA_VERSION}); upgrade roteiro-memory to import it"
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


def import_lines(store: _Transferable, parsed: Export) -> dict[str, int]:
    """Load ``parsed`` into ``store``, which must be empty; all or nothing
    (:meth:`~roteiro_memory.store.Store.import_export`)."""
    return store.import_export(parsed)
