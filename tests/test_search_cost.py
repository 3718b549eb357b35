"""A search's cost is bounded by its words: terms no live record holds read no
postings, a repeated word counts once, and a query of more distinct terms than
``lexical.MAX_QUERY_TERMS`` is refused whole, in one line, on every surface."""

from __future__ import annotations

import itertools
import json
import string
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roteiro_memory import lexical
from roteiro_memory.errors import BadRequest
from roteiro_memory.store import Store
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.sql import cellpostings, index, lexsearch
from roteiro_memory.stores.sqlite.store import SQLiteStore


def unknown_words(count: int) -> list[str]:
    """``count`` distinct words no record holds, all letters, each ending in
    ``x`` so that no stemming rule touches them."""
    pairs = itertools.product(string.ascii_lowercase, repeat=3)
    return [f"nowhere{''.join(p)}x" for p in itertools.islice(pairs, count)]


def filled(store: Store) -> Store:
    for n in range(300):
        store.record("lesson", f"migration timeout {n}" if n % 3 else f"cache sweep {n}")
    return store


@pytest.fixture(params=["model", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    made: Store = ModelStore() if request.param == "model" else SQLiteStore(tmp_path / "m.db")
    yield filled(made)
    made.close()


def ranked(store: Store, query: str) -> list[tuple[int, float]]:
    return [(r.record.id, r.score) for r in store.search(query, limit=10).results]


def test_terms_no_record_holds_read_no_postings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = filled(SQLiteStore(tmp_path / "m.db"))
    read: list[str] = []
    original = lexsearch.read_cells

    def spy(conn: Any, d: Any, cells: Any, terms: Any, closed: Any, *rest: Any) -> Any:
        read.extend([*terms, *closed])
        return original(conn, d, cells, terms, closed, *rest)

    monkeypatch.setattr(lexsearch, "read_cells", spy)
    plain = ranked(store, "migration")
    assert read, "the known word's postings are read"
    read.clear()
    padded = ranked(store, " ".join(["migration", *unknown_words(300)]))
    assert padded == plain
    assert read
    assert not [term for term in read if "nowhere" in term]


def test_a_search_reads_only_the_recent_records_holding_one_of_its_terms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live store keeps up to ``index.RECENT_RECORDS`` records unmerged: the
    database picks those holding a query term, so a rare term's search does
    not read every one; a query of more terms than
    ``lexsearch.RECENT_FILTER_TERMS`` reads them all, and both answer as
    the model does."""
    store = filled(SQLiteStore(tmp_path / "m.db"))
    model = filled(ModelStore())
    (recent,) = store.connection.execute("SELECT COUNT(*) FROM memory_recent").fetchone()
    assert 0 < recent < index.RECENT_RECORDS
    caching = [n for n in range(300 - recent, 300) if n % 3 == 0]  # filled's "cache sweep n"
    assert caching
    read: list[str] = []
    original = index.terms_finder

    def spy(terms: Any) -> Any:
        find = original(terms)

        def counted(text: str) -> Any:
            read.append(text)
            return find(text)

        return counted

    monkeypatch.setattr(index, "terms_finder", spy)
    many = " ".join(["cache", *unknown_words(lexsearch.RECENT_FILTER_TERMS)])
    for query, reads in (("cache", len(caching)), ("nowhereaaax", 0), (many, recent)):
        read.clear()
        assert ranked(store, query) == ranked(model, query), query
        assert len(read) == reads, query


def test_words_no_record_holds_change_no_result(store: Store) -> None:
    assert ranked(store, " ".join([*unknown_words(300), "timeout"])) == ranked(store, "timeout")
    assert ranked(store, " ".join(unknown_words(300))) == []


def test_a_repeated_word_counts_once(store: Store) -> None:
    assert ranked(store, "timeout " * 10_000) == ranked(store, "timeout")


def test_a_query_beyond_the_cap_is_refused_whole(store: Store) -> None:
    words = unknown_words(lexical.MAX_QUERY_TERMS + 1)
    with pytest.raises(BadRequest, match=r"distinct terms; a search takes at most 1,024"):
        store.search(" ".join(words))
    assert ranked(store, " ".join([*words[:2], "timeout"])) == ranked(store, "timeout")


@pytest.mark.parametrize("fault", [{"kind": "nope"}, {"decay": "nope"}])
def test_a_query_beyond_the_cap_is_bad_request_before_a_bad_decay_or_kind(
    store: Store, fault: dict[str, str]
) -> None:
    """BadRequest wins over every other kind [P-bad-request-first], on every backend."""
    words = unknown_words(lexical.MAX_QUERY_TERMS + 1)
    with pytest.raises(BadRequest, match=r"distinct terms"):
        store.search(" ".join(words), **fault)


def test_the_command_line_refuses_a_query_beyond_the_cap_in_one_line(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    filled(SQLiteStore(db)).close()
    words = unknown_words(lexical.MAX_QUERY_TERMS + 1)
    base = [sys.executable, "-m", "roteiro_memory", "--db", str(db), "recall", "--no-sync"]
    text = subprocess.run([*base, *words], capture_output=True, text=True, cwd=tmp_path)
    assert (text.returncode, text.stdout) == (2, "")
    assert text.stderr.count("\n") == 1
    assert "at most 1,024" in text.stderr
    envelope = subprocess.run(
        [*base, "--json", *words], capture_output=True, text=True, cwd=tmp_path
    )
    assert envelope.returncode == 2
    answer = json.loads(envelope.stdout)
    assert answer["ok"] is False
    assert answer["error"]["kind"] == "BadRequest"


def _whole_query_terms(query: str, tokenizer: lexical.Tokenizer) -> set[str]:
    """The query's terms as the whole text tokenized at once gives them: the
    reference :func:`lexical.query_terms` reaches word by word."""
    terms = set(tokenizer.terms(query))
    if tokenizer.join_query:
        units = lexical._units(query, tokenizer)
        joined = ["".join(lexical._parts(unit, tokenizer)) for unit in units]
        pairs = [
            one + other
            for one, other in itertools.pairwise(joined)
            if one.lower() not in lexical.STOP_WORDS and other.lower() not in lexical.STOP_WORDS
        ]
        terms.update(lexical._finish(pairs, tokenizer))
    return terms


QUERY_WORDS = st.sampled_from(
    [
        "hook",
        "Impls",
        "get_hookimpls",
        "HookCaller",
        "the",
        "of",
        "—",
        "...",
        "x-y",
        "-",
        "_x_",
        "Utf8Decoder",
        "utf",
        "8",
        "naïve",
        "Ärger",
        "foo\x1cbar",
        "a\u00a0b",
        "PluginManager",
    ]
)
QUERY_GAPS = st.sampled_from(
    [" ", "  ", "\t", "\n", ", ", " - ", "\u2003", "\x1c", "::", "/", "\x85"]
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(QUERY_WORDS, QUERY_GAPS), max_size=12),
    st.sampled_from(
        [
            lexical.TOKENIZER,
            lexical.Tokenizer(split_punctuation=False),
            lexical.Tokenizer(keep_joined=False),
            lexical.Tokenizer(split_case=False, split_digits=False),
            lexical.Tokenizer(split_case=False),
        ]
    ),
)
def test_query_terms_word_by_word_are_the_whole_querys(
    parts: list[tuple[str, str]], tokenizer: lexical.Tokenizer
) -> None:
    query = "".join(word + gap for word, gap in parts)
    assert set(lexical.query_terms(query, tokenizer)) == _whole_query_terms(query, tokenizer)


ONE_TERM_A_WORD = lexical.Tokenizer(join_query=False)
"""A tokenizer under which each of :func:`unknown_words` is one term, each
word's its own."""


def test_query_terms_of_many_words_are_the_whole_querys() -> None:
    """Words are tokenized some hundreds at a time; every term of every
    batch is the query's, and a word repeated across batches counts once."""
    words = unknown_words(1_000)
    query = " ".join([*words, *reversed(words)])
    whole = set(ONE_TERM_A_WORD.terms(query))
    assert len(whole) == 1_000
    assert set(lexical.query_terms(query, ONE_TERM_A_WORD)) == whole
    mixed = " ".join(f"{word} Hook_{n % 7}" for n, word in enumerate(words[:300]))
    assert set(lexical.query_terms(mixed)) == _whole_query_terms(mixed, lexical.TOKENIZER)


def test_a_query_at_the_cap_is_searched_and_one_term_more_is_refused() -> None:
    words = unknown_words(lexical.MAX_QUERY_TERMS + 1)
    at_the_cap = " ".join(words[:-1] * 2)
    assert len(lexical.query_terms(at_the_cap, ONE_TERM_A_WORD)) == lexical.MAX_QUERY_TERMS
    with pytest.raises(BadRequest, match=r"more than 1,024 distinct terms"):
        lexical.query_terms(" ".join(words), ONE_TERM_A_WORD)


def test_a_query_far_beyond_the_cap_is_refused_by_the_cap_not_its_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Refusing reads words only until the cap is passed, so the message
    names the cap; the words after it are never tokenized."""
    tokenized: list[int] = []
    original = lexical._terms

    def counting(text: str, tokenizer: lexical.Tokenizer) -> tuple[str, ...]:
        tokenized.append(len(text.split()))
        return original(text, tokenizer)

    monkeypatch.setattr(lexical, "_terms", counting)
    words = unknown_words(12_000)
    with pytest.raises(BadRequest, match=r"^the search query holds more than 1,024 distinct"):
        lexical.query_terms(" ".join(words), ONE_TERM_A_WORD)
    assert lexical.MAX_QUERY_TERMS < sum(tokenized) < 2 * lexical.MAX_QUERY_TERMS


@given(
    st.dictionaries(st.integers(0, 3 * 4096 + 100), st.integers(1, 70_000), min_size=1),
    st.data(),
)
def test_a_terms_segments_and_tail_give_its_postings_in_order(
    postings_of: dict[int, int], data: st.DataObject
) -> None:
    """A term's postings in a cell, some in segments (each a bitmap or a
    list, whichever is shorter, with its counts above 1) and the newest in
    its tail, read back as every posting in order of ordinal, and as those
    of any records asked for."""
    from roteiro_memory.stores.sql import postings, segments

    rows = sorted(postings_of.items())
    in_tail = data.draw(st.integers(0, min(len(rows), postings.TAIL_POSTINGS - 1)))
    if any(count > 65_535 for _, count in rows[len(rows) - in_tail :]):
        in_tail = 0  # a count too wide for a tail is in a segment
    closed, tail = rows[: len(rows) - in_tail], rows[len(rows) - in_tail :]
    held = cellpostings.Held("term", 7)
    size = postings.SEGMENT_ORDINALS
    for number in sorted({ordinal // size for ordinal, _ in closed}):
        part = [(o - number * size, c) for o, c in closed if o // size == number]
        blob = postings.encode_segment([o for o, _ in part], [c for _, c in part])
        assert segments.segment_postings(blob, number) == [(o + number * size, c) for o, c in part]
        held.segments.append((number, blob))
    if tail:
        held.tail = postings.tail_bytes(tail)
    assert held.every() == rows
    asked = data.draw(st.lists(st.integers(0, 3 * 4096 + 200), max_size=20))
    assert held.holding(asked) == [(o, postings_of[o]) for o in asked if o in postings_of]


@pytest.mark.parametrize("rare", [True, False])
def test_each_posting_a_search_decodes_is_counted_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rare: bool
) -> None:
    """The postings a search reports it decoded (what ``bench/search.py``
    quotes as read) are each counted once, whether the search scores every
    record of a rare term or bounds the cells of a common one, their
    postings in tails alone: a tail decoded twice is work done twice."""
    from roteiro_memory.store import MemoryWrite

    holders = 12 if rare else 60
    writes = [
        MemoryWrite("lesson", " ".join(["quokka", *[f"w{n}"] * (1 + n % 9)]), confidence=c)
        for n, c in zip(range(holders), itertools.cycle([0.2, 0.5, 0.9, None]), strict=False)
    ]
    monkeypatch.setattr(index, "RECENT_RECORDS", 1)  # every record in a cell
    with SQLiteStore(tmp_path / "m.db") as store:
        store.record_many(writes)
        before = cellpostings.decoded[0]
        assert len(store.search("quokka").results) == holders
        assert cellpostings.decoded[0] - before == holders
