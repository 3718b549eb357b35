"""Nodes for symbols anchored since the graph was built in files whose
parser is missing here (:mod:`roteiro_memory.repo.unknown`), on every
backend in ``conftest.BACKEND_FACTORIES``."""

from __future__ import annotations

from roteiro_memory.repo import unknown
from roteiro_memory.repo.nodes import FILE, UNKNOWN, UNREAD
from roteiro_memory.results import GraphNode
from roteiro_memory.semantics import AnchorState
from roteiro_memory.store import Store

TS = ["TypeScript"]
"""The language the last sync left unread."""

GRAPH = [
    GraphNode("file:a.py", FILE, "a.py", "a.py", "b1"),
    GraphNode("py:a.py::f", "function", "f", "a.py", "b2"),
    GraphNode("file:web/app.ts", UNREAD, "app.ts", "web/app.ts", "b3"),
    GraphNode("ts:web/app.ts::kept", UNKNOWN, "kept", "web/app.ts", None),
]


def _state(store: Store, record: int) -> AnchorState:
    got = store.get(record)
    assert got is not None
    return got.anchor_state


def test_a_symbol_anchored_in_an_unread_file_since_the_sync_gets_a_node_without_a_blob(
    store: Store,
) -> None:
    """Only a symbol of a file the graph holds unread, that has no node, gets
    one: a gone symbol of a file that is read, or of no file, stays vanished;
    a cache entry's anchor counts as a record's."""
    store.replace_graph(GRAPH, "tree-1")
    lesson = store.record("lesson", "render", anchor="ts:web/app.ts::render")
    read = store.record("lesson", "gone from a read file", anchor="py:a.py::gone")
    nowhere = store.record("lesson", "no file there", anchor="ts:web/gone.ts::x")
    store.record("lesson", "the file itself", anchor="file:web/app.ts")
    store.cache_put("k", "fp", "{}", anchor="ts:web/app.ts::layout")
    assert _state(store, lesson) is AnchorState.VANISHED
    assert unknown.missing(store, ["Go"]) == [], "only the languages left unread are looked at"
    assert [n.key for n in unknown.missing(store, TS)] == [
        "ts:web/app.ts::layout",
        "ts:web/app.ts::render",
    ]

    assert unknown.add_missing(store, "tree-1", TS) == 2
    assert store.find_nodes(keys=["ts:web/app.ts::render"]) == [
        GraphNode("ts:web/app.ts::render", UNKNOWN, "render", "web/app.ts", None)
    ]
    assert store.tree() == "tree-1", "the witness is the graph's, as it was"
    assert _state(store, lesson) is AnchorState.UNVERIFIABLE
    assert _state(store, read) is AnchorState.VANISHED
    assert _state(store, nowhere) is AnchorState.VANISHED
    assert unknown.missing(store, TS) == []
    assert unknown.add_missing(store, "tree-1", TS) == 0


def test_no_node_is_added_to_a_graph_another_sync_replaced(store: Store) -> None:
    """The witness is not the one the caller synced: the graph is another
    tree's, which may read the file, so nothing is added to it."""
    store.replace_graph(GRAPH, "tree-2")
    store.record("lesson", "render", anchor="ts:web/app.ts::render")
    assert unknown.add_missing(store, "tree-1", TS) == 0
    assert store.find_nodes(keys=["ts:web/app.ts::render"]) == []
