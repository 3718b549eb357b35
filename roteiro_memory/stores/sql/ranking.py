"""A top-k that stops early, shared by both database stores.

A store reads candidates in descending order of an *upper bound* of their
score (SQL does the ordering, with an index where it has one), and the exact
score of each fetched candidate is computed in Python by the semantics.  Once
the k-th best exact result ranks ahead of the last bound read, no candidate
still unread can reach the top k, and reading stops.  Otherwise the store is
asked for more, four times as many each round.  With no limit every
candidate is read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roteiro_memory import semantics as sem
from roteiro_memory.results import Recalled

__all__ = ["BOUND_SLACK", "EVIDENCE_FLOOR", "evidence_stop", "relevance_stop", "top"]

BOUND_SLACK = 1e-9
"""Relative room left for SQL's SUM of the term weights adding in another
order than Python's: the sums differ by a few units in the last place, far
below this."""

EVIDENCE_FLOOR = 2.0**-500
"""The least evidence a search bound multiplies by, so the bound never
underflows (PostgreSQL raises on underflow); it only raises a tiny bound."""

Bound = tuple[int, float]
"""One candidate as the store reads it: ``(id, upper bound of its score)``."""


def evidence_stop(kth: Recalled, last: Bound) -> bool:
    """For recall, whose bound (base confidence) is never below the score and
    whose candidates come by (bound, id) descending: every unread record ranks
    behind ``last``, so stopping is safe once the k-th ranks ahead of it or
    is it."""
    last_id, last_bound = last
    return kth.score > last_bound or (kth.score == last_bound and kth.record.id >= last_id)


def relevance_stop(kth: Recalled, last: Bound) -> bool:
    """For search, whose bound is the SQL sum, within :data:`BOUND_SLACK`:
    stop once the k-th score is strictly above every unread bound."""
    return kth.score > last[1] * (1.0 + BOUND_SLACK)


def top(
    bounds: Callable[[int | None], Sequence[Bound]],
    exact: Callable[[Sequence[int]], list[Recalled]],
    keep: int | None,
    stop: Callable[[Recalled, Bound], bool],
    most: int | None = None,
) -> list[Recalled] | None:
    """The best ``keep`` (None: all) results, ranked by score then newest id.

    ``bounds(n)`` gives the first ``n`` candidates (None: all) in descending
    bound order; ``exact(ids)`` the results of those ids, scored exactly.
    With ``most``, gives up (None) rather than read more than that many
    candidates: the caller then ranks in one full pass instead."""
    size = None if keep is None else max(2 * keep, keep + 16)
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
        if most is not None and size > most:
            return None
    return ranked if keep is None else ranked[:keep]
