"""A top-k that stops early, shared by both database stores.

A store reads candidates in descending order of an *upper bound* of their
score (SQL does the ordering, with an index where it has one) -- for recall
the base confidence (penalty and decay never exceed 1), read from
``idx_mem_confidence``; for search the SQL sum of the term weights times the
evidence -- and the exact score of each fetched candidate is computed (in
Python for search, whose sum order SQL does not promise; by the rendered
expressions for recall, which give Python's doubles).  Once
the k-th best exact result ranks ahead of the last bound read, no candidate
still unread can reach the top k, and reading stops.  Otherwise the store is
asked for more, four times as many each round.  With no limit every
candidate is read.  The queries that read candidates in bound order, and the
full ranked pass they replace, are written here too, once for every dialect.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roteiro_memory import semantics as sem
from roteiro_memory.results import Recalled
from roteiro_memory.stores.sql.columns import RECORD_COLS, record_from

__all__ = [
    "BOUND_SLACK",
    "EARLY_STOP_ROWS",
    "EVIDENCE_FLOOR",
    "RECALL_BOUND",
    "SEARCH_FIRST_READ",
    "recall_bounds_sql",
    "recall_sql",
    "records_sql",
    "relevance_stop",
    "search_sql",
    "top",
    "top_scored",
]

BOUND_SLACK = 1e-9
"""Relative room left for SQL's SUM of the term weights adding in another
order than Python's: the sums differ by a few units in the last place, far
below this."""

EVIDENCE_FLOOR = 2.0**-500
"""The least evidence a search bound multiplies by, so the bound never
underflows (PostgreSQL raises on underflow); it only raises a tiny bound."""

EARLY_STOP_ROWS = 65_536
"""Most candidates a limited recall reads in bound order before it ranks in
one full pass instead: when ties or penalties keep the k-th score at the
bounds read, stopping early does not pay."""

SEARCH_FIRST_READ = 64
"""How many times ``keep`` a search reads first: its bound (relevance times
base confidence) leaves the anchor penalty out, so the k-th exact score sits
some way below the bounds of the strongest candidates."""

Bound = tuple[int, float]
"""One candidate as the store reads it: ``(id, upper bound of its score)``."""


def relevance_stop(kth: Recalled, last: Bound) -> bool:
    """For search, whose bound is the SQL sum, within :data:`BOUND_SLACK`:
    stop once the k-th score is strictly above every unread bound."""
    return kth.score > last[1] * (1.0 + BOUND_SLACK)


def top(
    bounds: Callable[[int | None], Sequence[Bound]],
    exact: Callable[[Sequence[int]], list[Recalled]],
    keep: int | None,
    stop: Callable[[Recalled, Bound], bool],
    first: int = 16,
) -> list[Recalled]:
    """The best ``keep`` (None: all) results, ranked by score then newest id.

    ``bounds(n)`` gives the first ``n`` candidates (None: all) in descending
    bound order; ``exact(ids)`` the results of those ids, scored exactly.
    The first read takes ``first`` times ``keep``: when each read repeats the
    store's whole ranking query, reading a little more once is cheaper than
    reading again."""
    size = None if keep is None else max(first * keep, keep + 16)
    seen: set[int] = set()
    ranked: list[Recalled] = []
    while True:
        rows = bounds(size)
        fresh = [record_id for record_id, _ in rows if record_id not in seen]
        seen.update(fresh)
        ranked.extend(exact(fresh))
        ranked.sort(key=lambda r: sem.rank_key(r.score, r.record.id))
        if size is None or keep is None or len(rows) < size:
            break
        if len(ranked) >= keep and stop(ranked[keep - 1], rows[-1]):
            break
        size *= 4
    return ranked if keep is None else ranked[:keep]


Scored = tuple[int, float, float]
"""One recall candidate: ``(id, bound, score)``, the score computed in SQL
by the expressions rendered from the semantics (the same doubles)."""


def top_scored(bounds: Callable[[int], Sequence[Scored]], keep: int, most: int) -> list[int] | None:
    """The ids of the best ``keep`` candidates, best first, when reading at
    most ``most`` of them in bound order decides it; None otherwise.

    Unlike :func:`top`, the candidates carry their score, so deciding reads
    tuples only; the caller fetches the ``keep`` records."""
    size = max(2 * keep, keep + 16)
    while size <= most:
        rows = bounds(size)
        best = sorted(rows, key=lambda row: sem.rank_key(row[2], row[0]))[:keep]
        if len(rows) < size:
            return [row[0] for row in best]
        if len(best) == keep:
            kth_id, _, kth_score = best[-1]
            last_id, last_bound, _ = rows[-1]
            if kth_score > last_bound or (kth_score == last_bound and kth_id >= last_id):
                return [row[0] for row in best]
        size *= 4
    return None


# --- The queries --------------------------------------------------------------


def recall_sql(score: str, where: Sequence[str], nodes: str, limit: str | None) -> str:
    """The recall query: the records meeting every condition in ``where``,
    ranked by ``score`` (best first, newest first among equals), at most
    ``limit`` (a placeholder) of them when given, read as
    :data:`~.columns.RECORD_COLS` with anchors resolved against the node
    relation ``nodes``."""
    ranked = f"SELECT m.id AS id, {score} AS score{record_from(nodes)} WHERE "
    ranked += " AND ".join(where) + " ORDER BY score DESC, m.id DESC"
    if limit is not None:
        ranked += f" LIMIT {limit}"
    return (
        f"WITH ranked AS ({ranked}) SELECT {RECORD_COLS} FROM ranked r"
        f" JOIN agent_memory m ON m.id = r.id LEFT JOIN {nodes} n ON n.key = m.anchor_key"
        " ORDER BY r.score DESC, r.id DESC"
    )


RECALL_BOUND = f"COALESCE(m.confidence, {sem.DEFAULT_BASE_CONFIDENCE!r})"
"""A record's base confidence: never below its recall score, since penalty
and decay never exceed 1.  The expression ``idx_mem_confidence`` indexes
over the live records, written the same so the planner matches them."""


def recall_bounds_sql(
    score: str, where: Sequence[str], nodes: str, limit: str, hint: str = ""
) -> str:
    """Recall's candidates as ``(id, bound, score)`` in descending bound order then
    newest id -- the order of ``idx_mem_confidence`` -- so a top-k reads
    from the front and stops early.  ``hint`` follows the table's alias
    (:attr:`~.expressions.Dialect.confidence_hint`)."""
    sql = (
        f"SELECT m.id, {RECALL_BOUND} AS bound, {score} AS score FROM agent_memory m{hint}"
        f" LEFT JOIN {nodes} n ON n.key = m.anchor_key WHERE "
    )
    return sql + " AND ".join(where) + f" ORDER BY {RECALL_BOUND} DESC, m.id DESC LIMIT {limit}"


def records_sql(nodes: str, ids: str) -> str:
    """The records meeting ``ids`` (a condition on ``m.id``), as
    :data:`~.columns.RECORD_COLS`."""
    return f"SELECT {RECORD_COLS}{record_from(nodes)} WHERE {ids}"


def search_sql(
    weight: str,
    bound: str,
    term_match: str,
    where: Sequence[str],
    nodes: str | None,
    limit: str | None,
) -> str:
    """The candidates of a search, best first by an upper bound of their
    score: the live records meeting ``where`` holding a term of
    ``term_match`` (a condition on the posting ``t``), their relevance summed
    in SQL from ``weight`` times ``bound`` (an upper bound of their evidence,
    over ``m``'s columns), at most ``limit`` of them, as ``(id, bound)``.
    ``where`` may name the node ``n`` when ``nodes`` names its relation.

    SQL's SUM adds in no promised order, so the exact relevance is
    computed again in Python; this only says which records to fetch."""
    # Grouped by the posting's id (one record, so MAX is its bound): the
    # planner then walks the term's postings rather than every live record.
    sql = (
        f"SELECT t.record_id, SUM({weight}) * MAX({bound}) AS bound FROM memory_terms t"
        " JOIN agent_memory m ON m.id = t.record_id"
    )
    if nodes is not None:
        sql += f" LEFT JOIN {nodes} n ON n.key = m.anchor_key"
    sql += f" WHERE {term_match}" + "".join(f" AND {condition}" for condition in where)
    sql += " GROUP BY t.record_id ORDER BY bound DESC, t.record_id DESC"
    return sql if limit is None else sql + f" LIMIT {limit}"
