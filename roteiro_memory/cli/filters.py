"""How ``--kind`` and ``--anchor`` filter ``list`` and ``recall``.

Each may be repeated; a record is kept when its kind is any of the kinds and
its anchor any of the anchors (the union of each option's values, the
intersection of the two options).  The store contract takes one kind and one
exact anchor key, so:

* one kind and at most one exact key go to the store, which filters, orders
  and limits as it always does;
* anything else (several kinds, several anchors, a bare path, which also takes
  the symbols in that file) asks the store for every record the filters it
  can take allow, in the store's own order, and keeps the matching ones here;
  the caller then applies the limit with :func:`~roteiro_memory.semantics.apply_limit`.
  Filtering one ordered answer keeps the store's order and its limit rule
  exactly, with no merging.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from roteiro_memory import semantics as sem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.cli.anchors import AnchorSpec
    from roteiro_memory.results import MemoryRecord

__all__ = ["FILE_PREFIX", "PY_PREFIX", "RecordFilter", "record_filter"]

FILE_PREFIX = "file:"
PY_PREFIX = "py:"
"""The graph's key prefixes (kept here rather than imported from
:mod:`roteiro_memory.repo.graph`, so a command that never syncs does not load
git machinery; a test keeps them in step)."""

Keep = Callable[["MemoryRecord"], bool]


class RecordFilter:
    """What the store is asked to filter, and what is kept after it."""

    __slots__ = ("anchor_key", "keep", "kind")

    def __init__(self, kind: sem.MemoryKind | None, anchor_key: str | None, keep: Keep | None):
        self.kind = kind
        """The one kind the store filters by, or None."""
        self.anchor_key = anchor_key
        """The one exact anchor key the store filters by, or None."""
        self.keep = keep
        """The records to keep of what the store returns, when it cannot
        filter by itself; the store must then be asked without a limit."""


def _matches_anchor(spec: AnchorSpec) -> Callable[[str | None], bool]:
    if spec.path is not None and spec.qualname is None:
        file_key, prefix = spec.key, f"{PY_PREFIX}{spec.path}::"
        return lambda key: key is not None and (key == file_key or key.startswith(prefix))
    exact = spec.key
    return lambda key: key == exact


def record_filter(
    kinds: Sequence[str] | None, anchors: Sequence[AnchorSpec] | None
) -> RecordFilter:
    """The filter for the ``--kind`` and ``--anchor`` values given (None or
    empty: that option was not given).  Kinds are checked here, so a bad one
    is refused before anything is read or synced."""
    wanted = {sem.parse_kind(text) for text in kinds or ()}
    specs = list({spec.key: spec for spec in anchors or ()}.values())
    exact = len(specs) == 1 and not (specs[0].path is not None and specs[0].qualname is None)
    if len(wanted) <= 1 and (not specs or exact):
        kind = next(iter(wanted)) if wanted else None
        return RecordFilter(kind, specs[0].key if specs else None, None)
    one_kind = next(iter(wanted)) if len(wanted) == 1 else None
    matchers = [_matches_anchor(spec) for spec in specs]

    def keep(record: MemoryRecord) -> bool:
        if wanted and record.kind not in wanted:
            return False
        key = record.anchor.key if record.anchor is not None else None
        return not matchers or any(match(key) for match in matchers)

    return RecordFilter(one_kind, None, keep)
