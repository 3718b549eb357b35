"""How repeated ``--kind`` and ``--anchor`` filter ``list`` and ``recall``.

Each may be repeated; a record is kept when its kind is any of the kinds and
its anchor any of the anchors (the union of each option's values, the
intersection of the two options).  The store does all the filtering:

* the anchors become one :class:`~roteiro_memory.semantics.AnchorFilter`
  (every value's keys and prefixes; :func:`roteiro_memory.cli.session.anchor_filter`);
* several kinds become one store query per kind, each filtered, ordered and
  limited by the store, merged here in the store's own order (newest first
  for ``list``, :func:`~roteiro_memory.semantics.rank_key` for ``recall``) and
  cut to the limit by the same rule -- the top ``limit`` of a union is among
  the top ``limit`` of its parts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roteiro_memory import semantics as sem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.results import MemoryListing, Recall

__all__ = ["FILE_PREFIX", "PY_PREFIX", "each_kind", "listed", "recalled"]

FILE_PREFIX = "file:"
PY_PREFIX = "py:"
"""The graph's key prefixes (kept here rather than imported from
:mod:`roteiro_memory.repo.graph`, so a command that never syncs does not load
git machinery; a test keeps them in step)."""


def each_kind(kinds: Sequence[str] | None) -> list[sem.MemoryKind | None]:
    """The kinds to ask the store for, one query each: ``[None]`` (every
    kind) when ``--kind`` was not given.  Checked here, so a bad kind is
    refused before anything is read or synced."""
    wanted = list(dict.fromkeys(sem.parse_kind(text) for text in kinds or ()))
    return list(wanted) if wanted else [None]


def listed(
    kinds: Sequence[sem.MemoryKind | None],
    query: Callable[[sem.MemoryKind | None], MemoryListing],
    limit: int | None,
) -> MemoryListing:
    """One listing for every kind in ``kinds``: newest first, as a store lists."""
    listings = [query(kind) for kind in kinds]
    if len(listings) == 1:
        return listings[0]
    from roteiro_memory.results import MemoryListing

    records = sorted(
        (record for listing in listings for record in listing.records),
        key=lambda record: -record.id,
    )
    first = listings[0]
    return MemoryListing(
        records=sem.apply_limit(records, limit), live=first.live, superseded=first.superseded
    )


def recalled(
    kinds: Sequence[sem.MemoryKind | None],
    query: Callable[[sem.MemoryKind | None], Recall],
    limit: int | None,
) -> Recall:
    """One recall for every kind in ``kinds``, ranked as a store ranks."""
    recalls = [query(kind) for kind in kinds]
    if len(recalls) == 1:
        return recalls[0]
    from roteiro_memory.valueclass import replace

    results = sorted(
        (result for recall in recalls for result in recall.results),
        key=lambda result: sem.rank_key(result.score, result.record.id),
    )
    # Every part counted the same store and asked the same terms: only the
    # results differ.
    return replace(recalls[0], results=sem.apply_limit(results, limit))
