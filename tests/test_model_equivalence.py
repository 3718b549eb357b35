"""SQLite agrees with the in-memory model on every operation, step for step.

A Hypothesis state machine drives :class:`SQLiteStore` and :class:`ModelStore`
with the same random operations and requires the same JSON result or the same
error kind from both, and the same whole-store state after every step.
``created_at`` and ``superseded_at`` are for humans only and are left out.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from roteiro_memory.errors import RoteiroError
from roteiro_memory.results import GraphNode
from roteiro_memory.semantics import KIND_TOKENS
from roteiro_memory.store import MemoryWrite, Store
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.sqlite.store import SQLiteStore

HUMAN_ONLY = frozenset({"created_at", "superseded_at"})

NODE_KEYS = ["sym:a", "sym:Parser::parse", "sym:c"]

kinds = st.sampled_from([*KIND_TOKENS, "note", "Lesson"])
words = st.sampled_from(["fix", "Cache", "\u00e9cole", "\u00c9COLE", "parser", "run::fix", "src/a"])
bodies = st.one_of(
    st.lists(words, min_size=1, max_size=3).map(" ".join),
    st.sampled_from(["", "  \n", "\u3000", "\x1c"]),
    st.text(max_size=12),
)
scopes = st.sampled_from(["repo", "team", "repo/sub", " repo", "", "re\x1cpo"])
anchors = st.none() | st.sampled_from([*NODE_KEYS, "sym:gone"])
confidences = st.one_of(
    st.none(),
    st.sampled_from([0.0, 0.5, 1.0, 1.5, -0.1, math.nan, math.inf]),
    st.floats(min_value=0.0, max_value=1.0),
)
ids = st.integers(min_value=0, max_value=14) | st.sampled_from([2**63, 2**64])
supersedes = st.none() | ids
limits = st.none() | st.integers(min_value=0, max_value=4)
queries = st.one_of(
    st.none(), words, st.lists(words, max_size=3).map(" ".join), st.text(max_size=4)
)
decays = st.sampled_from(
    [
        "none",
        "linear",
        "linear:0",
        "linear:3",
        "exponential",
        "exponential:0",
        "exponential:2",
        "clock",
        "linear:",
    ]
)
cache_keys = st.sampled_from(["k1", "k2", "k3", "\u043a\u043b\u044e\u0447"])
budgets = st.integers(min_value=0, max_value=120)
nodes = st.builds(
    GraphNode,
    key=st.sampled_from(NODE_KEYS),
    kind=st.sampled_from([None, "fn"]),
    name=st.none(),
    path=st.sampled_from([None, "src/a.rs", "src/Parser.rs"]),
    blob=st.sampled_from([None, "b1", "b2"]),
)
writes = st.builds(
    MemoryWrite,
    kind=kinds,
    body=bodies,
    scope=scopes,
    anchor=anchors,
    confidence=confidences,
    supersedes=supersedes,
)


def comparable(value: Any) -> Any:
    """A result as JSON, without the fields only humans read."""
    if hasattr(value, "to_json"):
        value = value.to_json()
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in HUMAN_ONLY}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    return value


class StoresAgree(RuleBasedStateMachine):
    """Every rule runs the same operation on both backends and compares."""

    def __init__(self) -> None:
        super().__init__()
        self.folder = Path(tempfile.mkdtemp(prefix="roteiro-equivalence-"))
        self.sqlite = SQLiteStore(self.folder / "memory.db")
        self.model = ModelStore()

    def teardown(self) -> None:
        self.sqlite.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def both(self, operation: Callable[[Store], Any]) -> None:
        outcomes = []
        for store in (self.sqlite, self.model):
            try:
                outcomes.append(("ok", comparable(operation(store))))
            except RoteiroError as error:
                outcomes.append(("error", error.kind))
        sqlite_outcome, model_outcome = outcomes
        assert sqlite_outcome == model_outcome

    # --- episodic tier -----------------------------------------------------

    @rule(write=writes)
    def record(self, write: MemoryWrite) -> None:
        self.both(
            lambda s: s.record(
                write.kind,
                write.body,
                scope=write.scope,
                anchor=write.anchor,
                confidence=write.confidence,
                supersedes=write.supersedes,
            )
        )

    @rule(batch=st.lists(writes, max_size=3))
    def record_many(self, batch: list[MemoryWrite]) -> None:
        self.both(lambda s: s.record_many(batch))

    @rule(record_id=ids)
    def forget(self, record_id: int) -> None:
        self.both(lambda s: s.forget(record_id))

    @rule(record_id=ids)
    def get(self, record_id: int) -> None:
        self.both(lambda s: s.get(record_id))

    @rule(
        scope=st.none() | scopes,
        kind=st.none() | kinds,
        anchor_key=anchors,
        include_superseded=st.booleans(),
        limit=limits,
    )
    def list_records(
        self,
        scope: str | None,
        kind: str | None,
        anchor_key: str | None,
        include_superseded: bool,
        limit: int | None,
    ) -> None:
        self.both(
            lambda s: s.list(
                scope=scope,
                kind=kind,
                anchor_key=anchor_key,
                include_superseded=include_superseded,
                limit=limit,
            )
        )

    @rule(
        query=queries,
        scope=st.none() | scopes,
        kind=st.none() | kinds,
        anchor_key=anchors,
        decay=decays,
        applicable_only=st.booleans(),
        limit=limits,
    )
    def recall(
        self,
        query: str | None,
        scope: str | None,
        kind: str | None,
        anchor_key: str | None,
        decay: str,
        applicable_only: bool,
        limit: int | None,
    ) -> None:
        self.both(
            lambda s: s.recall(
                query,
                scope=scope,
                kind=kind,
                anchor_key=anchor_key,
                decay=decay,
                applicable_only=applicable_only,
                limit=limit,
            )
        )

    @rule(
        query=queries.map(lambda q: q or ""),
        scope=st.none() | scopes,
        kind=st.none() | kinds,
        anchor_key=anchors,
        decay=decays,
        applicable_only=st.booleans(),
        limit=limits,
    )
    def search(
        self,
        query: str,
        scope: str | None,
        kind: str | None,
        anchor_key: str | None,
        decay: str,
        applicable_only: bool,
        limit: int | None,
    ) -> None:
        self.both(
            lambda s: s.search(
                query,
                scope=scope,
                kind=kind,
                anchor_key=anchor_key,
                decay=decay,
                applicable_only=applicable_only,
                limit=limit,
            )
        )

    # --- cache tier ----------------------------------------------------------

    @rule(
        key=cache_keys,
        fingerprint=st.sampled_from(["fp", "f\u00e9"]),
        payload=st.text(max_size=24),
        anchor=anchors,
    )
    def cache_put(self, key: str, fingerprint: str, payload: str, anchor: str | None) -> None:
        self.both(lambda s: s.cache_put(key, fingerprint, payload, anchor))

    @rule(key=cache_keys)
    def cache_get(self, key: str) -> None:
        self.both(lambda s: s.cache_get(key))

    @rule(key=cache_keys)
    def cache_forget(self, key: str) -> None:
        self.both(lambda s: s.cache_forget(key))

    @rule(budget=budgets)
    def cache_sweep(self, budget: int) -> None:
        self.both(lambda s: s.cache_sweep(budget))

    # --- graph and store ------------------------------------------------------

    @rule(batch=st.lists(nodes, max_size=3))
    def put_nodes(self, batch: list[GraphNode]) -> None:
        self.both(lambda s: s.put_nodes(batch))

    @rule(keys=st.lists(st.sampled_from([*NODE_KEYS, "sym:gone"]), max_size=2))
    def remove_nodes(self, keys: list[str]) -> None:
        self.both(lambda s: s.remove_nodes(keys))

    @rule(tree=st.none() | st.sampled_from(["tree-1", "tree-2"]))
    def set_tree(self, tree: str | None) -> None:
        self.both(lambda s: s.set_tree(tree))

    @rule()
    def rebuild(self) -> None:
        self.both(lambda s: s.rebuild())

    @rule()
    def reopen(self) -> None:
        self.both(lambda s: s.reopen())

    @precondition(lambda self: self.model.list(include_superseded=True).records)
    @rule()
    def reset(self) -> None:
        self.both(lambda s: s.reset())

    # --- the whole store, after every step --------------------------------------

    @invariant()
    def term_index_agrees_with_the_records(self) -> None:
        assert self.sqlite.check() == []

    @invariant()
    def whole_stores_agree(self) -> None:
        self.both(lambda s: s.list(include_superseded=True))
        self.both(lambda s: s.cache_entries())
        self.both(lambda s: s.cache_stats(0))
        self.both(lambda s: s.export_graph())
        self.both(lambda s: s.tree())


StoresAgree.TestCase.settings = settings(
    settings(),  # the loaded profile: derandomized when CI is set
    max_examples=60,
    stateful_step_count=30,
)
TestStoresAgree = StoresAgree.TestCase
