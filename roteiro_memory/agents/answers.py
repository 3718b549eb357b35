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
    from roteiro_memory.app.records import Remembered
    from roteiro_memory.results import MemoryForgotten, MemoryListing, MemoryRecord, Recall

__all__ = ["detail", "forgotten", "listed", "ranked", "remembered"]

STATES = (
    "States: valid = its code is unchanged since it was written; unanchored = about the "
    "whole repository; drifted/vanished/unverifiable = its code changed, is gone, or cannot "
    "be compared: check it before relying on it."
)
"""Said once in an answer that holds a record whose code changed."""


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _closing(lines: list[str], cut: bool, stale: bool) -> list[str]:
    notes = [brief.CUT_NOTE] if cut else []
    if stale:
        notes.append(STATES)
    return lines + notes


def ranked(found: Recall) -> str:
    """A search or touched answer: how many, then the lines best first."""
    lines = brief.ranked_lines(found.results)
    head = (
        f"{_plural(len(lines), 'result')}, best first "
        f"(store: {found.live} live, {found.superseded} superseded)."
    )
    records = [r.record for r in found.results]
    return "\n".join(
        _closing(
            [head, *lines],
            any(brief.is_cut(r) for r in records),
            any(not r.applies for r in records),
        )
    )


def listed(listing: MemoryListing) -> str:
    """A list answer: how many, then the lines newest first."""
    lines = [brief.line(r) for r in listing.records]
    head = (
        f"{_plural(len(lines), 'record')}, newest first "
        f"(store: {listing.live} live, {listing.superseded} superseded)."
    )
    return "\n".join(
        _closing(
            [head, *lines],
            any(brief.is_cut(r) for r in listing.records),
            any(not r.applies for r in listing.records),
        )
    )


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
    """A remember answer: what was stored, or that it already was."""
    line = brief.line(answer.record)
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
