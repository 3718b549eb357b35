"""The scoring variants of the evaluation (``--scoring``): the protocol's
variant ranks exactly as the model does, and each variant moves a ranking
the way its definition says."""

from __future__ import annotations

import pytest

from roteiro_memory.cli.main import main as cli_main
from roteiro_memory.evaluation.datasets.coding import coding
from roteiro_memory.evaluation.run import evaluate
from roteiro_memory.evaluation.scoring import (
    PROTOCOL_SCORING,
    Scoring,
    ScoringModel,
    parse_scoring,
)


def ids(store: ScoringModel, query: str) -> list[int]:
    return [item.record.id for item in store.search(query).results]


def test_scoring_the_protocols_variant_ranks_as_the_model() -> None:
    protocol = evaluate(coding(), ("search",), store="memory", timing=False)
    variant = evaluate(
        coding(), ("search",), store_factory=lambda: ScoringModel(PROTOCOL_SCORING), timing=False
    )
    assert variant == protocol


def test_scoring_a_variant_is_named_in_the_result() -> None:
    result = evaluate(coding(), ("search",), store="memory", scoring="proximity=1", timing=False)
    assert result["search"]["scoring"] == "proximity=1"
    assert "scoring" not in evaluate(coding(), ("search",), store="memory", timing=False)["search"]


def test_scoring_proximity_ranks_neighbouring_query_terms_first() -> None:
    store = ScoringModel(parse_scoring("proximity"))
    near = store.record("lesson", "stale rows came back from the cache after the restart")
    far = store.record("lesson", "stale entries in the cache after the restart gave rows")
    assert ids(store, "stale rows") == [near, far]
    protocol = ScoringModel(PROTOCOL_SCORING)
    for body in (
        "stale rows came back from the cache after the restart",
        "stale entries in the cache after the restart gave rows",
    ):
        protocol.record("lesson", body)
    assert ids(protocol, "stale rows") == [far, near]  # equal BM25: the newest first


def test_scoring_an_anchor_weight_of_zero_leaves_anchor_only_matches_out() -> None:
    store = ScoringModel(parse_scoring("anchor=0"))
    store.record("lesson", "flush before closing", anchor="py:io/writer.py::Writer")
    in_body = store.record("lesson", "the writer must flush before closing")
    assert ids(store, "writer") == [in_body]
    protocol = ScoringModel(PROTOCOL_SCORING)
    protocol.record("lesson", "flush before closing", anchor="py:io/writer.py::Writer")
    protocol.record("lesson", "the writer must flush before closing")
    assert len(ids(protocol, "writer")) == 2


def test_scoring_a_confidence_power_of_zero_ignores_the_confidence() -> None:
    for scoring, first in ((PROTOCOL_SCORING, 1), (parse_scoring("confidence=0"), 2)):
        store = ScoringModel(scoring)
        store.record("lesson", "retry the upload with backoff", confidence=0.9)
        store.record("lesson", "retry the upload with backoff", confidence=0.2)
        assert ids(store, "upload backoff")[0] == first


def test_scoring_a_limit_applies_after_the_variant_ranks() -> None:
    store = ScoringModel(parse_scoring("confidence=0"))
    store.record("lesson", "retry the upload with backoff", confidence=0.9)
    newest = store.record("lesson", "retry the upload with backoff", confidence=0.2)
    assert [item.record.id for item in store.search("upload", limit=1).results] == [newest]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nearness", "unknown scoring variant 'nearness'"),
        ("anchor", "needs a finite number of at least 0, not ''"),
        ("anchor=-1", "needs a finite number of at least 0, not '-1'"),
        ("confidence=nan", "not 'nan'"),
        ("proximity+proximity=2", "given twice"),
    ],
)
def test_scoring_a_bad_variant_is_refused_naming_the_part(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_scoring(text)


def test_scoring_names_read_back_as_the_same_variant() -> None:
    for text in ("bm25", "proximity", "proximity=0.5+anchor=2", "confidence=0.75"):
        scoring = parse_scoring(text)
        assert parse_scoring(scoring.name) == scoring
    assert Scoring().name == "bm25"


def test_scoring_a_variant_needs_the_model_store(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="needs --store memory"):
        evaluate(coding(), ["search"], scoring="proximity=1", timing=False)
    assert cli_main(["eval", "coding", "--scoring", "proximity", "--arms", "search"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert "--scoring proximity=1 needs --store memory" in captured.err
    assert cli_main(["eval", "coding", "--scoring", "near", "--store", "memory"]) == 2
    assert "unknown scoring variant 'near'" in capsys.readouterr().err


def test_scoring_records_of_no_weighted_length_rank_without_dividing_by_zero() -> None:
    store = ScoringModel(parse_scoring("anchor=0+proximity"))
    store.record("lesson", "the", anchor="py:io/writer.py::Writer")
    both = store.record("lesson", "of the", anchor="py:io/writer.py::flush_writer")
    # BM25F gives anchor terms nothing; proximity still counts the two words side by side.
    assert ids(store, "writer flush") == [both]
