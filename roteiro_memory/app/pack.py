"""The session digest: which records an agent should read first, and how.

:func:`select` is pure: it is given ranked records and returns the digest,
so the same store and tree give the same bytes; :func:`digest` is the use
case that reads them from a session.

What holds:

* **Kinds.** Lessons, failed attempts, decisions and patterns
  (:data:`PACK_KINDS`); outcomes are history, not advice, and stay out.
* **One line a record**, as every agent-facing answer shows one
  (:mod:`roteiro_memory.app.brief`), under a heading per kind.
* **Drift is shown, not hidden, and has room.**  Records whose code changed
  since they were written (``drifted``), is gone (``vanished``) or cannot be
  compared (``unverifiable``) are listed in a section of their own, which
  is reserved :data:`STALE_SHARE` of the budget when there are any: ranked
  below what still applies, they would otherwise never fit.  Room either
  side leaves unused goes to the other.
* **Selection.** Within each side, candidates are taken in rank order
  (score, then newest id); one that would not fit is skipped and the next
  tried, so a long body never crowds out every short one; what is left out
  is counted, never dropped silently.
* **Budget.** A token is approximated as four UTF-8 bytes, rounded up:
  ``tokens(text) = ceil(len(text.encode()) / 4)``.  The whole Markdown
  digest, title and footer included, fits the budget, which is at least
  :data:`MIN_BUDGET` and at most :data:`MAX_BUDGET`.  A section's heading,
  the sentence on changed code and each note on marks cost only once a line
  that needs them is chosen, so whatever the store holds, every budget in
  range gives a digest (:data:`MIN_BUDGET` says the one exception).  What a
  caller shows beside the digest (``spent``: the session-start hook's
  lines) is counted in the budget too, the records giving way to it.
  ``--json`` reports the same selection (a format never changes what is chosen); its
  ``budget`` and ``tokens`` count the Markdown, and the JSON itself, which
  carries each record's full PROTOCOL shape, is larger.
* **Bounded work.**  Selection is linear in the candidates: each line's
  size, with the heading and notes it is the first to need, is counted once,
  against the budget less the largest the title, summary and footer can be.
  Of the records that apply, at most as many as the budget could hold are
  read, ranked by the store (:func:`read_limit`); of those about changed
  code, however old (``Store.recall``'s ``stale_only``), as many too when
  fewer apply, else as many as the share held for them could hold.  So a
  store of 100,000 records answers within a second (``bench/pack.py``).
"""

from __future__ import annotations

import math

from roteiro_memory import semantics as sem
from roteiro_memory.app import brief
from roteiro_memory.app.shown import Marks, fold
from roteiro_memory.results import Recall, Recalled
from roteiro_memory.semantics import MemoryKind
from roteiro_memory.valueclass import field, valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from roteiro_memory.app.session import Session
    from roteiro_memory.conflicts import Conflict
    from roteiro_memory.results import MemoryRecord
    from roteiro_memory.store import Graph, Store

__all__ = [
    "DEFAULT_PACK_BUDGET",
    "MAX_BUDGET",
    "MIN_BUDGET",
    "PACK_KINDS",
    "PACK_SCHEMA",
    "STALE_SHARE",
    "Pack",
    "budget_tokens",
    "digest",
    "read_limit",
    "select",
    "tokens",
]

DEFAULT_PACK_BUDGET = 2000
"""Tokens the session digest may take unless told otherwise: enough for a few
dozen records, small next to any agent's context window."""

MIN_BUDGET = 100
"""The smallest budget accepted.  The title, summary and footer fit in it
unless a very long ``--touched`` revision name makes them longer, which
:func:`select` refuses by name rather than overflow: the one budget in
range refused.  Headings and notes take room only beside a line shown."""

MAX_BUDGET = 20_000
"""The largest budget accepted: 80 KB of digest, more than a session start
should spend, and a bound on the records read (:func:`read_limit`)."""

STALE_SHARE = 0.25
"""The part of the budget held for records whose code changed, when there are any."""

PACK_SCHEMA = "roteiro.pack/v1"

PACK_KINDS: tuple[tuple[MemoryKind, str], ...] = (
    (MemoryKind.LESSON, "Lessons"),
    (MemoryKind.ATTEMPT, "Failed attempts"),
    (MemoryKind.DECISION, "Decisions"),
    (MemoryKind.PATTERN, "Patterns"),
)
"""The kinds a digest holds, in the order their sections appear, with headings."""

STALE_HEADING = "Changed since recorded"
"""The section of the records whose code changed, is gone or cannot be compared."""

_STALE_SAID = (
    f' Under "{STALE_HEADING}", the code is not what the record was written about: '
    "check it before relying on the record."
)
"""What the summary adds when that section is shown."""

_HEADINGS = dict(PACK_KINDS)

_ALIKE, _CONFLICTS, _NOTES = "[alike]", "[conflicts]", "[notes]"
"""What a line may bring along besides its section (:func:`_brings`): the
note on near-duplicates, the note on conflicts, the blank line after notes."""

_SMALLEST_LINE = len("- #1 lesson valid 0.00: x\n")
"""The fewest bytes a digest line takes, for :func:`read_limit`."""


def tokens(text: str) -> int:
    """The approximate token count of ``text``: ceil(UTF-8 bytes / 4)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


def read_limit(budget: int) -> int:
    """The most records a digest of ``budget`` tokens could hold: as many
    as are read ranked."""
    return budget * 4 // _SMALLEST_LINE + 1


def _entry(recalled: Recalled, marks: Marks) -> str:
    """The digest's line of ``recalled``, its stored text's control
    characters shown as escapes: the digest is printed to a terminal, and
    the budget counts the bytes shown."""
    from roteiro_memory.terminal import printable

    record = recalled.record
    return "- " + printable(
        brief.line(
            record,
            recalled.score,
            stands_for=marks.stands_for(record.id),
            against=marks.against(record.id),
        )
    )


@valueclass
class Pack:
    """A digest: the records chosen, and what it had to leave out."""

    chosen: tuple[Recalled, ...]
    candidates: int
    """How many records of the digest's kinds were read as candidates (all
    of them in a store of up to a few thousand; see :func:`read_limit`)."""
    budget: int
    touched: str | None
    """The revision ``--touched`` compared with, or None for the whole store."""
    live: int
    marks: Marks = field(default_factory=Marks)
    """The near-duplicates each chosen record stands for, and the conflicts
    of the chosen decisions (:mod:`roteiro_memory.app.shown`)."""
    every_read: bool = True
    """Whether every candidate was read; when the read stopped at
    :func:`read_limit`, more were left unread, and :attr:`omitted` counts
    only those read: at least that many did not fit."""

    @property
    def omitted(self) -> int:
        shown = sum(max(len(self.marks.stands_for(r.record.id)), 1) for r in self.chosen)
        return self.candidates - shown

    def groups(self) -> list[tuple[str, str, list[Recalled]]]:
        """The chosen records by section (:func:`_heading`): the kinds in
        :data:`PACK_KINDS` order (what applies), then those about changed
        code; each in rank order, empty ones left out.  The first item is
        the section's key: a kind, or ``stale``."""
        out = []
        for key, heading in [*((k.value, h) for k, h in PACK_KINDS), ("stale", STALE_HEADING)]:
            members = [r for r in self.chosen if _heading(r) == heading]
            if members:
                out.append((key, heading, members))
        return out

    def markdown(self) -> str:
        groups = self.groups()
        stale = any(key == "stale" for key, _, _ in groups)
        lines = [_title(self.touched), "", _summary(self, stale), ""]
        for _, heading, members in groups:
            lines += _section(heading, [_entry(r, self.marks) for r in members])
        lines += _notes(self.marks)
        lines.append(_footer(self.omitted, self.every_read))
        return "\n".join(lines) + "\n"

    def to_json(self) -> Any:
        return {
            "schema": PACK_SCHEMA,
            "budget": self.budget,
            "tokens": tokens(self.markdown()),
            "touched": self.touched,
            "groups": [
                {"kind": key, "results": [r.to_json() for r in members]}
                for key, _, members in self.groups()
            ],
            "omitted": self.omitted,
            "omitted_exact": self.every_read,
            "live": self.live,
            **self.marks.to_json(),
        }


def _notes(marks: Marks) -> list[str]:
    """What the digest's marks mean, said once each, then a blank line."""
    notes = [brief.duplicates_note(cli=True)] if marks.alike else []
    if marks.conflicts:
        notes.append(brief.conflicts_note(cli=True))
    return [*notes, ""] if notes else []


def _title(touched: str | None) -> str:
    if touched is None:
        return "# Memory for this repository"
    return f"# Memory about what changed since {touched}"


def _summary(pack: Pack, stale: bool) -> str:
    if pack.candidates == 0:
        return (
            "Nothing recorded applies yet. Record a lesson, a failed attempt or a decision "
            "as you learn it: `roteiro-memory add --help`."
        )
    noun = "record" if len(pack.chosen) == 1 else "records"
    said = (
        f"{len(pack.chosen)} {noun} of {pack.live} live (budget {pack.budget} tokens), best "
        "first: id, kind, anchor state, score, anchor, body."
    )
    if stale:
        said += _STALE_SAID
    return said


def _footer(omitted: int, exact: bool) -> str:
    """The digest's last line: what it left out.  With records left unread
    (not ``exact``), ``omitted`` counts only those read: a floor, and none
    at all when every one read was shown or folded into a line shown."""
    finds = "`roteiro-memory recall` or the MCP `search` tool finds them._"
    if exact and not omitted:
        return "_End of memory digest._"
    if exact:
        return f"_{omitted} more did not fit the budget: {finds}"
    if omitted:
        return f"_At least {omitted} more did not fit the budget: {finds}"
    return f"_More records were left unread, beyond what the budget shows: {finds}"


def _heading(recalled: Recalled) -> str:
    """The heading a record is listed under: its kind's while it applies,
    else :data:`STALE_HEADING`."""
    record = recalled.record
    return _HEADINGS[record.kind] if record.applies else STALE_HEADING


def _section(heading: str, entries: Sequence[str]) -> list[str]:
    """A section's lines: its heading, its entries, a blank line each side."""
    return [f"## {heading}", "", *entries, ""]


def _brings(recalled: Recalled, marks: Marks) -> list[str]:
    """What ``recalled``'s line needs shown with it: its section, and the
    notes its marks need (:func:`_notes` shows them when a chosen record
    stands for near-duplicates or disagrees with a decision)."""
    needs = [_heading(recalled)]
    if marks.stands_for(recalled.record.id):
        needs += [_ALIKE, _NOTES]
    if marks.against(recalled.record.id):
        needs += [_CONFLICTS, _NOTES]
    return needs


def _extra_bytes(need: str) -> int:
    """The bytes one of :func:`_brings`'s needs takes, shown once: a
    section's heading and blank lines (and, for :data:`STALE_HEADING`, the
    summary's sentence on it), a note, or the blank line after the notes."""
    if need == _ALIKE:
        return brief.lines_bytes([brief.duplicates_note(cli=True)])
    if need == _CONFLICTS:
        return brief.lines_bytes([brief.conflicts_note(cli=True)])
    if need == _NOTES:
        return brief.lines_bytes([""])
    said = len(_STALE_SAID.encode("utf-8")) if need == STALE_HEADING else 0
    return brief.lines_bytes(_section(need, [])) + said


def _fixed_bytes(read: int, budget: int, live: int, touched: str | None, every_read: bool) -> int:
    """The bytes of what every digest of ``read`` records shows, at their
    largest: the title, the summary and the footer, every count as wide as
    it can be (none exceeds ``read``).  Headings and notes are not among
    them: each is counted with the first line chosen that needs it."""
    widest = Pack((), read, budget, touched, live, every_read=every_read)
    footer = max(_footer(read, every_read), _footer(0, every_read), key=len)
    # The summary was written with none chosen: room for as many digits as the count.
    fixed = [_title(touched), "", _summary(widest, False), "", footer]
    return brief.lines_bytes(fixed) + len(str(read))


def _fill(
    candidates: Sequence[Recalled],
    room: int,
    chosen: list[Recalled],
    marks: Marks,
    shown: set[str],
    sizes: dict[int, int],
) -> int:
    """Append to ``chosen``, in rank order, each candidate whose line fits
    what is left of ``room`` bytes with what it brings that is not
    ``shown`` yet (:func:`_brings`), adding that to ``shown``; the bytes
    left.  ``sizes`` keeps each line's bytes, counted once however often
    it is tried."""
    taken = {id(r) for r in chosen}
    for candidate in candidates:
        if id(candidate) in taken:
            continue
        line = sizes.get(id(candidate))
        if line is None:
            line = sizes[id(candidate)] = brief.lines_bytes([_entry(candidate, marks)])
        new = [need for need in dict.fromkeys(_brings(candidate, marks)) if need not in shown]
        size = line + sum(_extra_bytes(need) for need in new)
        if size <= room:
            chosen.append(candidate)
            shown.update(new)
            room -= size
    return room


def select(
    recall: Recall,
    budget: int,
    touched: str | None = None,
    conflicts: Sequence[Conflict] = (),
    *,
    every: bool = False,
    every_read: bool = True,
    spent: int = 0,
) -> Pack:
    """The digest of ``recall`` within ``budget`` tokens, less ``spent``
    bytes that its reader is shown beside it (a hook's lines around it).

    ``recall`` must be ranked and hold every candidate of interest, drifted
    ones included; records of other kinds are ignored.  Each near-duplicate
    is folded into the better-ranked candidate it repeats, which takes one
    line for all of them (:mod:`roteiro_memory.duplicates`), unless
    ``every`` (``--all``): then each has a line of its own.  The decisions
    of ``conflicts`` are marked with those they disagree with; ``every_read``
    says whether ``recall`` holds every candidate, or stopped at a limit."""
    kinds = {kind for kind, _ in PACK_KINDS}
    read = [r for r in recall.results if r.record.kind in kinds]
    candidates, alike = fold(read, _record, every)
    marks = Marks(alike, conflicts)
    fixed = _fixed_bytes(len(read), budget, recall.live, touched, every_read) + spent
    floor = max(MIN_BUDGET, math.ceil(fixed / 4))
    if budget < floor:
        raise ValueError(f"a digest budget of {budget} tokens is below its floor of {floor}")
    room = budget * 4 - fixed
    applying = [r for r in candidates if r.record.applies]
    stale = [r for r in candidates if not r.record.applies]
    chosen: list[Recalled] = []
    shown: set[str] = set()
    sizes: dict[int, int] = {}
    reserve = int(room * STALE_SHARE) if stale else 0
    left = _fill(stale, reserve, chosen, marks, shown, sizes)
    left = _fill(applying, room - reserve + left, chosen, marks, shown, sizes)
    _fill(stale, left, chosen, marks, shown, sizes)
    ordered = tuple(sorted(chosen, key=lambda r: sem.rank_key(r.score, r.record.id)))
    ids = {r.record.id for r in ordered}
    marked = Marks(
        {lead: same for lead, same in alike.items() if lead in ids},
        [c for c in conflicts if ids.intersection(c.ids)],
    )
    return Pack(ordered, len(read), budget, touched, recall.live, marked, every_read)


def _record(recalled: Recalled) -> MemoryRecord:
    return recalled.record


def _candidates(
    store: Store, budget: int, anchors: sem.AnchorFilter | None, graph: Graph | None = None
) -> tuple[Recall, bool]:
    """The records a digest of ``budget`` tokens chooses from, ranked: the
    best that apply, as many as it could hold, and the best about changed
    code, however old -- as many as it could hold when fewer apply, else as
    many as the share held for them could (the rest is theirs to fill) --
    with ``anchors``, of what the change touched only; and whether both
    reads stopped short of their limit, so that none was left unread.
    Anchors are resolved against ``graph`` when given, else the store's."""
    kinds = [kind for kind, _ in PACK_KINDS]
    limit = read_limit(budget)
    best = store.recall(kind=kinds, anchors=anchors, applicable_only=True, limit=limit, graph=graph)
    stale_limit = limit
    if len(best.results) == limit:
        stale_limit = read_limit(math.ceil(budget * STALE_SHARE))
    stale = store.recall(
        kind=kinds, anchors=anchors, stale_only=True, limit=stale_limit, graph=graph
    )
    results = sorted(
        [*best.results, *stale.results], key=lambda r: sem.rank_key(r.score, r.record.id)
    )
    every_read = len(best.results) < limit and len(stale.results) < stale_limit
    return Recall(best.generation, best.decay, results, best.live, best.superseded), every_read


def _ranked(session: Session, budget: int, touched: str | None) -> tuple[Recall, bool] | None:
    """The candidates (:func:`_candidates`), limited to what ``touched``
    changed when given; None when there is no store to read yet (a first
    session)."""
    if touched is not None:  # refused as it would be with a store, not named in the title
        from roteiro_memory.repo.revname import check_rev_name

        check_rev_name(touched)
    if not session.has_store():
        return None
    session.check_revs(touched=touched)
    store = session.store()
    session.sync()
    graph = session.graph_for(None)  # the store's, unless it could not be synced
    if touched is None:
        return _candidates(store, budget, None, graph)
    from roteiro_memory.app.anchors import anchor_filter

    # As recall --touched filters: in the store, before it ranks.
    _, anchors = anchor_filter(None, session.touched(touched))
    assert anchors is not None  # a touched set always makes a filter
    return _candidates(store, budget, anchors, graph)


def budget_tokens(session: Session, budget: object = None) -> int:
    """The digest's budget ``budget`` gives, in tokens (text or a JSON
    number; from :data:`MIN_BUDGET` to :data:`MAX_BUDGET`, by default
    :data:`DEFAULT_PACK_BUDGET`); :class:`~roteiro_memory.errors.UsageError`
    naming the option for anything else."""
    from roteiro_memory.app import values

    tokens_allowed = values.whole(
        budget,
        session.spell("budget"),
        minimum=MIN_BUDGET,
        maximum=MAX_BUDGET,
        default=DEFAULT_PACK_BUDGET,
        allowed=f"a whole number of tokens from {MIN_BUDGET} to {MAX_BUDGET}",
    )
    assert tokens_allowed is not None
    return tokens_allowed


def digest(
    session: Session,
    budget: object = None,
    touched: str | None = None,
    *,
    every: bool = False,
    spent: int = 0,
) -> Pack:
    """The digest of the session's store within ``budget`` tokens
    (:func:`budget_tokens`), less ``spent`` bytes shown beside it, about what
    changed since ``touched`` when given, near-duplicates folded unless
    ``every``; an empty one when there is no store yet, so a session-start
    hook never fails a first session."""
    from roteiro_memory.errors import UsageError, excerpt

    what = session.spell("budget")
    tokens_allowed = budget_tokens(session, budget)
    ranked = _ranked(session, tokens_allowed, touched)
    recall, every_read = ranked or (Recall(0, sem.Decay.none(), [], 0, 0), True)
    found: list[Conflict] = []
    if recall.results:
        from roteiro_memory.app.shown import conflicts_among

        found = conflicts_among(session.store(), [r.record for r in recall.results])
    try:
        return select(
            recall, tokens_allowed, touched, found, every=every, every_read=every_read, spent=spent
        )
    except ValueError as error:
        raise UsageError(f"invalid {what} {excerpt(budget)}: {error}") from None
