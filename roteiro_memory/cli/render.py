"""Human output: aligned tables read at a glance, and the sync progress bar.

Only what a person reads is decided here; ``--json`` bypasses this module and
prints the PROTOCOL shapes, so nothing computed depends on it.

Stored text is shown, never obeyed: every body, anchor and key goes through
:func:`printable`, so a body holding ``ESC]0;...`` cannot retitle or clear the
terminal.  A table's last column is clipped to the width only on a terminal;
piped or redirected, every body is whole.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence

from roteiro_memory.cli.output import printable
from roteiro_memory.semantics import AnchorState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

    from roteiro_memory.app.shown import Conflicts, Marks, View
    from roteiro_memory.results import (
        CacheEntry,
        CacheStats,
        CacheSweep,
        MemoryListing,
        MemoryRecord,
        Recall,
    )

__all__ = [
    "STATE_MARKS",
    "ProgressBar",
    "anchor_label",
    "cache_table",
    "conflicts_text",
    "listing_table",
    "printable",
    "recall_table",
    "record_detail",
    "state_label",
    "table",
]

STATE_MARKS: dict[AnchorState, str] = {
    AnchorState.VALID: "+",
    AnchorState.DRIFTED: "~",
    AnchorState.VANISHED: "x",
    AnchorState.UNVERIFIABLE: "?",
    AnchorState.UNANCHORED: ".",
}
"""One distinct ASCII mark per anchor state, so a column of them scans fast
and survives any terminal encoding."""


def state_label(state: AnchorState) -> str:
    """``~ drifted``: the state's mark and its name."""
    return f"{STATE_MARKS[state]} {state.value}"


def anchor_label(key: str | None) -> str:
    """An anchor key in the form ``--anchor`` takes where that names it, the
    raw key otherwise (:func:`roteiro_memory.app.anchors.anchor_label`); one
    holding white space a table row would lose or hide (a tab, a newline,
    two spaces running, one at either end) is quoted and escaped, so that
    ``a.py `` is never shown as ``a.py``, another file."""
    if key is None:
        return "-"
    from roteiro_memory.app.anchors import anchor_label as label

    shown = label(key)
    return shown if _one_line(shown) == shown else printable(repr(shown))


def _width() -> int | None:
    """How wide a table may be: None (no limit) when stdout is not a
    terminal, else ``COLUMNS`` if set, else the terminal's width, else 120;
    at least 60."""
    if not sys.stdout.isatty():
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return max(int(columns), 60)
    try:
        return max(os.get_terminal_size(sys.stdout.fileno()).columns, 60)
    except (OSError, ValueError, AttributeError):
        return 120


def _one_line(text: str) -> str:
    return printable(" ".join(text.split()))


def _clip(text: str, width: int) -> str:
    if width <= 1:
        return ""
    return text if len(text) <= width else text[: max(width - 3, 0)] + "..."


def table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, right: Sequence[int] = ()
) -> str:
    """Rows under headers, columns padded to their widest cell; the last
    column is clipped to the terminal's width (on a terminal only).  Column indexes in ``right`` are
    right-aligned (numbers)."""
    widths = [len(h) for h in headers]
    for row in rows:
        for index, cell in enumerate(row[:-1]):
            widths[index] = max(widths[index], len(cell))
    lead = sum(widths[:-1]) + 2 * (len(headers) - 1)
    width = _width()
    last = None if width is None else max(width - lead, 20)
    lines = []
    for row in [list(headers), *[list(r) for r in rows]]:
        cells = []
        for index, cell in enumerate(row[:-1]):
            cells.append(cell.rjust(widths[index]) if index in right else cell.ljust(widths[index]))
        cells.append(row[-1] if last is None else _clip(row[-1], last))
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def _record_cells(record: MemoryRecord) -> list[str]:
    return [
        str(record.id),
        record.kind.value,
        state_label(record.anchor_state),
        anchor_label(record.anchor.key if record.anchor else None),
    ]


def _counts(live: int, superseded: int) -> str:
    return f"{live} live, {superseded} superseded"


def _marked(record: MemoryRecord, marks: Marks) -> str:
    """A record's body cell: its marks, then its body on one line."""
    from roteiro_memory.app.brief import marks_text

    said = marks_text(marks.stands_for(record.id), marks.against(record.id))
    return said + _one_line(record.body)


def _notes(marks: Marks) -> list[str]:
    """The lines below a table that say what its marks mean."""
    from roteiro_memory.app.brief import conflicts_note, duplicates_note

    notes = [duplicates_note(cli=True)] if marks.alike else []
    if marks.conflicts:
        notes.append(conflicts_note(cli=True))
    return notes


def recall_table(recall: Recall, view: View | None = None) -> str:
    """The ranked results as a table (``view``: what is shown of them, by
    default every one, unmarked)."""
    from roteiro_memory.app.brief import counted
    from roteiro_memory.app.shown import Marks, View

    view = view or View(recall.results, Marks())
    marks = view.marks
    rows = [
        [*_record_cells(r.record), f"{r.score:.3f}", _marked(r.record, marks)] for r in view.items
    ]
    out = table(["ID", "KIND", "STATE", "ANCHOR", "SCORE", "BODY"], rows, right=(0, 4))
    decay = "" if recall.decay.mode == "none" else f", decay {recall.decay.token()}"
    footer = (
        f"{counted(len(rows), 'result', folded=marks.folded)} (store: "
        f"{_counts(recall.live, recall.superseded)}, generation {recall.generation}{decay})"
    )
    if recall.terms == []:
        footer += (
            "\nno word of the question is searched: stop words and punctuation are not "
            "(recall --filter WORDS finds words as written)"
        )
    return "\n".join([out, footer, *_notes(marks)] if rows else [footer])


def listing_table(listing: MemoryListing, view: View | None = None) -> str:
    """The records as a table (``view`` as in :func:`recall_table`)."""
    from roteiro_memory.app.brief import counted
    from roteiro_memory.app.shown import Marks, View

    view = view or View(listing.records, Marks())
    rows = []
    for record in view.items:
        mark = "" if record.superseded_by is None else f"[superseded by {record.superseded_by}] "
        rows.append([*_record_cells(record), mark + _marked(record, view.marks)])
    out = table(["ID", "KIND", "STATE", "ANCHOR", "BODY"], rows, right=(0,))
    footer = (
        f"{counted(len(rows), 'record', folded=view.marks.folded)} "
        f"(store: {_counts(listing.live, listing.superseded)})"
    )
    return "\n".join([out, footer, *_notes(view.marks)] if rows else [footer])


def conflicts_text(found: Conflicts) -> str:
    """Each conflict: where, its decisions, and the commands that settle it."""
    from roteiro_memory.app.brief import marks_text
    from roteiro_memory.conflicts import settle_command

    if not found.conflicts:
        return "no unresolved conflicts: no two live decisions about the same code disagree"
    blocks = []
    for conflict in found.conflicts:
        where = anchor_label(conflict.anchor)
        scope = "" if conflict.scope == "repo" else f" (scope {printable(conflict.scope)})"
        rows = [
            [
                *_record_cells(r),
                marks_text(against=conflict.against(r.id)) + _one_line(r.body),
            ]
            for r in conflict.records
        ]
        lines = [f"unresolved at {where}{scope}: {len(conflict.records)} live decisions", ""]
        lines.append(table(["ID", "KIND", "STATE", "ANCHOR", "BODY"], rows, right=(0,)))
        lines.append("")
        lines.append("settle: record the decision that holds, superseding each one it replaces:")
        for record in conflict.records:
            lines.append(f"  {printable(settle_command(where, conflict.scope, record.id))}")
        blocks.append("\n".join(lines))
    noun = "conflict" if len(found.conflicts) == 1 else "conflicts"
    return "\n\n".join([*blocks, f"{len(found.conflicts)} unresolved {noun}"])


def record_detail(record: MemoryRecord) -> str:
    """Every field of one record, then its body in full."""
    # Every stored field is shown through printable, not the body alone: an
    # import takes any text as a tree or a blob, a scope may hold a
    # bidirectional override, and a damaged store any text as a timestamp.
    lines = [f"#{record.id} {record.kind.value} (scope {printable(record.scope, one_line=True)})"]
    if record.anchor is not None:
        lines.append(f"anchor      {anchor_label(record.anchor.key)}")
        lines.append(f"state       {state_label(record.anchor_state)}")
        lines.append(f"captured    blob {printable(record.anchor.blob or '-', one_line=True)}")
    else:
        lines.append(f"state       {state_label(record.anchor_state)}")
    confidence = "-" if record.confidence is None else f"{record.confidence:g}"
    lines.append(f"confidence  {confidence}")
    lines.append(f"tree        {printable(record.tree or '-', one_line=True)}")
    lines.append(f"created     {printable(record.created_at, one_line=True)} UTC")
    if record.superseded_by is not None:
        at = printable(str(record.superseded_at), one_line=True)
        lines.append(f"superseded  by #{record.superseded_by} at {at} UTC")
    lines.append("")
    lines.append(printable(record.body))
    return "\n".join(lines)


def cache_table(entries: Sequence[CacheEntry]) -> str:
    rows = [
        [
            _one_line(e.key),
            str(e.bytes),
            str(e.generation),
            str(e.last_used),
            str(e.hits),
            state_label(e.anchor_state),
            anchor_label(e.anchor),
        ]
        for e in entries
    ]
    out = table(
        ["KEY", "BYTES", "GEN", "USED", "HITS", "STATE", "ANCHOR"], rows, right=(1, 2, 3, 4)
    )
    noun = "entry" if len(rows) == 1 else "entries"
    footer = f"{len(rows)} {noun}"
    return f"{out}\n{footer}" if rows else footer


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def stats_text(stats: CacheStats) -> str:
    noun = "entry" if stats.entries == 1 else "entries"
    return (
        f"{stats.entries} {noun}, {stats.bytes} bytes ({_mb(stats.bytes)}) of a "
        f"{stats.budget_bytes}-byte budget ({_mb(stats.budget_bytes)}); "
        f"generation {stats.generation}"
    )


def sweep_text(sweep: CacheSweep) -> str:
    over = " -- still over budget: pinned entries alone exceed it" if sweep.over_budget else ""
    return (
        f"scanned {sweep.scanned}, pinned {sweep.pinned}, evicted {sweep.evicted} "
        f"({sweep.freed_bytes} bytes freed); {sweep.retained_bytes} bytes retained of "
        f"{sweep.budget_bytes}; generation now {sweep.generation}{over}"
    )


class ProgressBar:
    """A one-line bar on a terminal's stderr, drawn only once a task has run
    for :attr:`delay` seconds; on anything but a terminal it draws nothing."""

    delay = 0.4

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.started = time.monotonic()
        self.drawn = False
        self._last = 0.0

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.monotonic()
        if now - self.started < self.delay or (now - self._last < 0.05 and done < total):
            return
        self._last = now
        width = 30
        filled = width * done // total
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{total}")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        """Erase the bar, if one was drawn."""
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.drawn = False
