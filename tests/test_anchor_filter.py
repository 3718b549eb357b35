"""``anchors``: the store keeps the records whose anchor key is one of a set
or starts with one of some prefixes, before its own limit, on every backend."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roteiro_memory.semantics import AnchorFilter
from roteiro_memory.store import MemoryWrite, Store
from roteiro_memory.stores.model import ModelStore

KEYS = [
    "file:src/a.py",
    "file:src/a.pyi",
    "py:src/a.py::Retry",
    "py:src/a.py::Retry.run",
    "py:src/ab.py::f",
    "py:src/%_.py::g",
    "py:src/\u00e9t\u00e9.py::h",
    "raw",
]


def _fill(store: Store) -> None:
    writes = [MemoryWrite("lesson", f"about {key}", anchor=key) for key in KEYS]
    writes.append(MemoryWrite("lesson", "unanchored"))
    writes.append(MemoryWrite("decision", "about src/a.py again", anchor="file:src/a.py"))
    store.record_many(writes)


FILTERS = [
    AnchorFilter(),
    AnchorFilter(keys=frozenset({"file:src/a.py"})),
    AnchorFilter(keys=frozenset({"file:src/a.py"}), prefixes=("py:src/a.py::",)),
    AnchorFilter(prefixes=("py:src/%",)),
    AnchorFilter(prefixes=("py:src/_",)),
    AnchorFilter(prefixes=("py:src/\u00e9",)),
    AnchorFilter(prefixes=("",)),
    AnchorFilter(keys=frozenset({"nothing"}), prefixes=("zzz",)),
]


@pytest.mark.parametrize("anchors", FILTERS, ids=repr)
def test_anchor_filter_keeps_what_the_model_keeps(store: Store, anchors: AnchorFilter) -> None:
    model = ModelStore()
    _fill(model)
    _fill(store)
    for limit in (None, 1, 2):
        expected = model.list(anchors=anchors, limit=limit)
        listed = store.list(anchors=anchors, limit=limit)
        assert [r.id for r in listed.records] == [r.id for r in expected.records]
        recalled = store.recall(anchors=anchors, limit=limit)
        assert [r.record.id for r in recalled.results] == [
            r.record.id for r in model.recall(anchors=anchors, limit=limit).results
        ]


def test_anchor_filter_prefix_is_literal_not_a_pattern(store: Store) -> None:
    _fill(store)
    kept = store.list(anchors=AnchorFilter(prefixes=("py:src/%",))).records
    assert [r.anchor.key for r in kept if r.anchor] == ["py:src/%_.py::g"]


def test_anchor_filter_applies_before_the_limit(store: Store) -> None:
    _fill(store)
    path = AnchorFilter(keys=frozenset({"file:src/a.py"}), prefixes=("py:src/a.py::",))
    kept = store.list(anchors=path, limit=3).records
    assert [r.anchor.key for r in kept if r.anchor] == [
        "file:src/a.py",
        "py:src/a.py::Retry.run",
        "py:src/a.py::Retry",
    ]


def test_anchor_filter_takes_thousands_of_keys(store: Store) -> None:
    _fill(store)
    keys = frozenset({f"py:src/gen.py::f{i}" for i in range(5000)} | {"raw"})
    kept = store.recall("about", anchors=AnchorFilter(keys=keys)).results
    assert [r.record.anchor.key for r in kept if r.record.anchor] == ["raw"]


@given(
    keys=st.frozensets(st.sampled_from([*KEYS, "gone"]), max_size=4),
    prefixes=st.lists(
        st.sampled_from(["py:", "py:src/a", "file:", "py:src/%", "r", "x"]), max_size=2
    ),
    key=st.none() | st.sampled_from(KEYS),
)
def test_anchor_filter_matches_is_the_rule(
    keys: frozenset[str], prefixes: list[str], key: str | None
) -> None:
    anchors = AnchorFilter(keys=keys, prefixes=tuple(prefixes))
    expected = key is not None and (key in keys or any(key.startswith(p) for p in prefixes))
    assert anchors.matches(key) is expected
    assert anchors.narrowed(KEYS).keys == frozenset(k for k in KEYS if anchors.matches(k))
