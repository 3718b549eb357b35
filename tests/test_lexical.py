"""The search rules of roteiro_memory.lexical and the model store's search."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roteiro_memory import lexical
from roteiro_memory.errors import Unsupported
from roteiro_memory.results import GraphNode
from roteiro_memory.store import DEFAULT_CAPABILITIES
from roteiro_memory.stores.model import ModelStore


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("py:app/retry.py::Retry.run", ("py", "app", "retry", "py", "retry", "run")),
        ("cache_sweep", ("cach", "sweep", "cachesweep")),
        ("CacheSweep", ("cach", "sweep", "cachesweep")),
        ("HTTPServer", ("http", "server", "httpserver")),
        ("get_hookimpls", ("get", "hookimpl", "gethookimpl")),
        ("hook-caller", ("hook", "caller", "hookcaller")),
        ("Utf8Decoder", ("utf8", "decoder", "utf8decoder")),
        ("Retry.run", ("retry", "run")),
        ("src/app/retry.py", ("src", "app", "retry", "py")),
        (
            "TimeoutError: timed out after 3 attempts",
            ("timeout", "error", "timeouterror", "tim", "3", "attempt"),
        ),
        ("The caches were cached while caching", ("cach", "cach", "cach")),
        ("café naïve", ("café", "naïve")),
    ],
)
def test_tokenizer_splits_identifiers_paths_errors_and_prose(
    text: str, terms: tuple[str, ...]
) -> None:
    assert lexical.TOKENIZER.terms(text) == terms


def test_previous_tokenizer_keeps_camel_case_whole() -> None:
    previous = lexical.Tokenizer(
        split_case=False, split_digits=False, keep_joined=False, join_query=False
    )
    assert previous.name == "punct+fold+stop+stem"
    assert previous.terms("CacheSweep HTTPServer cache_sweep") == (
        "cachesweep",
        "httpserver",
        "cach",
        "sweep",
    )


def test_raw_tokenizer_keeps_whitespace_chunks_as_written() -> None:
    raw = lexical.Tokenizer(**dict.fromkeys(lexical.SWITCHES.values(), False))
    assert raw.terms("Retry.run  the cache_sweep") == ("Retry.run", "the", "cache_sweep")
    assert raw.name == "raw"


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("retries", "retry"),
        ("classes", "class"),
        ("running", "run"),
        ("call", "call"),
        ("thing", "thing"),
        ("use", "use"),
        ("Caches", "Caches"),
        ("v2", "v2"),
    ],
)
def test_stem_strips_one_suffix_and_leaves_other_tokens(word: str, stem: str) -> None:
    assert lexical.stem(word) == stem


def test_idf_is_positive_even_for_a_term_in_every_record() -> None:
    assert lexical.idf(2, 2) == pytest.approx(math.log(1.2))
    assert all(lexical.idf(n, 10) > 0 for n in range(11))


def test_bm25_numbers_match_the_formula_by_hand() -> None:
    docs = [
        lexical.Document(1, ("retry", "retry", "backof")),
        lexical.Document(2, ("retry", "giv")),
        lexical.Document(3, ("backof", "jitter")),
    ]
    ranked = lexical.rank("retry", docs)
    idf = math.log(1 + 1.5 / 2.5)
    norm = 1.2 * (0.25 + 0.75 * (3 / (7 / 3)))
    assert [r.id for r in ranked] == [1, 2]
    assert ranked[0].relevance == pytest.approx(idf * 4.4 / (2 + norm), abs=1e-12)


def test_relevance_sums_terms_in_code_point_order() -> None:
    assert lexical.query_terms("zeta alpha zeta Mid") == (
        "alpha",
        "alphazeta",
        "mid",
        "zeta",
        "zetaalpha",
        "zetamid",
    )


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "eps"])
_RECORDS = st.lists(
    st.tuples(st.dictionaries(_WORDS, st.integers(1, 4), min_size=1), st.integers(1, 40)),
    min_size=1,
    max_size=8,
)


@given(records=_RECORDS, query=st.lists(_WORDS, min_size=1, unique=True))
def test_weighing_postings_together_gives_each_record_its_own_relevance(
    records: list[tuple[dict[str, int], int]], query: list[str]
) -> None:
    """A search weighs a cell's records a term at a time; each record's value
    must be, to the bit, the one :func:`lexical.weigh` gives it alone."""
    terms = sorted(query)
    stats = lexical.CorpusStats(
        len(records) + 3,
        sum(length for _, length in records) + 60,
        {w: 1 + sum(w in counts for counts, _ in records) for w in terms},
    )
    postings = [
        (t, [(n, counts[t], length) for n, (counts, length) in enumerate(records) if t in counts])
        for t in terms
    ]
    together = lexical.weigh_postings(postings, stats, weights={})
    for n, (counts, length) in enumerate(records):
        alone = lexical.weigh(terms, counts, length, stats)
        assert together.get(n, 0.0) == alone
        assert (n in together) == (alone > 0.0)


def _store_with_pair() -> tuple[ModelStore, int, int]:
    store = ModelStore()
    old = store.record("decision", "use library alpha for retry")
    new = store.record("decision", "use library beta for retry", supersedes=old)
    return store, old, new


def test_search_never_returns_superseded() -> None:
    store, old, new = _store_with_pair()
    assert [r.record.id for r in store.search("alpha retry").results] == [new]
    store.forget(new)
    assert [r.record.id for r in store.search("alpha retry").results] == [old]


def test_search_never_mutates_the_store() -> None:
    store, _, _ = _store_with_pair()
    store.put_nodes([GraphNode("fn:a", blob="b1")])
    store.record("lesson", "retry upload", anchor="fn:a")
    store.put_nodes([GraphNode("fn:a", blob="b2")])
    before = store.snapshot()
    store.search("retry", decay="linear", applicable_only=True, limit=1)
    assert store.snapshot() == before


def test_search_demotes_a_drifted_record_and_never_drops_it() -> None:
    store = ModelStore()
    store.put_nodes([GraphNode("fn:x", blob="b1"), GraphNode("fn:y", blob="b1")])
    drifted = store.record("lesson", "retry budget", anchor="fn:x")
    valid = store.record("lesson", "retry budget", anchor="fn:y")
    store.put_nodes([GraphNode("fn:x", blob="b2")])
    results = store.search("retry").results
    assert [r.record.id for r in results] == [valid, drifted]
    assert results[0].relevance == results[1].relevance
    assert results[1].score == pytest.approx(results[0].score / 4)


def test_search_is_byte_identical_twice_with_decay_none() -> None:
    store, _, _ = _store_with_pair()
    store.record("pattern", "retry with backoff", confidence=0.7)
    assert store.search("retry backoff").to_json() == store.search("retry backoff").to_json()


def test_search_results_all_have_positive_relevance() -> None:
    store = ModelStore()
    for body in ("retry upload", "nothing here", "retry", "upload twice"):
        store.record("lesson", body)
    found = store.search("retry upload the")
    assert found.terms == ["retry", "retryupload", "upload"]
    assert len(found.results) == 3
    assert all((r.relevance or 0) > 0 for r in found.results)


def test_store_without_term_index_refuses_search_and_leaves_it_undeclared(tmp_path: Path) -> None:
    from roteiro_memory.store import Store
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    class NoIndex(SQLiteStore):
        """A backend that keeps the contract's default: no term index."""

        capabilities = DEFAULT_CAPABILITIES
        search = Store.search  # type: ignore[assignment]  # the contract's refusal

    assert "search" not in DEFAULT_CAPABILITIES
    assert "search" in SQLiteStore.capabilities
    assert "search" in ModelStore.capabilities
    with NoIndex(tmp_path / "memory.db") as store, pytest.raises(Unsupported, match="'search'"):
        store.search("retry")


def _runs_by_category(text: str, split_punctuation: bool) -> list[str]:
    """PROTOCOL's rule, character by character: maximal runs of letters,
    marks and numbers (or of non-White_Space characters)."""
    import unicodedata

    from roteiro_memory.semantics import WHITE_SPACE

    runs: list[str] = []
    run = ""
    for char in text:
        if unicodedata.category(char)[0] in "LMN" if split_punctuation else char not in WHITE_SPACE:
            run += char
        elif run:
            runs.append(run)
            run = ""
    return [*runs, run] if run else runs


@given(text=st.text(alphabet=st.characters(max_codepoint=0x7F)), split=st.booleans())
def test_ascii_text_splits_into_the_runs_the_categories_give(text: str, split: bool) -> None:
    assert lexical._chunks(text, split) == _runs_by_category(text, split)


@given(text=st.text(), split=st.booleans())
def test_any_text_splits_into_the_runs_the_categories_give(text: str, split: bool) -> None:
    assert lexical._chunks(text, split) == _runs_by_category(text, split)


@given(text=st.text(alphabet=st.characters(max_codepoint=0x7F)))
def test_ascii_identifiers_are_the_ones_read_character_by_character(text: str) -> None:
    assert lexical._identifiers(text) == lexical._identifiers_by_character(text)


@given(
    text=st.text(alphabet=st.characters(max_codepoint=0x7F)) | st.text(alphabet="aB_-- .Z9\n\tx")
)
def test_ascii_text_has_the_terms_of_its_identifiers_read_character_by_character(
    text: str,
) -> None:
    # ASCII text is cut into pieces at C speed; its terms must be those of
    # the identifiers the general rule finds, with the memo cold and warm.
    tokenizer = lexical.TOKENIZER
    expected = tuple(
        term
        for identifier in lexical._identifiers_by_character(text)
        for term in lexical._unit_terms(identifier, tokenizer)
    )
    assert lexical._tokenize(tokenizer)(text) == expected
    assert tokenizer.terms(text) == expected


@given(text=st.text(alphabet="ab_- .Zé9"))
def test_an_identifier_is_word_runs_joined_by_connectors(text: str) -> None:
    found = lexical._identifiers_by_character(text)
    assert "".join(found).replace("_", "").replace("-", "") == "".join(
        _runs_by_category(text, True)
    )
    assert all(lexical._is_word_char(i[0]) and lexical._is_word_char(i[-1]) for i in found)


@pytest.mark.parametrize(
    ("word", "parts"),
    [
        ("cacheSweep", ("cache", "Sweep")),
        ("HTTPServer", ("HTTP", "Server")),
        ("Utf8Decoder", ("Utf8", "Decoder")),
        ("HTTP2Server", ("HTTP2", "Server")),
        ("v2", ("v2",)),
        ("sha256", ("sha256",)),
        ("a1b2", ("a1b2",)),
        ("ÉtatCivil", ("État", "Civil")),
        ("lower", ("lower",)),
    ],
)
def test_word_parts_cut_where_case_or_digits_change(word: str, parts: tuple[str, ...]) -> None:
    assert lexical.word_parts(word) == parts


def test_identifiers_said_as_words_meet_their_record_and_exact_still_leads() -> None:
    store = ModelStore()
    wanted = store.record("lesson", "PluginManager caches get_hookimpls results per HookCaller")
    words = store.record("lesson", "the plugin manager and the hook caller are documented")
    store.record("lesson", "a manager for every plugin, a caller for every hook")
    for query in ("plugin manager", "hook caller", "hook impls", "get hookimpls"):
        assert wanted in [r.record.id for r in store.search(query).results], query
    for query in ("PluginManager", "HookCaller", "get_hookimpls", "gethookimpls"):
        assert store.search(query).results[0].record.id == wanted, query
    assert store.search("plugin manager").results[0].record.id in (wanted, words)
