"""Search on SQLite gives the model's doubles after any run of writes,
supersessions and forgets: a state machine drives both stores, step by
step, with records made to share cells (the same body and confidence) and a
recent tier, tails, segments and members of a few records, so merges,
folding tails, removals from mid-segment and restores at old ordinals all
happen within a few steps.  After every step each query's ranking is
compared to the bit, and the SQLite index must pass its check."""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from pathlib import Path
from unittest.mock import patch

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from roteiro_memory.errors import RoteiroError
from roteiro_memory.store import MemoryWrite, Store
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.sql import index, postings
from roteiro_memory.stores.sqlite.store import SQLiteStore

WORDS = ["cache", "lock", "retry", "the", "migration"]
QUERIES = ["cache", "lock retry", "cache migration lock", "retry"]
bodies = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
confidences = st.sampled_from([None, 0.5, 0.93, 1.0])


def ranking(store: Store, query: str, limit: int | None) -> list[tuple[int, str, str]]:
    found = store.search(query, limit=limit).results
    return [(r.record.id, r.score.hex(), r.relevance.hex()) for r in found]


class SearchMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.patches = ExitStack()
        self.patches.enter_context(patch.object(index, "RECENT_RECORDS", 4))
        self.patches.enter_context(patch.object(postings, "TAIL_POSTINGS", 3))
        self.patches.enter_context(patch.object(postings, "SEGMENT_ORDINALS", 16))
        self.patches.enter_context(patch.object(postings, "MEMBER_ORDINALS", 4))
        self.folder = self.patches.enter_context(tempfile.TemporaryDirectory())
        self.stores: list[Store] = [ModelStore(), SQLiteStore(Path(self.folder) / "m.db")]
        self.written: list[MemoryWrite] = []
        self.ids: list[int] = []

    def teardown(self) -> None:
        for store in self.stores:
            store.close()
        self.patches.close()

    def apply(self, writes: list[MemoryWrite]) -> None:
        outcomes = []
        for store in self.stores:
            try:
                outcomes.append(store.record_many(writes))
            except RoteiroError as error:
                outcomes.append([error.kind])
        assert outcomes[1] == outcomes[0]
        if isinstance(outcomes[0][0], int):
            self.written.extend(writes)
            self.ids.extend(outcomes[0])

    @rule(body=bodies, confidence=confidences, copies=st.integers(1, 5))
    def write(self, body: str, confidence: float | None, copies: int) -> None:
        self.apply([MemoryWrite("lesson", body, confidence=confidence)] * copies)

    @rule(data=st.data(), copies=st.integers(1, 3))
    def write_again(self, data: st.DataObject, copies: int) -> None:
        """Records with a written one's body and confidence: its cell, again."""
        if self.written:
            like = data.draw(st.sampled_from(self.written))
            self.apply([MemoryWrite("lesson", like.body, confidence=like.confidence)] * copies)

    def some_id(self, data: st.DataObject) -> int:
        """A record written (half the time, the newest ones half of that),
        else any id up to 40, which may name none."""
        if self.ids and data.draw(st.booleans()):
            return data.draw(
                st.sampled_from(self.ids[-8:] if data.draw(st.booleans()) else self.ids)
            )
        return data.draw(st.integers(1, 40))

    @rule(data=st.data())
    def supersede(self, data: st.DataObject) -> None:
        """The superseded record leaves the index; forgetting its successor
        brings it back, among records older and newer."""
        like = data.draw(st.sampled_from(self.written)) if self.written else None
        body = like.body if like else data.draw(bodies)
        self.apply([MemoryWrite("lesson", body, supersedes=self.some_id(data))])

    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        self.forget_one(self.some_id(data))

    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        """Supersede one of the newest records, then forget its successor:
        the record is live again, among records older and newer (some of
        them waiting in the recent tier)."""
        if not self.ids:
            return
        count = len(self.ids)
        self.apply(
            [MemoryWrite("lesson", "lock", supersedes=data.draw(st.sampled_from(self.ids[-6:])))]
        )
        if len(self.ids) > count:
            self.forget_one(self.ids[-1])

    def forget_one(self, record: int) -> None:
        outcomes = []
        for store in self.stores:
            try:
                outcomes.append(store.forget(record).restored)
            except RoteiroError as error:
                outcomes.append(error.kind)
        assert outcomes[1] == outcomes[0]

    @invariant()
    def searches_agree_and_the_index_checks(self) -> None:
        model, sqlite = self.stores
        for query in QUERIES:
            for limit in (1, 3, None):
                assert ranking(sqlite, query, limit) == ranking(model, query, limit), query
        assert sqlite.check() == []


TestSearchMachine = SearchMachine.TestCase
TestSearchMachine.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
