"""Nodes for symbols anchored, since the graph was built, in files whose
parser is missing here.

A graph gives every symbol an anchor names in a file it could not read a
node with no blob (:func:`~roteiro_memory.repo.nodes.named_in`), so the
anchor reads unverifiable: whether the symbol is there cannot be told.  An
anchor written after that graph was built -- by a machine that reads the
file, into a shared store, or through the store's API -- has no node yet,
and would read vanished until a sync rebuilt the graph, which one finding
the working tree unchanged never does.  :func:`add_missing` adds those
nodes to the graph as it stands, reading the keys anchors name by their
index and only the nodes of those keys and their files, never the whole
graph or every record.
"""

from __future__ import annotations

from roteiro_memory.repo.languages import file_key, key_parts, language_of
from roteiro_memory.repo.nodes import UNREAD, named_in

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection

    from roteiro_memory.results import GraphNode
    from roteiro_memory.store import Store

__all__ = ["add_missing", "missing", "with_missing"]


def missing(store: Store, languages: Collection[str]) -> list[GraphNode]:
    """The node with no blob of each symbol an anchor of ``store`` names in
    a file of ``languages`` (those the last sync left unread) that its graph
    holds unread (kind :data:`~roteiro_memory.repo.nodes.UNREAD`) and has no
    node of: only those symbols' nodes and their files' are read."""
    paths: dict[str, str] = {}
    for key in store.anchor_keys():
        parts = key_parts(key)
        language = None if parts is None or parts[1] is None else language_of(parts[0])
        if parts is not None and language is not None and language.name in languages:
            paths[key] = parts[0]
    if not paths:
        return []
    files = {file_key(path): path for path in paths.values()}
    found = store.find_nodes(keys=[*paths, *sorted(files)])
    unread = {files[node.key] for node in found if node.kind == UNREAD and node.key in files}
    return named_in(unread, found, paths) if unread else []


def add_missing(store: Store, tree: str | None, languages: Collection[str]) -> int:
    """Add :func:`missing`'s nodes to ``store``'s graph while its witness is
    still ``tree`` (another sync may have replaced it since), under its
    write lock, taken only when some are missing; how many were added."""
    if not missing(store, languages):
        return 0
    with store.atomically():
        if store.tree() != tree:
            return 0
        nodes = missing(store, languages)
        if nodes:
            store.put_nodes(nodes)
    return len(nodes)


def with_missing(store: Store, languages: Collection[str]) -> list[GraphNode] | None:
    """``store``'s graph with :func:`missing`'s nodes, for a sync that
    leaves it pending, to be written later or not at all; None when none is
    missing (the whole graph is read only then)."""
    nodes = missing(store, languages)
    return sorted([*store.export_graph(), *nodes], key=lambda n: n.key) if nodes else None
