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
