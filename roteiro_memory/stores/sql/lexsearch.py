"""``memory.search`` over the term index (:mod:`.index`): an exact top-k
that reads the postings it must score, not the store.

What a search reads: the statistics row, the ``memory_cells`` rows of its
terms (a term no live record holds has none, and costs no more), and the
recent records.  Each cell's bound (:func:`~.postings.cell_bound`) says the
most a record in it can score; cells are read in descending bound, all the
query's chunks of one cell at once, so every record found there has its
exact relevance, from the counts and lengths the chunks hold, before anything
else is read.  A record whose relevance times its cell's highest confidence
beats the k-th score so far becomes a candidate; candidates are fetched in
descending bound, with the search's filters, and scored exactly as the model
scores them (:meth:`~roteiro_memory.results.Recalled.found`).  The search
stops once the k-th score is above the bound of every cell unread and of
every candidate unfetched: no record left could enter the top k.

Inside a cell, once k results are known, only records whose terms together
could beat the k-th score are worked out: the sets of records holding each
term are intersected (at C speed) over just the combinations of terms whose
bounds could add up past it.  Liveness costs nothing per posting (only live
records have postings) and neither does evidence (the cell bounds it).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence

from roteiro_memory import lexical
from roteiro_memory import semantics as sem
from roteiro_memory.stores.sql import index
from roteiro_memory.stores.sql import postings as pst
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.results import Recalled
    from roteiro_memory.stores.sql.expressions import Dialect

__all__ = ["CONFIRM_BATCH", "Plan", "plan", "read_cell", "top"]

CONFIRM_BATCH = 32
"""Fewest candidates fetched at once (twice the limit when that is more):
each fetch is one statement."""

SUBSETS_UP_TO = 16
"""Most query terms in one cell for which records are picked by combining
sets of ids; a cell with more has each of its records worked out."""

Candidate = tuple[float, int, float]
"""``(-bound, -id, relevance)``: a record whose exact relevance is known, in
heap order (highest bound first, then newest)."""


@valueclass
class Plan:
    """What a search learnt before reading postings: the corpus statistics,
    each query term's cells (``cell -> max count``), and the recent records
    holding a query term (``(id, cell, length, counts)``)."""

    terms: tuple[str, ...]
    corpus: lexical.CorpusStats
    cells: Mapping[str, Mapping[int, tuple[int, bytes]]]
    """Each term's cells: ``cell -> (largest count, tail bytes)``."""
    recent: Sequence[tuple[int, int, int, Mapping[str, int]]]


def plan(conn: Any, d: Dialect, terms: Sequence[str], stats: index.Stats) -> Plan:
    """Read the cells of ``terms`` and the recent records; the statistics follow."""
    frequency: dict[str, int] = dict.fromkeys(terms, 0)
    cells: dict[str, dict[int, tuple[int, bytes]]] = {}
    keys = [d.text(term) for term in terms]
    for chunk in d.chunks(keys):
        where, params = d.any_of("term", chunk)
        for raw, cell, count, max_tf, tail in conn.execute(
            f"SELECT term, cell, postings, max_tf, tail FROM memory_cells WHERE {where}", params
        ):
            term = d.untext(raw)
            frequency[term] += int(count)
            cells.setdefault(term, {})[int(cell)] = (int(max_tf), bytes(tail))
    wanted = set(terms)
    recent = []
    for record_id, cell, length, raw in conn.execute(
        "SELECT record_id, cell, length, terms FROM memory_recent"
    ):
        text = d.untext(raw)
        # Most recent records hold none of a rare query's terms: a substring
        # test (false positives only) spares parsing them.
        if not any(term in text for term in wanted):
            continue
        held = {t: n for t, n in index.parse_terms(text).items() if t in wanted}
        if held:
            for term in held:
                frequency[term] += 1
            recent.append((record_id, cell, length, held))
    corpus = index.corpus(stats, frequency)
    return Plan(tuple(terms), corpus, cells, recent)


def read_cell(conn: Any, d: Dialect, cell: int, terms: Sequence[str]) -> dict[str, pst.Chunk]:
    """The closed chunks of ``terms`` in ``cell``, each term's joined in id order."""
    out: dict[str, pst.Chunk] = {}
    for chunk in d.chunks([d.text(term) for term in terms]):
        where, params = d.any_of("term", chunk)
        found = conn.execute(
            f"SELECT term, postings FROM memory_chunks WHERE cell = {d.mark} AND {where}"
            " ORDER BY term, first_id",
            [cell, *params],
        )
        for raw, blob in found:
            _join(out, d.untext(raw), pst.decode(bytes(blob)))
    return out


def _join(out: dict[str, pst.Chunk], term: str, more: pst.Chunk) -> None:
    """``more`` postings of ``term`` after those ``out`` holds."""
    held = out.get(term)
    if not more[0]:
        return
    if held is None:
        out[term] = more
    else:
        ids, counts, lengths = held
        out[term] = ([*ids, *more[0]], [*counts, *more[1]], [*lengths, *more[2]])


Reader = Callable[[int, Sequence[str]], dict[str, pst.Chunk]]
"""Reads one cell's chunks of the given terms: ``term -> (ids, counts, lengths)``."""
Confirm = Callable[[Sequence[tuple[int, float]]], list["Recalled"]]
"""Fetches candidates ``(id, relevance)`` that pass the filters, scored exactly."""


def top(plan: Plan, keep: int | None, read: Reader, confirm: Confirm, batch: int) -> list[Recalled]:
    """The best ``keep`` results (None: all), best first, ties to the newest."""
    corpus = plan.corpus
    average = corpus.average_length
    idf = {t: lexical.idf(corpus.document_frequency[t], corpus.documents) for t in plan.terms}
    order = {term: n for n, term in enumerate(plan.terms)}
    by_cell: dict[int, list[tuple[str, int]]] = {}
    for term, cells in plan.cells.items():
        for cell, (max_tf, _) in cells.items():
            by_cell.setdefault(cell, []).append((term, max_tf))
    queue = sorted(
        (-pst.cell_bound(cell, [(idf[t], tf) for t, tf in held], average), cell)
        for cell, held in by_cell.items()
    )
    pending: list[Candidate] = []
    for record_id, cell, length, counts in plan.recent:
        held_terms = sorted(counts, key=order.__getitem__)
        relevance = lexical.weigh(held_terms, counts, length, corpus)
        confidence, _ = pst.cell_parts(cell)
        bound = relevance * confidence * (1.0 + pst.BOUND_SLACK)
        pending.append((-bound, -record_id, relevance))
    heapq.heapify(pending)
    ranked: list[Recalled] = []

    def kth() -> float | None:
        """The k-th score so far, when k results are known."""
        if keep is None or len(ranked) < keep:
            return None
        return ranked[keep - 1].score

    at = 0
    while True:
        threshold = kth()
        next_cell = -queue[at][0] if at < len(queue) else None
        next_pending = -pending[0][0] if pending else None
        if next_cell is None and next_pending is None:
            break
        best = max(b for b in (next_cell, next_pending) if b is not None)
        if threshold is not None and threshold > best:
            break
        # Candidates are fetched best first once no cell could hold better,
        # and sooner while fewer than k results are known or a batch of them
        # could raise the k-th score: that is what cuts the cells to come.
        if next_pending is not None and (
            threshold is None
            or next_cell is None
            or next_pending >= next_cell
            or (len(pending) >= batch and next_pending > threshold)
        ):
            floor = -1.0 if threshold is None else threshold
            if next_cell is not None and threshold is not None:
                floor = max(floor, next_cell)
            taken: list[tuple[int, float]] = []
            while pending and len(taken) < batch and (-pending[0][0] >= floor or not taken):
                _, negative_id, relevance = heapq.heappop(pending)
                taken.append((-negative_id, relevance))
            ranked.extend(confirm(taken))
            ranked.sort(key=lambda r: sem.rank_key(r.score, r.record.id))
            if keep is not None:
                del ranked[keep:]
            continue
        cell = queue[at][1]
        at += 1
        held = sorted((t for t, _ in by_cell[cell]), key=order.__getitem__)
        chunks = read(cell, held)
        for term in held:
            # The cell's tail: its newest postings, after its closed chunks.
            _join(chunks, term, pst.decode_tail(plan.cells[term][cell][1]))
        for candidate in _candidates(cell, held, chunks, idf, corpus, threshold):
            heapq.heappush(pending, candidate)
    return ranked


def _candidates(
    cell: int,
    terms: Sequence[str],
    chunks: Mapping[str, pst.Chunk],
    idf: Mapping[str, float],
    corpus: lexical.CorpusStats,
    threshold: float | None,
) -> Iterable[Candidate]:
    """The records of one cell that could beat ``threshold`` (None: all), with
    their exact relevance."""
    confidence, least = pst.cell_parts(cell)
    terms = [t for t in terms if t in chunks]
    counts = {t: dict(zip(chunks[t][0], chunks[t][1], strict=True)) for t in terms}
    lengths: dict[int, int] = {}
    for t in terms:
        lengths.update(zip(chunks[t][0], chunks[t][2], strict=True))
    if threshold is None or len(terms) > SUBSETS_UP_TO:
        ids: Iterable[int] = lengths
    else:
        average = corpus.average_length
        bounds = {
            t: idf[t] * pst.tf_norm(max(chunks[t][1]), max(least, 1), average) * confidence
            for t in terms
        }
        ids = _qualifying(
            sorted(terms, key=bounds.__getitem__, reverse=True),
            {t: counts[t].keys() for t in terms},
            bounds,
            threshold / (1.0 + pst.BOUND_SLACK),
        )
    scale = confidence * (1.0 + pst.BOUND_SLACK)
    for record_id in ids:
        held = {t: counts[t][record_id] for t in terms if record_id in counts[t]}
        relevance = lexical.weigh(list(held), held, lengths[record_id], corpus)
        bound = relevance * scale
        if threshold is None or bound >= threshold:
            yield (-bound, -record_id, relevance)


def _qualifying(
    terms: Sequence[str],
    holders: Mapping[str, Iterable[int]],
    bounds: Mapping[str, float],
    threshold: float,
) -> set[int]:
    """The ids whose terms' bounds add up to at least ``threshold``: the
    union, over every combination of terms whose bounds do, of the ids
    holding all of them (``terms`` in descending bound, so combinations that
    cannot get there are cut early)."""
    suffix = [0.0] * (len(terms) + 1)
    for n in range(len(terms) - 1, -1, -1):
        suffix[n] = suffix[n + 1] + bounds[terms[n]]
    out: set[int] = set()

    def walk(n: int, ids: set[int] | None, total: float) -> None:
        if ids is not None and total >= threshold:
            out.update(ids)
            return
        if n == len(terms) or total + suffix[n] < threshold:
            return
        held = holders[terms[n]]
        narrowed = set(held) if ids is None else ids.intersection(held)
        if narrowed:
            walk(n + 1, narrowed, total + bounds[terms[n]])
        walk(n + 1, ids, total)

    walk(0, None, 0.0)
    return out
