"""Export and import of a whole store as JSON Lines.

The first line is a header: the format, the schema version, the id sequence,
the cache clock and the tree witness.  Then one line per graph node
(``"type": "node"``), per record (``"record"``, every column: id, pointers,
timestamps, captured anchor) and per cache entry (``"cache"``).  The last line
(``"end"``) is the integrity trailer: how many lines of each type came before
it, and the SHA-256 of every line before it that holds something (each as
written, with its newline; an empty line, or one of spaces and tabs, holds
nothing and is passed over), so an export cut short or with lines taken out
or changed is refused rather than imported short.  Import goes into an empty store only, in
one transaction, and reproduces the exported store exactly: the snapshot
after equals the snapshot of the source.  Every line is checked before
anything is written; a bad one is refused by number; and the whole is judged
by the integrity check's own rules (:mod:`roteiro_memory.check`), so an
export imports only into a store that ``check`` passes.

A ``v1`` export (before the trailer) is still read, with a warning that a
truncated one cannot be told from a whole one; a ``v2`` export without its
trailer is refused.

This module owns the format and its checks only; each database store reads
and writes its own rows in it (:mod:`roteiro_memory.stores.sqlite.transfer`,
:mod:`roteiro_memory.stores.postgres.transfer`), inside its own transaction
helpers, so an export of either imports into the other.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from roteiro_memory import semantics as sem
from roteiro_memory.arguments import is_integer
from roteiro_memory.check import (
    MemoryRow,
    cache_findings,
    memory_findings,
    row_label,
    sequence_findings,
    supersession_findings,
)
from roteiro_memory.errors import (
    BadRequest,
    Corrupt,
    ImportRefused,
    byte_order_mark,
    excerpt,
    json_excerpt,
    lone_surrogate,
)
from roteiro_memory.fields import CACHE, NODE, RECORD, Field

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
    "checked_export",
    "counts",
    "export_header",
    "export_items",
    "export_lines",
    "export_trailer",
    "holds",
    "import_lines",
    "indexed_rows",
    "names",
    "pointer_rows",
    "read_export",
    "record_rows",
    "sealed",
]

EXPORT_FORMAT = "roteiro-memory.export/v2"
"""v2 ends with the integrity trailer (v1 had none)."""
UNSEALED_FORMAT = "roteiro-memory.export/v1"
"""The format before the trailer: read with a warning."""
EXPORT_SCHEMA_VERSION = 3
"""The schema version an export's header states: that of the columns it
carries.  Both stores' schemas are at least this; the migrations after it add
only derived tables (the term index), which an import rebuilds, and a test
keeps it that way."""


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
"""A record's columns written once every record exists, where a store checks
a reference row by row (see :func:`pointer_rows`)."""


def export_header(
    sequence: Any,
    clock: Sequence[Any] | None,
    witness: Sequence[Any] | None,
    decode: Callable[[Any], Any],
) -> str:
    """The header line of what a store holds: its id ``sequence`` (None when
    no id was ever issued), its clock row's ``(ticks, generation)`` and its
    witness row's ``(tree,)`` (None: no tree recorded), ``decode`` turning a
    stored value into its JSON value as for :func:`export_items`.  What no
    import would take is refused as :class:`~roteiro_memory.errors.Corrupt`
    instead of written (the store's check reports it too): a missing clock
    row, a count that is not a whole number of 64 bits."""
    if clock is None:
        raise Corrupt(
            "agent_cache_clock: the cache clock row is missing; run `roteiro-memory check`"
        )
    ticks, generation = clock
    held = (("id sequence", sequence, True), ("clock ticks", ticks, False))
    for name, value, nullable in (*held, ("clock generation", generation, False)):
        if not _typed(value, int, nullable):
            raise Corrupt(
                f"the store's {name} holds {excerpt(value)}, not a whole number of 64 bits, "
                "which this version never writes; run `roteiro-memory check`"
            )
    tree = None
    if witness is not None:
        try:
            tree = {"tree": _carried(decode(witness[0]))}
        except Corrupt as error:
            raise Corrupt(f"sync_state id 0: {error}") from None
    return json.dumps(
        {
            "format": EXPORT_FORMAT,
            "schema_version": EXPORT_SCHEMA_VERSION,
            "sequence": sequence,
            "clock": {"ticks": ticks, "generation": generation},
            "witness": tree,
        }
    )


def export_items(
    select: Callable[[str, Sequence[Field], str], Iterable[Sequence[Any]]],
    decode: Callable[[Any], Any],
) -> Iterator[str]:
    """The lines after the header: ``select(table, columns, order)`` reads a
    table's rows, ``decode`` turns a stored value into its JSON value, or
    raises :class:`~roteiro_memory.errors.Corrupt` for one this version never
    writes, which is raised again naming its row; so is text UTF-8 cannot
    carry (:func:`_carried`), on every backend, and a value of another type
    than its column's (:func:`holds`: text in a number's column, planted past
    the constraints), which check reports as one "export would refuse"."""
    for type_, table, spec, order in LINES:
        fields = names(spec)
        at = fields.index(order)
        for row in select(table, spec, order):
            try:
                item = {
                    column.name: _held(column, _carried(decode(value)))
                    for column, value in zip(spec, row, strict=True)
                }
            except Corrupt as error:
                raise Corrupt(f"{table} {order} {_named(row[at], decode)}: {error}") from None
            yield json.dumps({"type": type_, **item})


def _carried(value: Any) -> Any:
    """``value``, unless it is text UTF-8 cannot carry: a lone surrogate, as
    a store reads bytes no write stores (SQLite's text that is not UTF-8,
    PostgreSQL's encoding of a surrogate), which no import takes back."""
    if isinstance(value, str) and not sem.is_utf8(value):
        raise Corrupt("a stored text value is not UTF-8; run `roteiro-memory check`")
    return value


def _held(column: Field, value: Any) -> Any:
    """``value``, unless ``column`` cannot hold it in an export line, which no
    import would take back (:func:`holds`)."""
    if not _typed(value, column.type, column.nullable):
        expected = column.type.__name__ + (" or null" if column.nullable else "")
        raise Corrupt(
            f"{column.name} holds {excerpt(value)}, which this version never writes "
            f"(expected {expected}); run `roteiro-memory check`"
        )
    return value


def _named(key: Any, decode: Callable[[Any], Any]) -> str:
    """A row's key as a message names it: decoded, or as stored when it cannot be."""
    try:
        return excerpt(decode(key))
    except Corrupt:
        return excerpt(bytes(key) if isinstance(key, memoryview) else key)


def _digest(lines: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8", "surrogatepass") + b"\n")
    return digest.hexdigest()


def _tally(lines: Iterable[str]) -> dict[str, int]:
    types = [json.loads(line).get("type") for line in lines]
    return {table: types.count(type_) for type_, table, _ in _COUNTED}


_COUNTED = (("node", "nodes", NODE), ("record", "records", RECORD), ("cache", "cache", CACHE))


def export_trailer(lines: Sequence[str]) -> str:
    """The end line sealing ``lines`` (the header and every line after it)."""
    return json.dumps({"type": "end", "counts": _tally(lines[1:]), "sha256": _digest(lines)})


def sealed(header: str, items: Iterable[str]) -> Iterator[str]:
    """``header``, ``items``, then their trailer: a whole export."""
    lines = [header, *items]
    yield from lines
    yield export_trailer(lines)


Convert = Callable[[Any], Any]
"""How a store binds one column's values."""


def record_rows(
    parsed: Export,
    bind: Callable[[str], Convert | None] = lambda _: None,
    pointers: bool = False,
) -> list[list[Any]]:
    """The rows inserting ``parsed``'s records, by id, with their search text;
    ``bind(column)`` is how that column's values are stored (None: as they
    are).  Without ``pointers`` the :data:`DEFERRED` columns are left empty,
    for a store that checks a reference as each row goes in (a record's
    successor comes after it); with them, for one that checks at the end of
    the statement."""
    plan = [(name, name in DEFERRED and not pointers, bind(name)) for name in names(RECORD)]
    search = bind("search")
    rows = []
    for r in sorted(parsed.records, key=lambda r: r["id"]):
        row = [
            None if deferred else r[name] if convert is None else convert(r[name])
            for name, deferred, convert in plan
        ]
        text = sem.search_text(r["body"], r["anchor_key"], r["anchor_path"])
        row.append(text if search is None else search(text))
        rows.append(row)
    return rows


def indexed_rows(parsed: Export) -> tuple[int, list[tuple[Any, Any, Any, Any, Any]]]:
    """How many records ``parsed`` holds, and the live ones' ``(id,
    confidence, body, anchor_key, anchor_path)`` by ascending id: what the
    term index is built from after an import."""
    live = [
        (r["id"], r["confidence"], r["body"], r["anchor_key"], r["anchor_path"])
        for r in parsed.records
        if r["superseded_by"] is None
    ]
    return len(parsed.records), sorted(live, key=_first)


_first = operator.itemgetter(0)


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
    warnings: list[str] = field(default_factory=list)
    """What the reader should know though the export was accepted (a v1
    export has no trailer to verify)."""
    numbers: dict[tuple[str, Any], int] = field(default_factory=dict)
    """The number of the line each row came from, by its type and key."""


def checked_export(parsed: object) -> Export:
    """``parsed`` when it is an :class:`Export` (as :func:`read_export` gives);
    anything else is BadRequest, refused before a store is touched."""
    if not isinstance(parsed, Export):
        raise BadRequest(
            f"invalid export {excerpt(parsed)}: expected an Export, as read_export gives"
        )
    return parsed


def _typed(value: Any, kind: type, nullable: bool) -> bool:
    """Whether ``value`` is of ``kind`` as a store can hold it: integers within
    64 bits, numbers within a double, text that UTF-8 can carry."""
    if value is None:
        return nullable
    if kind is float:
        if is_integer(value):
            return sem.fits_int64(value)
        return isinstance(value, float)
    if kind is int:
        return is_integer(value) and sem.fits_int64(value)
    if kind is str:
        return isinstance(value, str) and sem.is_utf8(value)
    return isinstance(value, kind)


def holds(column: Field, value: Any) -> bool:
    """Whether a stored ``value`` is one an export line can carry in
    ``column`` (what the integrity check asks of every stored value)."""
    return _typed(value, column.type, column.nullable)


_EXPECTED = {int: "a whole number", float: "a number", str: "text"}


def _wrong(value: Any, kind: type, nullable: bool) -> str:
    """What is wrong with ``value``, which is not of ``kind`` as a store can
    hold it (:func:`_typed`), and what is allowed: "is 1180591620717411303424,
    beyond 64 bits; expected a whole number from -2**63 to 2**63 - 1"."""
    allowed = _EXPECTED.get(kind, kind.__name__)
    null = " (or null)" if nullable else ""
    if isinstance(value, int) and not isinstance(value, bool) and kind in (int, float):
        return (
            f"is {excerpt(value)}, beyond 64 bits; expected {allowed} from -2**63 to "
            f"2**63 - 1{null}"
        )
    if isinstance(value, str) and kind is str:
        lone = lone_surrogate(value)
        if lone is not None:
            return (
                f"holds {lone}, which UTF-8 cannot carry; expected {allowed} that UTF-8 can"
                f" encode{null}"
            )
    return f"is {excerpt(value)}, expected {allowed}{null}"


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
            raise ImportRefused(
                f"line {number}: {item['type']} field {name!r} {_wrong(item[name], kind, nullable)}"
            )


def read_export(lines: Iterable[str]) -> Export:
    """Parse and check every line of an export, its trailer, and the store it
    describes; :class:`ImportRefused` naming the first problem."""
    parsed: Export | None = None
    body: list[str] = []
    trailer: tuple[int, dict[str, Any]] | None = None
    number = 0
    for number, line in enumerate(lines, 1):
        if not line.strip(_JSON_WHITE_SPACE):
            continue  # holds nothing: an empty line, as converting line ends twice leaves
        if trailer is not None:
            raise ImportRefused(
                f"line {number}: a line after the end line (line {trailer[0]}), which closes "
                "an export; remove what was appended, or export the store again"
            )
        item = _json(number, line)
        if parsed is None:
            parsed = Export(_header(number, item))
            body.append(line)
            continue
        type_ = item.get("type")
        if type_ == "end":
            trailer = (number, item)
            continue
        body.append(line)
        if type_ == "node":
            _fields(number, item, NODE)
            parsed.nodes.append(item)
        elif type_ == "record":
            _fields(number, item, RECORD)
            parsed.records.append(item)
        elif type_ == "cache":
            _fields(number, item, CACHE)
            parsed.cache.append(item)
        else:
            raise ImportRefused(
                f"line {number}: unknown line type {excerpt(type_)}: "
                "expected node, record, cache or end"
            )
        _unique(number, item, parsed.numbers)
    if parsed is None:
        raise ImportRefused(
            f"empty input: expected an export starting with a {EXPORT_FORMAT} header"
        )
    if trailer is not None:
        _verify(trailer, body, counts(parsed))
    elif parsed.header["format"] == UNSEALED_FORMAT:
        parsed.warnings.append(
            f"a {UNSEALED_FORMAT} export has no integrity trailer, so a truncated one cannot be "
            "told from a whole one; imported as it is (export again with this version to seal it)"
        )
    else:
        raise ImportRefused(
            f"the export is truncated: no end line after line {number} ({len(body) - 1} lines "
            "after the header); export the store again"
        )
    _judged(parsed)
    for record in parsed.records:  # as a write keeps it, so every store keeps the same
        record["confidence"] = sem.settled_confidence(record["confidence"])
    return parsed


_JSON_WHITE_SPACE = " \t\r\n"
"""What JSON takes as white space: a line of it alone holds nothing, and is
passed over (NDJSON's readers may ignore an empty line).  Any other white
space (a form feed, U+00A0, U+2028) is no JSON, and a line of it is refused."""


def _json(number: int, line: str) -> Any:
    if line.isspace():
        raise ImportRefused(
            f"line {number}: {excerpt(line)} is white space JSON does not take as such; "
            "expected a JSON object, as an export's lines are, or an empty line (spaces and "
            "tabs at most), which is passed over"
        )
    marked = byte_order_mark(line)
    if marked is not None:
        raise ImportRefused(
            f"line {number}: {marked}, as an export's lines are (an editor added it); "
            "remove it and import again"
        )
    try:
        item = json.loads(line, object_pairs_hook=_once)
    except ImportRefused as error:
        raise ImportRefused(f"line {number}: {error}") from None
    except RecursionError:
        raise ImportRefused(
            f"line {number}: JSON nested too deeply to read; an export's lines are flat objects"
        ) from None
    except json.JSONDecodeError as error:
        raise ImportRefused(
            # Some of the reader's words end in "at" already ("Unterminated
            # string starting at"), as its own message goes on with the place.
            f"line {number}: not JSON ({error.msg.removesuffix(' at')} at column {error.colno})"
        ) from None
    except ValueError as error:
        raise ImportRefused(f"line {number}: not JSON ({excerpt(str(error))})") from None
    if not isinstance(item, dict):
        raise ImportRefused(f"line {number}: expected a JSON object")
    return item


def _once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose members each appear once: an export writes each
    once, and of a repeated one a reader would keep the last unseen."""
    item = dict(pairs)
    if len(item) != len(pairs):
        names = [name for name, _ in pairs]
        twice = next(name for at, name in enumerate(names) if name in names[:at])
        raise ImportRefused(
            f"the member {excerpt(twice)} appears twice in one object; an export writes each "
            "member once"
        )
    return item


def _verify(trailer: tuple[int, dict[str, Any]], body: list[str], held: dict[str, int]) -> None:
    number, item = trailer
    if set(item) != {"type", "counts", "sha256"}:
        raise ImportRefused(
            f"line {number}: the end line must hold exactly type, counts and sha256"
        )
    stated = item["counts"]
    # Judged by type, not by ==: ``true`` and ``1.0`` equal 1 in Python, and
    # a count more or a list would leave nothing to name below.
    if not (
        isinstance(stated, dict)
        and set(stated) == set(held)
        and all(type(count) is int for count in stated.values())
    ):
        raise ImportRefused(
            f"line {number}: the end line's counts are {json_excerpt(stated)}, expected "
            '{"nodes": N, "records": N, "cache": N}, each a whole number'
        )
    if stated != held:
        missing = ", ".join(
            f"{stated[name]!r} {name} stated, {held[name]} held"
            for name in held
            if stated[name] != held[name]
        )
        raise ImportRefused(
            f"line {number}: the end line's counts disagree with the lines before it "
            f"({missing}): lines are missing or added; export the store again"
        )
    if item["sha256"] != _digest(body):
        raise ImportRefused(
            f"line {number}: the end line's digest does not match the lines before it: the "
            "export was changed or damaged; export the store again"
        )


_HEADER = ("format", "schema_version", "sequence", "clock", "witness")
"""The fields of a header: what :func:`export_header` writes, and what every
version before it wrote."""


def _header(number: int, item: dict[str, Any]) -> dict[str, Any]:
    if item.get("format") not in (EXPORT_FORMAT, UNSEALED_FORMAT):
        raise ImportRefused(
            f"line {number}: not a roteiro-memory export (format {excerpt(item.get('format'))}, "
            f"expected {EXPORT_FORMAT!r})"
        )
    # As for the other lines (:func:`_fields`): a field this version does not
    # know would be dropped on import, so the store made would not be the one
    # described.
    extra = sorted(set(item) - set(_HEADER))
    if extra:
        raise ImportRefused(
            f"line {number}: unknown field {excerpt(extra[0])} in the header: expected "
            f"{', '.join(_HEADER)}"
        )
    for name in _HEADER:
        if name not in item:
            raise ImportRefused(f"line {number}: the header lacks {name!r}")
    version = item["schema_version"]
    if type(version) is not int or version < 1:
        raise ImportRefused(
            f"line {number}: schema_version {version!r} is not a schema version: expected a "
            f"whole number from 1 to {EXPORT_SCHEMA_VERSION}"
        )
    if version > EXPORT_SCHEMA_VERSION:
        raise ImportRefused(
            f"line {number}: exported at schema version {excerpt(version)}, newer than this "
            f"version knows ({EXPORT_SCHEMA_VERSION}); upgrade roteiro-memory to import it"
        )
    _clock(number, item["clock"])
    sequence = item["sequence"]
    if sequence is not None and not _typed(sequence, int, False):
        raise ImportRefused(f"line {number}: header sequence {_wrong(sequence, int, True)}")
    if sequence is not None and sequence < 0:
        raise ImportRefused(
            f"line {number}: header sequence is {sequence}, expected a whole number from 0"
        )
    witness = item["witness"]
    if witness is not None and not (isinstance(witness, dict) and set(witness) == {"tree"}):
        raise ImportRefused(
            f"line {number}: header witness is {excerpt(witness)}, expected null (no tree "
            'recorded) or {"tree": TEXT or null}'
        )
    if witness is not None and not _typed(witness["tree"], str, True):
        raise ImportRefused(
            f"line {number}: header witness tree {_wrong(witness['tree'], str, True)}"
        )
    return item


def _clock(number: int, clock: Any) -> None:
    """A clock's shape: its two counts, each a whole number from 0 that fits
    64 bits (the integrity check's rules, :func:`_judged`, judge the rest:
    one at the largest 64-bit integer has no next step)."""
    if not (isinstance(clock, dict) and set(clock) == {"ticks", "generation"}):
        raise ImportRefused(
            f"line {number}: header clock is {excerpt(clock)}, expected "
            '{"ticks": N, "generation": N}'
        )
    for name in ("ticks", "generation"):
        value = clock[name]
        if not (_typed(value, int, False) and value >= 0 and sem.fits_int64(value)):
            raise ImportRefused(
                f"line {number}: header clock {name} is {excerpt(value)}, expected a whole "
                "number from 0 that fits 64 bits"
            )


_KEYS = {"node": "key", "record": "id", "cache": "key"}
"""The field that names each line's row: its table's primary key."""


def _unique(number: int, item: dict[str, Any], seen: dict[tuple[str, Any], int]) -> None:
    """What a table's key rules out: two lines naming one row (a store would
    keep one of them, and so not be the store the export describes)."""
    type_ = item["type"]
    name = _KEYS[type_]
    first = seen.setdefault((type_, item[name]), number)
    if first != number:
        raise ImportRefused(
            f"line {number}: {type_} {name} {excerpt(item[name])} appears again (first at line "
            f"{first}): each {type_} line names its own row"
        )


def _judged(parsed: Export) -> None:
    """The integrity check's rules over the store ``parsed`` would make, so an
    import never writes what ``check`` refuses (nor what later writes trip on)."""
    records = parsed.records
    findings = memory_findings(
        MemoryRow.of(r, sem.search_text(r["body"], r["anchor_key"], r["anchor_path"]))
        for r in records
    )
    findings += supersession_findings(
        [(r["id"], r["superseded_by"]) for r in records if r["superseded_by"] is not None],
        {r["id"] for r in records},
    )
    clock = parsed.header["clock"]
    findings += cache_findings(clock["ticks"], clock["generation"], parsed.cache)
    largest = max([0, *(r["id"] for r in records)])
    sequence = parsed.header.get("sequence") or 0
    findings += sequence_findings("header", None, "sequence", sequence, largest)
    if findings:
        first = findings[0]
        tables = {type_: table for type_, table, _, _ in LINES}
        numbers: dict[tuple[str, str | None], int] = {
            (tables[type_], row_label(tables[type_], key)): number
            for (type_, key), number in parsed.numbers.items()
        }
        number = numbers.get((first.table, first.row))
        line = f"line {number}: " if number is not None else ""
        more = f" (and {len(findings) - 1} more)" if len(findings) > 1 else ""
        raise ImportRefused(
            f"{line}{first}{more}: `roteiro-memory check` would refuse the store this export "
            "makes; repair the source store and export it again"
        )


def import_lines(store: _Transferable, parsed: Export) -> dict[str, int]:
    """Load ``parsed`` into ``store``, which must be empty; all or nothing
    (:meth:`~roteiro_memory.store.Store.import_export`)."""
    return store.import_export(parsed)
