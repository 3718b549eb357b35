"""The evaluation harness: exact metrics, byte-identical runs, the public
dataset adapters on fixtures generated here in their shapes, the plot, and
the coding baseline gate."""

from __future__ import annotations

import hashlib
import json
import random
import warnings
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from roteiro_memory.evaluation import report
from roteiro_memory.evaluation.__main__ import main, parse_tokenizer
from roteiro_memory.evaluation.datasets.codebase import codebase
from roteiro_memory.evaluation.datasets.coding import coding
from roteiro_memory.evaluation.datasets.jsonfile import DatasetFileError
from roteiro_memory.evaluation.datasets.locomo import locomo
from roteiro_memory.evaluation.datasets.longmemeval import longmemeval
from roteiro_memory.evaluation.metrics import Aggregate, QueryOutcome
from roteiro_memory.evaluation.run import evaluate, split_body

BASELINES = Path(__file__).resolve().parent.parent / "roteiro_memory/evaluation/baseline"
BASELINE = BASELINES / "coding.json"


def _rerecord(name: str) -> str:
    return (
        f"python -m roteiro_memory.evaluation {name} --json --no-timing "
        f"--output roteiro_memory/evaluation/baseline/{name}.json"
    )


RERECORD = _rerecord("coding")
WORDS = ("alpha", "bravo", "cedar", "delta", "ember", "fjord")
WORDS += ("grove", "harbor", "island", "juniper", "kettle", "lantern")


def _outcome(ranked: tuple[str, ...], gold: set[str]) -> QueryOutcome:
    return QueryOutcome(ranked, frozenset(gold), {1: 0, 3: 0, 5: 0, 10: 0}, 0.0)


def test_metrics_are_exact_fractions() -> None:
    agg = Aggregate()
    agg.add(_outcome(("x", "g1", "y"), {"g1", "g2", "g3"}))
    agg.add(_outcome((), {"g"}))
    agg.add(_outcome(("g",), {"g"}))
    m = agg.metrics()
    assert m["recall_any@1"] == Fraction(1, 3)
    assert m["recall_any@3"] == Fraction(2, 3)
    assert m["recall_all@10"] == Fraction(1, 3)
    assert m["evidence_recall@3"] == Fraction(1, 3) * (Fraction(1, 3) + 0 + 1)
    assert m["mrr@10"] == Fraction(1, 3) * (Fraction(1, 2) + 0 + 1)
    assert m["empty"] == Fraction(1, 3)


def test_ndcg_uses_the_log2_rank_plus_one_discount() -> None:
    single = _outcome(("x", "g"), {"g"})
    assert single.ndcg(3) == pytest.approx(1 / 1.584962500721156)


def test_coding_run_is_byte_identical_without_timing() -> None:
    first = report.to_json(evaluate(coding(5), timing=False))
    assert first == report.to_json(evaluate(coding(5), timing=False))
    assert first != report.to_json(evaluate(coding(6), timing=False))


def test_coding_targets_hold() -> None:
    """The issue's targets: paraphrase recall_any@5 >= 0.9 and nothing empty for search."""
    result = evaluate(coding(), arms=["search", "bm25s"], timing=False)
    search = result["arms"]["search"]
    assert Fraction(*search["paraphrase"]["recall_any@5"]) >= Fraction(9, 10)
    assert search["all"]["empty"] == [0, 1]
    for metric in ("recall_any@5", "mrr@10"):
        assert Fraction(*search["all"][metric]) >= Fraction(*result["arms"]["bm25s"]["all"][metric])


def test_coding_baseline_has_not_moved() -> None:
    recorded = BASELINE.read_text(encoding="utf-8")
    now = report.to_json(evaluate(coding(), timing=False))
    assert now == recorded, f"the coding numbers moved; if that is intended, re-record: {RERECORD}"


def test_duplicates_count_the_lines_that_repeat_one_ranked_above() -> None:
    outcome = QueryOutcome(
        ("g", "x"), frozenset({"g"}), {1: 0, 3: 0, 5: 0, 10: 0}, 0.0,
        duplicates={1: 0, 3: 1, 5: 2, 10: 2}, lines=4,
    )  # fmt: skip
    agg = Aggregate()
    agg.add(outcome)
    agg.add(_outcome(("g",), {"g"}))
    m = agg.metrics()
    assert m["duplicates@1"] == Fraction(0, 2)
    assert m["duplicates@5"] == Fraction(2, 4)
    assert m["recall_any@1"] == 1


def test_codebase_holds_the_distractors_a_grown_store_has() -> None:
    haystack = next(codebase().haystacks)
    items = (*haystack.items, *haystack.later_items)
    kinds = {item.key.split("-")[0] for item in items}
    assert len(items) >= 5000
    assert len(haystack.queries) >= 300
    assert {"drifted", "decision", "repeat", "conflict", "other", "note"} <= kinds
    assert {q.style for q in haystack.queries} == {"identifier", "words", "paraphrase", "error"}
    assert sum(q.style == "words" for q in haystack.queries) >= 100
    keys = {item.key for item in items}
    assert all(item.repeats in keys for item in items if item.repeats is not None)
    assert all(q.gold <= keys for q in haystack.queries)


def test_codebase_baseline_has_not_moved() -> None:
    """Recorded on SQLite, compared on the model: the same numbers, byte for
    byte, from both stores over five thousand records."""
    recorded = (BASELINES / "codebase.json").read_text(encoding="utf-8")
    result = evaluate(codebase(), store="memory", timing=False)
    now = report.to_json(result)
    assert now == recorded, f"the codebase numbers moved; if intended: {_rerecord('codebase')}"
    # Repeats are written, and shown below the record they repeat.
    assert Fraction(*result["arms"]["search"]["all"]["duplicates@5"]) > 0


def _any5(result: dict[str, Any], arm: str, style: str) -> Fraction:
    return Fraction(*result["arms"][arm][style]["recall_any@5"])


def test_identifiers_said_as_words_are_found_on_codebase() -> None:
    """The issue's target, identifier-as-words queries at recall_any@5 >= 0.95,
    and search at or above the yardstick in every style but paraphrase, where
    two lessons with the highest relevance are demoted by their confidence
    (docs/eval.md)."""
    baseline = json.loads((BASELINES / "codebase.json").read_text(encoding="utf-8"))
    assert _any5(baseline, "search", "words") >= Fraction(95, 100)
    for style in ("all", "identifier", "words", "error"):
        assert _any5(baseline, "search", style) >= _any5(baseline, "bm25s", style), style
    assert baseline["search"]["tokenizer"] == "punct+case+digit+joined+pairs+fold+stop+stem"


# --- generated fixtures in the public shapes ---------------------------------


def _sentence(rng: random.Random, n: int = 6) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _locomo_fixture(path: Path, seed: int = 1) -> None:
    rng = random.Random(seed)
    conversations: list[dict[str, Any]] = []
    for c in range(2):
        convo: dict[str, Any] = {"speaker_a": "Ana", "speaker_b": "Bo"}
        for s in (1, 3):  # non-contiguous session numbers
            convo[f"session_{s}"] = [
                {
                    "speaker": "Ana" if t % 2 else "Bo",
                    "dia_id": f"D{s}:{t}",
                    "text": f"{_sentence(rng)} marker{c}{s}{t}",
                }
                for t in range(1, 5)
            ]
            convo[f"session_{s}_date_time"] = "1:56 pm on 8 May, 2023"
        convo["session_3"][0]["blip_caption"] = "a photo of a kettle"
        qa = [
            {
                "question": f"what about marker{c}11",
                "answer": 7,
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": f"marker{c}32 then marker{c}33",
                "answer": "x",
                "evidence": ["D3:2; D3:3", "D9:9"],
                "category": 1,
            },
            {"question": "trick", "adversarial_answer": "no", "evidence": ["D1:2"], "category": 5},
            {"question": "nothing", "answer": "n", "evidence": [], "category": 2},
        ]
        conversations.append(
            {
                "sample_id": f"conv-{c}",
                "conversation": convo,
                "qa": qa,
                "observation": {},
                "session_summary": {},
                "event_summary": {},
            }
        )
    path.write_text(json.dumps(conversations), encoding="utf-8")


def _longmemeval_fixture(path: Path, seed: int = 2) -> None:
    rng = random.Random(seed)
    instances = []
    for q in range(3):
        ids = [f"sharegpt_{q}_{i}" for i in range(3)] + [f"answer_{q}_1"]
        sessions = []
        for sid in ids:
            turns: list[dict[str, Any]] = []
            for t in range(4):
                role = "user" if t % 2 == 0 else "assistant"
                turn: dict[str, Any] = {"role": role, "content": _sentence(rng)}
                if sid.startswith("answer_"):
                    turn["has_answer"] = role == "user" and t == 2
                    if turn["has_answer"]:
                        turn["content"] += f" secret{q}"
                turns.append(turn)
            sessions.append(turns)
        qid = f"q{q}" + ("_abs" if q == 2 else "")
        instances.append(
            {
                "question_id": qid,
                "question_type": "single-session-user",
                "question": f"where is secret{q}",
                "answer": "here",
                "question_date": "2023/05/30 (Tue) 23:40",
                "haystack_session_ids": ids,
                "haystack_dates": ["2023/05/01 (Mon) 10:00"] * 4,
                "haystack_sessions": sessions,
                "answer_session_ids": [f"answer_{q}_1"],
            }
        )
    path.write_text(json.dumps(instances), encoding="utf-8")


def test_locomo_adapter_on_a_generated_fixture(tmp_path: Path) -> None:
    path = tmp_path / "locomo10.json"
    _locomo_fixture(path)
    result = evaluate(locomo(path), timing=False)
    data = result["dataset"]
    assert data["licence"] == "CC BY-NC 4.0"
    assert data["source"] == {
        "file": "locomo10.json",
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    }
    assert data["queries"] == 4
    assert data["excluded"] == {
        "adversarial (category 5)": 2,
        "evidence ids naming no turn": 2,
        "no resolvable evidence": 2,
    }
    assert result["arms"]["search"]["single-hop"]["recall_any@1"] == [1, 1]
    assert result["arms"]["search"]["multi-hop"]["recall_all@3"] == [1, 1]
    assert "marker" not in report.to_json(result)  # aggregates only, no dataset text


@pytest.mark.parametrize("text", ["", "the and of"], ids=["empty", "stopwords"])
def test_a_haystack_holding_no_word_ranks_nothing_in_every_arm(tmp_path: Path, text: str) -> None:
    """bm25s cannot index documents without a token (and divides by their
    mean length, zero): such a haystack ranks nothing, as a store does."""
    turns = [{"speaker": "", "dia_id": f"D1:{n}", "text": text} for n in (1, 2)]
    qa = [{"question": "where is the cache", "evidence": ["D1:1"], "category": 4}]
    conversation = {"sample_id": "s", "conversation": {"session_1": turns}, "qa": qa}
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([conversation]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = evaluate(locomo(path), timing=False)
    for arm in ("filter", "search", "bm25s"):
        assert result["arms"][arm]["all"]["empty"] == [1, 1], arm


def test_longmemeval_adapter_on_a_generated_fixture(tmp_path: Path) -> None:
    path = tmp_path / "longmemeval_s_cleaned.json"
    _longmemeval_fixture(path)
    for granularity in ("session", "turn"):
        result = evaluate(longmemeval(path, granularity), timing=False)
        assert result["dataset"]["excluded"] == {"abstention (_abs)": 1}
        assert result["dataset"]["queries"] == 2
        assert result["arms"]["search"]["all"]["recall_any@1"] == [1, 1]
        assert result["arms"]["filter"]["all"]["recall_any@1"] == [0, 1]
        assert "secret" not in report.to_json(result)


def test_public_dataset_needs_an_existing_path(tmp_path: Path) -> None:
    with pytest.raises(DatasetFileError, match="no such file"):
        list(locomo(tmp_path / "absent.json").haystacks)
    assert main(["locomo"]) == 2


def test_long_bodies_are_split_under_the_byte_limit() -> None:
    pieces = split_body("word " * 30, limit=20)
    assert all(len(p.encode()) <= 20 for p in pieces)
    assert " ".join(pieces).split() == ["word"] * 30


def test_command_line_writes_json_and_a_plot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plot = tmp_path / "recall.png"
    assert main(["coding", "--seed", "3", "--json", "--plot", str(plot)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert set(printed["arms"]) == {"filter", "search", "bm25s"}
    assert "timing" in printed
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["coding", "--arms", "search"]) == 0
    assert "search" in capsys.readouterr().out


def test_a_plot_that_cannot_be_written_is_refused_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A device under --plot is refused before the run, as ``export -o``
    refuses it; a full disk while it is written is the output failing, as
    under --output (``test_evaluation_output``)."""
    from roteiro_memory.cli.main import main as cli

    assert cli(["eval", "coding", "--seed", "3", "--no-timing", "--plot", "/dev/full"]) == 2
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1
    assert said[0].startswith("roteiro-memory: error: --plot /dev/full: it is a character device")


def test_tokenizer_names_round_trip_and_bad_ones_are_named() -> None:
    assert parse_tokenizer("punct+fold+stem").name == "punct+fold+stem"
    assert parse_tokenizer("raw").name == "raw"
    with pytest.raises(Exception, match="'stemm'"):
        parse_tokenizer("punct+stemm")


def test_the_arms_rank_the_same_on_sqlite_and_the_model(tmp_path: Path) -> None:
    """The default store is SQLite because its search and filter results are
    the model's: the whole result, JSON byte for byte, is the same."""
    for name, dataset in (
        ("coding", lambda: coding()),
        ("locomo", lambda: locomo(tmp_path / "locomo10.json")),
    ):
        if name == "locomo":
            _locomo_fixture(tmp_path / "locomo10.json")
        on_sqlite = report.to_json(evaluate(dataset(), ["filter", "search"], timing=False))
        on_model = report.to_json(
            evaluate(dataset(), ["filter", "search"], store="memory", timing=False)
        )
        assert on_sqlite == on_model, name


def test_a_tokenizer_variant_needs_the_model_store(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="--store memory"):
        evaluate(coding(), ["search"], tokenizer=parse_tokenizer("punct+fold"), timing=False)
    with pytest.raises(SystemExit) as exited:
        main(["coding", "--tokenizer", "punct+fold", "--arms", "search"])
    assert exited.value.code == 2
    assert "--store memory" in capsys.readouterr().err
    assert (
        main(
            [
                "coding",
                "--tokenizer",
                "punct+fold",
                "--arms",
                "search",
                "--store",
                "memory",
                "--no-timing",
            ]
        )
        == 0
    )


def test_a_question_a_search_refuses_is_left_out_of_every_arm_and_counted(
    tmp_path: Path,
) -> None:
    """A question of more than 1,024 distinct terms, which the protocol's
    search refuses whole, cannot be scored side by side: as the adapters
    leave out what cannot be scored, it is left out of every arm and counted
    under ``excluded``, and the run goes on."""
    turns = [{"speaker": "A", "dia_id": "D1:1", "text": "the cat is named Miso"}]
    long = " ".join(f"w{i}x" for i in range(1100))
    qa = [
        {"question": "cat named", "evidence": ["D1:1"], "category": 4},
        {"question": long, "evidence": ["D1:1"], "category": 4},
    ]
    path = tmp_path / "locomo10.json"
    conversation = {"sample_id": "s", "conversation": {"session_1": turns}, "qa": qa}
    path.write_text(json.dumps([conversation]))
    result = evaluate(locomo(path), timing=False)
    assert result["dataset"]["queries"] == 1
    assert result["dataset"]["excluded"] == {
        "question of more than 1,024 distinct terms (a search refuses it)": 1
    }
    for arm in ("filter", "search", "bm25s"):
        assert result["arms"][arm]["all"]["queries"] == 1, arm
