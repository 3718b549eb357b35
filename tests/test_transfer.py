"""Export and import: a round trip reproduces the store exactly; a bad line or
a non-empty target is refused and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roteiro_memory.results import GraphNode
from roteiro_memory.stores.sqlite.store import SQLiteStore
from roteiro_memory.transfer import ImportRefused, export_lines, import_lines, read_export


def _round_trip(source: SQLiteStore, target_path: Path) -> SQLiteStore:
    lines = list(export_lines(source))
    target = SQLiteStore(target_path)
    import_lines(target, read_export(lines))
    return target


def _busy(store: SQLiteStore) -> None:
    store.put_nodes([GraphNode("file:a.py", "file", "a.py", "a.py", "b1")])
    store.set_tree("t1")
    first = store.record("lesson", "one", anchor="file:a.py", confidence=0.25)
    store.record("decision", "two \u00e9\u00e8 \U0001f600", supersedes=first, scope="team")
    newest = store.record("outcome", "forgotten soon")
    store.forget(newest)
    store.cache_put("k1", "fp", '{"a": 1}', anchor="file:a.py")
    store.cache_put("k2", "fp", "[]")
    store.cache_get("k1")
    store.cache_sweep(1 << 20)
    store.put_nodes([GraphNode("file:a.py", "file", "a.py", "a.py", "b2")])


def test_round_trip_reproduces_the_snapshot(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source:
        _busy(source)
        with _round_trip(source, tmp_path / "b.db") as target:
            assert target.snapshot() == source.snapshot()
            assert target.record("lesson", "next") == 4  # ids are never reused
            assert target.recall().results[0].record.id == 4


def test_round_trip_of_an_empty_store(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source, _round_trip(source, tmp_path / "b.db") as target:
        assert target.snapshot() == source.snapshot()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["lesson", "attempt", "decision", "pattern", "outcome"]),
            st.text(min_size=1, max_size=30).filter(lambda s: s.strip()),
            st.one_of(st.none(), st.floats(0, 1)),
            st.booleans(),
        ),
        max_size=8,
    )
)
def test_round_trip_of_any_records(
    tmp_path_factory: pytest.TempPathFactory,
    writes: list[tuple[str, str, float | None, bool]],
) -> None:
    folder = tmp_path_factory.mktemp("rt")
    with SQLiteStore(folder / "a.db") as source:
        previous: int | None = None
        for kind, body, confidence, supersede in writes:
            try:
                new = source.record(
                    kind,
                    body,
                    confidence=confidence,
                    supersedes=previous if supersede else None,
                )
            except ValueError:
                continue  # a body the store refuses is not part of this property
            previous = new
        with _round_trip(source, folder / "b.db") as target:
            assert target.snapshot() == source.snapshot()


def test_import_into_a_non_empty_store_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source, SQLiteStore(tmp_path / "b.db") as target:
        _busy(source)
        target.record("lesson", "already here")
        before = target.snapshot()
        with pytest.raises(ImportRefused, match="not empty"):
            import_lines(target, read_export(export_lines(source)))
        assert target.snapshot() == before


def _lines(tmp_path: Path) -> list[str]:
    with SQLiteStore(tmp_path / "src.db") as source:
        _busy(source)
        return list(export_lines(source))


def _edit(lines: list[str], index: int, **changes: object) -> list[str]:
    item = json.loads(lines[index])
    item.update(changes)
    return [*lines[:index], json.dumps(item), *lines[index + 1 :]]


def _index(lines: list[str], type_: str) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line).get("type") == type_)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda ls: ["not json", *ls[1:]], "line 1: not JSON"),
        (lambda ls: [json.dumps({"format": "other"}), *ls[1:]], "not a roteiro-memory export"),
        (lambda ls: _edit(ls, 0, schema_version=999), "newer"),
        (lambda ls: [*ls, json.dumps({"type": "gadget"})], "unknown line type"),
        (lambda ls: _edit(ls, _index(ls, "record"), kind="rumour"), "rumour"),
        (lambda ls: _edit(ls, _index(ls, "record"), confidence=3), "confidence"),
        (lambda ls: _edit(ls, _index(ls, "record"), id="7"), "'id'"),
        (lambda ls: _edit(ls, _index(ls, "record"), extra=1), "unknown field 'extra'"),
        (lambda ls: _edit(ls, _index(ls, "record"), superseded_by=99, superseded_at="x"), "99"),
        (lambda ls: _edit(ls, _index(ls, "cache"), bytes=1), "bytes"),
        (lambda ls: _edit(ls, 0, sequence=1), "sequence"),
        (lambda ls: [], "empty input"),
    ],
)
def test_a_bad_export_is_refused_by_line(tmp_path: Path, mangle: object, message: str) -> None:
    assert callable(mangle)
    lines = mangle(_lines(tmp_path))
    with SQLiteStore(tmp_path / "target.db") as target:
        before = target.snapshot()
        with pytest.raises(ImportRefused, match=message):
            import_lines(target, read_export(lines))
        assert target.snapshot() == before
