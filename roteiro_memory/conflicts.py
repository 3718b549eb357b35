"""Conflicts: live decisions about the same code that nothing orders.

A decision is a choice among alternatives.  When two live records of kind
``decision`` share a scope and an anchor, neither supersedes the other (a
live record is superseded by nothing, so neither can have replaced the
other), and they do not say the same thing (they are not near-duplicates,
:mod:`roteiro_memory.duplicates`), a reader cannot tell which one holds.
Nothing here decides: every surface marks each of them unresolved, naming
the others, with the command that settles it -- record the decision that
holds superseding each one it replaces (:func:`settle_command`) -- and
``roteiro-memory conflicts`` lists them all.

Only decisions: lessons, attempts and patterns about one function
accumulate by design (several facts about the same code are the normal
case, not a disagreement), and telling two lessons that contradict from two
that add up takes reading them; flagging every pair would mark most of a
working store and bury the decisions that do disagree.  Unanchored
decisions share no code, so they never conflict; different scopes are
different namespaces, so neither do decisions in two of them.

Pure: given the live decisions at one place, it says whether they conflict.
"""

from __future__ import annotations

from collections.abc import Sequence

from roteiro_memory import duplicates
from roteiro_memory.semantics import DEFAULT_SCOPE, MemoryKind
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.results import MemoryRecord

__all__ = ["CONFLICT_KINDS", "Conflict", "conflict_at", "conflicts", "settle_command"]

CONFLICT_KINDS: tuple[MemoryKind, ...] = (MemoryKind.DECISION,)
"""The kinds whose live records at one anchor conflict."""


def settle_command(anchor: str, scope: str = DEFAULT_SCOPE, supersedes: int | None = None) -> str:
    """The command that settles a conflict at ``anchor`` (as ``--anchor``
    takes it): the decision that holds, recorded superseding one it
    replaces (``supersedes``, or ``ID``) -- once for each."""
    from shlex import quote

    where = f" --scope {quote(scope)}" if scope != DEFAULT_SCOPE else ""
    target = "ID" if supersedes is None else str(supersedes)
    add = "roteiro-memory add TEXT --kind decision"
    return f"{add} --anchor {quote(anchor)}{where} --supersedes {target}"


@valueclass
class Conflict:
    """The live decisions at one scope and anchor that disagree: ``records``
    oldest first, and ``statements``, their ids grouped by what they say
    (near-duplicates together), so a record disagrees with every id outside
    its own statement."""

    scope: str
    anchor: str
    records: tuple[MemoryRecord, ...]
    statements: tuple[tuple[int, ...], ...]

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(r.id for r in self.records)

    def against(self, record_id: int) -> tuple[int, ...]:
        """The ids ``record_id`` disagrees with (none when it is not here)."""
        mine = next((s for s in self.statements if record_id in s), None)
        if mine is None:
            return ()
        return tuple(i for s in self.statements if s is not mine for i in s)

    def to_json(self) -> Any:
        """``anchor`` and ``ids``, and ``scope`` unless it is the default one."""
        scope = {} if self.scope == DEFAULT_SCOPE else {"scope": self.scope}
        return {**scope, "anchor": self.anchor, "ids": list(self.ids)}


def conflict_at(records: Sequence[MemoryRecord]) -> Conflict | None:
    """The conflict among ``records`` -- live records at one scope and
    anchor, of any kinds -- or None when they hold fewer than two
    statements of a kind in :data:`CONFLICT_KINDS`."""
    chosen = sorted(
        (r for r in records if r.kind in CONFLICT_KINDS and r.is_live and r.anchor is not None),
        key=lambda r: r.id,
    )
    if len(chosen) < 2:
        return None
    first = chosen[0]
    assert first.anchor is not None
    if any(
        r.scope != first.scope or r.anchor is None or r.anchor.key != first.anchor.key
        for r in chosen
    ):
        raise ValueError("conflict_at is given the records of one scope and anchor")
    groups = duplicates.collapse(chosen, lambda r: r)
    if len(groups) < 2:
        return None
    statements = tuple(tuple(sorted(r.id for r in (lead, *others))) for lead, others in groups)
    return Conflict(first.scope, first.anchor.key, tuple(chosen), statements)


def conflicts(records: Sequence[MemoryRecord]) -> list[Conflict]:
    """Every conflict among ``records`` (live ones of any place), ordered by
    their oldest record."""
    places: dict[tuple[str, str], list[MemoryRecord]] = {}
    for record in records:
        if record.kind in CONFLICT_KINDS and record.is_live and record.anchor is not None:
            places.setdefault((record.scope, record.anchor.key), []).append(record)
    found = [c for c in (conflict_at(group) for group in places.values()) if c is not None]
    return sorted(found, key=lambda c: c.ids[0])
