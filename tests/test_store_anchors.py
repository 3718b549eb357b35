"""The store contract: anchors are captured at write and resolved on every
read, each invariant pinned by a test named after it.

Every test taking ``store`` runs against every backend in
``conftest.BACKEND_FACTORIES``.
"""

from __future__ import annotations

from store_states import five_states, node

from roteiro_memory.semantics import AnchorState
from roteiro_memory.store import Store

# --- Anchors ------------------------------------------------------------------


def test_anchor_naming_no_node_is_accepted_and_reads_back_vanished(store: Store) -> None:
    record_id = store.record("lesson", "about deleted code", anchor="sym:nowhere")
    record = store.get(record_id)
    assert record is not None
    assert record.anchor_state is AnchorState.VANISHED
    assert record.anchor is not None
    assert (record.anchor.key, record.anchor.blob, record.anchor.path) == (
        "sym:nowhere",
        None,
        None,
    )
    assert not record.applies


def test_anchor_evidence_and_tree_witness_are_captured_from_the_stores_graph_at_write(
    store: Store,
) -> None:
    store.put_nodes([node("sym:f", blob="blob-1", path="src/one.rs")])
    store.set_tree("tree-1")
    first = store.record("lesson", "about f", anchor="sym:f")

    store.put_nodes([node("sym:f", blob="blob-2", path="src/two.rs")])
    store.set_tree("tree-2")
    second = store.record("lesson", "about f again", anchor="sym:f")

    old, new = store.get(first), store.get(second)
    assert old is not None
    assert new is not None
    assert old.anchor is not None
    assert new.anchor is not None
    assert (old.anchor.blob, old.anchor.path, old.tree) == ("blob-1", "src/one.rs", "tree-1")
    assert (new.anchor.blob, new.anchor.path, new.tree) == ("blob-2", "src/two.rs", "tree-2")
    assert old.anchor_state is AnchorState.DRIFTED, "evidence, not a live view"
    assert new.anchor_state is AnchorState.VALID


def test_a_record_written_before_any_tree_witness_has_none(store: Store) -> None:
    record = store.get(store.record("lesson", "no tree yet"))
    assert record is not None
    assert record.tree is None


def test_every_anchor_state_reads_back_from_the_store(store: Store) -> None:
    ids = five_states(store)
    for state, record_id in ids.items():
        record = store.get(record_id)
        assert record is not None
        assert record.anchor_state is state
        assert record.applies is state.applies


# --- Finding nodes --------------------------------------------------------------


def test_found_nodes_are_those_of_the_keys_and_blobs_asked_for(store: Store) -> None:
    """``find_nodes`` is the graph filtered, as the default over
    ``export_graph`` says, on every backend: by key or by blob, each node
    once, sorted by key, and a key or blob no node has finds nothing."""
    from roteiro_memory.results import GraphNode
    from roteiro_memory.store import Store as Contract

    store.put_nodes(
        GraphNode(f"py:m{n}.py::f", "function", "f", f"m{n}.py", f"b{n % 4}") for n in range(700)
    )
    store.put_nodes([GraphNode("file:none", "file", None, "none", None)])
    keys = ["py:m5.py::f", "py:m1.py::f", "file:none", "py:nowhere", "py:m\udcff.py::f"]
    blobs = ["b3", "no such blob"]
    found = store.find_nodes(keys, blobs)
    assert found == Contract.find_nodes(store, keys, blobs)
    assert [n.key for n in found] == sorted(
        {"py:m5.py::f", "py:m1.py::f", "file:none"} | {f"py:m{n}.py::f" for n in range(3, 700, 4)}
    )
    assert store.find_nodes() == []
    assert store.find_nodes(prefixes=["file:"]) == [GraphNode("file:none", "file", None, "none")]
    assert store.find_nodes(prefixes=["py:m69"]) == Contract.find_nodes(store, prefixes=["py:m69"])
    assert len(store.find_nodes(prefixes=["py:m69"])) == 11  # m69, m690 to m699
    assert store.find_nodes(keys=[f"py:m{n}.py::f" for n in range(600)]) == [
        n for n in store.export_graph() if n.key.startswith("py:") and int(n.path[1:-3]) < 600
    ]


def test_nodes_under_a_prefix_are_found_whole_however_long_their_keys(store: Store) -> None:
    """A prefix finds every node whose key starts with it and no other, as
    the defaults over ``export_graph`` say, on every backend: also keys and
    prefixes longer than the first bytes PostgreSQL's range index holds
    (``KEY_START_BYTES``), keys that differ only past them, and a cut there
    that falls inside a character."""
    from roteiro_memory.results import GraphNode
    from roteiro_memory.store import Store as Contract
    from roteiro_memory.stores.sql.dialects import KEY_START_BYTES

    path = "py:" + "d/" * (KEY_START_BYTES // 2 - 2) + "\u00e9"  # é spans the cut
    assert len(path[:-1].encode()) == KEY_START_BYTES - 1
    keys = [f"{path}.py::{name}" for name in ("f", "g", "\u00e9", "f" * 3000)]
    keys += [path[:-1] + "\u00ea.py::f", path[:-1] + ".py::f", "py:d/.py::f", "py:e.py::f"]
    store.put_nodes([GraphNode(key, blob="b") for key in keys])
    prefixes = [
        ("py:",),
        ("py:d/",),
        (path,),
        (path + ".py::f",),
        (path + ".py::f" * 2,),
        (path[:-1],),
        (path[:-1] + "\u00ea",),
        ("py:d/.", path + ".py::\u00e9"),
        ("\u00e9",),
    ]
    for asked in prefixes:
        found = store.find_nodes(prefixes=list(asked))
        assert found == Contract.find_nodes(store, prefixes=list(asked)), asked
        assert store.count_nodes(asked) == Contract.count_nodes(store, asked) == len(found)
    assert len(store.find_nodes(prefixes=[path])) == 4


def test_anchor_keys_are_every_key_an_anchor_names_once(store: Store) -> None:
    """``anchor_keys`` is what the default over ``list`` and ``cache_entries``
    says, on every backend: records' keys, superseded too, and cache
    entries', each once, sorted; a record with no anchor names none."""
    from roteiro_memory.store import Store as Contract

    assert store.anchor_keys() == []
    first = store.record("lesson", "about b", anchor="py:b.py::f")
    store.record("lesson", "about b again", anchor="py:b.py::f", supersedes=first)
    store.record("lesson", "about a", anchor="file:a.py")
    store.record("lesson", "about nothing")
    store.cache_put("k1", "fp", "{}", anchor="py:c.py::g")
    store.cache_put("k2", "fp", "{}", anchor="file:a.py")
    store.cache_put("k3", "fp", "{}")
    assert store.anchor_keys() == ["file:a.py", "py:b.py::f", "py:c.py::g"]
    assert store.anchor_keys() == Contract.anchor_keys(store)


def test_nodes_under_a_prefix_at_the_ends_of_unicode_are_found_as_the_defaults_find_them(
    store: Store,
) -> None:
    """The end of a prefix's range is the text just after it: none after an
    empty prefix or one of U+10FFFF only (the last code point: its successor
    was no character, and the read failed), and the one after U+D7FF is
    U+E000, not the surrogate U+D800, which SQLite bound as a blob sorting
    after every text key (so a prefix ending in U+D7FF found keys after it)."""
    from roteiro_memory.results import GraphNode
    from roteiro_memory.store import Store as Contract

    top, last = "\U0010ffff", "\ud7ff"
    keys = ["a", f"a{last}", f"a{last}x", "a\ue000", f"a{top}", f"a{top}{top}z", "b", top]
    keys += ["x" * 300 + top + "q", "x" * 255 + last + "y", "x" * 255 + "\ue000"]
    store.put_nodes([GraphNode(key, blob="b") for key in keys])
    prefixes = ["", top, f"a{top}", f"a{top}{top}", f"a{last}", "x" * 300 + top, "x" * 255 + last]
    for prefix in prefixes:
        found = store.find_nodes(prefixes=[prefix])
        assert found == Contract.find_nodes(store, prefixes=[prefix]), prefix
        assert store.count_nodes((prefix,)) == Contract.count_nodes(store, (prefix,)) == len(found)
    assert len(store.find_nodes(prefixes=[""])) == len(keys)
