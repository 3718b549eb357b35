"""The near-duplicate rule (roteiro_memory.duplicates) and the conflict rule
(roteiro_memory.conflicts), pure: over records made in the model store."""

from __future__ import annotations

import pytest

from roteiro_memory import conflicts, duplicates
from roteiro_memory.results import GraphNode, MemoryRecord
from roteiro_memory.stores.model import ModelStore

SEND = "src/app.py::Client.send"
CAP = "src/app.py::cap"


def records(
    *made: tuple[str, str, str | None] | tuple[str, str, str | None, str],
) -> list[MemoryRecord]:
    """``(kind, body, anchor key[, scope])`` records, oldest first, every anchor valid."""
    store = ModelStore()
    store.put_nodes(GraphNode(key, blob="a" * 40) for key in (SEND, CAP))
    for kind, body, key, *scope in made:
        store.record(kind, body, anchor=key, scope=scope[0] if scope else "repo")
    return sorted(store.list().records, key=lambda r: r.id)


def test_words_fold_case_and_drop_punctuation_and_order() -> None:
    assert duplicates.words("Retry: the CLIENT, retries!") == duplicates.words(
        "retries the client retry"
    )
    assert duplicates.words("don't 'quote'") == {"don't", "quote"}


def test_similarity_is_jaccard_over_word_sets() -> None:
    one, other = duplicates.words("a b c d"), duplicates.words("a b c e")
    assert duplicates.similarity(one, other) == pytest.approx(3 / 5)
    assert duplicates.similarity(frozenset(), frozenset()) == 1.0


def test_one_word_added_to_a_sentence_is_a_near_duplicate() -> None:
    first, second = records(
        ("lesson", "send retries a timeout once more than the limit says", SEND),
        ("lesson", "send retries a timeout once more than the limit really says", SEND),
    )
    assert duplicates.near_duplicate(first, second)


def test_two_words_changed_in_ten_is_another_statement() -> None:
    first, second = records(
        ("lesson", "send retries a timeout once more than the limit says", SEND),
        ("lesson", "send retries a refusal twice more than the limit says", SEND),
    )
    assert (
        duplicates.similarity(duplicates.words(first.body), duplicates.words(second.body))
        < duplicates.THRESHOLD
    )
    assert not duplicates.near_duplicate(first, second)


def test_a_differing_negation_or_number_keeps_two_bodies_apart() -> None:
    """However alike otherwise: "not" and "30" versus "60" change what is said."""
    made = records(
        ("lesson", "the pool is shared across threads so close is safe to call twice", SEND),
        ("lesson", "the pool is not shared across threads so close is safe to call twice", SEND),
        ("decision", "cap the backoff of every retry of the client at 30 seconds", CAP),
        ("decision", "cap the backoff of every retry of the client at 60 seconds", CAP),
    )
    assert not duplicates.near_duplicate(made[0], made[1])
    assert not duplicates.near_duplicate(made[2], made[3])
    swapped = records(
        ("lesson", "server 0 write 1", SEND),
        ("lesson", "server 1 write 0", SEND),
    )
    assert not duplicates.near_duplicate(*swapped)  # the same words, numbers moved


def test_near_duplicates_need_the_same_kind_scope_and_anchor() -> None:
    body = "send retries a timeout once more than the limit says"
    made = records(
        ("lesson", body, SEND),
        ("pattern", body, SEND),
        ("lesson", body, CAP),
        ("lesson", body, None),
        ("lesson", body, SEND, "other"),
        ("lesson", body, SEND),
    )
    assert [duplicates.near_duplicate(made[0], other) for other in made[1:]] == [
        False,
        False,
        False,
        False,
        True,
    ]


def test_collapse_keeps_the_best_ranked_and_folds_in_rank_order() -> None:
    made = records(
        ("lesson", "send retries a timeout once more than the limit says", SEND),
        ("lesson", "jitter is capped", SEND),
        ("lesson", "send retries a timeout once more than the limit says.", SEND),
        ("lesson", "Send retries a timeout once more than the limit says", SEND),
    )
    ranked = [made[3], made[1], made[0], made[2]]
    groups = duplicates.collapse(ranked, lambda r: r)
    assert [(lead.id, [r.id for r in others]) for lead, others in groups] == [
        (4, [1, 3]),
        (2, []),
    ]


def test_collapse_compares_with_the_lead_only_so_groups_never_chain() -> None:
    """b is near a and c is near b, but c is not near a: c leads its own group."""
    base = "one two three four five six seven eight nine"
    made = records(
        ("lesson", base, SEND),
        ("lesson", base + " ten", SEND),
        ("lesson", base + " ten eleven twelve", SEND),
    )
    groups = duplicates.collapse(made, lambda r: r)
    assert [(lead.id, [r.id for r in others]) for lead, others in groups] == [(1, [2]), (3, [])]


def test_conflicting_decisions_name_each_other() -> None:
    made = records(
        ("decision", "cap the backoff at 30 seconds", CAP),
        ("decision", "never cap the backoff: the caller decides", CAP),
        ("lesson", "the backoff doubles", CAP),
    )
    (found,) = conflicts.conflicts(made)
    assert (found.anchor, found.ids) == (CAP, (1, 2))
    assert (found.against(1), found.against(2), found.against(3)) == ((2,), (1,), ())


def test_superseded_decision_is_no_conflict() -> None:
    store = ModelStore()
    store.put_nodes([GraphNode(CAP, blob="a" * 40)])
    store.record("decision", "cap the backoff at 30 seconds", anchor=CAP)
    store.record("decision", "cap the backoff at 60 seconds", anchor=CAP, supersedes=1)
    assert conflicts.conflicts(store.list(include_superseded=True).records) == []


def test_near_duplicate_decisions_are_one_statement_not_a_conflict() -> None:
    made = records(
        ("decision", "cap the backoff of every retry at thirty seconds", CAP),
        ("decision", "cap the backoff of every retry at thirty seconds.", CAP),
        ("decision", "let the caller choose the backoff", CAP),
    )
    assert conflicts.conflicts(made[:2]) == []
    (found,) = conflicts.conflicts(made)
    assert found.statements == ((1, 2), (3,))
    assert found.against(2) == (3,)


def test_lessons_unanchored_decisions_and_other_scopes_never_conflict() -> None:
    made = records(
        ("lesson", "the backoff doubles", CAP),
        ("lesson", "the backoff is capped by the caller", CAP),
        ("decision", "all retry policy lives in one module", None),
        ("decision", "retry policy is per client", None),
        ("decision", "cap the backoff at 30 seconds", CAP),
        ("decision", "never cap the backoff", CAP, "team"),
    )
    assert conflicts.conflicts(made) == []


def test_the_settle_command_is_the_add_that_supersedes() -> None:
    assert conflicts.settle_command(CAP, "repo", 4) == (
        f"roteiro-memory add TEXT --kind decision --anchor {CAP} --supersedes 4"
    )
    assert conflicts.settle_command("a b.py", "team x") == (
        "roteiro-memory add TEXT --kind decision --anchor 'a b.py' --scope 'team x' --supersedes ID"
    )


def test_collapse_answers_what_comparing_with_every_lead_answers() -> None:
    """The prefix filter only skips comparisons that could not match."""
    import random

    chooser = random.Random(26)
    vocabulary = [f"w{n}" for n in range(14)] + ["not", "30", "the", "a"]
    bodies = [" ".join(chooser.sample(vocabulary, chooser.randint(1, 12))) for _ in range(300)]
    made = records(*[("lesson", body, SEND if n % 3 else None) for n, body in enumerate(bodies)])
    chooser.shuffle(made)

    naive: list[tuple[MemoryRecord, list[MemoryRecord]]] = []
    for record in made:
        lead = next((g for g in naive if duplicates.near_duplicate(g[0], record)), None)
        if lead is None:
            naive.append((record, []))
        else:
            lead[1].append(record)
    folded = duplicates.collapse(made, lambda r: r)
    assert [(a.id, [r.id for r in b]) for a, b in folded] == [
        (a.id, [r.id for r in b]) for a, b in naive
    ]
    assert any(others for _, others in folded)
