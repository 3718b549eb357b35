"""The SQL text both backends share: the columns a read selects, the joins it
reads them through, the filters of a listing, and the tables a snapshot holds.

The SQLite and PostgreSQL schemas name the same tables and columns, so these
are the same text for both; only how a value is bound differs, and that is
passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roteiro_memory import semantics as sem
from roteiro_memory.semantics import MemoryKind
from roteiro_memory.stores.sql import expressions as sqlexpr

__all__ = [
    "CACHE_APPLIES",
    "CACHE_COLS",
    "CACHE_FROM",
    "MEMORY_ANCHOR",
    "RECORD_COLS",
    "RECORD_FROM",
    "SNAPSHOT_TABLES",
    "recall_sql",
    "record_filters",
    "record_from",
]

RECORD_COLS = (
    "m.id, m.scope, m.kind, m.anchor_key, m.anchor_blob, m.anchor_path, m.body, "
    "m.confidence, m.tree, m.created_at, m.superseded_by, m.superseded_at, n.key, n.blob"
)
RECORD_FROM = " FROM agent_memory m LEFT JOIN nodes n ON n.key = m.anchor_key"


def record_from(nodes: str) -> str:
    """:data:`RECORD_FROM`, joining the node relation ``nodes``."""
    return f" FROM agent_memory m LEFT JOIN {nodes} n ON n.key = m.anchor_key"


CACHE_COLS = (
    "c.key, c.fingerprint, c.json, c.bytes, c.generation, c.last_used, c.hits, "
    "c.anchor_key, c.anchor_blob, n.key, n.blob"
)
CACHE_FROM = " FROM agent_cache c LEFT JOIN nodes n ON n.key = c.anchor_key"
"""Shared by the full read and the sweep's read, so they see the same rows."""

CACHE_APPLIES = sqlexpr.applies_expr(
    anchor_key="c.anchor_key", anchor_blob="c.anchor_blob", node_key="n.key", node_blob="n.blob"
)
"""Whether a cache entry's anchor applies, over :data:`CACHE_FROM`."""

MEMORY_ANCHOR = {
    "anchor_key": "m.anchor_key",
    "anchor_blob": "m.anchor_blob",
    "node_key": "n.key",
    "node_blob": "n.blob",
}
"""The anchor columns of a record read through :data:`RECORD_FROM`."""

SNAPSHOT_TABLES: tuple[tuple[str, str, str], ...] = (
    ("schema_migrations", "version, name", "version"),
    ("nodes", "key, kind, name, path, blob", "key"),
    ("sync_state", "id, tree", "id"),
    (
        "agent_memory",
        "id, scope, kind, anchor_key, anchor_blob, anchor_path, body, confidence, tree,"
        " created_at, superseded_by, superseded_at, search",
        "id",
    ),
    (
        "agent_cache",
        "key, fingerprint, bytes, generation, last_used, hits, anchor_key, anchor_blob, json",
        "key",
    ),
    ("agent_cache_clock", "id, ticks, generation", "id"),
)
"""``(table, columns, order)`` for each table a snapshot holds; each backend
adds the table its id sequence lives in."""


def record_filters(
    scope: str | None,
    kind: MemoryKind | str | None,
    anchor_key: str | None,
    include_superseded: bool,
    *,
    placeholder: Callable[[str], str],
    text: Callable[[str], object],
) -> tuple[list[str], dict[str, object]]:
    """The WHERE conditions and parameters of a listing: ``placeholder(name)``
    is how the backend writes a named parameter, ``text(value)`` how it binds
    stored text."""
    where: list[str] = []
    params: dict[str, object] = {}
    if scope is not None:
        where.append(f"m.scope = {placeholder('scope')}")
        params["scope"] = text(scope)
    if kind is not None:
        where.append(f"m.kind = {placeholder('kind')}")
        params["kind"] = sem.parse_kind(kind).value
    if anchor_key is not None:
        where.append(f"m.anchor_key = {placeholder('anchor_key')}")
        params["anchor_key"] = text(anchor_key)
    if not include_superseded:
        where.append("m.superseded_by IS NULL")
    return where, params


def recall_sql(score: str, where: Sequence[str], nodes: str, limit: str | None) -> str:
    """The recall query: the records meeting every condition in ``where``,
    ranked by ``score`` (best first, newest first among equals), at most
    ``limit`` (a placeholder) of them when given, read as :data:`RECORD_COLS`
    with anchors resolved against the node relation ``nodes``."""
    ranked = f"SELECT m.id AS id, {score} AS score{record_from(nodes)} WHERE "
    ranked += " AND ".join(where) + " ORDER BY score DESC, m.id DESC"
    if limit is not None:
        ranked += f" LIMIT {limit}"
    return (
        f"WITH ranked AS ({ranked}) SELECT {RECORD_COLS} FROM ranked r"
        f" JOIN agent_memory m ON m.id = r.id LEFT JOIN {nodes} n ON n.key = m.anchor_key"
        " ORDER BY r.score DESC, r.id DESC"
    )
