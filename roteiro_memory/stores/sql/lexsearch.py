"""``memory.search`` over the term index (:mod:`.index`): an exact top-k
that reads the postings it must score, not the store.

What a search reads: the statistics row, the ``memory_cells`` rows of its
terms with their short tails (a term no live record holds has none, and
costs no more), the recent records, the segments of the cells it visits,
and the members of the records it works out.  Each cell's bound
(:func:`~.postings.cell_bound`) says the most a record in it can score;
cells are read in descending bound, all the query's segments of a few cells
at once.  In each, which records could beat the k-th score so far is worked
out from bitmaps alone (:func:`_bounded`): the records holding each term are
combined (``&`` and ``|`` of integers, at C speed) over just the
combinations of terms whose bounds at a count of 1 could add up past it;
of the few holding a term more than once, those the bitmaps leave out are
bounded by their own counts, all at the cell's least length.  Only the
records kept get their ids and lengths read, so their exact relevance
(:func:`_candidates`).
A record whose relevance times its cell's highest confidence (tempered, as
search weighs it) beats the k-th score so far becomes a candidate;
candidates are fetched in descending bound, with the search's filters, and
scored exactly as the model scores them
(:meth:`~roteiro_memory.results.Recalled.found`); one whose bound the k-th
score has passed is dropped unfetched.  The search stops once
the k-th score is above the bound of every cell unread and of every
candidate unfetched: no record left could enter the top k.  Liveness costs
nothing per posting (only live records have postings) and neither does
evidence (the cell bounds it).

A query whose postings fit one read and one fetch of candidates (a rare
term's) is scored whole (:func:`_every`): bounds would cost more than that.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from roteiro_memory import lexical
from roteiro_memory import semantics as sem
from roteiro_memory.stores.sql import cellpostings as cp
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import index, rows
from roteiro_memory.stores.sql import postings as pst
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.stores.sql.dialects import Dialect

__all__ = [
    "CONFIRM_BATCH",
    "Plan",
    "best",
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
"""Most cells read by one statement."""

READ_POSTINGS = 1_024
"""Cells after the next one to read are read with it while, together, they
can hold at most this many postings of the query's terms: small cells cost
a statement each otherwise (a rare term's few records lie in many cells),
and reading a small cell early costs little even when the search would have
stopped before it."""

SUBSETS_UP_TO = 16
"""Most query terms in one cell for which records are picked by combining
bitmaps; a cell with more has each of its records worked out."""

Candidate = tuple[float, int, float]
"""``(-bound, -id, relevance)``: a record whose exact relevance is known, in
heap order (highest bound first, then newest)."""


@valueclass
class Plan:
    """What a search learnt before reading postings: the corpus statistics,
    each query term's cells, their short tails as stored, and the recent
    records holding a query term (``(id, cell, length, counts)``)."""

    terms: tuple[str, ...]
    corpus: lexical.CorpusStats
    cells: Mapping[str, Mapping[int, tuple[int, int, int]]]
    """Each term's cells: ``cell -> (largest count, postings in segments,
    postings in the tail)``."""
    tails: Mapping[tuple[str, int], Any]
    """Each ``(term, cell)``'s tail, as ``memory_cells`` holds it, when it
    holds at least one and at most :data:`SHORT_TAIL` postings: read with the
    cells, so visiting the cell of a rare term costs no statement of its own
    (a longer tail is read with the cell's segments)."""
    recent: Sequence[tuple[int, int, int, Mapping[str, int]]]
    keys: Mapping[str, Any]
    """Each term as ``memory_cells`` and ``memory_segments`` hold it
    (:func:`~.postings.index_term`), bound: the rows read give it back."""


SHORT_TAIL = 16
"""Most postings a tail the plan reads holds."""

RECENT_FILTER_TERMS = 64
"""Most query terms for which the database picks the recent records holding
one (one condition each, where SQLite allows 1,000 in a row): a live store
keeps up to :data:`~.index.RECENT_RECORDS` of them, and reading each in
Python cost a rare term's search nearly as much again as the rest of it.
A longer query reads them all, as its postings cost far more."""


def plan(conn: Any, d: Dialect, terms: Sequence[str], stats: index.Stats) -> Plan:
    """Read the cells of ``terms`` and the recent records; the statistics follow."""
    frequency: dict[str, int] = dict.fromkeys(terms, 0)
    cells: dict[str, dict[int, tuple[int, int, int]]] = {}
    tails: dict[tuple[str, int], Any] = {}
    keys = {term: d.text(pst.index_term(term)) for term in terms}
    term_of = {key: term for term, key in keys.items()}
    short = SHORT_TAIL * pst.TAIL.size
    size = d.byte_length("tail")
    for chunk in d.chunks(list(term_of)):
        where, params = d.any_of("term", chunk)
        for raw, cell, count, max_tf, length, tail in conn.execute(
            f"SELECT term, cell, postings, max_tf, {size},"
            f" CASE WHEN {size} <= {short} THEN tail END FROM memory_cells WHERE {where}",
            params,
        ):
            term = term_of[raw]
            in_tail = length // pst.TAIL.size if isinstance(length, int) else 0
            whole = type(count) is int and count >= in_tail and type(max_tf) is int  # _counted
            if not (whole and max_tf >= 1 and pst.is_cell(cell)):
                error = ValueError("its cell, postings or largest count is not one a write makes")
                raise pst.damaged("memory_cells", pst.cell_row(raw, cell), error)
            frequency[term] += count
            cells.setdefault(term, {})[cell] = (max_tf, count - in_tail, in_tail)
            if tail:
                tails[term, cell] = tail
    recent = []
    find = index.terms_finder(terms)
    sql, lines = "SELECT record_id, cell, length, terms FROM memory_recent", []
    if len(terms) <= RECENT_FILTER_TERMS:
        # A term's line (index.encode_terms), found by the database.
        lines = [d.text(f"\n{term}\t") for term in terms]
        sql += " WHERE " + " OR ".join([f"{d.position(d.mark, 'terms')} > 0"] * len(lines))
    for record_id, cell, length, raw in conn.execute(sql, lines):
        try:
            if not (pst.is_cell(cell) and _counted(length, 1)):
                raise ValueError("its cell or length is not one a write makes")
            held = find(d.untext(raw))
        except (ValueError, TypeError) as error:
            raise pst.damaged("memory_recent", f"record {record_id}", error) from None
        if held:
            for term in held:
                frequency[term] += 1
            recent.append((record_id, cell, length, held))
    corpus = index.corpus(stats, frequency)
    return Plan(tuple(terms), corpus, cells, tails, recent, keys)


def _counted(value: object, least: int) -> bool:
    """Whether ``value``, a count the index holds, is a whole number of at least ``least``."""
    return type(value) is int and value >= least


def read_cells(
    conn: Any,
    d: Dialect,
    cells: Sequence[int],
    terms: Sequence[str],
    closed: Sequence[str],
    tails: Mapping[tuple[str, int], Any],
    keys: Mapping[str, Any],
    long_tails: bool = True,
) -> dict[int, dict[str, cp.Held]]:
    """The postings of ``terms`` in each of ``cells``, as :class:`~.cellpostings.Held`: the
    segments of those of ``closed`` (the terms that have some there) and
    their long tails (unless ``long_tails`` says none has one), and the
    short tails the plan read (:attr:`Plan.tails`); a pair with none is
    absent.  ``keys`` are the terms as the rows hold them (:attr:`Plan.keys`).
    Nothing is decoded here.  One statement, however many cells, and none
    when no term of ``closed`` has any."""
    out: dict[int, dict[str, cp.Held]] = {}
    names = {keys[term]: term for term in terms}

    def held(raw: Any, cell: int) -> cp.Held:
        by_term = out.setdefault(cell, {})
        term = names[raw]
        found = by_term.get(term)
        if found is None:
            found = by_term[term] = cp.Held(raw, cell)
        return found

    in_cells, cell_params = d.any_of("cell", cells)
    short = SHORT_TAIL * pst.TAIL.size
    for chunk in d.chunks([keys[term] for term in closed]):
        where, params = d.any_of("term", chunk)
        sql = "SELECT cell, term, segment, postings FROM memory_segments"
        sql += f" WHERE {in_cells} AND {where}"
        bound = [*cell_params, *params]
        if long_tails:
            sql += (
                " UNION ALL SELECT cell, term, NULL, tail FROM memory_cells"
                f" WHERE {in_cells} AND {where} AND {d.byte_length('tail')} > {short}"
            )
            bound += bound
        for cell, raw, segment, blob in conn.execute(sql, bound):
            if segment is None:
                held(raw, int(cell)).tail = blob
            else:
                held(raw, int(cell)).segments.append((segment, blob))
    for cell in cells:
        for term in terms:
            blob = tails.get((term, cell))
            if blob is not None:
                held(keys[term], cell).tail = blob
    return out


def read_members(
    conn: Any, d: Dialect, wanted: Sequence[tuple[int, int]]
) -> dict[tuple[int, int], tuple[bytes, bytes]]:
    """The members segments ``wanted`` names, ``(cell, segment) -> (ids,
    lengths)`` as stored; one statement, however many."""
    out: dict[tuple[int, int], tuple[bytes, bytes]] = {}
    for chunk in d.chunks(sorted(set(wanted))):
        params: dict[str, Any] = {}
        relation = d.relation(chunk, "ii", params)
        for cell, segment, ids, lengths in conn.execute(
            f"SELECT t.cell, t.segment, t.ids, t.lengths FROM {relation}"
            " JOIN memory_members t ON t.cell = column1 AND t.segment = column2",
            params,
        ):
            try:
                out[cell, segment] = (bytes(ids), bytes(lengths))
            except TypeError as error:
                raise pst.damaged("memory_members", pst.members_row(cell, segment), error) from None
    return out


def evidence_sql(
    d: Dialect, parts: str, nodes: str, ids: str, where: Sequence[str], whole: bool = True
) -> str:
    """Each record meeting ``ids`` (a condition on ``m.id``) and ``where`` as its
    :data:`~.columns.RECORD_COLS` (its id alone, unless ``whole``), then its
    base, penalty and decay factor (:func:`~.expressions.evidence_parts_expr`),
    anchors resolved against ``nodes``: candidates that may all be results
    are fetched whole, so those need no statement of their own."""
    columns = cols.RECORD_COLS if whole else "m.id"
    return f"SELECT {columns}, {parts}{cols.record_from(nodes, d.by_id_hint)} WHERE " + (
        " AND ".join([ids, *where])
    )


Reader = Callable[
    [Sequence[int], Sequence[str], Sequence[str], bool], dict[int, dict[str, cp.Held]]
]
"""Reads cells' postings of the given terms (:func:`read_cells`): ``cell ->
term -> Held``."""
Members = Callable[[Sequence[tuple[int, int]]], dict[tuple[int, int], tuple[bytes, bytes]]]
"""Reads the members segments named (:func:`read_members`)."""
Scored = tuple[float, int, float]
"""A result as the search ranks it: ``(score, id, relevance)``."""
Confirm = Callable[[Sequence[tuple[int, float]], bool], list[Scored]]
"""Fetches candidates ``(id, relevance)`` that pass the filters, scored
exactly, whole when the flag says they may all be results."""


def best(
    conn: Any,
    d: Dialect,
    plan: Plan,
    keep: int | None,
    parts: str,
    nodes: str,
    where: Sequence[str],
    params: Mapping[str, object],
) -> list[tuple[Sequence[Any], float]]:
    """The best ``keep`` records (None: all) that pass ``where`` (bound by
    ``params``), best first, each as :data:`~.columns.RECORD_COLS` with its
    relevance; ``parts`` is the evidence of a record read through
    ``nodes`` (:func:`~.expressions.evidence_parts_expr`)."""
    fetched: dict[int, Sequence[Any]] = {}
    """Each candidate fetched whole, by id."""
    width = len(cols.RECORD_NAMES)
    at_id = cols.RECORD_NAMES.index("id")

    def confirm(found: Sequence[tuple[int, float]], whole: bool) -> list[Scored]:
        # Candidates that may all be results are fetched whole; others,
        # their evidence only (most never are results).
        relevance = dict(found)
        out: list[Scored] = []
        at = at_id if whole else 0
        end = width if whole else 1
        for chunk in d.chunks(list(relevance)):
            bound = dict(params)
            ids = d.in_set("m.id", "ids", chunk, bound)
            sql = evidence_sql(d, parts, nodes, ids, where, whole)
            for row in conn.execute(sql, bound):
                record_id = row[at]
                if whole:
                    fetched[record_id] = row[:end]
                value = relevance[record_id]
                base = rows.judged_confidence(record_id, row[end])
                evidence = lexical.search_evidence(base, *row[end + 1 :])
                out.append((lexical.combine(value, evidence), record_id, value))
        return out

    ranked = top(
        plan,
        keep,
        lambda cells, terms, closed, long_tails: read_cells(
            conn, d, cells, terms, closed, plan.tails, plan.keys, long_tails
        ),
        lambda wanted: read_members(conn, d, wanted),
        confirm,
        max((keep or 0) * 3, CONFIRM_BATCH),
    )
    missing = [record_id for _, record_id, _ in ranked if record_id not in fetched]
    for chunk in d.chunks(missing):
        bound = dict(params)
        sql = evidence_sql(d, "1", nodes, d.in_set("m.id", "ids", chunk, bound), ())
        fetched.update((row[at_id], row[:width]) for row in conn.execute(sql, bound))
    return [(fetched[record_id], value) for _, record_id, value in ranked]


def top(
    plan: Plan, keep: int | None, read: Reader, members: Members, confirm: Confirm, batch: int
) -> list[Scored]:
    """The best ``keep`` results (None: all), best first, ties to the newest."""
    corpus = plan.corpus
    idf = {t: lexical.idf(corpus.document_frequency[t], corpus.documents) for t in plan.terms}
    by_cell: dict[int, list[tuple[str, int]]] = {}
    """Each cell's query terms, in the query's order, with their largest count there."""
    for term in plan.terms:
        for cell, (max_tf, _, _) in plan.cells.get(term, {}).items():
            by_cell.setdefault(cell, []).append((term, max_tf))
    every = len(plan.recent) + sum(n + m for c in plan.cells.values() for _, n, m in c.values())
    if every <= min(batch, READ_POSTINGS) and len(by_cell) <= READ_CELLS:
        return _every(plan, keep, by_cell, read, members, confirm, idf)
    scales: dict[int, tuple[float, int]] = {}

    def scale(cell: int) -> tuple[float, int]:
        """:func:`~.postings.cell_scale`, worked out once a cell."""
        found = scales.get(cell)
        if found is None:
            found = scales[cell] = pst.cell_scale(cell)
        return found

    norms = pst.Norms(corpus.average_length)
    queue = sorted(
        (-pst.cell_bound(scale(cell), [(idf[t], tf) for t, tf in held], norms), cell)
        for cell, held in by_cell.items()
    )

    pending: list[Candidate] = [
        (-relevance * scale(cell)[0], -record_id, relevance)
        for record_id, cell, relevance in _recent(plan, idf)
    ]
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
        return sum(sum(plan.cells[t][cell][1:]) for t, _ in by_cell[cell])

    at = 0
    ready: list[Candidate] = []
    """Candidates no unread cell can beat, best first: fetched a batch at a time."""

    def fetch(taken: Sequence[Candidate]) -> None:
        found = [(-negative_id, value) for _, negative_id, value in taken]
        ranked.extend(confirm(found, keep is None or len(found) <= keep))
        ranked.sort(key=lambda r: sem.rank_key(r[0], r[1]))
        if keep is not None:
            del ranked[keep:]
        least = kth()
        if least is not None:
            # A candidate the k-th score has passed never enters: none is
            # fetched, and none counts towards a backlog.
            pending[:] = [c for c in pending if -c[0] >= least]
            heapq.heapify(pending)

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
            taken.sort()
            for rest in taken[batch:]:
                heapq.heappush(pending, rest)  # before the fetch, which prunes them too
            fetch(taken[:batch])
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
        found = _read(plan, by_cell, reading, read)
        bounded = {}
        for cell in reading:
            worth = _bounded(
                scale(cell), dict(by_cell[cell]), found.get(cell, {}), idf, norms, threshold
            )
            if worth is not None:
                bounded[cell] = worth
        size = pst.MEMBER_ORDINALS
        stored = members(
            [(cell, o // size) for cell, (_, ordinals) in bounded.items() for o in ordinals]
        )
        for cell, (postings, ordinals) in bounded.items():
            try:
                made = list(
                    _candidates(
                        cell,
                        scale(cell)[0],
                        postings,
                        ordinals,
                        stored,
                        idf,
                        corpus,
                        threshold,
                        weights,
                    )
                )
            except cp.Unheld as unheld:
                raise cp.unheld(cell, unheld.ordinal, found.get(cell, {})) from None
            for candidate in made:
                heapq.heappush(pending, candidate)
    return ranked


def _every(
    plan: Plan,
    keep: int | None,
    by_cell: Mapping[int, Sequence[tuple[str, int]]],
    read: Reader,
    members: Members,
    confirm: Confirm,
    idf: Mapping[str, float],
) -> list[Scored]:
    """:func:`top` of a query whose cells one read takes and whose postings
    one batch of candidates holds: every record holding a term is a
    candidate, all fetched by the one statement a batch takes, so no bound is
    worked out.  Each relevance is the same
    :func:`~roteiro_memory.lexical.weigh_postings` sum."""
    cells = sorted(by_cell)
    found = _read(plan, by_cell, cells, read) if cells else {}
    every = {
        cell: [(term, found[cell][term].listed()) for term, _ in by_cell[cell]] for cell in cells
    }
    size = pst.MEMBER_ORDINALS
    stored = members(
        sorted({(c, o // size) for c, held in every.items() for _, rows in held for o, _ in rows})
    )
    postings: dict[str, list[tuple[int, int, int]]] = {term: [] for term in plan.terms}
    """Each term's ``(record id, count, length)``, as they are weighed."""
    for cell, held in every.items():
        member = cp.Members(cell, stored)
        for term, counted in held:
            listed = postings[term]
            for ordinal, count in counted:
                try:
                    record_id, length = member(ordinal)
                except cp.Unheld:
                    raise cp.unheld(cell, ordinal, found[cell]) from None
                listed.append((record_id, count, length))
    relevance = lexical.weigh_postings(
        ((t, rows) for t, rows in postings.items() if rows), plan.corpus, idfs=idf
    )
    relevance.update((record_id, value) for record_id, _, value in _recent(plan, idf))
    candidates = list(relevance.items())
    ranked = confirm(candidates, keep is None or len(candidates) <= keep) if candidates else []
    ranked.sort(key=lambda r: sem.rank_key(r[0], r[1]))
    return ranked if keep is None else ranked[:keep]


def _recent(plan: Plan, idf: Mapping[str, float]) -> Iterator[tuple[int, int, float]]:
    """``(id, cell, relevance)`` of each recent record holding a query term,
    its terms weighed in the query's order, as a cell's are."""
    order = {term: n for n, term in enumerate(plan.terms)}
    for record_id, cell, length, counts in plan.recent:
        held_terms = sorted(counts, key=order.__getitem__)
        yield record_id, cell, lexical.weigh(held_terms, counts, length, plan.corpus, idfs=idf)


def _read(
    plan: Plan,
    by_cell: Mapping[int, Sequence[tuple[str, int]]],
    reading: Sequence[int],
    read: Reader,
) -> dict[int, dict[str, cp.Held]]:
    """The postings of the query's terms in the cells ``reading``, by one
    call of ``read``, each :class:`~.cellpostings.Held` told how many
    postings ``memory_cells`` counts for it; a term a cell counts and does
    not hold is damage."""
    terms = sorted({t for cell in reading for t, _ in by_cell[cell]})  # lays out the statement
    within = {t: [c for c in map(plan.cells[t].get, reading) if c is not None] for t in terms}
    long_tails = any(counts[2] > SHORT_TAIL for held in within.values() for counts in held)
    closed = [t for t in terms if any(c[1] or c[2] > SHORT_TAIL for c in within[t])]
    found = read(reading, terms, closed, long_tails)
    for cell in reading:
        for term, _ in by_cell[cell]:
            _, in_segments, in_tail = plan.cells[term][cell]
            held = found.get(cell, {}).get(term)
            if held is None:
                missing = f"counts {in_segments + in_tail} postings, where none are held"
                raise pst.damaged("memory_cells", pst.cell_row(term, cell), ValueError(missing))
            held.expected = in_segments + in_tail
    return found


def _bounded(
    scale: tuple[float, int],
    held: Mapping[str, int],
    found: Mapping[str, cp.Held],
    idf: Mapping[str, float],
    norms: pst.Norms,
    threshold: float | None,
) -> tuple[dict[str, list[tuple[int, int]]], list[int]] | None:
    """The records of one cell that could beat ``threshold`` (None: every
    one holding a query term), as their ordinals, ascending, and the query
    terms' postings among them, in code-point order (None when there is
    none).  ``scale`` is the cell's (:func:`~.postings.cell_scale`);
    ``held`` is the query terms the cell holds, in code-point order, each
    with its largest count there as ``memory_cells`` bounds it (``norms``: the tf_norms).

    The bounds need no record's id or length, each term's weight taken at
    the cell's least length.  A record holding each of its query terms once
    is bounded by the weights at a count of 1 of the terms it holds, so
    which records can get past the threshold is worked out from the terms'
    bitmaps alone, over the combinations of terms whose weights add up past
    it.  Of the few records holding a query term more than once that those
    leave out, the ones whose terms at their largest counts in the cell
    could get past it are bounded one by one, at their own counts."""
    terms = [t for t in held if t in found]
    confidence, shortest = scale

    def weight(term: str, count: int) -> float:
        return idf[term] * norms[count, shortest] * confidence

    if threshold is None or len(terms) > SUBSETS_UP_TO:
        postings = {t: found[t].every() for t in terms}
        if threshold is not None:
            ordinals = _beating(postings, weight, threshold)
            return (postings, ordinals) if ordinals else None
        wanted = 0
        for term in terms:
            wanted |= found[term].bits()
        every = pst.ordinals(wanted)
        return (postings, every) if every else None
    bits = {t: found[t].bits() for t in terms}
    once = {t: weight(t, 1) for t in terms}
    wanted = _qualifying(sorted(terms, key=once.__getitem__, reverse=True), bits, once, threshold)
    if any(held[t] > 1 for t in terms):
        # Terms at their largest counts bound the rest (a record is in a union by its own
        # terms alone); those past it holding a term more than once, at their own counts.
        most = {t: weight(t, held[t]) for t in terms}
        order = sorted(terms, key=most.__getitem__, reverse=True)
        maybe = _qualifying(order, bits, most, threshold) & ~wanted
        if maybe:
            among = set(pst.ordinals(maybe))
            repeated = set[int]().union(*(found[t].counts().keys() & among for t in terms))
            if repeated:
                checked = sorted(repeated)
                own = {t: found[t].holding(checked) for t in terms}
                wanted |= pst.bits_of(_beating(own, weight, threshold))
    ordinals = pst.ordinals(wanted)
    if not ordinals:
        return None
    return {t: found[t].holding(ordinals) for t in terms}, ordinals


def _beating(
    postings: Mapping[str, Sequence[tuple[int, int]]],
    weight: Callable[[str, int], float],
    threshold: float,
) -> list[int]:
    """The ordinals, ascending, whose terms' ``postings`` (``(ordinal,
    count)``), each weighed at its count (``weight``), add up to at least
    ``threshold``."""
    totals: dict[int, float] = {}
    for term, counted in postings.items():
        shares: dict[int, float] = {}
        for ordinal, count in counted:
            share = shares.get(count)
            if share is None:
                share = shares[count] = weight(term, count)
            totals[ordinal] = totals.get(ordinal, 0.0) + share
    return sorted(o for o, total in totals.items() if total >= threshold)


def _candidates(
    cell: int,
    confidence: float,
    postings: Mapping[str, Sequence[tuple[int, int]]],
    ordinals: Iterable[int],
    members: Mapping[tuple[int, int], tuple[bytes, bytes]],
    idf: Mapping[str, float],
    corpus: lexical.CorpusStats,
    threshold: float | None,
    weights: dict[str, dict[tuple[int, int], float]] | None = None,
) -> Iterable[Candidate]:
    """The records of ``ordinals`` (of one cell, from :func:`_bounded`; the
    ``postings`` of others are passed over) that could beat ``threshold``
    (None: all), with their exact relevance
    (:func:`~roteiro_memory.lexical.weigh_postings`, the terms in code-point
    order; ``weights`` remembers each term's weights by ``(count, length)``
    across cells), their ids and lengths read from ``members``; each
    bounded by the cell's highest confidence, ``confidence`` (tempered, with
    the slack of a bound)."""
    member = cp.Members(cell, members)
    held_by = {o: member(o) for o in ordinals}
    relevance = lexical.weigh_postings(
        (
            (term, [(h[0], c, h[1]) for o, c in rows if (h := held_by.get(o)) is not None])
            for term, rows in postings.items()
        ),
        corpus,
        idfs=idf,
        weights=weights,
    )
    for record_id, value in relevance.items():
        bound = value * confidence
        if threshold is None or bound >= threshold:
            yield (-bound, -record_id, value)


def _qualifying(
    terms: Sequence[str],
    holders: Mapping[str, int],
    bounds: Mapping[str, float],
    threshold: float,
) -> int:
    """The records whose terms' bounds add up to at least ``threshold``, as
    the bits of their ordinals: the union, over every combination of terms
    whose bounds do, of the records holding all of them (``holders``, each
    term's bits; ``terms`` in descending bound, so combinations that cannot
    get there are cut early)."""
    suffix = [0.0] * (len(terms) + 1)
    for n in range(len(terms) - 1, -1, -1):
        suffix[n] = suffix[n + 1] + bounds[terms[n]]
    out = 0

    def walk(n: int, ids: int | None, total: float) -> None:
        nonlocal out
        if ids is not None and total >= threshold:
            out |= ids
            return
        if n == len(terms) or total + suffix[n] < threshold:
            return
        held = holders[terms[n]]
        narrowed = held if ids is None else ids & held
        if narrowed:
            walk(n + 1, narrowed, total + bounds[terms[n]])
        walk(n + 1, ids, total)

    walk(0, None, 0.0)
    return out
