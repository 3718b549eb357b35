"""The session digest: which records an agent should read first, and how.

:func:`select` is pure: it is given a ranked
:class:`~roteiro_memory.results.Recall` and returns text or JSON, so the same
store and tree give the same bytes; :func:`digest` is the use case that reads
the recall from a session.

What holds:

* **Kinds.** Lessons, failed attempts, decisions and patterns, in that order
  (:data:`PACK_KINDS`); outcomes are history, not advice, and stay out.
* **Selection.** Candidates are taken in recall order (score, then newest
  id).  One that would push the Markdown past the budget is skipped and the
  next is tried, so a long body never crowds out every short one; what is
  left out is counted, never dropped silently.
* **Budget.** A token is approximated as four UTF-8 bytes, rounded up:
  ``tokens(text) = ceil(len(text.encode()) / 4)``.  The whole Markdown
  digest, title and footer included, fits the budget; ``--json`` reports the
  same selection, so choosing a format never changes what is chosen.
* **Drift is shown, not hidden.** A record whose code changed since it was
  written (``drifted``), was deleted (``vanished``) or cannot be checked
  (``unverifiable``) is listed with its state in bold and what to do about it;
  the ranking already puts it below what still applies.
"""

from __future__ import annotations

import math
import os

from roteiro_memory import semantics as sem
from roteiro_memory.results import Recall, Recalled
from roteiro_memory.semantics import AnchorState, MemoryKind
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.app.session import Session

__all__ = [
    "DEFAULT_PACK_BUDGET",
    "MIN_BUDGET",
    "PACK_KINDS",
    "PACK_SCHEMA",
    "Pack",
    "digest",
    "select",
    "tokens",
]

DEFAULT_PACK_BUDGET = 2000
"""Tokens the session digest may take unless told otherwise: enough for a few
dozen short records, small next to any agent's context window."""

MIN_BUDGET = 100
"""The smallest budget accepted.  The title, summary and footer fit in it
unless a very long ``--touched`` revision name makes them longer, which
:func:`select` refuses by name rather than overflow."""

PACK_SCHEMA = "roteiro.pack/v1"

PACK_KINDS: tuple[tuple[MemoryKind, str], ...] = (
    (MemoryKind.LESSON, "Lessons"),
    (MemoryKind.ATTEMPT, "Failed attempts"),
    (MemoryKind.DECISION, "Decisions"),
    (MemoryKind.PATTERN, "Patterns"),
)
"""The kinds a digest holds, in the order its sections appear, with headings."""


_STALE_NOTE = {
    AnchorState.DRIFTED: "its code changed since; check it still holds",
    AnchorState.VANISHED: "its code is gone; it may no longer apply",
    AnchorState.UNVERIFIABLE: "its code cannot be compared; check it",
}


def tokens(text: str) -> int:
    """The approximate token count of ``text``: ceil(UTF-8 bytes / 4)."""
    return math.ceil(len(text.encode("utf-8")) / 4)


@valueclass
class Pack:
    """A digest: the records chosen, and what it had to leave out."""

    chosen: tuple[Recalled, ...]
    candidates: int
    """How many records of the digest's kinds matched before the budget."""
    budget: int
    touched: str | None
    """The revision ``--touched`` compared with, or None for the whole store."""
    live: int

    @property
    def omitted(self) -> int:
        return self.candidates - len(self.chosen)

    def groups(self) -> list[tuple[MemoryKind, str, list[Recalled]]]:
        """The chosen records by kind, in :data:`PACK_KINDS` order, each group
        in recall order; empty groups left out."""
        out = []
        for kind, heading in PACK_KINDS:
            members = [r for r in self.chosen if r.record.kind is kind]
            if members:
                out.append((kind, heading, members))
        return out

    def markdown(self) -> str:
        lines = [_title(self.touched), "", _summary(self), ""]
        for _, heading, members in self.groups():
            lines += [f"## {heading}", ""]
            lines += [_entry(r) for r in members]
            lines.append("")
        lines.append(_footer(self.omitted))
        return "\n".join(lines) + "\n"

    def to_json(self) -> Any:
        return {
            "schema": PACK_SCHEMA,
            "budget": self.budget,
            "tokens": tokens(self.markdown()),
            "touched": self.touched,
            "groups": [
                {"kind": kind.value, "results": [r.to_json() for r in members]}
                for kind, _, members in self.groups()
            ],
            "omitted": self.omitted,
            "live": self.live,
        }


def _title(touched: str | None) -> str:
    if touched is None:
        return "# Memory for this repository"
    return f"# Memory about what changed since {touched}"


def _summary(pack: Pack) -> str:
    if pack.candidates == 0:
        return (
            "Nothing recorded applies yet. Record a lesson, a failed attempt or a decision "
            "as you learn it: `roteiro-memory add --help`."
        )
    return (
        f"{len(pack.chosen)} of {pack.candidates} records (budget {pack.budget} tokens), "
        "best first within each kind; a **drifted** or **vanished** one needs a look at "
        "its code before you rely on it."
    )


def _footer(omitted: int) -> str:
    if omitted == 0:
        return "_End of memory digest._"
    return (
        f"_{omitted} more did not fit the budget: `roteiro-memory recall` or the MCP "
        "`search` tool finds them._"
    )


def _where(recalled: Recalled) -> str:
    """``(anchor, confidence, state)``: the state last, so a stale record's
    note on what to do ends the parenthesis."""
    record = recalled.record
    parts = []
    if record.anchor is not None:
        from roteiro_memory.app.anchors import anchor_label

        parts.append(f"`{anchor_label(record.anchor.key)}`")
    if record.confidence is not None:
        parts.append(f"confidence {record.confidence:g}")
    state = record.anchor_state
    note = _STALE_NOTE.get(state)
    parts.append(f"**{state.value}**: {note}" if note else state.value)
    return ", ".join(parts)


def _entry(recalled: Recalled) -> str:
    """One list item; continuation lines are indented so Markdown keeps them
    inside the item."""
    body = recalled.record.body.strip().replace("\n", "\n  ")
    return f"- #{recalled.record.id} ({_where(recalled)}): {body}"


def _worst_case_skeleton(candidates: int, touched: str | None) -> int:
    """Tokens of the digest with nothing chosen and every candidate omitted."""
    empty = Pack((), candidates, 10**18, touched, 10**18)
    return tokens(empty.markdown())


def select(recall: Recall, budget: int, touched: str | None = None) -> Pack:
    """The digest of ``recall`` within ``budget`` tokens.

    ``recall`` must be ranked and unfiltered by the budget (every live record
    of interest, drifted ones included); records of other kinds are ignored.
    """
    kinds = {kind for kind, _ in PACK_KINDS}
    candidates = [r for r in recall.results if r.record.kind in kinds]
    floor = max(MIN_BUDGET, _worst_case_skeleton(len(candidates), touched))
    if budget < floor:
        raise ValueError(f"a digest budget of {budget} tokens is below its floor of {floor}")
    chosen: list[Recalled] = []
    for candidate in candidates:
        # ``chosen`` grows in rank order, so it is already the digest's order.
        trial = Pack((*chosen, candidate), len(candidates), budget, touched, recall.live)
        if tokens(trial.markdown()) <= budget:
            chosen.append(candidate)
    return Pack(tuple(chosen), len(candidates), budget, touched, recall.live)


def _ranked(session: Session, touched: str | None) -> Recall | None:
    """Every live record ranked, limited to what ``touched`` changed when given;
    None when there is no store to read yet (a first session)."""
    from roteiro_memory.errors import StoreUnavailable
    from roteiro_memory.repo.location import DB_ENV

    if session.dsn() is None:
        try:
            path = session.store_path()
        except StoreUnavailable:
            if session.db is not None or DB_ENV in os.environ:
                raise  # a store named and unusable is a mistake worth naming
            return None  # not in a repository, and no store named: nothing to read
        if not os.path.exists(path):
            return None
    session.check_revs(touched=touched)
    store = session.store()
    session.sync()
    if touched is None:
        return store.recall()
    from roteiro_memory.app.anchors import anchor_filter

    # As recall --touched filters: in the store, before it ranks.
    _, anchors = anchor_filter(None, session.touched(touched))
    return store.recall(anchors=anchors)


def digest(session: Session, budget: object = None, touched: str | None = None) -> Pack:
    """The digest of the session's store within ``budget`` tokens (text or a
    JSON number; at least :data:`MIN_BUDGET`, by default
    :data:`DEFAULT_PACK_BUDGET`), about what changed since ``touched`` when
    given; an empty one when there is no store yet, so a session-start hook
    never fails a first session."""
    from roteiro_memory.app import values
    from roteiro_memory.errors import UsageError, excerpt

    what = session.spell("budget")
    tokens_allowed = values.whole(
        budget,
        what,
        minimum=MIN_BUDGET,
        default=DEFAULT_PACK_BUDGET,
        allowed=f"a whole number of tokens, at least {MIN_BUDGET}",
    )
    assert tokens_allowed is not None
    recall = _ranked(session, touched)
    if recall is None:
        recall = Recall(0, sem.Decay.none(), [], 0, 0)
    try:
        return select(recall, tokens_allowed, touched)
    except ValueError as error:
        raise UsageError(f"invalid {what} {excerpt(budget)}: {error}") from None
