"""Rows as the stores read them: a record, a cache entry, the sweep's view
of an entry.  Every stored value a read hands back passes the type guards
of :mod:`.columns` first, so a value this version never writes is reported
as :class:`~roteiro_memory.errors.Corrupt`, never served; the anchor state
is resolved by the one rule (:func:`~roteiro_memory.semantics.resolve_anchor`)."""

from __future__ import annotations

import operator
from collections.abc import Sequence

from roteiro_memory import semantics as sem
from roteiro_memory.errors import Corrupt
from roteiro_memory.results import CacheEntry, MemoryAnchor, MemoryRecord
from roteiro_memory.stores.sql import columns as cols

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.stores.sql.dialects import Dialect

__all__ = ["SweepRow", "entry_from_row", "judge_record", "record_from_row"]


def record_from_row(d: Dialect, raw: Sequence[Any]) -> MemoryRecord:
    """A record read as :data:`~.columns.RECORD_COLS`, every column of the
    type this version writes (:func:`judge_record`)."""
    values, kind = _judged(d, raw)
    confidence = values[_CONFIDENCE]
    anchor_key, anchor_blob = values[_ANCHOR_KEY], values[_ANCHOR_BLOB]
    anchor = None
    if anchor_key is not None:
        anchor = MemoryAnchor(anchor_key, anchor_blob, values[_ANCHOR_PATH])
    return MemoryRecord(
        values[_ID],
        values[_SCOPE],
        kind,
        anchor,
        sem.resolve_anchor(
            anchor_key, anchor_blob, values[_NODE_KEY] is not None, values[_NODE_BLOB]
        ),
        values[_BODY],
        confidence,
        values[_TREE],
        values[_CREATED_AT],
        values[_SUPERSEDED_BY],
        values[_SUPERSEDED_AT],
    )


def judge_record(d: Dialect, raw: Sequence[Any]) -> None:
    """Refuse, as :class:`Corrupt`, a row :func:`record_from_row` would
    refuse, building nothing: what a write reads back before it commits."""
    _judged(d, raw)


def _judged(d: Dialect, raw: Sequence[Any]) -> tuple[Sequence[Any], sem.MemoryKind]:
    """A row's values and its kind, when its columns are those a read
    takes; else :class:`Corrupt`.  A row whose columns all plainly hold
    their types (all but a damaged store's) is judged by one pass over
    them; any other is judged column by column, to name what is wrong."""
    values = d.read_values(raw)
    if not all(map(operator.contains, _PLAIN_TYPES, map(type, values))):
        _guard_record(d, raw)
    record_id = values[_ID]
    try:
        kind = sem.parse_kind(values[_KIND])
    except ValueError as error:
        raise Corrupt(f"agent_memory row {record_id}: {error}") from None
    confidence = values[_CONFIDENCE]
    if confidence is not None:
        judged_confidence(record_id, confidence)
    return values, kind


def judged_confidence(record_id: Any, confidence: Any) -> Any:
    """``confidence``, read from record ``record_id``'s row, when it is in
    [0, 1]; else :class:`Corrupt` naming the row (a store's damage, planted
    past the constraints: a search would take a negative one's square root)."""
    if not 0.0 <= confidence <= 1.0:
        raise Corrupt(f"agent_memory row {record_id}: confidence {confidence!r} is outside [0, 1]")
    return confidence


_PLAIN_TYPES = tuple(
    frozenset({column.type, type(None)} if column.nullable else {column.type})
    for column in cols.RECORD_READ
)
"""The types each column of :data:`~.columns.RECORD_READ` may hold."""
(
    _ID,
    _SCOPE,
    _KIND,
    _ANCHOR_KEY,
    _ANCHOR_BLOB,
    _ANCHOR_PATH,
    _BODY,
    _CONFIDENCE,
    _TREE,
    _CREATED_AT,
    _SUPERSEDED_BY,
    _SUPERSEDED_AT,
    _NODE_KEY,
    _NODE_BLOB,
) = (
    cols.RECORD_NAMES.index(name)
    for name in (
        "id",
        "scope",
        "kind",
        "anchor_key",
        "anchor_blob",
        "anchor_path",
        "body",
        "confidence",
        "tree",
        "created_at",
        "superseded_by",
        "superseded_at",
        "node_key",
        "node_blob",
    )
)


def _guard_record(d: Dialect, raw: Sequence[Any]) -> None:
    """The type guards over a row as :func:`record_from_row` reads it, each
    column judged on its own, so the one a damaged store holds wrongly is
    named (:class:`Corrupt`)."""
    row = d.read_row(cols.RECORD_NAMES, raw)
    for name, type_, null in cols.RECORD_READ:
        cols.stored("agent_memory", row["id"], name, row[name], type_, null)


def _checked(row: dict[str, Any], types: Sequence[cols.Column]) -> dict[str, Any]:
    """A cache row whose own columns ``types`` all hold the types this version writes."""
    for column in types:
        cols.stored(
            "agent_cache", row["key"], column.name, row[column.name], column.type, column.nullable
        )
    return row


def entry_from_row(d: Dialect, raw: Sequence[Any]) -> CacheEntry:
    """A cache entry read as :data:`~.columns.CACHE_COLS`."""
    row = _checked(d.read_row(cols.CACHE_NAMES, raw), cols.CACHE_READ)
    return CacheEntry(
        key=row["key"],
        fingerprint=row["fingerprint"],
        json=row["json"],
        bytes=row["bytes"],
        generation=row["generation"],
        last_used=row["last_used"],
        hits=row["hits"],
        anchor=row["anchor_key"],
        anchor_state=sem.resolve_anchor(
            row["anchor_key"], row["anchor_blob"], row["node_key"] is not None, row["node_blob"]
        ),
    )


class SweepRow:
    """One entry as the sweep sees it: what eviction is decided by, no payload."""

    __slots__ = ("anchor_state", "bytes", "generation", "key", "last_used")

    def __init__(self, d: Dialect, raw: Sequence[Any]) -> None:
        row = _checked(d.read_row(cols.SWEEP_NAMES, raw), cols.SWEEP_READ)
        self.key: str = row["key"]
        self.bytes: int = row["bytes"]
        self.generation: int = row["generation"]
        self.last_used: int = row["last_used"]
        self.anchor_state = sem.resolve_anchor(
            row["anchor_key"], row["anchor_blob"], row["node_key"] is not None, row["node_blob"]
        )
