"""Scoring variants the evaluation measures beside ``memory.search``'s own.

None of them is in the protocol or the stores: each is measured on the
in-memory model (``--store memory``), with the protocol's tokenizer unless
``--tokenizer`` says otherwise, to decide whether it earns a place there.

* ``proximity=W`` -- BM25TP (Buttcher, Clarke and Lushman, SIGIR 2006): for
  each two neighbouring occurrences of different query terms in a record,
  ``idf`` of the one over the squared distance accumulates to the other; each
  query term then adds ``min(1, idf) * acc * (k1 + 1) / (acc + K)`` with
  BM25's length normalisation ``K``, the sum times ``W`` (``proximity`` alone
  is ``W = 1``).  Distances count terms, a joined identifier standing after
  its parts.
* ``anchor=W`` -- BM25F with one length normalisation (Robertson, Zaragoza
  and Taylor, CIKM 2004): a term of the anchor's key or path counts ``W``
  times, the body's once, in the term frequency and in the record's length.
* ``confidence=P`` -- the writer's confidence raised to ``P`` in the
  combination, in place of the protocol's 7/8: ``relevance x (base ** P x
  penalty x decay)`` (``confidence=1`` is the recall score untempered); the
  anchor penalty and decay are the protocol's.

Variants join with ``+`` (``proximity+anchor=0.5``); ``bm25`` is the
protocol's scoring.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from roteiro_memory import lexical
from roteiro_memory import semantics as sem
from roteiro_memory.evaluation.measuring import MeasuringModel
from roteiro_memory.results import Recall, Recalled
from roteiro_memory.valueclass import replace

__all__ = ["PROTOCOL_SCORING", "Scoring", "ScoringModel", "parse_scoring"]


@dataclass(frozen=True)
class Scoring:
    """How a variant scores: every field at its default is the protocol."""

    proximity: float = 0.0
    anchor_weight: float = 1.0
    confidence_power: float | None = None
    """None: the protocol's (:func:`~roteiro_memory.lexical.search_confidence`)."""

    @property
    def name(self) -> str:
        parts = []
        if self.proximity:
            parts.append(f"proximity={self.proximity:g}")
        if self.anchor_weight != 1.0:
            parts.append(f"anchor={self.anchor_weight:g}")
        if self.confidence_power is not None:
            parts.append(f"confidence={self.confidence_power:g}")
        return "+".join(parts) or "bm25"


PROTOCOL_SCORING = Scoring()

_KEYS = ("proximity", "anchor", "confidence")
_DEFAULT_VALUE = {"proximity": 1.0}


def parse_scoring(text: str) -> Scoring:
    """A variant from its name; ``ValueError`` naming the part that is wrong
    and what is allowed."""
    if text == "bm25":
        return PROTOCOL_SCORING
    values: dict[str, float] = {}
    for part in text.split("+"):
        key, equals, value = part.partition("=")
        if key not in _KEYS:
            raise ValueError(
                f"unknown scoring variant {key!r} in {text!r}: expected 'bm25' or parts "
                "joined by '+' from proximity[=NUMBER], anchor=NUMBER, confidence=NUMBER"
            )
        if key in values:
            raise ValueError(f"scoring variant {key!r} given twice in {text!r}")
        if not equals and key in _DEFAULT_VALUE:
            values[key] = _DEFAULT_VALUE[key]
            continue
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number >= 0.0):
            raise ValueError(
                f"scoring variant {key!r} in {text!r} needs a finite number of at least 0, "
                f"not {value!r}"
            )
        values[key] = number
    return Scoring(
        proximity=values.get("proximity", 0.0),
        anchor_weight=values.get("anchor", 1.0),
        confidence_power=values.get("confidence"),
    )


class ScoringModel(MeasuringModel):
    """The measuring model, ranking its searches by ``scoring``."""

    def __init__(self, scoring: Scoring, tokenizer: lexical.Tokenizer = lexical.TOKENIZER) -> None:
        super().__init__(tokenizer)
        self._scoring = scoring
        self._body_length: dict[int, int] = {}
        self._weighted: tuple[int, float] | None = None

    def _documents(self, corpus: Iterable[Any]) -> dict[int, lexical.Document]:
        rows = list(corpus)
        out = super()._documents(rows)
        for row in rows:
            if row.id not in self._body_length:
                self._body_length[row.id] = len(self._tokenizer.terms(row.body))
        return out

    def _statistics(
        self, documents: Iterable[lexical.Document], wanted: set[int]
    ) -> lexical.CorpusStats:
        held = tuple(documents)
        stats = super()._statistics(held, wanted)
        if self._weighted is None or self._weighted[0] != id(stats):
            total = sum(self._length(document) for document in held)
            # All weighted lengths 0 (anchor=0, bodies of stop words): none is longer.
            self._weighted = (id(stats), (total / len(held) if held else 0.0) or 1.0)
        return stats

    def _length(self, document: lexical.Document) -> float:
        body = self._body_length[document.id]
        return body + self._scoring.anchor_weight * (document.length - body)

    def _relevance(
        self, terms: tuple[str, ...], document: lexical.Document, stats: lexical.CorpusStats
    ) -> float:
        scoring = self._scoring
        wanted = set(terms)
        idfs = {
            term: lexical.idf(stats.document_frequency[term], stats.documents)
            for term in wanted
            if term in document.counts
        }
        if not idfs:
            return 0.0
        if scoring.anchor_weight == 1.0:
            value = lexical.relevance(terms, document, stats)
            length, average = float(document.length), stats.average_length
        else:
            assert self._weighted is not None
            body = self._body_length[document.id]
            frequency: dict[str, float] = {}
            for position, term in enumerate(document.terms):
                if term in wanted:
                    share = 1.0 if position < body else scoring.anchor_weight
                    frequency[term] = frequency.get(term, 0.0) + share
            length, average = self._length(document), self._weighted[1]
            value = sum(
                lexical.term_weight(tf, length, average, idfs[term])
                for term, tf in sorted(frequency.items())
                if tf
            )
        if not scoring.proximity:
            return value
        return value + scoring.proximity * _proximity(document, idfs, length, average)

    def search(self, query: str, **options: Any) -> Recall:
        power = self._scoring.confidence_power
        if power is None:
            return super().search(query, **options)
        limit = options.pop("limit", None)
        found = super().search(query, **options)
        ranked = [replace(item, score=_combined(item, power)) for item in found.results]
        ranked.sort(key=lambda item: lexical.search_key(item.score, item.record.id))
        return replace(found, results=sem.apply_limit(ranked, limit))


def _proximity(
    document: lexical.Document, idfs: dict[str, float], length: float, average: float
) -> float:
    """BM25TP's proximity share of ``document`` for the query terms of ``idfs``:
    each term's accumulator saturates as BM25's term frequency does."""
    held = [(position, term) for position, term in enumerate(document.terms) if term in idfs]
    accumulated: dict[str, float] = {}
    for (first, one), (second, other) in itertools.pairwise(held):
        if one != other:
            closeness = 1.0 / float((second - first) ** 2)
            accumulated[one] = accumulated.get(one, 0.0) + idfs[other] * closeness
            accumulated[other] = accumulated.get(other, 0.0) + idfs[one] * closeness
    return sum(
        lexical.term_weight(acc, length, average, min(1.0, idfs[term]))
        for term, acc in sorted(accumulated.items())
    )


def _combined(item: Recalled, power: float) -> float:
    """``item``'s score with its base confidence raised to ``power``."""
    relevance = item.relevance or 0.0
    base: float = math.pow(item.base_confidence, power)
    return relevance * (base * item.anchor_penalty * item.decay_factor)
