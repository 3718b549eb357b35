"""The columns of every table both database stores hold, written once.

Each table is its columns in schema order, each with the type this version
writes and whether it may be null.  The columns an export carries are the
export format's own fields (:mod:`roteiro_memory.transfer`, a generic
module, which imports no store): this module takes those and adds the rest,
so every column's type is still written in one place.  Everything that
names columns is derived from these: the select lists of a read
(:mod:`.shape`), the tables a snapshot holds and the type guards a read
applies to what it finds.  Rows are decoded by name (:func:`decode`), never
by position.

The SQLite and PostgreSQL schemas name the same tables and columns; how a
type is stored differs (PostgreSQL keeps text as UTF-8 ``bytea``), and each
store's migrations say how.  A test pins both schemas to these lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from roteiro_memory import fields as transfer
from roteiro_memory.fields import Field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "AGENT_CACHE",
    "AGENT_CACHE_CLOCK",
    "AGENT_MEMORY",
    "CACHE_CHECKED",
    "CACHE_READ",
    "DERIVED_TABLES",
    "MEMORY_STATS",
    "MEMORY_TERMS",
    "MEMORY_TERM_DF",
    "NODES",
    "RECORD_READ",
    "SCHEMA_MIGRATIONS",
    "SWEEP_READ",
    "SYNC_STATE",
    "TABLES",
    "Column",
    "decode",
    "names",
    "pick",
    "select_list",
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

MEMORY_TERMS: Columns = (
    Column("record_id", int),
    Column("term", str),
    Column("tf", int),
    Column("length", int),
)
"""The term index's postings (:mod:`.index`): derived from the records."""

MEMORY_TERM_DF: Columns = (Column("term", str), Column("live", int))
"""How many live records hold each term."""

MEMORY_STATS: Columns = (
    Column("id", int),
    Column("records", int),
    Column("live", int),
    Column("live_terms", int),
)
"""The one row of counts a search reads instead of scanning the records."""

TABLES: dict[str, Columns] = {
    "schema_migrations": SCHEMA_MIGRATIONS,
    "nodes": NODES,
    "sync_state": SYNC_STATE,
    "agent_memory": AGENT_MEMORY,
    "agent_cache": AGENT_CACHE,
    "agent_cache_clock": AGENT_CACHE_CLOCK,
    "memory_terms": MEMORY_TERMS,
    "memory_term_df": MEMORY_TERM_DF,
    "memory_stats": MEMORY_STATS,
}
"""Every table both stores hold, in the order a snapshot lists them."""

DERIVED_TABLES = ("memory_terms", "memory_term_df", "memory_stats")
"""The tables derived from the records (the term index): an export leaves
them out and an import rebuilds them."""

SNAPSHOT_ORDER: dict[str, str] = {"memory_terms": "record_id, term"}
"""How a snapshot orders a table whose first column is not its key."""


RECORD_READ: Columns = AGENT_MEMORY[:-1]
"""What a read of a record selects: every column but the derived ``search``."""

CACHE_READ: Columns = transfer.CACHE
"""What a read of a cache entry selects, in the order an entry (and an
export line) lists them."""

CACHE_CHECKED: Columns = CACHE_READ[:7]
"""What the integrity check judges of an entry: all but its anchor."""

SWEEP_READ: Columns = pick(
    AGENT_CACHE, "key", "bytes", "generation", "last_used", "anchor_key", "anchor_blob"
)
"""What the sweep reads of an entry: what eviction is decided by, no payload."""
