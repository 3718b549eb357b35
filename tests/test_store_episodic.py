"""The store contract's episodic tier: supersession, refused writes that
change nothing, batches, forget, and ids that are never reused.

Every test taking ``store`` runs against every backend in
``conftest.BACKEND_FACTORIES``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from roteiro_memory.errors import (
    AlreadySuperseded,
    InvalidBody,
    InvalidConfidence,
    InvalidDecay,
    InvalidKind,
    InvalidScope,
    NotFound,
    RoteiroError,
)
from roteiro_memory.store import MemoryWrite, Store

# --- Supersession and refused writes -------------------------------------------


def test_supersession_drops_a_record_from_list_and_recall_at_once(store: Store) -> None:
    old = store.record("lesson", "tabs are fine")
    assert [r.id for r in store.list().records] == [old]
    new = store.record("lesson", "spaces only", supersedes=old)

    assert [r.id for r in store.list().records] == [new]
    assert [r.record.id for r in store.recall().results] == [new]
    assert [r.record.id for r in store.recall("tabs").results] == []
    superseded = store.get(old)
    assert superseded is not None
    assert superseded.superseded_by == new
    assert superseded.superseded_at is not None
    assert [r.id for r in store.list(include_superseded=True).records] == [new, old]


def test_superseding_an_absent_record_is_not_found_and_changes_nothing(store: Store) -> None:
    store.record("lesson", "present")
    before = store.snapshot()
    with pytest.raises(NotFound, match="999"):
        store.record("lesson", "successor", supersedes=999)
    assert store.snapshot() == before


def test_superseding_a_superseded_record_is_already_superseded_and_changes_nothing(
    store: Store,
) -> None:
    old = store.record("lesson", "first")
    new = store.record("lesson", "second", supersedes=old)
    before = store.snapshot()
    with pytest.raises(AlreadySuperseded) as raised:
        store.record("lesson", "third", supersedes=old)
    assert f"{old}" in str(raised.value)
    assert f"{new}" in str(raised.value), "the message names the successor already recorded"
    assert store.snapshot() == before


def _refusals() -> list[Any]:
    def write(**kwargs: Any) -> Callable[[Store], object]:
        args = {"kind": "lesson", "body": "a body", **kwargs}
        return lambda s: s.record(**args)

    def batch(*writes: MemoryWrite) -> Callable[[Store], object]:
        return lambda s: s.record_many(list(writes))

    good = MemoryWrite("lesson", "fine")
    return [
        pytest.param(write(kind="note"), InvalidKind, id="InvalidKind"),
        pytest.param(write(scope=" repo"), InvalidScope, id="InvalidScope"),
        pytest.param(write(body=" \n"), InvalidBody, id="InvalidBody"),
        pytest.param(write(confidence=1.5), InvalidConfidence, id="InvalidConfidence"),
        pytest.param(write(supersedes=999), NotFound, id="NotFound"),
        pytest.param(write(supersedes=1), AlreadySuperseded, id="AlreadySuperseded"),
        pytest.param(
            write(kind="note", scope="", body="", confidence=2.0, supersedes=999),
            InvalidKind,
            id="first-fault-kind",
        ),
        pytest.param(
            write(confidence=2.0, supersedes=999),
            InvalidConfidence,
            id="confidence-before-supersedes",
        ),
        pytest.param(
            batch(good, MemoryWrite("lesson", "")), InvalidBody, id="batch-all-or-nothing-body"
        ),
        pytest.param(
            batch(
                good,
                MemoryWrite("lesson", "x", supersedes=3),
                MemoryWrite("lesson", "y", supersedes=3),
            ),
            AlreadySuperseded,
            id="batch-supersedes-twice",
        ),
        pytest.param(
            batch(good, MemoryWrite("lesson", "x", supersedes=999)),
            NotFound,
            id="batch-all-or-nothing-supersedes",
        ),
        pytest.param(lambda s: s.forget(999), NotFound, id="forget-NotFound"),
        pytest.param(lambda s: s.recall(decay="clock"), InvalidDecay, id="recall-InvalidDecay"),
        pytest.param(lambda s: s.recall(kind="note"), InvalidKind, id="recall-InvalidKind"),
        pytest.param(lambda s: s.list(kind="Lesson"), InvalidKind, id="list-InvalidKind"),
    ]


@pytest.mark.parametrize(("operation", "error"), _refusals())
def test_every_refused_operation_leaves_the_snapshot_unchanged(
    store: Store, operation: Callable[[Store], object], error: type[RoteiroError]
) -> None:
    first = store.record("lesson", "first")
    store.record("lesson", "second", supersedes=first)
    store.record("lesson", "third")
    store.cache_put("k", "fp", "{}")
    before = store.snapshot()
    with pytest.raises(RoteiroError) as raised:
        operation(store)
    assert type(raised.value) is error
    assert raised.value.kind == error.kind
    assert store.snapshot() == before


@pytest.mark.parametrize(
    ("batch", "error"),
    [
        pytest.param(
            [MemoryWrite("lesson", "x", supersedes=999), MemoryWrite("note", "")],
            NotFound,
            id="supersedes-then-invalid",
        ),
        pytest.param(
            [MemoryWrite("note", ""), MemoryWrite("lesson", "x", supersedes=999)],
            InvalidKind,
            id="invalid-then-supersedes",
        ),
        pytest.param(
            [MemoryWrite("lesson", "x", supersedes=1), MemoryWrite("lesson", " ", confidence=9)],
            AlreadySuperseded,
            id="already-superseded-then-invalid",
        ),
    ],
)
def test_a_batch_reports_the_first_faulty_write_whichever_check_it_fails(
    store: Store, batch: list[MemoryWrite], error: type[RoteiroError]
) -> None:
    """As if written one record at a time: an earlier write's supersession
    fault is reported before a later write's validation fault."""
    first = store.record("lesson", "first")
    store.record("lesson", "second", supersedes=first)
    before = store.snapshot()
    with pytest.raises(RoteiroError) as raised:
        store.record_many(batch)
    assert type(raised.value) is error
    assert store.snapshot() == before


def test_a_batch_may_supersede_a_record_written_earlier_in_it(store: Store) -> None:
    ids = store.record_many(
        [MemoryWrite("lesson", "first"), MemoryWrite("lesson", "second", supersedes=1)]
    )
    assert ids == [1, 2]
    assert [r.id for r in store.list().records] == [2]


# --- Forget -----------------------------------------------------------------------


def test_forget_restores_and_reports_predecessors(store: Store) -> None:
    old = store.record("lesson", "old")
    new = store.record("lesson", "new", supersedes=old)
    forgotten = store.forget(new)
    assert (forgotten.id, forgotten.restored) == (new, [old])
    restored = store.get(old)
    assert restored is not None
    assert (restored.superseded_by, restored.superseded_at) == (None, None)
    assert [r.id for r in store.list().records] == [old]
    assert [r.record.id for r in store.recall().results] == [old]
    assert store.get(new) is None


def test_forget_of_a_record_superseding_nothing_restores_nothing(store: Store) -> None:
    kept = store.record("lesson", "kept")
    gone = store.record("lesson", "gone")
    assert store.forget(gone).restored == []
    assert [r.id for r in store.list(include_superseded=True).records] == [kept]


def test_forget_of_a_predecessor_leaves_its_successor_live(store: Store) -> None:
    old = store.record("lesson", "old")
    new = store.record("lesson", "new", supersedes=old)
    assert store.forget(old).restored == []
    assert [r.id for r in store.list(include_superseded=True).records] == [new]


def test_forget_of_an_absent_id_is_not_found_and_changes_nothing(store: Store) -> None:
    record_id = store.record("lesson", "here")
    store.forget(record_id)
    before = store.snapshot()
    for absent in (record_id, 0, -1, 2**63, 2**64):
        with pytest.raises(NotFound, match=str(absent)):
            store.forget(absent)
    assert store.snapshot() == before


def test_ids_are_never_reused_after_the_newest_is_forgotten(store: Store) -> None:
    first = store.record("lesson", "first")
    newest = store.record("lesson", "newest")
    store.forget(newest)
    assert store.recall().generation == first
    store.reopen()
    again = store.record("lesson", "after forgetting")
    assert again == newest + 1
    assert store.record_many([MemoryWrite("lesson", "batch")]) == [again + 1]


# --- Several kinds at once -------------------------------------------------------


def test_reads_take_several_kinds_and_rank_their_union_in_the_store(store: Store) -> None:
    """A ``kind`` filter naming several kinds keeps any of them: the store
    orders and limits the union itself, so no ranking rule runs outside it."""
    ids = store.record_many(
        [
            MemoryWrite("lesson", "retry the upload", confidence=0.2),
            MemoryWrite("decision", "retry uploads twice", confidence=0.9),
            MemoryWrite("pattern", "retry with jitter", confidence=0.5),
            MemoryWrite("outcome", "the upload retried", confidence=0.7),
        ]
    )
    lesson, decision, pattern, _ = ids
    both = ["lesson", "decision"]
    assert [r.id for r in store.list(kind=both).records] == [decision, lesson]
    assert [r.id for r in store.list(kind=both, limit=1).records] == [decision]
    ranked = [r.record.id for r in store.recall(kind=["lesson", "pattern"]).results]
    assert ranked == [pattern, lesson]
    found = store.search("retry", kind=("decision", "pattern"), limit=1)
    assert [r.record.id for r in found.results] == [decision]
    assert [r.id for r in store.list(kind=[]).records] == list(reversed(ids))
    with pytest.raises(InvalidKind):
        store.list(kind=["lesson", "rumour"])
