"""What each MCP tool says to the agent in text: a line of context, then one
line a record (:mod:`roteiro_memory.app.brief`).

The text is what a model reads, so it is written for one: compact, with the
anchor state in words, and never a copy of the structured content beside
it (a client that wants the PROTOCOL shape reads that).
"""

from __future__ import annotations

from roteiro_memory.app import brief
from roteiro_memory.app.timestamps import iso_utc

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.reanchor import Proposals, Rewritten
    from roteiro_memory.app.records import Remembered
    from roteiro_memory.app.shown import Conflicts, Marks, View
    from roteiro_memory.results import (
        MemoryForgotten,
        MemoryListing,
        MemoryRecord,
        Recall,
    )

__all__ = [
    "conflicts",
    "detail",
    "forgotten",
    "listed",
    "proposed",
    "ranked",
    "remembered",
    "rewritten",
]

STATES = (
    "States: valid = its code is unchanged since it was written; unanchored = about the "
    "whole repository; drifted/vanished/unverifiable = its code changed, is gone, or cannot "
    "be compared: check it before relying on it."
)
"""Said once in an answer that holds a record whose code changed."""


def _closing(
    lines: list[str], records: list[MemoryRecord], marks: Marks | None = None
) -> list[str]:
    notes = [brief.CUT_NOTE] if any(brief.is_cut(r) for r in records) else []
    if any(not r.applies for r in records):
        notes.append(STATES)
    if marks is not None and marks.alike:
        notes.append(brief.duplicates_note())
    if marks is not None and marks.conflicts:
        notes.append(brief.conflicts_note())
    return lines + notes


def ranked(found: Recall, view: View | None = None) -> str:
    """A search or touched answer: how many, then the lines best first
    (``view``: what is shown of them, by default every one, unmarked)."""
    from roteiro_memory.app.shown import Marks, View

    view = view or View(found.results, Marks())
    lines = brief.ranked_lines(view.items, view.marks)
    head = (
        f"{brief.counted(len(lines), 'result', folded=view.marks.folded)}, best first "
        f"(store: {found.live} live, {found.superseded} superseded)."
    )
    return "\n".join(_closing([head, *lines], [r.record for r in view.items], view.marks))


def listed(listing: MemoryListing, view: View | None = None) -> str:
    """A list answer: how many, then the lines newest first (``view`` as in
    :func:`ranked`)."""
    from roteiro_memory.app.shown import Marks, View

    view = view or View(listing.records, Marks())
    marks = view.marks
    lines = [
        brief.line(r, stands_for=marks.stands_for(r.id), against=marks.against(r.id))
        for r in view.items
    ]
    head = (
        f"{brief.counted(len(lines), 'record', folded=marks.folded)}, newest first "
        f"(store: {listing.live} live, {listing.superseded} superseded)."
    )
    return "\n".join(_closing([head, *lines], view.items, marks))


def conflicts(found: Conflicts) -> str:
    """A conflicts answer: each conflict's decisions, then how to settle it."""
    if not found.conflicts:
        return "No unresolved conflicts: no two live decisions about the same code disagree."
    lines = [f"{brief.counted(len(found.conflicts), 'unresolved conflict')}:"]
    for conflict in found.conflicts:
        for record in conflict.records:
            lines.append(brief.line(record, against=conflict.against(record.id)))
    lines.append(brief.conflicts_note())
    return "\n".join(lines)


def detail(record: MemoryRecord) -> str:
    """One record in full: its line with the whole body, then the rest."""
    facts = [f"scope {record.scope}"]
    if record.confidence is not None:
        facts.append(f"confidence {record.confidence:g}")
    facts.append(f"created {iso_utc(record.created_at)}")
    if record.superseded_by is not None and record.superseded_at is not None:
        facts.append(f"superseded by #{record.superseded_by} at {iso_utc(record.superseded_at)}")
    note = brief.stale_note(record.anchor_state.value)
    if note is not None:
        facts.append(f"{record.anchor_state.value}: {note}; check it before relying on it")
    whole = brief.line(record, limit=len(record.body) + 1)
    return f"{whole}\n{'; '.join(facts)}."


def remembered(answer: Remembered) -> str:
    """A remember answer: what was stored, or that it already was; marked
    when it is a decision that others disagree with."""
    line = brief.line(answer.record, against=answer.against)
    if answer.against:
        line += "\n" + brief.conflicts_note()
    if answer.existing:
        return (
            f"Already recorded as #{answer.record.id}; nothing was written "
            f"(allow_duplicate: true writes another).\n{line}"
        )
    return f"Recorded #{answer.record.id}.\n{line}"


def forgotten(answer: MemoryForgotten) -> str:
    """A forget answer: what went, and what is live again."""
    again = ", ".join(f"#{i}" for i in answer.restored)
    return f"Forgot #{answer.id}" + (f"; live again: {again}." if again else ".")


def proposed(found: Proposals) -> str:
    """A reanchor listing: each stale record's line, then what to do about it
    and the evidence, then the tool call that does it."""
    from roteiro_memory.app.reanchor import CERTAIN, evidence_text, proposal_text

    if not found.proposals:
        return "No live record's anchor drifted or vanished: nothing to re-anchor or confirm."
    lines = [f"{brief.counted(len(found.proposals), 'record')} whose code changed or moved:"]
    for proposal in found.proposals:
        evidence = "; ".join(evidence_text(e, proposal.to) for e in proposal.evidence)
        lines.append(brief.line(proposal.record))
        lines.append(f"  -> {proposal_text(proposal)}" + (f" ({evidence})" if evidence else ""))
    moves = [p.record.id for p in found.proposals if p.movable]
    confirms = [p.record.id for p in found.proposals if p.action == "confirm"]
    if moves:
        certain = sum(1 for p in found.proposals if p.movable and p.certainty == CERTAIN)
        lines.append(
            f"Follow the code: reanchor with apply: true and ids {moves}"
            + (f" (or all_certain: true for the {certain} certain)." if certain else ".")
        )
    if confirms:
        lines.append(f"After reading the code, if they still hold: confirm with ids {confirms}.")
    return "\n".join(lines)


def rewritten(done: Rewritten) -> str:
    """What re-anchoring or confirming wrote: a superseding record each."""
    if not done.written:
        return "Nothing was written: no record's proposal was certain."
    lines = []
    for item in done.written:
        verb = "Re-anchored" if item.action == "move" else "Confirmed"
        lines.append(f"{verb} #{item.supersedes} as #{item.record.id}.")
        lines.append(brief.line(item.record))
    return "\n".join(lines)
