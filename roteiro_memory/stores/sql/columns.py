"""The columns of every table both database stores hold, written once.

Each table is its columns in schema order, each with the type this version
writes and whether it may be null.  The columns an export carries are the
export format's own fields (:mod:`roteiro_memory.transfer`, a generic
module, which imports no store): this module takes those and adds the rest,
so every column's type is still written in one place.  Everything that
names columns is derived from these: the select lists of a read
(:mod:`.store`), the column lists of every INSERT and upsert
(:func:`insert`, :func:`upsert`), the tables a snapshot holds and the type
guards a read applies to what it finds (:func:`stored`).  Rows are decoded
by name (:func:`decode`), never by position.

The SQLite and PostgreSQL schemas name the same tables and columns; how a
type is stored differs (PostgreSQL keeps text as UTF-8 ``bytea``), and each
store's migrations say how.  A test pins both schemas to these lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from roteiro_memory import fields as transfer
from roteiro_memory.errors import Corrupt, excerpt
from roteiro_memory.fields import Field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "AGENT_CACHE",
    "AGENT_CACHE_CLOCK",
    "AGENT_MEMORY",
    "CACHE_CHECKED",
    "CACHE_COLS",
    "CACHE_FROM",
    "CACHE_NAMES",
    "CACHE_READ",
    "DERIVED_TABLES",
    "GENERATION",
    "INDEX_LAYOUT",
    "MEMORY_ANCHOR",
    "MEMORY_CELLS",
    "MEMORY_MEMBERS",
    "MEMORY_RECENT",
    "MEMORY_SEGMENTS",
    "MEMORY_STATS",
    "NODES",
    "RECORD_CHECKED",
    "RECORD_COLS",
    "RECORD_NAMES",
    "RECORD_READ",
    "RECORD_WRITE",
    "SCHEMA_MIGRATIONS",
    "SNAPSHOT_TABLES",
    "SWEEP_COLS",
    "SWEEP_NAMES",
    "SWEEP_READ",
    "SYNC_STATE",
    "TABLES",
    "Column",
    "decode",
    "insert",
    "names",
    "pick",
    "record_from",
    "select_all",
    "select_list",
    "stored",
    "upsert",
]


Column = Field
"""One column: its name, the Python type of what this version writes there,
and whether it may be null."""

Columns = tuple[Column, ...]


def pick(columns: Columns, *wanted: str) -> Columns:
    """The named ``columns``, in the order named; an unknown name is an error."""
    by_name = {column.name: column for column in columns}
    return tuple(by_name[name] for name in wanted)


def names(columns: Iterable[Column]) -> tuple[str, ...]:
    return tuple(column.name for column in columns)


def select_list(columns: Iterable[Column], alias: str | None = None) -> str:
    """``columns`` as a select list, each qualified by ``alias`` when given."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + column.name for column in columns)


def decode(row_names: Sequence[str], row: Sequence[Any]) -> dict[str, Any]:
    """A row read by the select list ``row_names`` names, as a mapping by name."""
    return dict(zip(row_names, row, strict=True))


def select_all(table: str, columns: Sequence[Column], order: str) -> str:
    """Every row of ``table``, as ``columns``, ordered by ``order``."""
    return f"SELECT {select_list(columns)} FROM {table} ORDER BY {order}"


def insert(table: str, columns: Iterable[Column | str], mark: str) -> str:
    """An INSERT of ``columns`` (or column names) into ``table``, each bound by ``mark``."""
    written = [column if isinstance(column, str) else column.name for column in columns]
    marks = ", ".join([mark] * len(written))
    return f"INSERT INTO {table} ({', '.join(written)}) VALUES ({marks})"


def upsert(
    columns: Columns, key: str, *, kept: Sequence[str] = (), target: str | None = None
) -> str:
    """What follows an INSERT of ``columns`` so that a row whose ``key`` is
    taken replaces every column of it but the key and ``kept``; ``target``
    names the unique index that keys it, where that is not ``(key)``."""
    replaced = [c.name for c in columns if c.name != key and c.name not in kept]
    return f" ON CONFLICT {target or f'({key})'} DO UPDATE SET " + ", ".join(
        f"{name} = excluded.{name}" for name in replaced
    )


_TYPE_NAMES = {str: "text", int: "an integer", float: "a real", bytes: "bytes"}


def stored(table: str, key: object, column: str, value: Any, kind: type, null: bool = False) -> Any:
    """``value``, read from ``column`` of the ``table`` row ``key``, when it is
    of the type this version writes there.  Anything else was put there
    behind the store's back; it is reported, never served or computed on."""
    if type(value) is kind or (null and value is None):
        return value
    expected = ("null or " if null else "") + _TYPE_NAMES[kind]
    raise Corrupt(
        f"{table} row {excerpt(key)}: {column} holds {excerpt(value)}, expected {expected}"
    )


SCHEMA_MIGRATIONS: Columns = (Column("version", int), Column("name", str))
"""The columns a snapshot holds; ``applied_at`` is a wall-clock stamp and is
left out of it."""

NODES: Columns = transfer.NODE

SYNC_STATE: Columns = (Column("id", int), Column("tree", str, True))

AGENT_MEMORY: Columns = (*transfer.RECORD, Column("search", str))

AGENT_CACHE: Columns = pick(
    transfer.CACHE,
    "key",
    "fingerprint",
    "bytes",
    "generation",
    "last_used",
    "hits",
    "anchor_key",
    "anchor_blob",
    "json",
)
"""In schema order: the payload last, so the sweep's narrow read never walks
a payload's overflow pages."""

AGENT_CACHE_CLOCK: Columns = (Column("id", int), Column("ticks", int), Column("generation", int))

MEMORY_MEMBERS: Columns = (
    Column("cell", int),
    Column("segment", int),
    Column("ids", bytes),
    Column("lengths", bytes),
)
"""Each cell's records, in the order they took their ordinals, a segment of
ordinals per row: their ids and lengths, by which the cell's postings name
them (:func:`~.postings.member_bytes`)."""

MEMORY_SEGMENTS: Columns = (
    Column("term", str),
    Column("cell", int),
    Column("segment", int),
    Column("postings", bytes),
)
"""The term index's postings (:mod:`.index`), a segment of one term's in one
cell per row (:func:`~.postings.encode_segment`): derived from the live records."""

MEMORY_CELLS: Columns = (
    Column("term", str),
    Column("cell", int),
    Column("postings", int),
    Column("max_tf", int),
    Column("tail", bytes),
)
"""Per term and cell: how many postings it holds, the largest count, and
its tail: its newest postings, those not in a segment yet."""

MEMORY_RECENT: Columns = (
    Column("record_id", int),
    Column("cell", int),
    Column("length", int),
    Column("terms", str),
)
"""The live records written since the index last merged, with their terms."""

MEMORY_STATS: Columns = (
    Column("id", int),
    Column("records", int),
    Column("live", int),
    Column("live_terms", int),
    Column("tokenizer", str),
)
"""The one row of counts a search reads instead of scanning the records, and
the tokenizer that built the index."""

TABLES: dict[str, Columns] = {
    "schema_migrations": SCHEMA_MIGRATIONS,
    "nodes": NODES,
    "sync_state": SYNC_STATE,
    "agent_memory": AGENT_MEMORY,
    "agent_cache": AGENT_CACHE,
    "agent_cache_clock": AGENT_CACHE_CLOCK,
    "memory_members": MEMORY_MEMBERS,
    "memory_segments": MEMORY_SEGMENTS,
    "memory_cells": MEMORY_CELLS,
    "memory_recent": MEMORY_RECENT,
    "memory_stats": MEMORY_STATS,
}
"""Every table both stores hold, in the order a snapshot lists them."""

DERIVED_TABLES = (
    "memory_members",
    "memory_segments",
    "memory_cells",
    "memory_recent",
    "memory_stats",
)
"""The tables derived from the records (the term index): an export leaves
them out and an import rebuilds them."""

SNAPSHOT_ORDER: dict[str, str] = {}
"""How a snapshot orders a table whose first column is not its key."""

INDEX_LAYOUT = ("memory_members", "memory_segments", "memory_cells", "memory_recent")
"""The term index's tables that say how it holds its postings (which
depends on the order of past writes) rather than what: a snapshot shows the
postings instead (:func:`~.index.contents`)."""

SNAPSHOT_TABLES: tuple[tuple[str, str, str], ...] = tuple(
    (table, select_list(columns), SNAPSHOT_ORDER.get(table, columns[0].name))
    for table, columns in TABLES.items()
    if table not in INDEX_LAYOUT
)
"""``(table, columns, order)`` for each table a snapshot holds; each store
adds the table its id sequence lives in, and the index's postings."""


RECORD_READ: Columns = AGENT_MEMORY[:-1]
"""What a read of a record selects: every column but the derived ``search``."""

RECORD_WRITE: Columns = pick(
    AGENT_MEMORY,
    "id",
    "scope",
    "kind",
    "anchor_key",
    "anchor_blob",
    "anchor_path",
    "body",
    "confidence",
    "tree",
    "search",
)
"""What a new record is inserted with: all but its creation time (the
store's clock) and its supersession, which a later write sets."""

CACHE_READ: Columns = transfer.CACHE
"""What a read of a cache entry selects, in the order an entry (and an
export line) lists them."""

CACHE_CHECKED: Columns = CACHE_READ[:8]
"""What the integrity check judges of an entry: all but its anchor's blob."""

RECORD_CHECKED: Columns = pick(
    AGENT_MEMORY,
    "id",
    "scope",
    "kind",
    "anchor_key",
    "anchor_path",
    "body",
    "confidence",
    "search",
    "superseded_by",
    "superseded_at",
    "created_at",
)
"""What the integrity check judges of a record, on every store."""

SWEEP_READ: Columns = pick(
    AGENT_CACHE, "key", "bytes", "generation", "last_used", "anchor_key", "anchor_blob"
)
"""What the sweep reads of an entry: what eviction is decided by, no payload."""


# --- Reads: a row and the node its anchor names ------------------------------
#
# A record (alias ``m``) or a cache entry (``c``) is read with the node its
# anchor names (``n``, left-joined: NULL when there is none), by which the
# anchor rule decides its state.


def record_from(nodes: str = "nodes", hint: str = "") -> str:
    """The records, each joined to its anchor's node in the relation
    ``nodes``; ``hint`` follows the records' alias (how the engine should
    read them, :attr:`~.dialects.Dialect.by_id_hint`)."""
    return f" FROM agent_memory m{hint} LEFT JOIN {nodes} n ON n.key = m.anchor_key"


GENERATION = "SELECT COALESCE(MAX(id), 0) FROM agent_memory"
"""The store's generation: its largest record id, 0 when none was kept."""

RECORD_COLS = select_list(RECORD_READ, "m") + ", n.key, n.blob"
RECORD_NAMES = (*names(RECORD_READ), "node_key", "node_blob")
"""The names of :data:`RECORD_COLS`, by which a row of it is decoded."""

MEMORY_ANCHOR = {
    "anchor_key": "m.anchor_key",
    "anchor_blob": "m.anchor_blob",
    "node_key": "n.key",
    "node_blob": "n.blob",
}
"""The anchor columns of a record read through :func:`record_from`."""

CACHE_FROM = " FROM agent_cache c LEFT JOIN nodes n ON n.key = c.anchor_key"
"""Shared by the full read and the sweep's read, so they see the same rows."""
CACHE_COLS = select_list(CACHE_READ, "c") + ", n.key, n.blob"
CACHE_NAMES = (*names(CACHE_READ), "node_key", "node_blob")
"""The names of :data:`CACHE_COLS`, by which a row of it is decoded."""

SWEEP_COLS = select_list(SWEEP_READ, "c") + ", n.key, n.blob"
"""The columns eviction is decided by, and no payload.  The sweep itself
decides in SQL over these same columns (a traced test pins that none of its
statements names a payload column); the stored ``bytes`` is the authority
for sizes, so a sweep over a full tier costs a few integers per entry rather
than the tier's contents."""
SWEEP_NAMES = (*names(SWEEP_READ), "node_key", "node_blob")
