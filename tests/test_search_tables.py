"""What PROTOCOL.md and conformance/ show of the tokenizer is what lexical.py does."""

from __future__ import annotations

import search_tables

from roteiro_memory import lexical
from roteiro_memory.suite.data import builtin_dir


def test_generated_search_files_are_what_the_tokenizer_makes() -> None:
    """``python tests/search_tables.py --write`` after changing the tokenizer."""
    assert search_tables.stale() == []


def test_the_stop_word_file_lists_the_117_words_lexical_drops() -> None:
    words = (builtin_dir() / "stop-words.txt").read_text(encoding="utf-8").split()
    assert words == sorted(words)
    assert set(words) == lexical.STOP_WORDS
    assert len(words) == 117


def test_the_word_case_checks_a_few_hundred_words() -> None:
    words = search_tables.words()
    assert len(words) >= 280
    assert len(set(words)) == len(words)
