"""What a store's operations take, by type and range (:mod:`roteiro_memory.arguments`):
a value of the wrong type, or an integer outside PROTOCOL's range, is refused
as BadRequest naming the parameter, with the same message on every backend,
and the store is left exactly as it was."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from roteiro_memory import GraphNode, SQLiteStore, Store
from roteiro_memory.errors import BadRequest, RoteiroError, StoreUnavailable
from roteiro_memory.store import MemoryWrite
from roteiro_memory.stores.model import ModelStore

Call = Callable[[Store], object]


def _refused(store: Store, call: Call, name: str) -> str:
    """The message ``call`` is refused with, once it is BadRequest naming
    ``name`` and the snapshot after it equals the one before."""
    before = store.snapshot()
    with pytest.raises(BadRequest) as refusal:
        call(store)
    message = str(refusal.value)
    assert f"invalid {name} " in message, message
    assert store.snapshot() == before
    return message


def _two_records(store: Store) -> None:
    store.record("lesson", "one")
    store.record("lesson", "two")


def _messages(tmp_path: Path, call: Call, name: str) -> set[str]:
    """The message each of the model and SQLite refuse ``call`` with."""
    said = set()
    for store in (ModelStore(), SQLiteStore(tmp_path / "messages.db")):
        try:
            _two_records(store)
            said.add(_refused(store, call, name))
        finally:
            store.close()
    return said


IDS: dict[str, tuple[Call, str]] = {
    "forget(True)": (lambda s: s.forget(True), "id"),
    "forget(1.0)": (lambda s: s.forget(1.0), "id"),  # type: ignore[arg-type]
    "forget('1')": (lambda s: s.forget("1"), "id"),  # type: ignore[arg-type]
    "forget(None)": (lambda s: s.forget(None), "id"),  # type: ignore[arg-type]
    "get(True)": (lambda s: s.get(True), "id"),
    "get(1.0)": (lambda s: s.get(1.0), "id"),  # type: ignore[arg-type]
    "get('1')": (lambda s: s.get("1"), "id"),  # type: ignore[arg-type]
    "supersedes=True": (lambda s: s.record("lesson", "x", supersedes=True), "supersedes"),
    "supersedes=2.0": (
        lambda s: s.record("lesson", "x", supersedes=2.0),  # type: ignore[arg-type]
        "supersedes",
    ),
    "supersedes='1'": (
        lambda s: s.record("lesson", "x", supersedes="1"),  # type: ignore[arg-type]
        "supersedes",
    ),
    "record_many supersedes=True": (
        lambda s: s.record_many([MemoryWrite("lesson", "x", supersedes=True)]),
        "supersedes",
    ),
}


@pytest.mark.parametrize("case", list(IDS))
def test_a_bool_a_float_or_text_is_no_record_id(store: Store, case: str) -> None:
    """PROTOCOL: ``true`` is never ``1``; ``forget(True)`` deleted record 1."""
    call, name = IDS[case]
    _two_records(store)
    _refused(store, call, name)


@pytest.mark.parametrize("case", ["forget('1')", "get(True)", "supersedes=2.0"])
def test_a_mistyped_id_is_refused_alike_by_every_backend(tmp_path: Path, case: str) -> None:
    """One check: the model said NotFound "no record with id 1" for the
    string '1', where SQLite raised a TypeError."""
    call, name = IDS[case]
    [message] = _messages(tmp_path, call, name)
    assert "expected an integer" in message


def test_an_id_no_store_hands_out_names_no_record(store: Store) -> None:
    """Negative, or past 64-bit signed: absent, not refused."""
    from roteiro_memory.errors import NotFound

    assert store.get(2**63) is None
    assert store.get(-1) is None
    with pytest.raises(NotFound):
        store.forget(2**64 - 1)
    with pytest.raises(NotFound):
        store.record("lesson", "x", supersedes=-1)


BUDGETS: list[Any] = [-1, 2**64, math.nan, math.inf, 1.5, 0.0, True, None, "100"]


@pytest.mark.parametrize("budget", BUDGETS, ids=repr)
@pytest.mark.parametrize("op", ["cache_stats", "cache_sweep"])
def test_a_budget_that_is_no_whole_byte_count_is_refused(
    store: Store, op: str, budget: object
) -> None:
    """[P-args-ranges]: a negative budget is BadRequest; NaN also wrote
    invalid JSON and a wrong over_budget."""
    store.cache_put("a", "f", "x")
    store.cache_sweep(0)
    store.cache_put("b", "f", "y")
    _refused(store, lambda s: getattr(s, op)(budget), "budget_bytes")


def test_a_budget_of_zero_is_a_budget(store: Store) -> None:
    store.cache_put("a", "f", "x")
    assert store.cache_stats(0).budget_bytes == 0
    assert store.cache_sweep(0).budget_bytes == 0


def test_a_refused_sweep_leaves_the_generation_as_it_was(store: Store) -> None:
    """The model advanced the generation, then failed on the budget."""
    store.cache_put("a", "f", "x")
    _refused(store, lambda s: s.cache_sweep(None), "budget_bytes")  # type: ignore[arg-type]
    assert store.cache_stats(0).generation == 0


LIMITS: list[Any] = [1.5, math.nan, math.inf, True, "1", -1, 2**64]


@pytest.mark.parametrize("limit", LIMITS, ids=repr)
@pytest.mark.parametrize("op", ["list", "recall", "search"])
def test_a_limit_that_is_no_whole_count_is_refused(store: Store, op: str, limit: object) -> None:
    """``limit=True`` was 1, ``limit=inf`` all, and 1.5 leaked the driver's error."""
    _two_records(store)
    read: Call = {
        "list": lambda s: s.list(limit=limit),
        "recall": lambda s: s.recall(limit=limit),
        "search": lambda s: s.search("one", limit=limit),
    }[op]
    _refused(store, read, "limit")


TEXTS: dict[str, tuple[Call, str]] = {
    "record body None": (lambda s: s.record("lesson", None), "body"),  # type: ignore[arg-type]
    "record body 5": (lambda s: s.record("lesson", 5), "body"),  # type: ignore[arg-type]
    "record scope None": (lambda s: s.record("lesson", "x", scope=None), "scope"),  # type: ignore[arg-type]
    "record anchor 5": (lambda s: s.record("lesson", "x", anchor=5), "anchor"),  # type: ignore[arg-type]
    "record_many tuple": (lambda s: s.record_many([("lesson", "x")]), "write"),  # type: ignore[list-item]
    "record_many text": (lambda s: s.record_many("abc"), "writes"),  # type: ignore[arg-type]
    "cache_put key None": (lambda s: s.cache_put(None, "f", "{}"), "cache key"),  # type: ignore[arg-type]
    "cache_put anchor 5": (lambda s: s.cache_put("k", "f", "{}", anchor=5), "anchor"),  # type: ignore[arg-type]
    "cache_get None": (lambda s: s.cache_get(None), "cache key"),  # type: ignore[arg-type]
    "cache_forget 1": (lambda s: s.cache_forget(1), "cache key"),  # type: ignore[arg-type]
    "list scope 5": (lambda s: s.list(scope=5), "scope"),  # type: ignore[arg-type]
    "list anchor_key 5": (lambda s: s.list(anchor_key=5), "anchor_key"),  # type: ignore[arg-type]
    "recall scope 5": (lambda s: s.recall(scope=5), "scope"),  # type: ignore[arg-type]
    "recall query 5": (lambda s: s.recall(5), "query"),  # type: ignore[arg-type]
    "search query None": (lambda s: s.search(None), "query"),  # type: ignore[arg-type]
    "search anchor_key 5": (lambda s: s.search("x", anchor_key=5), "anchor_key"),  # type: ignore[arg-type]
    "set_tree 5": (lambda s: s.set_tree(5), "tree"),  # type: ignore[arg-type]
    "put_nodes text": (lambda s: s.put_nodes("abc"), "nodes"),  # type: ignore[arg-type]
    "put_nodes a dict": (lambda s: s.put_nodes([{"key": "k"}]), "node"),  # type: ignore[list-item]
    "node key 5": (lambda s: s.put_nodes([GraphNode(5)]), "node key"),  # type: ignore[arg-type]
    "node blob 5": (lambda s: s.put_nodes([GraphNode("k", blob=5)]), "node blob"),  # type: ignore[arg-type]
    "node path b''": (lambda s: s.put_nodes([GraphNode("k", path=b"p")]), "node path"),  # type: ignore[arg-type]
    "replace_graph node kind 5": (
        lambda s: s.replace_graph([GraphNode("k", kind=5)], None),  # type: ignore[arg-type]
        "node kind",
    ),
}


@pytest.mark.parametrize("case", list(TEXTS))
def test_a_value_that_is_not_text_is_refused_naming_its_parameter(store: Store, case: str) -> None:
    """They raised AttributeError ('NoneType' has no 'strip'), naming nothing,
    or were kept and broke a later export."""
    call, name = TEXTS[case]
    store.put_nodes([GraphNode("py:a.py::f", blob="b1")])
    _two_records(store)
    _refused(store, call, name)


@pytest.mark.parametrize("case", ["record body None", "list scope 5", "node key 5"])
def test_a_value_that_is_not_text_is_refused_alike_by_every_backend(
    tmp_path: Path, case: str
) -> None:
    call, name = TEXTS[case]
    [message] = _messages(tmp_path, call, name)
    assert "expected text" in message


def test_a_type_fault_is_reported_before_a_kind_fault(store: Store) -> None:
    """[P-bad-request-first]: BadRequest wins over every other kind."""
    _refused(store, lambda s: s.record("no such kind", None), "body")  # type: ignore[arg-type]


def test_a_node_without_kind_name_path_or_blob_is_still_a_node(store: Store) -> None:
    store.put_nodes([GraphNode("k")])
    assert store.export_graph() == [GraphNode("k")]


def test_an_import_of_something_that_is_no_export_is_refused(store: Store) -> None:
    """SQLite raised AttributeError 'nodes'; the model does not import."""
    from roteiro_memory.errors import Unsupported

    try:
        _refused(store, lambda s: s.import_export(None), "export")  # type: ignore[arg-type]
    except Unsupported:
        assert isinstance(store, ModelStore)


CLOSED: dict[str, Call] = {
    "record": lambda s: s.record("lesson", "x"),
    "get": lambda s: s.get(1),
    "list": lambda s: s.list(),
    "recall": lambda s: s.recall(),
    "forget": lambda s: s.forget(1),
    "cache_put": lambda s: s.cache_put("k", "f", "{}"),
    "cache_stats": lambda s: s.cache_stats(0),
    "put_nodes": lambda s: s.put_nodes([GraphNode("k")]),
    "nothing to write": lambda s: s.record_many([]),
    "no node to put": lambda s: s.put_nodes([]),
    "an id no store hands out": lambda s: s.get(2**70),
    "a mistyped id": lambda s: s.get(True),
    "a mistyped cache key": lambda s: s.cache_forget(1),  # type: ignore[arg-type]
    "export_graph": lambda s: s.export_graph(),
    "snapshot": lambda s: s.snapshot(),
    "reopen": lambda s: s.reopen(),
    "reset": lambda s: s.reset(),
}


def _closing(backend: str, tmp_path: Path) -> Store:
    return ModelStore() if backend == "memory" else SQLiteStore(tmp_path / "closed.db")


@pytest.mark.parametrize("op", list(CLOSED))
@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_closed_store_refuses_every_operation_saying_it_is_closed(
    tmp_path: Path, backend: str, op: str
) -> None:
    """SQLite leaked sqlite3.ProgrammingError; the model went on as if open.
    Closed comes first, before an argument is looked at or found to need
    no work, on every backend alike."""
    store = _closing(backend, tmp_path)
    store.record("lesson", "kept")
    store.close()
    with pytest.raises(StoreUnavailable, match="is closed"):
        CLOSED[op](store)
    with pytest.raises(StoreUnavailable, match="is closed"):
        store.atomically().__enter__()
    store.close()  # again: nothing to do
    if backend == "sqlite":
        with SQLiteStore(tmp_path / "closed.db") as reopened:
            assert [r.body for r in reopened.list().records] == ["kept"]


def _close_in_a_block(store: Store, body_raises: bool = False) -> None:
    with store.atomically():
        store.record("lesson", "in the block")
        store.close()
        if body_raises:
            raise KeyError("the body's own")


@pytest.mark.parametrize("body_raises", [True, False], ids=["body raises", "body returns"])
def test_a_store_closed_inside_its_atomically_block_stays_closed_and_wrote_nothing(
    store: Store, body_raises: bool
) -> None:
    """SQLite raised sqlite3.ProgrammingError in place of the body's own
    error; the model put its state back and went on as if open."""
    with pytest.raises(KeyError if body_raises else StoreUnavailable) as ended:
        _close_in_a_block(store, body_raises)
    if not body_raises:
        assert "closed inside an atomically() block" in str(ended.value)
    with pytest.raises(StoreUnavailable, match="is closed"):
        store.list()


def test_a_block_closed_inside_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as before:
        before.record("lesson", "kept")
    store = SQLiteStore(tmp_path / "m.db")
    with pytest.raises(StoreUnavailable, match="closed inside"):
        _close_in_a_block(store)
    with SQLiteStore(tmp_path / "m.db") as after:
        assert [r.body for r in after.list().records] == ["kept"]


def test_the_errors_a_store_raises_are_public_names() -> None:
    import roteiro_memory

    for name in ("InvalidAnchor", "ImportRefused", "InvalidStoreName", "AnchorFilter"):
        assert name in roteiro_memory.__all__, name
        assert getattr(roteiro_memory, name).__name__ == name
    assert issubclass(roteiro_memory.InvalidAnchor, RoteiroError)


@pytest.mark.parametrize(
    ("argument", "value"),
    [("include_superseded", "no"), ("include_superseded", None), ("anchors", "py:a.py")],
)
def test_a_read_s_flag_and_anchor_filter_are_of_their_type(
    store: Store, argument: str, value: object
) -> None:
    """``include_superseded="no"`` read as true, and anchors given as text
    raised AttributeError, naming nothing."""
    _refused(store, lambda s: s.list(**{argument: value}), argument)
