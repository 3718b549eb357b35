"""Near-duplicates: when one record nearly repeats a better-ranked one.

The same lesson recorded twice (by two sessions, or reworded a little) would
fill the top of a ranked answer twice.  Every surface that shows records --
the CLI's tables and ``--json``, the MCP tools, ``pack`` and the hooks'
notices -- folds such a record into the better-ranked one it repeats, shown
once with the ids it stands for.  This is presentation only: the store and
PROTOCOL's ``memory.search`` keep and return every record, and ``--all``
(the ``all`` argument of the MCP tools) shows each.

The rule, the one implementation every surface uses:

* **Same place.**  Both records have the same kind, the same scope and the
  same anchor key (or both none), and both are live or both superseded: a
  lesson about another function, a decision beside a lesson, or a record
  its successor replaced, is never folded into it.
* **The same words, nearly.**  A body's *words* are its runs of letters,
  digits, ``_`` and ``'``, case folded (:func:`words`).  Two bodies are
  near-duplicates when the Jaccard similarity of their word sets,
  ``|A & B| / |A | B|``, is at least :data:`THRESHOLD` (0.8), and both say
  the same negations (:data:`NEGATIONS`) and numbers in the same order.

Why this measure: it is deterministic, needs no model and no corpus
statistics (so a record's grouping never moves as the store grows), and it
is independent of the search tokenizer, whose stemming and identifier
splitting serve recall and may change with it.  Word sets ignore order,
case, white space and punctuation, which is how a restated lesson differs.
Why 0.8: one word changed in a body of nine or more words (8/10), or one
added to a body of four or more (4/5), is still the same statement; two
words changed in a ten-word body (8/12 = 0.67) is a different one.  Why the
guard: two sentences that differ by "not", by "30" versus "60", or by
"from 30 to 60" versus "from 60 to 30" say different things, and folding
one into the other would hide exactly the disagreement a reader must see
(:mod:`roteiro_memory.conflicts`).

A record is compared with the *lead* of each group (its best-ranked
record), in rank order, and joins the first it nearly repeats; groups never
chain through a middle record, so what a lead stands for does not depend
on which near-duplicates happen to be read.  Pure: no I/O.
"""

from __future__ import annotations

import math
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import TypeVar

    from roteiro_memory.results import MemoryRecord

    _T = TypeVar("_T")

__all__ = ["NEGATIONS", "THRESHOLD", "collapse", "near_duplicate", "similarity", "words"]

THRESHOLD = 0.8
"""The least Jaccard similarity of two bodies' word sets that makes them near-duplicates."""

NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "none",
        "nor",
        "neither",
        "without",
        "cannot",
        "can't",
        "don't",
        "doesn't",
        "didn't",
        "isn't",
        "aren't",
        "wasn't",
        "won't",
        "shouldn't",
        "mustn't",
        "needn't",
    }
)
"""Words that turn a statement into its opposite: a difference in one keeps
two bodies apart however alike they are otherwise."""

_WORD = re.compile(r"[\w']+")


def words(body: str) -> frozenset[str]:
    """The word set of ``body``: runs of letters, digits, ``_`` and ``'``,
    case folded, apostrophes at either end dropped."""
    found = (w.strip("'") for w in _WORD.findall(body.casefold()))
    return frozenset(w for w in found if w)


def similarity(one: frozenset[str], other: frozenset[str]) -> float:
    """The Jaccard similarity of two word sets (1.0 for two empty ones)."""
    union = len(one | other)
    return 1.0 if union == 0 else len(one & other) / union


def _telling(word: str) -> bool:
    return word in NEGATIONS or any(char.isdigit() for char in word)


def _telling_order(body: str) -> tuple[str, ...]:
    """The negations and numbers of ``body``, in the order they appear."""
    found = (w.strip("'") for w in _WORD.findall(body.casefold()))
    return tuple(w for w in found if w and _telling(w))


def _same_words(one: frozenset[str], other: frozenset[str]) -> bool:
    """Whether two word sets are alike enough (the telling words are
    compared, in order, by the caller)."""
    return similarity(one, other) >= THRESHOLD


def _place(record: MemoryRecord) -> tuple[str, str, str | None, bool]:
    key = record.anchor.key if record.anchor else None
    return (record.kind.value, record.scope, key, record.is_live)


def near_duplicate(one: MemoryRecord, other: MemoryRecord) -> bool:
    """Whether ``other`` nearly repeats ``one``: the same kind, scope and
    anchor, and bodies whose words are nearly the same (see the module)."""
    return (
        _place(one) == _place(other)
        and _telling_order(one.body) == _telling_order(other.body)
        and _same_words(words(one.body), words(other.body))
    )


def _prefix(seen: frozenset[str]) -> list[str]:
    """The words a set nearly equal to ``seen`` must share one of (the
    prefix filter of set-similarity joins): under any fixed order of words,
    two sets whose Jaccard similarity is at least :data:`THRESHOLD` share a
    word among the first ``n - ceil(THRESHOLD * n) + 1`` of each.  The order
    is longest first, then alphabetical, so the prefix holds the rarer words."""
    ordered = sorted(seen, key=lambda w: (-len(w), w))
    return ordered[: len(ordered) - math.ceil(THRESHOLD * len(ordered)) + 1] or [""]


def collapse(
    items: Sequence[_T], record: Callable[[_T], MemoryRecord]
) -> list[tuple[_T, list[_T]]]:
    """``items`` (best first) folded: each joins the first earlier group
    whose lead it nearly repeats, or leads a group of its own.  The groups,
    in the order of their leads: each lead with the near-duplicates folded
    into it, in rank order.  ``record`` reads an item's record.

    Only leads with the same negations and numbers in order and sharing a word of
    their prefixes (:func:`_prefix`) are compared, so a store of many
    records at one anchor folds in near-linear time; the answer is the same
    as comparing with every lead."""
    groups: list[tuple[frozenset[str], _T, list[_T]]] = []
    index: dict[tuple[object, str], list[int]] = {}
    for item in items:
        held = record(item)
        seen = words(held.body)
        place = (_place(held), _telling_order(held.body))
        prefix = _prefix(seen)
        candidates = sorted({g for word in prefix for g in index.get((place, word), ())})
        for number in candidates:
            lead_words, _, members = groups[number]
            if _same_words(lead_words, seen):
                members.append(item)
                break
        else:
            for word in prefix:
                index.setdefault((place, word), []).append(len(groups))
            groups.append((seen, item, []))
    return [(lead, members) for _, lead, members in groups]
