"""One line a record: how records are shown to an agent, by the MCP tools,
the hooks and ``pack`` alike.

::

    #12 lesson drifted 0.20 @ src/app/retry.py::Retry.run: Retry.run retries OSError only...

The id, the kind, the anchor state (what the record is worth against the
code in front of the agent), the score when the read ranked, the anchor in
the form ``--anchor`` and the ``anchor`` argument take, and the body on one
line, its white space collapsed and cut after :data:`BODY_CHARS` characters
with the full length and how to read the rest (``get`` the id).

Why one line: an agent's context is the budget every answer spends.  A
default search over 200 records was 12.5 KB when each result was the
PROTOCOL shape twice over; these lines carry what an agent decides with in
a tenth of that, and the exact shapes stay one ``get`` away (and in the MCP
results' structured content, for clients that read it).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from roteiro_memory.results import MemoryRecord, Recalled

__all__ = [
    "BODY_CHARS",
    "CUT_NOTE",
    "anchor_text",
    "body_text",
    "is_cut",
    "line",
    "ranked_lines",
    "stale_note",
]

BODY_CHARS = 200
"""Characters of a body a line shows.  Measured on the bench's records
(``bench/answers.py``): most lessons fit whole, and a default search stays
under 6,000 bytes."""

CUT_NOTE = f"Bodies are cut at {BODY_CHARS} characters; `get` shows a record in full."
"""What an answer that cuts bodies says once, above its lines."""

_STALE = {
    "drifted": "its code changed since it was written",
    "vanished": "its code is gone",
    "unverifiable": "its code cannot be compared with what it was written against",
}


def anchor_text(key: str | None) -> str:
    """An anchor key as an anchor argument takes it, where that names it
    (:func:`~roteiro_memory.app.anchors.anchor_label`); empty for none."""
    if key is None:
        return ""
    from roteiro_memory.app.anchors import anchor_label

    return anchor_label(key)


def is_cut(record: MemoryRecord, limit: int = BODY_CHARS) -> bool:
    """Whether the line of ``record`` cuts its body."""
    return len(" ".join(record.body.split())) > limit


def body_text(record: MemoryRecord, limit: int = BODY_CHARS) -> str:
    """The body on one line, cut after ``limit`` characters (a cut body
    says how long it is and how to read it all)."""
    flat = " ".join(record.body.split())
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit].rstrip()}... [{len(flat)} chars: get {record.id}]"


def stale_note(state: str) -> str | None:
    """What a state that does not apply here means, or None when it applies."""
    return _STALE.get(state)


def line(record: MemoryRecord, score: float | None = None, *, limit: int = BODY_CHARS) -> str:
    """The one line of ``record`` (``score`` when the read ranked it)."""
    parts = [f"#{record.id}", record.kind.value, record.anchor_state.value]
    if score is not None:
        parts.append(f"{score:.2f}")
    if record.superseded_by is not None:
        parts.append(f"(superseded by #{record.superseded_by})")
    where = anchor_text(record.anchor.key) if record.anchor is not None else ""
    head = " ".join(parts) + (f" @ {' '.join(where.split())}" if where else "")
    return f"{head}: {body_text(record, limit)}"


def ranked_lines(results: Iterable[Recalled]) -> list[str]:
    """One line per ranked result, best first, each with its score."""
    return [line(r.record, r.score) for r in results]
