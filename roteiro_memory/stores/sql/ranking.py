"""Recall's top-k that stops early, shared by both database stores.

A store reads candidates in descending order of an *upper bound* of their
score -- the base confidence (penalty and decay never exceed 1), read from
``idx_mem_confidence`` -- with the exact score of each, computed by the
rendered expressions (which give Python's doubles).  Once the k-th best
exact result ranks ahead of the last bound read, no candidate still unread
can reach the top k, and reading stops.  Otherwise the store is asked for
more, four times as many each round.  The queries that read candidates in
bound order, and the full ranked pass they replace, are written here too,
once for every dialect.  (Search stops early by the term index's own bounds:
:mod:`.lexsearch`.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roteiro_memory import semantics as sem
from roteiro_memory.stores.sql.columns import RECORD_COLS, record_from

__all__ = [
    "EARLY_STOP_ROWS",
    "RECALL_BOUND",
    "recall_bounds_sql",
    "recall_sql",
    "records_sql",
    "top_scored",
]

EARLY_STOP_ROWS = 65_536
"""Most candidates a limited recall reads in bound order before it ranks in
one full pass instead: when ties or penalties keep the k-th score at the
bounds read, stopping early does not pay."""

Scored = tuple[int, float, float]
"""One recall candidate: ``(id, bound, score)``, the score computed in SQL
by the expressions rendered from the semantics (the same doubles)."""


def top_scored(bounds: Callable[[int], Sequence[Scored]], keep: int, most: int) -> list[int] | None:
    """The ids of the best ``keep`` candidates, best first, when reading at
    most ``most`` of them in bound order decides it; None otherwise.

    The candidates carry their score, so deciding reads tuples only; the
    caller fetches the ``keep`` records."""
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
    (:attr:`~.dialects.Dialect.confidence_hint`)."""
    sql = (
        f"SELECT m.id, {RECALL_BOUND} AS bound, {score} AS score FROM agent_memory m{hint}"
        f" LEFT JOIN {nodes} n ON n.key = m.anchor_key WHERE "
    )
    return sql + " AND ".join(where) + f" ORDER BY {RECALL_BOUND} DESC, m.id DESC LIMIT {limit}"


def records_sql(nodes: str, ids: str, where: Sequence[str] = (), hint: str = "") -> str:
    """The records meeting ``ids`` (a condition on ``m.id``) and every
    condition of ``where``, as :data:`~.columns.RECORD_COLS`; ``hint``
    follows the records' alias (:attr:`~.dialects.Dialect.by_id_hint`)."""
    return f"SELECT {RECORD_COLS}{record_from(nodes, hint)} WHERE " + " AND ".join([ids, *where])
