"""An import takes a value as a write takes it, on every database backend:
what a write settles (a confidence of -0.0) it settles alike, and what a
write refuses it refuses, naming the line."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import pg_server
import pytest

from roteiro_memory.errors import ImportRefused
from roteiro_memory.store import Store
from roteiro_memory.stores.sqlite.store import SQLiteStore
from roteiro_memory.transfer import export_trailer, read_export


def _source(tmp_path: Path) -> list[str]:
    with SQLiteStore(tmp_path / "source.db") as source:
        source.record("lesson", "one", confidence=0.8, anchor="file:a.py")
        source.record("lesson", "two")
        source.cache_put("k", "f", '{"a": 1}')
        return list(source.export_lines())


def _changed(lines: list[str], type_: str, **changes: object) -> list[str]:
    """``lines`` with the first line of ``type_`` changed, sealed again, so
    what an import judges is the content, not the digest."""
    at = next(i for i, line in enumerate(lines) if json.loads(line).get("type") == type_)
    body = [*lines[: len(lines) - 1]]
    body[at] = json.dumps({**json.loads(body[at]), **changes})
    return [*body, export_trailer(body)]


@pytest.fixture(params=["sqlite", "postgres"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Store]]:
    """How to open another fresh, empty store of one backend."""
    opened: list[Store] = []

    def make() -> Store:
        if request.param == "sqlite":
            store: Store = SQLiteStore(tmp_path / f"store{len(opened)}.db")
        else:
            pg_server.require_server()
            store = pg_server.throwaway_store()
        opened.append(store)
        return store

    try:
        yield make
    finally:
        for store in opened:
            store.close()


def test_a_negative_zero_confidence_imports_as_zero_and_exports_stably_on_every_backend(
    tmp_path: Path, fresh: Callable[[], Store]
) -> None:
    lines = _changed(_source(tmp_path), "record", confidence=-0.0)
    first = fresh()
    first.import_export(read_export(lines))
    record = first.get(1)
    assert record is not None
    assert record.confidence == 0.0
    assert math.copysign(1.0, record.confidence) == 1.0
    exported = list(first.export_lines())
    assert json.loads(exported[1])["confidence"] == 0.0
    assert '"confidence": 0.0' in exported[1]
    second = fresh()
    second.import_export(read_export(exported))
    assert list(second.export_lines()) == exported


@pytest.mark.parametrize(
    ("type_", "changes", "said"),
    [
        (
            "record",
            {"anchor_key": "a" * 4097},
            "line 2: agent_memory id 1: a write would refuse it: invalid anchor",
        ),
        (
            "cache",
            {"anchor_key": "é" * 2049},
            "line 4: agent_cache key 'k': a write would refuse it: invalid anchor",
        ),
    ],
    ids=["record-anchor", "cache-anchor"],
)
def test_import_refuses_what_a_write_refuses_naming_the_line(
    tmp_path: Path, type_: str, changes: dict[str, object], said: str
) -> None:
    lines = _changed(_source(tmp_path), type_, **changes)
    with pytest.raises(ImportRefused) as refused:
        read_export(lines)
    assert str(refused.value).startswith(said), str(refused.value)


def test_import_of_an_anchor_at_the_limit_is_taken(tmp_path: Path) -> None:
    lines = _changed(_source(tmp_path), "record", anchor_key="a" * 4096)
    assert read_export(lines).records[0]["anchor_key"] == "a" * 4096


def test_import_refuses_a_line_naming_a_member_twice(tmp_path: Path) -> None:
    lines = _source(tmp_path)
    at = 2
    item = json.loads(lines[at])
    assert item["type"] == "record"
    twice = lines[at][:-1] + ', "body": "other"}'
    body = [*lines[:at], twice, *lines[at + 1 : -1]]
    with pytest.raises(ImportRefused, match=r"^line 3: the member 'body' appears twice"):
        read_export([*body, export_trailer(body)])


def test_a_record_superseded_earlier_than_it_was_created_is_sound_on_every_backend(
    tmp_path: Path, fresh: Callable[[], Store]
) -> None:
    """The times are the writers' wall clocks, which nothing reads
    (PROTOCOL's P-created-at): a record written where the clock was ahead
    (a laptop's export, imported into a shared store) and superseded where
    it is behind has a superseded_at before its created_at.  The store's own
    commands made it, so check passes it, and its export imports as it was."""
    ahead = "2999-01-01 00:00:00"
    first = fresh()
    first.import_export(read_export(_changed(_source(tmp_path), "record", created_at=ahead)))
    first.record("lesson", "one, corrected", supersedes=1)
    old = first.get(1)
    assert old is not None
    assert old.superseded_at is not None
    assert (old.created_at, old.superseded_by) == (ahead, 3)
    assert old.superseded_at < old.created_at
    assert first.check() == []
    exported = list(first.export_lines())
    second = fresh()
    second.import_export(read_export(exported))
    assert second.check() == []
    assert list(second.export_lines()) == exported
