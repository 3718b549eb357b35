"""Deliberately wrong readings of PROTOCOL's search section, for tests/test_search_variants.py.

Each variant is the in-memory model with one rule of ``memory.search`` read
another way -- the readings an implementer working from the page alone might
make: a shorter stop list, no case folding, stemming before the stop-word
test, the anchor path left unindexed, terms sorted by UTF-16 code units,
``log1p`` for ``ln(1 + x)``, another grouping.  The suite must fail each
(``LiteralTwoPointTwo`` aside: ``1.2 + 1.0`` is exactly the double ``2.2``,
so it computes the same bits and must pass).

A variant changes the tokenizer, the fields, the query's terms or the
arithmetic through the hooks of :class:`SearchVariant`; its search is the
model's own, run with those hooks in place of the lexical rules.
"""

from __future__ import annotations

import builtins
import contextlib
import math
import re
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

from roteiro_memory import lexical
from roteiro_memory import semantics as sem
from roteiro_memory.results import Recall
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.valueclass import replace

_RULES = {name: getattr(lexical, name) for name in ("document_terms", "query_terms", "combine")}
_SPLIT = replace(lexical.TOKENIZER, fold_case=False, stop_words=False, stem=False)
"""The tokenizer's first two steps only: identifiers, their parts and joined forms."""


def _protocol_with(**switches: bool) -> lexical.Tokenizer:
    """PROTOCOL's tokenizer with ``switches`` changed."""
    return replace(lexical.TOKENIZER, **switches)


def _stem(
    word: str,
    *,
    undouble: bool = True,
    keep_after: Callable[[str, str, str], bool] | None = None,
    every_rule: bool = False,
    drop_e: Callable[[str], bool] = lambda w: len(w) - 1 >= 3,
    vowels: str = "aeiou",
    ascii_only: bool = True,
) -> str:
    """:func:`lexical.stem` with each of its choices made a parameter."""
    letters = word.isascii() and word.isalpha() and word.islower()
    if not (letters if ascii_only else word.isalpha() and word.islower()):
        return word
    keep = keep_after or (lambda w, suffix, repl: len(w[: len(w) - len(suffix)] + repl) >= 3)
    for suffix, replacement in lexical.STEM_RULES:
        if word.endswith(suffix):
            if keep(word, suffix, replacement):
                word = word[: len(word) - len(suffix)] + replacement
                break
            if not every_rule:
                break
    if undouble and len(word) > 3 and word[-1] == word[-2] and word[-1] not in vowels + "lsz":
        word = word[:-1]
    if word.endswith("e") and drop_e(word):
        word = word[:-1]
    return word


def _pipeline(
    text: str,
    *,
    chunks: Callable[[str], tuple[str, ...] | list[str]] = _SPLIT.terms,
    lower: Callable[[str], str] = str.lower,
    stop_words: frozenset[str] = lexical.STOP_WORDS,
    stem: Callable[[str], str] = lexical.stem,
    stem_first: bool = False,
) -> tuple[str, ...]:
    """The tokenizer's steps, each replaceable."""
    found = [lower(term) for term in chunks(text)]
    if stem_first:
        return tuple(t for t in map(stem, found) if t not in stop_words)
    return tuple(stem(t) for t in found if t not in stop_words)


class SearchVariant(ModelStore):
    """The model, with ``memory.search``'s rules replaced by these hooks."""

    flaw = "none"

    def tokenize(self, text: str) -> tuple[str, ...]:
        return lexical.TOKENIZER.terms(text)

    def document_terms(
        self, body: str, anchor_key: str | None, anchor_path: str | None
    ) -> tuple[str, ...]:
        return tuple(
            t for part in (body, anchor_key or "", anchor_path or "") for t in self.tokenize(part)
        )

    def query_terms(self, query: str) -> tuple[str, ...]:
        # A pair is word characters only, lower-cased: tokenizing it again
        # takes it through the steps after the first two, as PROTOCOL says.
        words = query.split()
        pairs = lexical._pairs(words, dict.fromkeys(words), lexical.TOKENIZER)
        terms = {*self.tokenize(query), *(t for p in pairs for t in self.tokenize(p.lower()))}
        return tuple(sorted(terms))

    def combine(self, relevance: float, evidence: float) -> float:
        return _RULES["combine"](relevance, evidence)

    @contextlib.contextmanager
    def _rules(self) -> Iterator[None]:
        lexical.document_terms = lambda body, key, path, tokenizer=None: self.document_terms(  # type: ignore[assignment]
            body, key, path
        )
        lexical.query_terms = lambda query, tokenizer=None: self.query_terms(query)  # type: ignore[assignment]
        lexical.combine = self.combine  # type: ignore[assignment]
        try:
            yield
        finally:
            for name, rule in _RULES.items():
                setattr(lexical, name, rule)

    def search(self, query: str, **kw: Any) -> Recall:
        with self._rules():
            return super().search(query, **kw)


VARIANTS: dict[str, type[SearchVariant]] = {}


def variant(flaw: str) -> Callable[[type[SearchVariant]], type[SearchVariant]]:
    def register(cls: type[SearchVariant]) -> type[SearchVariant]:
        cls.flaw = flaw
        VARIANTS[cls.__name__] = cls
        return cls

    return register


# --- The tokenizer ---------------------------------------------------------------


@variant("a five-word stop list")
class FiveStopWords(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, stop_words=frozenset({"the", "a", "an", "of", "to"}))


@variant("no case folding")
class NoCaseFolding(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _protocol_with(fold_case=False).terms(text)


@variant("stemming before the stop-word test")
class StemBeforeStopWords(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, stem_first=True)


@variant("no doubled-consonant rule")
class NoDoubledConsonantRule(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, stem=lambda w: _stem(w, undouble=False))


@variant("camelCase not split")
class CamelCaseWhole(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _protocol_with(split_case=False, split_digits=False).terms(text)


@variant("no joined term for an identifier of several parts")
class NoJoinedTerm(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _protocol_with(keep_joined=False).terms(text)


@variant("a digit does not end a word before a capital")
class DigitKeepsTheWord(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _protocol_with(split_digits=False).terms(text)


@variant("no pair terms in a query")
class NoQueryPairs(SearchVariant):
    def query_terms(self, query: str) -> tuple[str, ...]:
        return tuple(sorted(set(self.tokenize(query))))


@variant("no stop words")
class NoStopWords(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _protocol_with(stop_words=False).terms(text)


@variant("no stemming")
class NoStemming(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _protocol_with(stem=False).terms(text)


@variant("rule (a)'s 3 letters counted before the replacement")
class RuleACountedBeforeReplacement(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        before = lambda w, suffix, repl: len(w) - len(suffix) >= 3  # noqa: E731 -- one rule, named by its use
        return _pipeline(text, stem=lambda w: _stem(w, keep_after=before))


@variant("rule (a) tries the next suffix when the first leaves too little")
class RuleATriesEverySuffix(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, stem=lambda w: _stem(w, every_rule=True))


@variant("rule (c) only when exactly 3 letters remain")
class RuleCExactlyThree(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, stem=lambda w: _stem(w, drop_e=lambda x: len(x) - 1 == 3))


@variant("y counted as a vowel in rule (b)")
class YIsAVowel(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, stem=lambda w: _stem(w, vowels="aeiouy"))


@variant("lower-cased character by character (no Final_Sigma)")
class CharacterByCharacterLowercase(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, lower=lambda term: "".join(ch.lower() for ch in term))


@variant("case folding (str.casefold) for lower-casing")
class CaseFolding(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, lower=str.casefold)


@variant("non-ASCII words stemmed too")
class StemsNonAscii(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, stem=lambda w: _stem(w, ascii_only=False))


@variant("split on whitespace only")
class WhitespaceSplit(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _protocol_with(split_punctuation=False).terms(text)


@variant("only ASCII letters and digits are word characters")
class AsciiWordCharacters(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        return _pipeline(text, chunks=lambda t: _SPLIT.terms(re.sub(r"[^\x00-\x7f]", " ", t)))


@variant("digits separate terms (letters and marks only)")
class DigitsSeparate(SearchVariant):
    def tokenize(self, text: str) -> tuple[str, ...]:
        def letters(t: str) -> tuple[str, ...]:
            runs = "".join(" " if unicodedata.category(ch)[0] == "N" else ch for ch in t)
            return _SPLIT.terms(runs)

        return _pipeline(text, chunks=letters)


# --- The fields ------------------------------------------------------------------


@variant("the anchor path not indexed")
class AnchorPathNotIndexed(SearchVariant):
    def document_terms(
        self, body: str, anchor_key: str | None, anchor_path: str | None
    ) -> tuple[str, ...]:
        return super().document_terms(body, anchor_key, None)


@variant("the anchor key not indexed")
class AnchorKeyNotIndexed(SearchVariant):
    def document_terms(
        self, body: str, anchor_key: str | None, anchor_path: str | None
    ) -> tuple[str, ...]:
        return super().document_terms(body, None, anchor_path)


@variant("body, anchor key and path run together before tokenizing")
class FieldsRunTogether(SearchVariant):
    def document_terms(
        self, body: str, anchor_key: str | None, anchor_path: str | None
    ) -> tuple[str, ...]:
        return self.tokenize(body + (anchor_key or "") + (anchor_path or ""))


# --- The query's terms -------------------------------------------------------------


@variant("query terms sorted by UTF-16 code units")
class Utf16Order(SearchVariant):
    def query_terms(self, query: str) -> tuple[str, ...]:
        return tuple(sorted(set(self.tokenize(query)), key=lambda t: t.encode("utf-16-be")))


@variant("query terms not de-duplicated")
class QueryTermsRepeated(SearchVariant):
    def query_terms(self, query: str) -> tuple[str, ...]:
        return tuple(sorted(self.tokenize(query)))


@variant("query terms in the order the query gives them")
class QueryOrder(SearchVariant):
    def query_terms(self, query: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.tokenize(query)))


# --- The arithmetic ----------------------------------------------------------------


class _Arithmetic(SearchVariant):
    """Relevance from :meth:`weight`, summed in :meth:`order`."""

    def idf(self, frequency: int, documents: int) -> float:
        return lexical.idf(frequency, documents)

    def weight(self, count: int, length: int, average: float, idf: float) -> float:
        return lexical.term_weight(count, length, average, idf)

    def order(self, terms: tuple[str, ...]) -> builtins.list[str]:
        return list(terms)

    def _relevance(
        self, terms: tuple[str, ...], document: lexical.Document, stats: lexical.CorpusStats
    ) -> float:
        total = 0.0
        for term in self.order(terms):
            count = document.counts.get(term, 0)
            if count:
                idf = self.idf(stats.document_frequency[term], stats.documents)
                total += self.weight(count, document.length, stats.average_length, idf)
        return total


@variant("relevance summed in reverse")
class ReverseSum(_Arithmetic):
    def order(self, terms: tuple[str, ...]) -> builtins.list[str]:
        return list(reversed(terms))


@variant("log1p((N - n + 0.5) / (n + 0.5)) for the idf")
class Log1pIdf(_Arithmetic):
    def idf(self, frequency: int, documents: int) -> float:
        n, big_n = float(frequency), float(documents)
        return math.log1p((big_n - n + 0.5) / (n + 0.5))


@variant("BM25 regrouped: idf * tf * (k1 + 1) / (tf + norm), left to right")
class RegroupedBm25(_Arithmetic):
    def weight(self, count: int, length: int, average: float, idf: float) -> float:
        k1, b = lexical.BM25.k1, lexical.BM25.b
        norm = k1 * (1.0 - b + b * (float(length) / average))
        return idf * float(count) * (k1 + 1.0) / (float(count) + norm)


@variant("a literal 2.2 for k1 + 1")
class LiteralTwoPointTwo(_Arithmetic):
    def weight(self, count: int, length: int, average: float, idf: float) -> float:
        k1, b = lexical.BM25.k1, lexical.BM25.b
        tf = float(count)
        return idf * ((tf * 2.2) / (tf + k1 * (1.0 - b + b * (float(length) / average))))


@variant("the score regrouped: ((relevance * c^(7/8)) * penalty) * decay")
class RegroupedScore(SearchVariant):
    def search(self, query: str, *, limit: int | None = None, **kw: Any) -> Recall:
        found = super().search(query, limit=None, **kw)
        rescored = [
            replace(
                r,
                score=(r.relevance or 0.0)
                * lexical.search_confidence(r.base_confidence)
                * r.anchor_penalty
                * r.decay_factor,
            )
            for r in found.results
        ]
        rescored.sort(key=lambda r: lexical.search_key(r.score, r.record.id))
        return replace(found, results=sem.apply_limit(rescored, limit))


@variant("the base confidence untempered: relevance * (base * penalty * decay)")
class UntemperedConfidence(SearchVariant):
    def search(self, query: str, *, limit: int | None = None, **kw: Any) -> Recall:
        found = super().search(query, limit=None, **kw)
        rescored = [
            replace(
                r,
                score=(r.relevance or 0.0)
                * (r.base_confidence * r.anchor_penalty * r.decay_factor),
            )
            for r in found.results
        ]
        rescored.sort(key=lambda r: lexical.search_key(r.score, r.record.id))
        return replace(found, results=sem.apply_limit(rescored, limit))


IDENTICAL = frozenset({"LiteralTwoPointTwo"})
"""Variants that compute the reference's very bits, which the suite must pass."""
