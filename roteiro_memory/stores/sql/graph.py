"""The graph in SQL over a :class:`~.dialects.Dialect`: nodes upserted and
removed by key, and the tree witness; nodes read, all or those of some keys
and blobs; the count of nodes by key prefix; and the keys anchors name.

Rows are written in key order, so two writers upserting overlapping nodes
lock rows in the same order and cannot deadlock where locks are per row.
Each function runs inside the write transaction its caller
(:class:`~.store.SQLStore`) opened.
"""

from __future__ import annotations

from roteiro_memory.stores.sql import columns as cols

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from roteiro_memory.results import GraphNode
    from roteiro_memory.stores.sql.dialects import Dialect

    Row = tuple[Any, ...]

__all__ = ["anchored", "count", "read", "replace", "rows", "set_tree", "upsert"]


def rows(d: Dialect, nodes: Iterable[GraphNode]) -> list[Row]:
    """``nodes`` as bound rows of :data:`~.columns.NODES`, in key order; the
    last of several with one key wins, as upserting them in turn would."""
    latest = {node.key: node for node in nodes}
    return [
        (
            d.text(n.key),
            d.optional(n.kind),
            d.optional(n.name),
            d.optional(n.path),
            d.optional(n.blob),
        )
        for _, n in sorted(latest.items())
    ]


def upsert(conn: Any, d: Dialect, bound: Sequence[Row]) -> None:
    """Write ``bound`` (from :func:`rows`), replacing the nodes of their keys."""
    replacing = cols.upsert(cols.NODES, "key", target=d.keyed("key"))
    sql = cols.insert("nodes", cols.NODES, d.mark) + replacing
    d.many(conn, sql, bound)


def set_tree(conn: Any, d: Dialect, tree: str | None) -> None:
    """Set the repo-state witness later record writes take.  No witness is
    no row, as in a store that never had one: the snapshot says the same of
    both, as the model's does."""
    if tree is None:
        conn.execute("DELETE FROM sync_state")
        return
    conn.execute(
        cols.insert("sync_state", cols.SYNC_STATE, d.mark) + cols.upsert(cols.SYNC_STATE, "id"),
        (0, d.text(tree)),
    )


def replace(conn: Any, d: Dialect, new: Sequence[Row], tree: str | None) -> tuple[int, int]:
    """Make the graph exactly ``new`` (from :func:`rows`) and the witness
    ``tree``, writing only what differs; (nodes written, nodes removed)."""
    old = {
        row[0]: tuple(row)
        for row in conn.execute(f"SELECT {cols.select_list(cols.NODES)} FROM nodes")
    }
    keys = {row[0] for row in new}
    changed = [row for row in new if old.get(row[0]) != row]
    gone = sorted(key for key in old if key not in keys)
    upsert(conn, d, changed)
    d.delete_keys(conn, "nodes", "key", gone)
    witness = conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
    if (None if witness is None else witness[0]) != d.optional(tree):
        set_tree(conn, d, tree)
    return len(changed), len(gone)


def read(
    conn: Any,
    d: Dialect,
    keys: Sequence[str] | None = None,
    blobs: Sequence[str] = (),
    prefixes: Sequence[str] = (),
) -> list[GraphNode]:
    """Every node (``keys`` None), or those whose key is one of ``keys``,
    whose blob is one of ``blobs`` or whose key starts with one of
    ``prefixes`` -- each bound in the runs the engine takes
    (:meth:`~.dialects.Dialect.chunks`), a key or a prefix found by the
    key's index -- sorted by key, each once."""
    from roteiro_memory.results import GraphNode

    if keys is None:
        found = conn.execute(cols.select_all("nodes", cols.NODES, "key")).fetchall()
    else:
        select = f"SELECT {cols.select_list(cols.NODES)} FROM nodes"
        found = []
        for column, values in (("key", keys), ("blob", blobs)):
            for run in d.chunks(d.texts(sorted(set(values)))):
                where, params = d.any_of(column, run)
                found += conn.execute(f"{select} WHERE {where}", params).fetchall()
        for prefix in prefixes:
            named: dict[str, object] = {}
            found += conn.execute(f"{select} WHERE {_range(d, prefix, named)}", named).fetchall()
    nodes = {node.key: node for node in (GraphNode(*map(d.read, row)) for row in found)}
    return list(nodes.values()) if keys is None else [nodes[key] for key in sorted(nodes)]


def _range(d: Dialect, prefix: str, params: dict[str, object]) -> str:
    """The condition of the keys that start with ``prefix``, bound in
    ``params``.  Keys sort by their UTF-8 bytes on both databases, so they
    are a range, which an index serves (:meth:`~.dialects.Dialect.key_range`)."""
    n = len(params)
    params[f"lo{n}"] = d.text(prefix)
    above = _above(prefix)
    if above is None:
        return d.key_range(d.named(f"lo{n}"), None)
    params[f"hi{n}"] = d.text(above)
    return d.key_range(d.named(f"lo{n}"), d.named(f"hi{n}"))


def _above(prefix: str) -> str | None:
    """The least text that sorts after every text starting with ``prefix``
    (UTF-8 byte order is code point order), or None when none does: the
    prefix is empty or only U+10FFFF, the last code point.  A key is UTF-8
    (writes refuse a lone surrogate), so the surrogates are skipped: a bound
    UTF-8 cannot carry is bound as bytes, which SQLite sorts after all text."""
    stem = prefix.rstrip("\U0010ffff")
    if not stem:
        return None
    following = ord(stem[-1]) + 1
    return stem[:-1] + chr(0xE000 if following == 0xD800 else following)


def count(conn: Any, d: Dialect, prefixes: Sequence[str]) -> int:
    """How many nodes have a key starting with one of ``prefixes``: each a
    range an index serves (:func:`_range`), counted in one statement."""
    params: dict[str, object] = {}
    counts = [f"(SELECT count(*) FROM nodes WHERE {_range(d, p, params)})" for p in prefixes]
    return int(conn.execute(f"SELECT {' + '.join(counts) or '0'}", params).fetchone()[0])


def anchored(conn: Any, d: Dialect) -> list[str]:
    """Every key an anchor names, a record's (superseded too) or a cache
    entry's, each once, sorted: read by the anchor key's index and the
    cache's rows, no record read whole."""
    found = conn.execute(
        "SELECT anchor_key FROM agent_memory WHERE anchor_key IS NOT NULL"
        " UNION SELECT anchor_key FROM agent_cache WHERE anchor_key IS NOT NULL"
    ).fetchall()
    return sorted(d.read(row[0]) for row in found)
