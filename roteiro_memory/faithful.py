"""Every number PROTOCOL [P-search-numbers] allows a search or recall result.

Every basic operation is exact as written; ``ln`` (in idf) and the power of
exponential decay need only be *faithful*: one of the two doubles nearest the
exact value.  So a relevance is right when some faithful choice of each idf,
carried through the exact operations of :func:`roteiro_memory.lexical.weigh`,
gives it: :func:`allowed_relevances` lists every such value, and
:func:`within_faithful` lets a result differ from the reference's by those
choices and nothing else.  The exact values are taken in decimal arithmetic
with far more digits than a double's hardest case needs.  The conformance
suite reaches this through its drivers, as it reaches the reference model.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import Context, Decimal
from typing import Any

from roteiro_memory import lexical
from roteiro_memory.semantics import Decay

__all__ = [
    "allowed_decay_factors",
    "allowed_relevances",
    "allowed_scores",
    "allowed_search_numbers",
    "corpus",
    "faithful",
    "faithful_ln",
    "faithful_power_of_half",
    "within_faithful",
]

JSON = Any
_DIGITS = Context(prec=60)
"""Far beyond the 2^-118 or so the hardest double cases of ln and exp2 need."""
MAX_CHOICES = 1 << 12
"""Most combinations :func:`allowed_relevances` enumerates (12 terms)."""


def faithful(exact: Decimal) -> tuple[float, ...]:
    """The doubles nearest ``exact``: the one below and the one above, or the
    one double it equals."""
    nearest = float(exact)
    if Decimal(nearest) == exact:
        return (nearest,)
    other = math.nextafter(nearest, math.inf if exact > Decimal(nearest) else -math.inf)
    return tuple(sorted((nearest, other)))


def faithful_ln(x: float) -> tuple[float, ...]:
    """Every value a faithful ``ln(x)`` may give."""
    return faithful(Decimal(x).ln(_DIGITS))


def faithful_power_of_half(ratio: float) -> tuple[float, ...]:
    """Every value a faithful ``0.5^ratio`` may give."""
    return faithful(_DIGITS.power(Decimal("0.5"), Decimal(ratio)))


def allowed_relevances(
    terms: Sequence[str], counts: Mapping[str, int], length: int, stats: lexical.CorpusStats
) -> list[float]:
    """Every relevance a faithful ``ln`` gives this record, in ascending order."""
    held = [term for term in terms if counts.get(term, 0)]
    choices = [
        faithful_ln(lexical.idf_argument(stats.document_frequency[t], stats.documents))
        for t in held
    ]
    if math.prod(len(c) for c in choices) > MAX_CHOICES:
        raise ValueError(f"{len(held)} terms give too many combinations to list")
    found = {
        lexical.weigh(terms, counts, length, stats, idfs=dict(zip(held, picked, strict=True)))
        for picked in itertools.product(*choices)
    }
    return sorted(found)


def allowed_decay_factors(decay: JSON, age: int) -> list[float]:
    """Every decay factor PROTOCOL allows a result ``age`` generations old,
    ``decay`` as a result reports it."""
    if decay == "none":
        return [1.0]
    mode, params = next(iter(decay.items()))
    parameter = params["span"] if mode == "linear" else params["half_life"]
    exact = Decay(mode, parameter)
    if mode == "linear":
        return [exact.factor(age)]
    ratio = float(age) / float(exact.effective_parameter)
    return list(faithful_power_of_half(ratio))


def allowed_scores(
    relevances: Iterable[float], base: float, penalty: float, factors: Iterable[float]
) -> list[float]:
    """Every search score from those relevances and decay factors."""
    return sorted(
        {
            lexical.combine(rel, lexical.search_evidence(base, penalty, factor))
            for rel in relevances
            for factor in factors
        }
    )


def corpus(listing: JSON) -> tuple[dict[int, lexical.Document], lexical.CorpusStats]:
    """The documents and statistics of a store's live records, from its
    ``memory.list`` result (every live record, no filter, no limit)."""
    documents = {}
    for record in listing["records"]:
        anchor = record.get("anchor") or {}
        terms = lexical.document_terms(record["body"], anchor.get("key"), anchor.get("path"))
        documents[record["id"]] = lexical.Document(record["id"], terms)
    return documents, lexical.CorpusStats.of(documents.values())


def allowed_search_numbers(listing: JSON, result: JSON) -> dict[str, list[float]]:
    """For each result of a ``memory.search`` answered over the store that
    ``listing`` lists, every relevance, decay factor and score PROTOCOL
    allows, by path (``results.0.relevance``)."""
    documents, stats = corpus(listing)
    terms = result["terms"]
    allowed: dict[str, list[float]] = {}
    for index, item in enumerate(result["results"]):
        document = documents[item["record"]["id"]]
        relevances = allowed_relevances(terms, document.counts, document.length, stats)
        factors = allowed_decay_factors(result["decay"], item["age"])
        where = f"results.{index}"
        allowed[f"{where}.relevance"] = relevances
        allowed[f"{where}.decay_factor"] = factors
        allowed[f"{where}.score"] = allowed_scores(
            relevances, item["base_confidence"], item["anchor_penalty"], factors
        )
    return allowed


def within_faithful(op: str, got: JSON, want: JSON, listing: JSON) -> JSON:
    """``got``, a recall or search result, with each relevance, decay factor
    and score PROTOCOL allows replaced by the reference's in ``want`` (at the
    same place, for the same record), so only numbers no faithful ``ln`` or
    power gives are left to differ.  ``listing`` is the reference store's
    ``memory.list``."""
    if op not in ("memory.search", "memory.recall") or not isinstance(got, dict):
        return got
    mine, theirs = got.get("results"), want.get("results")
    if not (isinstance(mine, list) and isinstance(theirs, list) and len(mine) == len(theirs)):
        return got
    if op == "memory.search":
        allowed = allowed_search_numbers(listing, want)
    else:
        allowed = {
            f"results.{i}.decay_factor": allowed_decay_factors(want["decay"], item["age"])
            for i, item in enumerate(theirs)
        }
    kept = []
    for index, (item, reference) in enumerate(zip(mine, theirs, strict=True)):
        if (
            not isinstance(item, dict)
            or item.get("record", {}).get("id") != reference["record"]["id"]
        ):
            kept.append(item)
            continue
        fixed = dict(item)
        for field in ("relevance", "decay_factor", "score"):
            choices = allowed.get(f"results.{index}.{field}")
            if choices is not None and fixed.get(field) in choices:
                fixed[field] = reference[field]
        if op == "memory.recall" and fixed["decay_factor"] == reference["decay_factor"]:
            evidence = item["base_confidence"] * item["anchor_penalty"] * item["decay_factor"]
            if item.get("score") == evidence:
                fixed["score"] = reference["score"]
        kept.append(fixed)
    return {**got, "results": kept}
