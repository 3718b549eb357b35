"""What a surface shows of a read: near-duplicates folded, conflicts marked.

Every surface that shows records (the CLI's ``list`` and ``recall``, text
and ``--json``; the MCP tools; ``pack``; the hooks' notices) passes what the
store answered through :func:`ranked` or :func:`listed` and renders the
:class:`View` it gets: each near-duplicate folded into the better-ranked
record it repeats (:mod:`roteiro_memory.duplicates`), unless ``every``
(``--all``, the tools' ``all``), and each shown decision that conflicts
with another live one marked with the ids it disagrees with
(:mod:`roteiro_memory.conflicts`) -- looked up at its anchor in the store,
so a conflict is shown even when the other decision was not read.
:func:`listing` is ``roteiro-memory conflicts``: every conflict in the store.

Nothing is written and nothing is resolved here; no printing either.
"""

from __future__ import annotations

from roteiro_memory import conflicts as rule
from roteiro_memory import duplicates

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TypeVar

    _T = TypeVar("_T")

    from roteiro_memory.app.session import Session
    from roteiro_memory.results import MemoryListing, MemoryRecord, Recall, Recalled
    from roteiro_memory.store import Store

__all__ = [
    "CONFLICTS_SCHEMA",
    "Conflicts",
    "Marks",
    "View",
    "conflicts_among",
    "fold",
    "listed",
    "listed_json",
    "listing",
    "marks_for",
    "ranked",
    "ranked_json",
]


class Marks:
    """What a shown record stands for (its near-duplicates) and what it
    disagrees with (the conflicts at its anchor)."""

    def __init__(
        self,
        alike: dict[int, tuple[int, ...]] | None = None,
        found: Sequence[rule.Conflict] = (),
    ) -> None:
        self.alike = alike or {}
        """The ids each lead stands for, itself first; only leads with near-duplicates."""
        self.conflicts = list(found)
        self._against = {
            record.id: conflict.against(record.id)
            for conflict in self.conflicts
            for record in conflict.records
        }

    @property
    def folded(self) -> int:
        """How many records are not shown on lines of their own."""
        return sum(len(ids) - 1 for ids in self.alike.values())

    def stands_for(self, record_id: int) -> tuple[int, ...]:
        """The ids a shown record stands for, itself first (``()`` when only itself)."""
        return self.alike.get(record_id, ())

    def against(self, record_id: int) -> tuple[int, ...]:
        """The live decisions ``record_id`` disagrees with."""
        return self._against.get(record_id, ())

    def to_json(self) -> Any:
        """The marks as a read's JSON carries them beside the PROTOCOL shape:
        ``collapsed`` and ``conflicts``, each only when there is one."""
        out: dict[str, Any] = {}
        if self.alike:
            out["collapsed"] = [
                {"id": lead, "count": len(ids), "ids": list(ids)}
                for lead, ids in self.alike.items()
            ]
        if self.conflicts:
            out["conflicts"] = [c.to_json() for c in self.conflicts]
        return out


class View:
    """The items a surface shows, best (or newest) first, and their marks:
    ranked results, or listed records (``View``, ``View``
    to the type checker only, so that nothing imports :mod:`typing` at run time)."""

    def __init__(self, items: list[Any], marks: Marks) -> None:
        self.items = items
        self.marks = marks


def fold(
    items: Sequence[_T], record: Callable[[_T], MemoryRecord], every: bool = False
) -> tuple[list[_T], dict[int, tuple[int, ...]]]:
    """``items`` (best first) with each near-duplicate folded into the
    better-ranked one it repeats, unless ``every``; and the ids each lead
    that has near-duplicates stands for, itself first (:attr:`Marks.alike`)."""
    if every:
        return list(items), {}
    groups = duplicates.collapse(items, record)
    alike = {
        record(lead).id: tuple(record(i).id for i in (lead, *others))
        for lead, others in groups
        if others
    }
    return [lead for lead, _ in groups], alike


def conflicts_among(store: Store, shown: Sequence[MemoryRecord]) -> list[rule.Conflict]:
    """The conflicts at the places of the shown live decisions, read from
    the store in one listing of the live decisions at their anchors."""
    places = {
        (r.scope, r.anchor.key)
        for r in shown
        if r.kind in rule.CONFLICT_KINDS and r.is_live and r.anchor is not None
    }
    if not places:
        return []
    from roteiro_memory.semantics import AnchorFilter

    kinds = [kind.value for kind in rule.CONFLICT_KINDS]
    keys = frozenset(key for _, key in places)
    there = store.list(kind=kinds, anchors=AnchorFilter(keys=keys)).records
    return rule.conflicts(
        [r for r in there if r.anchor is not None and (r.scope, r.anchor.key) in places]
    )


def marks_for(
    store: Store, items: Sequence[_T], record: Callable[[_T], MemoryRecord], every: bool = False
) -> View:
    """``items`` folded (unless ``every``) and marked, over ``store``."""
    kept, alike = fold(items, record, every)
    return View(kept, Marks(alike, conflicts_among(store, [record(i) for i in kept])))


def _recalled_record(item: Recalled) -> MemoryRecord:
    return item.record


def _listed_record(item: MemoryRecord) -> MemoryRecord:
    return item


def ranked(session: Session, found: Recall, *, every: bool = False) -> View:
    """What a ranked read shows: its results folded and marked."""
    if not found.results:
        return View([], Marks())
    return marks_for(session.store(), found.results, _recalled_record, every)


def listed(session: Session, found: MemoryListing, *, every: bool = False) -> View:
    """What a listing shows: its records (newest first) folded and marked;
    a superseded record is never folded into a live one."""
    if not found.records:
        return View([], Marks())
    return marks_for(session.store(), found.records, _listed_record, every)


def ranked_json(found: Recall, view: View) -> Any:
    """The PROTOCOL shape of the shown results, with the marks beside it."""
    shape = found.to_json()
    shape["results"] = [r.to_json() for r in view.items]
    shape.update(view.marks.to_json())
    return shape


def listed_json(found: MemoryListing, view: View) -> Any:
    """The PROTOCOL shape of the shown records, with the marks beside it."""
    shape = found.to_json()
    shape["records"] = [r.to_json() for r in view.items]
    shape.update(view.marks.to_json())
    return shape


class Conflicts:
    """Every conflict in a store (``roteiro-memory conflicts``)."""

    def __init__(self, found: list[rule.Conflict], live: int) -> None:
        self.conflicts = found
        self.live = live

    def to_json(self) -> Any:
        from roteiro_memory.app.anchors import anchor_label
        from roteiro_memory.conflicts import settle_command

        return {
            "schema": CONFLICTS_SCHEMA,
            "conflicts": [
                {
                    **c.to_json(),
                    "statements": [list(s) for s in c.statements],
                    "settle": settle_command(anchor_label(c.anchor), c.scope),
                }
                for c in self.conflicts
            ],
            "live": self.live,
        }


CONFLICTS_SCHEMA = "roteiro.conflicts/v1"


def listing(session: Session, *, scope: str | None = None) -> Conflicts:
    """Every conflict among the live decisions (of ``scope`` when given),
    oldest first; nothing is settled."""
    from roteiro_memory.app.values import check_scope

    check_scope(scope, session.spell("scope"))
    if not session.has_store():
        return Conflicts([], 0)
    store = session.store()
    session.sync()
    kinds = [kind.value for kind in rule.CONFLICT_KINDS]
    found = store.list(scope=scope, kind=kinds, graph=session.graph_for(None))
    return Conflicts(rule.conflicts(found.records), found.live)
