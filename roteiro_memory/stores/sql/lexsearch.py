"""``memory.search`` over the term index (:mod:`.index`): an exact top-k
that reads the postings it must score, not the store.

What a search reads: the statistics row, the ``memory_cells`` rows of its
terms with their tails (a term no live record holds has none, and costs no
more), the recent records, and the closed chunks of the cells it visits.
Each cell's bound (:func:`~.postings.cell_bound`) says the most a record in
it can score; cells are read in descending bound, all the query's chunks of
one cell at once, so every record found there has its exact relevance, from
the counts and lengths the chunks hold, before anything else is read.  A
record whose relevance times its cell's highest confidence (tempered, as
search weighs it) beats the k-th score so far becomes a candidate;
candidates are fetched in descending bound, with the search's filters, and
scored exactly as the model scores them
(:meth:`~roteiro_memory.results.Recalled.found`).  The search stops once the
k-th score is above the bound of every cell unread and of every candidate
unfetched: no record left could enter the top k.

Inside a cell, once k results are known, only records whose terms together
could beat the k-th score are worked out: the sets of records holding each
term are intersected (at C speed) over just the combinations of terms whose
bounds could add up past it.  Liveness costs nothing per posting (only live
records have postings) and neither does evidence (the cell bounds it).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import operator
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence

from roteiro_memory import lexical
from roteiro_memory import semantics as sem
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import index
from roteiro_memory.stores.sql import postings as pst
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.stores.sql.expressions import Dialect

__all__ = [
    "CONFIRM_BATCH",
    "Plan",
    "evidence_sql",
    "plan",
    "read_cells",
    "top",
]

CONFIRM_BATCH = 32
"""Fewest candidates fetched at once (three times the limit, when that is
more): each fetch is one statement."""

BACKLOG = 4
"""Batches of candidates that gather before the best are fetched anyway,
though a cell unread might hold better: the k-th score they raise cuts the
cells and candidates to come."""

READ_CELLS = 32
"""Most cells read by one pair of statements."""

READ_POSTINGS = 1_024
"""Cells after the next one to read are read with it while, together, they
can hold at most this many postings of the query's terms: small cells cost
a statement each otherwise (a rare term's few records lie in many cells),
and reading a small cell early costs little even when the search would have
stopped before it."""

SUBSETS_UP_TO = 16
"""Most query terms in one cell for which records are picked by combining
sets of ids; a cell with more has each of its records worked out."""

Candidate = tuple[float, int, float]
"""``(-bound, -id, relevance)``: a record whose exact relevance is known, in
heap order (highest bound first, then newest)."""


@valueclass
class Plan:
    """What a search learnt before reading postings: the corpus statistics,
    each query term's cells (``cell -> max count``), their tails as stored,
    and the recent records holding a query term (``(id, cell, length,
    counts)``)."""

    terms: tuple[str, ...]
    corpus: lexical.CorpusStats
    cells: Mapping[str, Mapping[int, tuple[int, int]]]
    """Each term's cells: ``cell -> (largest count, postings in closed chunks)``."""
    tails: Mapping[tuple[str, int], Any]
    """Each ``(term, cell)``'s tail, as ``memory_cells`` holds it, when not
    empty: read with the cells (a tail is at most a few hundred bytes), so
    visiting a cell costs a statement for its closed chunks only."""
    recent: Sequence[tuple[int, int, int, Mapping[str, int]]]


def plan(conn: Any, d: Dialect, terms: Sequence[str], stats: index.Stats) -> Plan:
    """Read the cells of ``terms`` and the recent records; the statistics follow."""
    frequency: dict[str, int] = dict.fromkeys(terms, 0)
    cells: dict[str, dict[int, tuple[int, int]]] = {}
    tails: dict[tuple[str, int], Any] = {}
    keys = [d.text(term) for term in terms]
    for chunk in d.chunks(keys):
        where, params = d.any_of("term", chunk)
        for raw, cell, count, max_tf, tail in conn.execute(
            f"SELECT term, cell, postings, max_tf, tail FROM memory_cells WHERE {where}", params
        ):
            term = d.untext(raw)
            frequency[term] += int(count)
            in_tail = len(tail) if isinstance(tail, bytes | memoryview | str) else 0
            cells.setdefault(term, {})[int(cell)] = (
                int(max_tf),
                int(count) - in_tail // pst.TAIL.size,
            )
            if tail:
                tails[term, int(cell)] = tail
    recent = []
    find = index.terms_finder(terms)
    for record_id, cell, length, raw in conn.execute(
        "SELECT record_id, cell, length, terms FROM memory_recent"
    ):
        try:
            held = find(d.untext(raw))
        except (ValueError, TypeError) as error:
            raise pst.damaged("memory_recent", f"record {record_id}", error) from None
        if held:
            for term in held:
                frequency[term] += 1
            recent.append((record_id, cell, length, held))
    corpus = index.corpus(stats, frequency)
    return Plan(tuple(terms), corpus, cells, tails, recent)


def read_cells(
    conn: Any,
    d: Dialect,
    cells: Sequence[int],
    terms: Sequence[str],
    closed: Sequence[str],
    tails: Mapping[tuple[str, int], Any],
) -> dict[int, dict[str, pst.Chunk]]:
    """The postings of ``terms`` in each of ``cells``, each term's in id
    order: the closed chunks of those of ``closed`` (the terms that have some
    there), then every term's tail as the plan read it (:attr:`Plan.tails`);
    a pair with none is absent.  One statement for the chunks, however many
    cells, and none when no term of ``closed`` has any."""
    parts: dict[int, dict[str, list[pst.Chunk]]] = {}
    in_cells, cell_params = d.any_of("cell", cells)
    for chunk in d.chunks([d.text(term) for term in closed]):
        where, params = d.any_of("term", chunk)
        found = conn.execute(
            f"SELECT cell, term, postings FROM memory_chunks WHERE {in_cells} AND {where}"
            " ORDER BY term, cell, first_id",  # the key's order: no sort
            [*cell_params, *params],
        )
        for (cell, raw), rows in itertools.groupby(found, _cell_and_term):
            try:
                pieces = [pst.decode(bytes(blob)) for _, _, blob in rows]
            except (ValueError, TypeError) as error:
                raise pst.damaged("memory_chunks", pst.cell_row(raw, cell), error) from None
            parts.setdefault(int(cell), {})[d.untext(raw)] = pieces
    for cell in cells:
        for term in terms:
            blob = tails.get((term, cell))
            if blob is not None:
                try:
                    tail = pst.decode_tail(bytes(blob))
                except (ValueError, TypeError) as error:
                    raise pst.damaged("memory_cells", pst.cell_row(term, cell), error) from None
                parts.setdefault(cell, {}).setdefault(term, []).append(tail)
    return {
        cell: {term: _joined(pieces) for term, pieces in by_term.items()}
        for cell, by_term in parts.items()
    }


_cell_and_term = operator.itemgetter(0, 1)


def _joined(pieces: Sequence[pst.Chunk]) -> pst.Chunk:
    """One term's postings in a cell from its pieces, in id order: a piece
    alone as it is, more than one joined column by column."""
    if len(pieces) == 1:
        return pieces[0]
    ids: list[int] = []
    for piece in pieces:
        ids += piece[0]
    return ids, _column([piece[1] for piece in pieces]), _column([piece[2] for piece in pieces])


def _column(parts: Sequence[Sequence[int]]) -> Sequence[int]:
    """``parts`` end to end, as an array as wide as its widest value needs:
    a chunk's counts and lengths are arrays, copied whole when they have that
    width already; a tail's are a tuple."""
    width = 1
    for part in parts:
        if isinstance(part, array):
            width = max(width, part.itemsize)
        elif part:
            width = max(width, pst.width_of(max(part)))
    out = pst.column(width)
    for part in parts:
        if isinstance(part, array) and part.typecode != out.typecode:
            out.extend(iter(part))  # narrower: widened value by value
        else:
            out.extend(part)  # an array of this width (copied whole), or a tail's ints
    return out


def evidence_sql(parts: str, nodes: str, ids: str, where: Sequence[str]) -> str:
    """Each record meeting ``ids`` and ``where`` as its
    :data:`~.columns.RECORD_COLS`, then its base, penalty and decay factor
    (:func:`~.expressions.evidence_parts_expr`), anchors resolved against
    ``nodes``: a candidate is fetched once, whole, so the results need no
    statement of their own."""
    return f"SELECT {cols.RECORD_COLS}, {parts}{cols.record_from(nodes)} WHERE " + " AND ".join(
        [ids, *where]
    )


Reader = Callable[[Sequence[int], Sequence[str], Sequence[str]], dict[int, dict[str, pst.Chunk]]]
"""Reads cells' chunks of the given terms (:func:`read_cells`): ``cell -> term
-> (ids, counts, lengths)``."""
Scored = tuple[float, int, float]
"""A result as the search ranks it: ``(score, id, relevance)``."""
Confirm = Callable[[Sequence[tuple[int, float]]], list[Scored]]
"""Fetches candidates ``(id, relevance)`` that pass the filters, scored exactly."""


def top(plan: Plan, keep: int | None, read: Reader, confirm: Confirm, batch: int) -> list[Scored]:
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
        relevance = lexical.weigh(held_terms, counts, length, corpus, idfs=idf)
        confidence, _ = pst.cell_parts(cell)
        bound = relevance * lexical.search_confidence(confidence) * (1.0 + pst.BOUND_SLACK)
        pending.append((-bound, -record_id, relevance))
    heapq.heapify(pending)
    ranked: list[Scored] = []

    def kth() -> float | None:
        """The k-th score so far, when k results are known."""
        if keep is None or len(ranked) < keep:
            return None
        return ranked[keep - 1][0]

    weights: dict[str, dict[tuple[int, int], float]] = {}

    def most(cell: int) -> int:
        """The most postings of the query's terms ``cell`` can hold."""
        return sum(plan.cells[t][cell][1] + pst.CHUNK_POSTINGS for t, _ in by_cell[cell])

    at = 0
    ready: list[Candidate] = []
    """Candidates no unread cell can beat, best first: fetched a batch at a time."""

    def fetch(taken: Sequence[Candidate]) -> None:
        ranked.extend(confirm([(-negative_id, value) for _, negative_id, value in taken]))
        ranked.sort(key=lambda r: sem.rank_key(r[0], r[1]))
        if keep is not None:
            del ranked[keep:]

    while True:
        threshold = kth()
        next_cell = -queue[at][0] if at < len(queue) else None
        if threshold is not None and next_cell is not None and threshold > next_cell:
            next_cell = None  # no cell left could enter the top k
        while pending and (next_cell is None or -pending[0][0] >= next_cell):
            ready.append(heapq.heappop(pending))
        if threshold is not None:
            ready = [c for c in ready if -c[0] >= threshold]
        if ready and (len(ready) >= batch or next_cell is None):
            fetch(ready[:batch])
            del ready[:batch]
            continue
        if next_cell is None:
            break
        backlog = len(pending) >= BACKLOG * batch and -pending[0][0] > (threshold or -1.0)
        if backlog or (
            threshold is None and len(ready) + len(pending) >= min(batch, keep or batch)
        ):
            # The best candidates known, fetched early: the k-th score they
            # give is what cuts the cells to come.
            taken = ready + [heapq.heappop(pending) for _ in range(min(batch, len(pending)))]
            ready = []
            fetch(sorted(taken)[:batch])
            for rest in sorted(taken)[batch:]:
                heapq.heappush(pending, rest)
            continue
        reading = [queue[at][1]]
        size = most(reading[0])
        at += 1
        while at < len(queue) and len(reading) < READ_CELLS:
            more = most(queue[at][1])
            if size + more > READ_POSTINGS:
                break
            reading.append(queue[at][1])
            size += more
            at += 1
        terms = sorted({t for cell in reading for t, _ in by_cell[cell]}, key=order.__getitem__)
        closed = [t for t in terms if any(plan.cells[t].get(cell, (0, 0))[1] for cell in reading)]
        found = read(reading, terms, closed)
        for cell in reading:
            held = dict(sorted(by_cell[cell], key=lambda pair: order[pair[0]]))
            chunks = found.get(cell, {})
            for candidate in _candidates(cell, held, chunks, idf, corpus, threshold, weights):
                heapq.heappush(pending, candidate)
    return ranked


def _candidates(
    cell: int,
    held: Mapping[str, int],
    chunks: Mapping[str, pst.Chunk],
    idf: Mapping[str, float],
    corpus: lexical.CorpusStats,
    threshold: float | None,
    weights: dict[str, dict[tuple[int, int], float]] | None = None,
) -> Iterable[Candidate]:
    """The records of one cell that could beat ``threshold`` (None: all), with
    their exact relevance (``held`` is the query terms the cell holds, in
    code-point order, each with its largest count there as ``memory_cells``
    bounds it; ``weights`` remembers each term's weights by ``(count,
    length)`` across cells)."""
    highest, least = pst.cell_parts(cell)
    confidence = lexical.search_confidence(highest)
    terms = [t for t in held if t in chunks]
    wanted: set[int] | None = None
    if threshold is not None and len(terms) <= SUBSETS_UP_TO:
        average = corpus.average_length
        bounds = {
            t: idf[t] * pst.tf_norm(held[t], max(least, 1), average) * confidence for t in terms
        }
        wanted = _qualifying(
            sorted(terms, key=bounds.__getitem__, reverse=True),
            {t: chunks[t][0] for t in terms},
            bounds,
            threshold / (1.0 + pst.BOUND_SLACK),
        )
    scale = confidence * (1.0 + pst.BOUND_SLACK)
    for record_id, relevance in _relevance(terms, chunks, wanted, idf, corpus, weights).items():
        bound = relevance * scale
        if threshold is None or bound >= threshold:
            yield (-bound, -record_id, relevance)


def _relevance(
    terms: Sequence[str],
    chunks: Mapping[str, pst.Chunk],
    wanted: set[int] | None,
    idf: Mapping[str, float],
    corpus: lexical.CorpusStats,
    weights: dict[str, dict[tuple[int, int], float]] | None,
) -> dict[int, float]:
    """The relevance of each record of ``chunks`` that ``wanted`` holds (None:
    every one), by id (:func:`~roteiro_memory.lexical.weigh_postings`, the
    terms in code-point order)."""

    def rows(term: str) -> lexical.Postings:
        held, counts, lengths = chunks[term]
        if wanted is None:
            return zip(held, counts, lengths, strict=True)
        if len(wanted) * 8 < len(held):
            return _found(wanted, held, counts, lengths)  # few wanted: found by bisection
        postings = zip(held, counts, lengths, strict=True)
        return itertools.compress(postings, map(wanted.__contains__, held))

    return lexical.weigh_postings(
        ((term, rows(term)) for term in terms), corpus, idfs=idf, weights=weights
    )


def _found(
    wanted: Iterable[int], held: Sequence[int], counts: Sequence[int], lengths: Sequence[int]
) -> list[tuple[int, int, int]]:
    """The postings of ``wanted`` among ``held`` (ascending ids), by bisection."""
    out = []
    for record_id in wanted:
        at = bisect.bisect_left(held, record_id)
        if at < len(held) and held[at] == record_id:
            out.append((record_id, counts[at], lengths[at]))
    return out


def _qualifying(
    terms: Sequence[str],
    holders: Mapping[str, Sequence[int]],
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
