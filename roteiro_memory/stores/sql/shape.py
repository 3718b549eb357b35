"""The SQL text both backends share: the columns a read selects (derived
from :mod:`.columns`), the joins it reads them through, the filters of a
listing, and the tables a snapshot holds.

The SQLite and PostgreSQL schemas name the same tables and columns, so these
are the same text for both; only how a value is bound differs, and that is
passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roteiro_memory import semantics as sem
from roteiro_memory.semantics import MemoryKind
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.store import KindFilter

__all__ = [
    "CACHE_APPLIES",
    "CACHE_COLS",
    "CACHE_FROM",
    "CACHE_NAMES",
    "MEMORY_ANCHOR",
    "NODE_UPSERT",
    "RECALL_BOUND",
    "RECORD_COLS",
    "RECORD_FROM",
    "RECORD_NAMES",
    "SNAPSHOT_TABLES",
    "TextSets",
    "insert",
    "recall_bounds_sql",
    "recall_sql",
    "record_filters",
    "record_from",
    "records_sql",
    "search_sql",
    "select_all",
]

RECORD_COLS = cols.select_list(cols.RECORD_READ, "m") + ", n.key, n.blob"
RECORD_NAMES = (*cols.names(cols.RECORD_READ), "node_key", "node_blob")
"""The names of :data:`RECORD_COLS`, by which a row of it is decoded."""
RECORD_FROM = " FROM agent_memory m LEFT JOIN nodes n ON n.key = m.anchor_key"


def record_from(nodes: str) -> str:
    """:data:`RECORD_FROM`, joining the node relation ``nodes``."""
    return f" FROM agent_memory m LEFT JOIN {nodes} n ON n.key = m.anchor_key"


CACHE_COLS = cols.select_list(cols.CACHE_READ, "c") + ", n.key, n.blob"
CACHE_NAMES = (*cols.names(cols.CACHE_READ), "node_key", "node_blob")
"""The names of :data:`CACHE_COLS`, by which a row of it is decoded."""
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

SNAPSHOT_TABLES: tuple[tuple[str, str, str], ...] = tuple(
    (table, cols.select_list(columns), cols.SNAPSHOT_ORDER.get(table, columns[0].name))
    for table, columns in cols.TABLES.items()
)
"""``(table, columns, order)`` for each table a snapshot holds; each backend
adds the table its id sequence lives in."""


@valueclass
class TextSets:
    """How a dialect tests stored text against a set of texts bound as one
    parameter, however many there are -- one expression per value would meet
    SQLite's expression-depth limit and PostgreSQL's parameter limit."""

    member: Callable[[str, str], str]
    """``(column, placeholder)``: the column's value is one of the set."""
    prefixed: Callable[[str, str], str]
    """``(column, placeholder)``: the column's value starts with one of the set."""
    bind: Callable[[Sequence[str]], object]
    """The set as the one parameter the two conditions read."""


def record_filters(
    scope: str | None,
    kind: KindFilter,
    anchor_key: str | None,
    include_superseded: bool,
    *,
    placeholder: Callable[[str], str],
    text: Callable[[str], object],
    sets: TextSets,
    anchors: sem.AnchorFilter | None = None,
) -> tuple[list[str], dict[str, object]]:
    """The WHERE conditions and parameters of a listing: ``placeholder(name)``
    is how the backend writes a named parameter, ``text(value)`` how it binds
    stored text, ``sets`` how it tests a set of them."""
    where: list[str] = []
    params: dict[str, object] = {}
    if anchors is not None:
        either = []
        if anchors.keys:
            either.append(sets.member("m.anchor_key", placeholder("anchor_keys")))
            params["anchor_keys"] = sets.bind(sorted(anchors.keys))
        if anchors.prefixes:
            either.append(sets.prefixed("m.anchor_key", placeholder("anchor_prefixes")))
            params["anchor_prefixes"] = sets.bind(list(anchors.prefixes))
        where.append("(" + " OR ".join(either) + ")" if either else "0 = 1")
    if scope is not None:
        where.append(f"m.scope = {placeholder('scope')}")
        params["scope"] = text(scope)
    kinds = sem.parse_kinds(kind)
    if kinds is not None:
        # In the vocabulary's order, so the same filter is the same statement.
        names = [k.value for k in MemoryKind if k in kinds]
        marks = ", ".join(placeholder(f"kind{n}") for n in range(len(names)))
        where.append(f"m.kind IN ({marks})")
        params.update({f"kind{n}": name for n, name in enumerate(names)})
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


RECALL_BOUND = f"COALESCE(m.confidence, {sem.DEFAULT_BASE_CONFIDENCE!r})"
"""A record's base confidence: never below its recall score, since penalty
and decay never exceed 1.  The expression ``idx_mem_confidence`` indexes
over the live records, written the same so the planner matches them."""


def recall_bounds_sql(
    score: str, where: Sequence[str], nodes: str, limit: str, hint: str = ""
) -> str:
    """Recall's candidates as ``(id, bound, score)`` in descending bound order then
    newest id -- the order of ``idx_mem_confidence`` -- so a top-k reads
    from the front and stops early (:mod:`.ranking`).  ``hint`` follows the
    table's alias: SQLite's planner prefers the narrower liveness index
    unless told (``INDEXED BY``), which would sort every live record."""
    sql = (
        f"SELECT m.id, {RECALL_BOUND} AS bound, {score} AS score FROM agent_memory m{hint}"
        f" LEFT JOIN {nodes} n ON n.key = m.anchor_key WHERE "
    )
    return sql + " AND ".join(where) + f" ORDER BY {RECALL_BOUND} DESC, m.id DESC LIMIT {limit}"


def records_sql(nodes: str, ids: str) -> str:
    """The records meeting ``ids`` (a condition on ``m.id``), as
    :data:`RECORD_COLS`."""
    return f"SELECT {RECORD_COLS}{record_from(nodes)} WHERE {ids}"


def search_sql(
    weight: str,
    bound: str,
    term_match: str,
    where: Sequence[str],
    nodes: str | None,
    limit: str | None,
) -> str:
    """The candidates of a search, best first by an upper bound of their
    score: the live records meeting ``where`` holding a term of
    ``term_match`` (a condition on the posting ``t``), their relevance summed
    in SQL from ``weight`` times ``bound`` (an upper bound of their evidence,
    over ``m``'s columns), at most ``limit`` of them, as ``(id, bound)``.
    ``where`` may name the node ``n`` when ``nodes`` names its relation.

    SQL's SUM adds in no promised order, so the exact relevance is
    computed again in Python; this only says which records to fetch."""
    # Grouped by the posting's id (one record, so MAX is its bound): the
    # planner then walks the term's postings rather than every live record.
    sql = (
        f"SELECT t.record_id, SUM({weight}) * MAX({bound}) AS bound FROM memory_terms t"
        " JOIN agent_memory m ON m.id = t.record_id"
    )
    if nodes is not None:
        sql += f" LEFT JOIN {nodes} n ON n.key = m.anchor_key"
    sql += f" WHERE {term_match}" + "".join(f" AND {condition}" for condition in where)
    sql += " GROUP BY t.record_id ORDER BY bound DESC, t.record_id DESC"
    return sql if limit is None else sql + f" LIMIT {limit}"


def select_all(table: str, columns: Sequence[cols.Column], order: str) -> str:
    """Every row of ``table``, as ``columns``, ordered by ``order``."""
    return f"SELECT {cols.select_list(columns)} FROM {table} ORDER BY {order}"


def insert(table: str, names: Sequence[str], mark: str) -> str:
    """An INSERT of ``names`` into ``table``, each bound by ``mark``."""
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join([mark] * len(names))})"


NODE_UPSERT = (
    " ON CONFLICT (key) DO UPDATE SET kind = excluded.kind, name = excluded.name,"
    " path = excluded.path, blob = excluded.blob"
)
"""How a written node replaces one already there."""
