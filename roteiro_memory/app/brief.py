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
    from collections.abc import Iterable, Sequence

    from roteiro_memory.app.shown import Marks
    from roteiro_memory.results import MemoryRecord, Recalled

__all__ = [
    "BODY_CHARS",
    "CUT_NOTE",
    "anchor_text",
    "body_text",
    "conflicts_note",
    "counted",
    "duplicates_note",
    "ids_text",
    "is_cut",
    "line",
    "lines_bytes",
    "marks_text",
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


def counted(count: int, noun: str, plural: str | None = None, *, folded: int = 0) -> str:
    """``count`` of ``noun`` in words: ``1 record``, ``2 records``, ``0
    records`` (``plural`` when it is not the noun and an ``s``); with the
    records ``folded`` into them as near-duplicates
    (:attr:`~roteiro_memory.app.shown.Marks.folded`), ``4 results, 5 with
    near-duplicates``."""
    said = f"{count} {noun}" if count == 1 else f"{count} {plural or noun + 's'}"
    return f"{said}, {count + folded} with near-duplicates" if folded else said


def lines_bytes(lines: Iterable[str]) -> int:
    """The bytes ``lines`` take in an answer or a digest, each followed by a
    newline: what a budget of tokens (UTF-8 bytes / 4) is measured in."""
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


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


NAMED = 3
"""How many conflicting ids a line names; the rest are counted (the
structured content and ``roteiro-memory conflicts`` name every one)."""


def ids_text(ids: Sequence[int], named: int | None = None) -> str:
    """``#12, #15``: record ids as every answer names them; past ``named``
    of them, how many more."""
    shown = ids if named is None else ids[:named]
    more = len(ids) - len(shown)
    return ", ".join(f"#{i}" for i in shown) + (f" +{more}" if more else "")


def marks_text(stands_for: Sequence[int] = (), against: Sequence[int] = ()) -> str:
    """What a shown record's line says before its body: the near-duplicates
    it stands for (:mod:`roteiro_memory.duplicates`) and the decisions it
    disagrees with (:mod:`roteiro_memory.conflicts`); empty when neither."""
    out = ""
    if len(stands_for) > 1:
        out += f"[{len(stands_for)} near-duplicates: {ids_text(stands_for)}] "
    if against:
        out += f"[unresolved: conflicts with {ids_text(against, NAMED)}] "
    return out


def duplicates_note(cli: bool = False) -> str:
    """What an answer that folds near-duplicates says once, below its lines."""
    every = "--all" if cli else "all: true"
    return (
        "[N near-duplicates: ...] = records of one kind and anchor saying nearly the same, "
        f"shown once ({every} shows each)."
    )


def conflicts_note(cli: bool = False) -> str:
    """What an answer that marks a conflict says once, below its lines: what
    it means and the command that settles it."""
    from roteiro_memory.conflicts import settle_command

    if cli:
        return (
            "[unresolved: ...] = live decisions about the same code that nothing orders; "
            "settle by recording the one that holds superseding each it replaces: "
            f"`{settle_command('ANCHOR')}` (`roteiro-memory conflicts` lists all)."
        )
    return (
        "To settle [unresolved]: remember the decision that holds with supersedes, once per other."
    )


def line(
    record: MemoryRecord,
    score: float | None = None,
    *,
    limit: int = BODY_CHARS,
    stands_for: Sequence[int] = (),
    against: Sequence[int] = (),
    anchor: str | None = None,
) -> str:
    """The one line of ``record`` (``score`` when the read ranked it), with
    its marks (:func:`marks_text`); its anchor as ``anchor`` says when given
    (a notice that cuts a long path), else as :func:`anchor_text` does."""
    parts = [f"#{record.id}", record.kind.value, record.anchor_state.value]
    if score is not None:
        parts.append(f"{score:.2f}")
    if record.superseded_by is not None:
        parts.append(f"(superseded by #{record.superseded_by})")
    where = anchor if anchor is not None else ""
    if anchor is None and record.anchor is not None:
        where = anchor_text(record.anchor.key)
    head = " ".join(parts) + (f" @ {' '.join(where.split())}" if where else "")
    return f"{head}: {marks_text(stands_for, against)}{body_text(record, limit)}"


def ranked_lines(results: Iterable[Recalled], marks: Marks | None = None) -> list[str]:
    """One line per ranked result, best first, each with its score and its
    marks (none without ``marks``)."""
    if marks is None:
        return [line(r.record, r.score) for r in results]
    return [
        line(
            r.record,
            r.score,
            stands_for=marks.stands_for(r.record.id),
            against=marks.against(r.record.id),
        )
        for r in results
    ]
