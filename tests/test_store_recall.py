"""The store contract's recall: ranking terms, limits, ties, filters and the
query, and the generation and age ranking reads.

Every test taking ``store`` runs against every backend in
``conftest.BACKEND_FACTORIES``.
"""

from __future__ import annotations

import pytest
from store_states import five_states, node

from roteiro_memory import semantics as sem
from roteiro_memory.semantics import Decay
from roteiro_memory.store import Store

# --- Ranking -------------------------------------------------------------------------


def test_zero_confidence_ranks_last_and_is_still_returned(store: Store) -> None:
    zero = store.record("lesson", "worthless but kept", confidence=0.0)
    store.record("lesson", "drifted", anchor="sym:gone", confidence=0.01)
    store.record("lesson", "plain")
    results = store.recall().results
    assert len(results) == 3
    assert results[-1].record.id == zero
    assert results[-1].score == 0.0


def test_default_confidence_is_one_half(store: Store) -> None:
    record_id = store.record("lesson", "silent about confidence")
    record = store.get(record_id)
    assert record is not None
    assert record.confidence is None, "what the writer said is kept: nothing"
    (recalled,) = store.recall().results
    assert recalled.base_confidence == 0.5
    assert recalled.score == 0.5 * 0.9


def test_recall_terms_multiply_to_the_score(store: Store) -> None:
    five_states(store)
    for recalled in store.recall(decay="exponential:2").results:
        assert recalled.anchor_penalty == sem.anchor_penalty(recalled.record.anchor_state)
        assert recalled.decay_factor == Decay.exponential(2).factor(recalled.age)
        assert recalled.score == sem.score(
            recalled.base_confidence, recalled.anchor_penalty, recalled.decay_factor
        )


def test_limit_zero_and_none_are_unlimited(store: Store) -> None:
    ids = [store.record("lesson", f"record {n}") for n in range(5)]
    newest_first = ids[::-1]
    for limit in (None, 0):
        assert [r.id for r in store.list(limit=limit).records] == newest_first
        assert [r.record.id for r in store.recall(limit=limit).results] == newest_first
    assert [r.id for r in store.list(limit=2).records] == newest_first[:2]


def test_recall_limit_applies_after_ranking(store: Store) -> None:
    """A limit returns the best records, not the newest ones."""
    best = store.record("lesson", "the best", confidence=1.0)
    second = store.record("lesson", "second best", confidence=0.9)
    for n in range(4):
        store.record("lesson", f"newer but weaker {n}", confidence=0.1)
    assert [r.record.id for r in store.recall(limit=1).results] == [best]
    assert [r.record.id for r in store.recall(limit=2).results] == [best, second]
    assert [r.id for r in store.list(limit=1).records] != [best], "list keeps the newest"


def test_ties_break_by_newest_id(store: Store) -> None:
    ids = [store.record("lesson", f"same score {n}", confidence=0.5) for n in range(4)]
    assert [r.record.id for r in store.recall().results] == ids[::-1]


def test_recall_orders_by_penalty_when_all_else_is_equal(store: Store) -> None:
    ids = five_states(store)
    order = sorted(ids, key=lambda s: -sem.anchor_penalty(s))
    assert [r.record.id for r in store.recall().results] == [ids[s] for s in order]


def test_applicable_only_keeps_exactly_the_applying_records(store: Store) -> None:
    ids = five_states(store)
    applying = {ids[s] for s in ids if s.applies}
    assert {r.record.id for r in store.recall(applicable_only=True).results} == applying
    assert {r.record.id for r in store.recall().results} == set(ids.values()), (
        "off by default: a record that does not apply is demoted, not withheld"
    )


def test_stale_only_keeps_exactly_the_records_that_do_not_apply_best_first(
    store: Store,
) -> None:
    """The store chooses the records about changed code before its limit, so
    the best of them are found however many newer records there are."""
    ids = five_states(store)
    stale = [ids[s] for s in sorted(ids, key=lambda s: -sem.anchor_penalty(s)) if not s.applies]
    for n in range(5):
        store.record("lesson", f"newer and applying {n}", confidence=1.0)
    assert [r.record.id for r in store.recall(stale_only=True).results] == stale
    assert [r.record.id for r in store.recall(stale_only=True, limit=1).results] == stale[:1]


def test_scope_filter_is_an_exact_match(store: Store) -> None:
    exact = store.record("lesson", "in repo", scope="repo")
    store.record("lesson", "in sub", scope="repo/sub")
    store.record("lesson", "in Repo", scope="Repo")
    store.record("lesson", "in repo2", scope="repo2")
    assert [r.record.id for r in store.recall(scope="repo").results] == [exact]
    assert [r.id for r in store.list(scope="repo").records] == [exact]
    assert store.recall(scope="rep").results == []


def test_query_does_not_search_scope(store: Store) -> None:
    store.record("lesson", "about beta", scope="alpha")
    assert store.recall("alpha").results == []
    assert len(store.recall("beta").results) == 1


def test_query_requires_every_token_case_insensitively(store: Store) -> None:
    both = store.record("lesson", "The Cache lives in L\u00c9COLE")
    store.record("lesson", "the cache alone")
    assert [r.record.id for r in store.recall("CACHE l\u00e9cole").results] == [both]
    assert [r.record.id for r in store.recall("\u00c9COLE").results] == [both]
    assert {r.record.id for r in store.recall("cache").results} == {both, both + 1}
    assert store.recall("cache missing").results == []


def test_query_splits_on_double_colon(store: Store) -> None:
    hit = store.record("lesson", "run() belongs to the crate")
    assert [r.record.id for r in store.recall("crate::run").results] == [hit]
    assert store.recall("crate::walk").results == []


@pytest.mark.parametrize("query", ["   ", "", None, " :: "])
def test_an_empty_query_filters_nothing(store: Store, query: str | None) -> None:
    store.record("lesson", "one")
    store.record("lesson", "two")
    assert len(store.recall(query).results) == 2


def test_query_searches_anchor_key_and_anchor_path(store: Store) -> None:
    store.put_nodes([node("sym:Parser::parse", path="src/Grammar/parser.rs")])
    hit = store.record("lesson", "nothing in the body", anchor="sym:Parser::parse")
    store.record("lesson", "unrelated")
    assert [r.record.id for r in store.recall("parser::PARSE").results] == [hit]
    assert [r.record.id for r in store.recall("grammar/parser.rs").results] == [hit]


def test_filters_by_kind_and_anchor_key(store: Store) -> None:
    lesson = store.record("lesson", "a lesson", anchor="sym:a")
    decision = store.record("decision", "a decision", anchor="sym:b")
    assert [r.id for r in store.list(kind="decision").records] == [decision]
    assert [r.record.id for r in store.recall(kind="lesson").results] == [lesson]
    assert [r.record.id for r in store.recall(anchor_key="sym:b").results] == [decision]
    assert [r.id for r in store.list(anchor_key="sym:a").records] == [lesson]


def test_listing_counts_the_whole_store_regardless_of_filter(store: Store) -> None:
    old = store.record("lesson", "old", scope="a")
    store.record("lesson", "new", scope="b", supersedes=old)
    store.record("decision", "other", scope="b")
    for result in (
        store.list(scope="nowhere"),
        store.list(kind="pattern", limit=1),
        store.list(include_superseded=True),
        store.recall("nothing matches this"),
        store.recall(scope="a", applicable_only=True),
    ):
        assert (result.live, result.superseded) == (2, 1)


def test_generation_is_the_max_id_incl_superseded_and_age_is_generation_minus_id(
    store: Store,
) -> None:
    assert store.recall().generation == 0, "an empty store is at generation 0"
    old = store.record("lesson", "old", scope="a")
    new = store.record("lesson", "new", scope="b", supersedes=old)
    others = [store.record("lesson", f"n{n}", scope="c") for n in range(3)]
    recall = store.recall(scope="a")
    assert recall.results == []
    assert recall.generation == others[-1], "the whole store's, regardless of filter"
    full = store.recall()
    assert {r.record.id: r.age for r in full.results} == {
        rid: full.generation - rid for rid in [new, *others]
    }
