"""The semantics of ADR-0013, as pure functions with no I/O.

Every backend calls these and none re-implements them: the kind vocabulary,
the anchor rule, the penalty table, decay, write validation, the ranking
order, the query rule and the limit rule (the cache tier's budget and
eviction are :mod:`roteiro_memory.eviction`'s).  A backend that needs a rule
inside its query language gets it rendered from here
(:mod:`roteiro_memory.stores.sql.expressions`), never restated by hand.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Iterable, Mapping, Sequence

from roteiro_memory import arguments
from roteiro_memory.arguments import INT64_MAX, U64_MAX, fits_int64, parse_whole_number
from roteiro_memory.decay import DEFAULT_DECAY_SPAN, DEFAULT_HALF_LIFE, Decay
from roteiro_memory.errors import (
    AlreadySuperseded,
    BadRequest,
    InvalidAnchor,
    InvalidBody,
    InvalidConfidence,
    InvalidKind,
    InvalidScope,
    NotFound,
    RoteiroError,
    excerpt,
    lone_surrogate,
)
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol, TypeVar

__all__ = [
    "ANCHOR_PENALTY",
    "ANCHOR_RULE",
    "CONTROL",
    "DEFAULT_BASE_CONFIDENCE",
    "DEFAULT_DECAY_SPAN",
    "DEFAULT_HALF_LIFE",
    "DEFAULT_SCOPE",
    "INT64_MAX",
    "KIND_TOKENS",
    "MAX_ANCHOR_BYTES",
    "MAX_BODY_BYTES",
    "MAX_SCOPE_BYTES",
    "U64_MAX",
    "WHITE_SPACE",
    "AnchorFilter",
    "AnchorState",
    "BatchWrite",
    "Decay",
    "MemoryKind",
    "ValidWrite",
    "anchor_penalty",
    "apply_limit",
    "base_confidence",
    "check_anchor",
    "check_batch",
    "check_supersedes",
    "check_utf8",
    "effective_limit",
    "evidence",
    "fits_int64",
    "is_utf8",
    "matches_query",
    "parse_filters",
    "parse_kind",
    "parse_kinds",
    "parse_whole_number",
    "query_tokens",
    "rank_key",
    "record_age",
    "resolve_anchor",
    "score",
    "search_text",
    "settled_confidence",
    "stored_targets",
    "strip_white_space",
    "validate_scope",
    "validate_write",
]

DEFAULT_SCOPE = "repo"
"""The scope recorded when a writer names none.  A namespace, never a branch."""

MAX_BODY_BYTES = 64 * 1024
"""Longest body, in UTF-8 bytes: prose with a stack trace fits, a pasted file does not."""

MAX_SCOPE_BYTES = 128
"""Longest scope, in UTF-8 bytes: a short label, not a sentence."""

MAX_ANCHOR_BYTES = 4096
"""Longest anchor (of a record or a cache entry), in UTF-8 bytes: a node key
is a kind prefix, a path and a qualified name, and a path is at most 4,096
bytes on every system git runs on."""

DEFAULT_BASE_CONFIDENCE = 0.5
"""Confidence of a record whose writer stated none: the midpoint, so stating
high promotes and stating low demotes, both relative to silence."""

WHITE_SPACE = frozenset(
    "\u0009\u000a\u000b\u000c\u000d\u0020\u0085\u00a0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
"""Unicode White_Space.  Not Python's ``str.isspace``, which also counts
U+001C..U+001F; PROTOCOL fixes White_Space everywhere."""

_WHITE_SPACE_CHARS = "".join(sorted(WHITE_SPACE))

# --- Vocabulary -------------------------------------------------------------


class MemoryKind(enum.Enum):
    """What a record holds.  Closed: a value outside it is refused, never added."""

    LESSON = "lesson"
    ATTEMPT = "attempt"
    DECISION = "decision"
    PATTERN = "pattern"
    OUTCOME = "outcome"

    def __str__(self) -> str:
        return self.value


KIND_TOKENS: tuple[str, ...] = tuple(k.value for k in MemoryKind)
_KIND_BY_TOKEN = {k.value: k for k in MemoryKind}


def parse_kind(value: MemoryKind | str) -> MemoryKind:
    """The kind named by ``value``; :class:`InvalidKind` for anything else."""
    if isinstance(value, MemoryKind):
        return value
    kind = _KIND_BY_TOKEN.get(value) if isinstance(value, str) else None
    if kind is not None:
        return kind
    raise InvalidKind(
        f"unknown memory kind {excerpt(value)}: expected one of {', '.join(KIND_TOKENS)}"
    )


def parse_filters(
    scope: object,
    kind: MemoryKind | str | Iterable[MemoryKind | str] | None,
    anchor_key: object,
    include_superseded: object = False,
    anchors: object = None,
) -> frozenset[MemoryKind] | None:
    """The kinds a read's filters keep (:func:`parse_kinds`), once its
    ``scope`` and ``anchor_key`` filters are each None or text,
    ``include_superseded`` a ``bool`` and ``anchors`` None or an
    :class:`AnchorFilter` (else BadRequest, first).  The filters' values are
    not validated: one no record can have matches nothing (PROTOCOL
    [P-filters])."""
    arguments.optional_text(scope, "scope")
    arguments.optional_text(anchor_key, "anchor_key")
    if not isinstance(include_superseded, bool):
        raise BadRequest(
            f"invalid include_superseded {excerpt(include_superseded)}: expected True or False"
        )
    if anchors is not None and not isinstance(anchors, AnchorFilter):
        raise BadRequest(
            f"invalid anchors {excerpt(anchors)}: expected None or an AnchorFilter, "
            f"not {type(anchors).__name__}"
        )
    return parse_kinds(kind)


def parse_kinds(
    value: MemoryKind | str | Iterable[MemoryKind | str] | None,
) -> frozenset[MemoryKind] | None:
    """The kinds a ``kind`` filter keeps: None for every kind (None, or an
    empty collection), else those named, each by :func:`parse_kind` (so a bad
    one is :class:`InvalidKind` before anything is read)."""
    if value is None:
        return None
    if isinstance(value, (MemoryKind, str)):
        return frozenset({parse_kind(value)})
    kinds = frozenset(parse_kind(item) for item in value)
    return kinds or None


class AnchorState(enum.Enum):
    """What a recorded anchor is worth against the tree being read.

    Computed on every read and stored nowhere.  No state deletes anything.
    """

    UNANCHORED = "unanchored"
    """Nothing was anchored: a repository-wide lesson, true everywhere."""
    VALID = "valid"
    """The node is present with the blob captured at write time."""
    DRIFTED = "drifted"
    """The node is present with a different blob: the code moved underneath."""
    VANISHED = "vanished"
    """The node is gone.  Kept, because a lesson about deleted code is often
    the most valuable one."""
    UNVERIFIABLE = "unverifiable"
    """The node is present but a blob is missing on one side: nothing could be
    compared, so the association cannot be shown to hold."""

    def __str__(self) -> str:
        return self.value

    @property
    def applies(self) -> bool:
        """Whether the record applies to this tree: unanchored, or valid.

        Consults nothing but the state -- not the branch, scope, age or id.
        """
        return self in _APPLYING

    @property
    def is_stale(self) -> bool:
        """Whether the code moved out from under the record (drifted or vanished).

        Narrower than ``not applies``: an unverifiable anchor measured nothing.
        """
        return self in _STALE


_APPLYING = frozenset({AnchorState.UNANCHORED, AnchorState.VALID})
_STALE = frozenset({AnchorState.DRIFTED, AnchorState.VANISHED})


ANCHOR_RULE: tuple[tuple[str, AnchorState], ...] = (
    ("no_anchor", AnchorState.UNANCHORED),
    ("no_node", AnchorState.VANISHED),
    ("blob_missing", AnchorState.UNVERIFIABLE),
    ("blob_equal", AnchorState.VALID),
    ("otherwise", AnchorState.DRIFTED),
)
"""The anchor rule as an ordered decision: the first condition that holds
decides the state.  :func:`resolve_anchor` evaluates it in Python and
:mod:`roteiro_memory.stores.sql.expressions` renders the same table into SQL, so the rule
exists once."""


def resolve_anchor(
    anchor_key: str | None,
    anchor_blob: str | None,
    node_present: bool,
    node_blob: str | None,
) -> AnchorState:
    """What a recorded (key, blob) is worth against the node as it is now.

    ``node_present`` says whether a node with ``anchor_key`` exists in the tree
    being read.  Evaluates :data:`ANCHOR_RULE`.
    """
    facts = {
        "no_anchor": anchor_key is None,
        "no_node": not node_present,
        "blob_missing": anchor_blob is None or node_blob is None,
        "blob_equal": anchor_blob == node_blob,
        "otherwise": True,
    }
    for condition, state in ANCHOR_RULE:
        if facts[condition]:
            return state
    raise AssertionError("ANCHOR_RULE ends with 'otherwise'")  # pragma: no cover


ANCHOR_PENALTY: dict[AnchorState, float] = {
    AnchorState.VALID: 1.0,
    AnchorState.UNANCHORED: 0.9,
    AnchorState.UNVERIFIABLE: 0.5,
    AnchorState.VANISHED: 0.35,
    AnchorState.DRIFTED: 0.25,
}
"""The penalty table.  Nothing is zero (drift demotes, never silences); every
applying state outranks every other; drifted -- the state that can mislead about
code still under its key -- ranks below vanished."""


def anchor_penalty(state: AnchorState) -> float:
    """The ranking multiplier for ``state``, in (0, 1]."""
    return ANCHOR_PENALTY[state]


# --- Writes -----------------------------------------------------------------


@valueclass
class ValidWrite:
    """A memory write that passed :func:`validate_write`."""

    kind: MemoryKind
    scope: str
    body: str
    confidence: float | None


def strip_white_space(text: str) -> str:
    """``text`` without the Unicode White_Space at either end."""
    return text.strip(_WHITE_SPACE_CHARS)


CONTROL = "[\\x00-\\x1f\\x7f-\\x9f]"
"""Unicode general category Cc: a pattern Python and ECMA-262 read alike (the
MCP input schemas say it), compiled when first used."""


def is_utf8(text: str) -> bool:
    """Whether UTF-8 can carry ``text`` (it holds no lone surrogate)."""
    return text.isascii() or lone_surrogate(text) is None


def check_utf8(text: str, field: str, error: type[RoteiroError] = BadRequest) -> int:
    """The UTF-8 byte length of ``text``, which a write is to keep; text UTF-8
    cannot carry (a lone surrogate) is refused as ``error`` naming ``field``:
    SQLite's text cannot hold it, nor could an import take its export back.
    (A read's filter or key holding one is not refused: it matches nothing.)
    A value that is not a ``str`` is BadRequest naming ``field``."""
    arguments.text(text, field)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        lone = lone_surrogate(text)
    raise error(f"invalid {field} {excerpt(text)}: it holds {lone}, which is not Unicode text")


def check_anchor(anchor: str | None) -> None:
    """Refuse an anchor (a record's or a cache entry's) over
    :data:`MAX_ANCHOR_BYTES` or holding a lone surrogate, which no node key
    does, before anything is written."""
    if anchor is None:
        return
    size = check_utf8(anchor, "anchor", InvalidAnchor)
    if size > MAX_ANCHOR_BYTES:
        raise InvalidAnchor(
            f"invalid anchor {excerpt(anchor)}: it is {size} bytes, over the "
            f"{MAX_ANCHOR_BYTES}-byte limit"
        )


def validate_scope(scope: str) -> None:
    """Check a scope as a write takes it: 1 to :data:`MAX_SCOPE_BYTES` bytes
    of UTF-8, no surrounding whitespace, no control character.  A store
    does not apply it to a read's filter, which one no record can have
    simply matches nothing (PROTOCOL [P-filters]); the command line and
    the agent tools refuse such a filter with it, before the store is asked
    (:func:`roteiro_memory.app.values.check_scope`)."""
    scope_bytes = check_utf8(scope, "scope", InvalidScope)
    if not 1 <= scope_bytes <= MAX_SCOPE_BYTES:
        raise InvalidScope(
            f"invalid scope {excerpt(scope)}: it is {scope_bytes} bytes, expected 1 to "
            f"{MAX_SCOPE_BYTES} bytes of UTF-8"
        )
    if strip_white_space(scope) != scope:
        raise InvalidScope(
            f"invalid scope {excerpt(scope)}: it has surrounding whitespace, which is not allowed"
        )
    if re.search(CONTROL, scope):
        raise InvalidScope(
            f"invalid scope {excerpt(scope)}: it contains a control character, which is not allowed"
        )


def validate_write(
    kind: MemoryKind | str,
    scope: str,
    body: str,
    confidence: float | None,
    *,
    anchor: str | None = None,
) -> ValidWrite:
    """Check a memory write, reporting the first fault in the order kind,
    scope, body, confidence, anchor (supersession is checked by the store
    after this); the confidence as :func:`settled_confidence` settles it.

    Lengths are UTF-8 bytes.  Each error names the value and what is allowed.
    A scope, body or anchor that is not text is BadRequest, before any other
    fault (PROTOCOL [P-bad-request-first]).
    """
    arguments.text(scope, "scope")
    arguments.text(body, "body")
    arguments.optional_text(anchor, "anchor")
    valid_kind = parse_kind(kind)
    validate_scope(scope)
    if not strip_white_space(body):
        raise InvalidBody("invalid body: it is empty or only whitespace")
    body_bytes = check_utf8(body, "body", InvalidBody)
    if body_bytes > MAX_BODY_BYTES:
        raise InvalidBody(
            f"invalid body: it is {body_bytes} bytes, over the {MAX_BODY_BYTES}-byte limit"
        )
    confidence = settled_confidence(confidence)
    check_anchor(anchor)
    return ValidWrite(valid_kind, scope, body, confidence)


def settled_confidence(confidence: object) -> float | None:
    """A confidence as every store keeps it, written or imported: None, or a
    finite float in [0, 1], -0.0 as 0.0 (as SQLite keeps it); else InvalidConfidence."""
    if confidence is None:
        return None
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise InvalidConfidence(
            f"invalid confidence {excerpt(confidence)}: expected a number in [0.0, 1.0]"
        )
    try:
        value = float(confidence)
    except OverflowError:
        raise InvalidConfidence(
            "invalid confidence: an integer beyond any double, expected a finite "
            "number in [0.0, 1.0]"
        ) from None
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise InvalidConfidence(
            f"invalid confidence {excerpt(confidence)}: expected a finite number in [0.0, 1.0]"
        )
    return 0.0 if value == 0.0 else value


def check_supersedes(target: int, found: bool, superseded_by: int | None) -> None:
    """Refuse to supersede a record that is absent or already superseded.

    Checked before anything is written, so a refusal leaves the store as it was;
    re-pointing a chain would orphan the successor already recorded.
    """
    if not found:
        raise NotFound(f"no memory record with id {target} to supersede")
    if superseded_by is not None:
        raise AlreadySuperseded(f"memory record {target} is already superseded by {superseded_by}")


if TYPE_CHECKING:

    class BatchWrite(Protocol):
        """What :func:`check_batch` reads of a write (a ``store.MemoryWrite``)."""

        @property
        def kind(self) -> MemoryKind | str: ...
        @property
        def scope(self) -> str: ...
        @property
        def body(self) -> str: ...
        @property
        def confidence(self) -> float | None: ...
        @property
        def anchor(self) -> str | None: ...
        @property
        def supersedes(self) -> int | None: ...


def stored_targets(writes: Sequence[BatchWrite], base: int) -> list[int]:
    """The ids a batch supersedes that were stored before it (at most
    ``base``, the largest id so far): what a store must look up for
    :func:`check_batch`."""
    # Read before the batch is checked: what is no write, or no id, is
    # refused by check_batch, and looks nothing up.
    targets = {getattr(w, "supersedes", None) for w in writes}
    return sorted(t for t in targets if arguments.is_integer(t) and fits_int64(t) and t <= base)


_WRITE_FIELDS = ("kind", "body", "scope", "anchor", "confidence", "supersedes")


def check_batch(
    writes: Sequence[BatchWrite], base: int, stored: Mapping[int, int | None]
) -> list[ValidWrite]:
    """Check a batch as if its records were written one at a time, with ids
    ``base + 1, base + 2, ...``: each write is validated, then its
    supersession checked against ``stored`` (each looked-up target's
    ``superseded_by``) and the writes before it.  The first faulty write
    decides the error, whichever check it fails; nothing is written before.
    An item that is not a write, or a ``supersedes`` that is not an integer
    in range, is BadRequest, before that write's other faults."""
    known = dict(stored)
    valid: list[ValidWrite] = []
    for new_id, write in enumerate(writes, base + 1):
        if not all(hasattr(write, name) for name in _WRITE_FIELDS):
            raise BadRequest(
                f"invalid write {excerpt(write)} (number {new_id - base} of the batch): "
                "expected a MemoryWrite"
            )
        supersedes = arguments.optional_integer(write.supersedes, "supersedes")
        kind, scope, body = write.kind, write.scope, write.body
        valid.append(validate_write(kind, scope, body, write.confidence, anchor=write.anchor))
        if supersedes is not None:
            target = supersedes
            check_supersedes(target, target in known, known.get(target))
            known[target] = new_id
        known[new_id] = None
    return valid


# --- Query ------------------------------------------------------------------


@valueclass
class AnchorFilter:
    """Which anchors a listing or recall keeps: a record whose anchor key is
    one of ``keys`` or starts with one of ``prefixes``; a record with no anchor
    never.  The command line's ``--anchor PATH`` is the file's key plus the
    prefix of every symbol in it, and ``--touched`` the keys a change touched;
    each store applies it before its limit, so the limit rule runs once."""

    keys: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    def matches(self, key: str | None) -> bool:
        return key is not None and (
            key in self.keys or any(key.startswith(prefix) for prefix in self.prefixes)
        )

    def narrowed(self, keys: Iterable[str]) -> AnchorFilter:
        """Only the keys among ``keys`` this filter keeps, as exact keys."""
        return AnchorFilter(keys=frozenset(key for key in keys if self.matches(key)))


def query_tokens(query: str | None) -> list[str]:
    """The tokens of a recall query: trimmed, lower-cased, split on ``::`` and
    then on Unicode White_Space.  An empty or blank query has no tokens; one
    that is not text is BadRequest."""
    if query is None:
        return []
    arguments.text(query, "query")
    text = strip_white_space(query).lower()
    tokens: list[str] = []
    for part in text.split("::"):
        word: list[str] = []
        for char in part:
            if char in WHITE_SPACE:
                if word:
                    tokens.append("".join(word))
                    word = []
            else:
                word.append(char)
        if word:
            tokens.append("".join(word))
    return tokens


def search_text(body: str, anchor_key: str | None, anchor_path: str | None) -> str:
    """What a query searches: the lower-cased body, anchor key and anchor path.

    Joined by a newline, which no token can contain, so a token is a substring
    of this text exactly when it is a substring of one of the three.  Scope is
    deliberately absent: it has an exact-match filter of its own.
    """
    return "\n".join(part.lower() for part in (body, anchor_key or "", anchor_path or ""))


def matches_query(text: str, tokens: Sequence[str]) -> bool:
    """Whether every token occurs in ``text`` (from :func:`search_text`)."""
    return all(token in text for token in tokens)


# --- Ranking ----------------------------------------------------------------


def base_confidence(confidence: float | None) -> float:
    """The writer's confidence, or the default when none was stated."""
    return DEFAULT_BASE_CONFIDENCE if confidence is None else confidence


def score(base: float, penalty: float, decay_factor: float) -> float:
    """``base * penalty * decay``, multiplied left to right as SQL does."""
    return base * penalty * decay_factor


def evidence(
    confidence: float | None, state: AnchorState, generation: int, record_id: int, decay: Decay
) -> tuple[float, float, float, int, float]:
    """A record's evidence terms, ``(base, penalty, decay factor, age, score)``,
    each as recall computes it."""
    base = base_confidence(confidence)
    penalty = anchor_penalty(state)
    age = record_age(generation, record_id)
    factor = decay.factor(age)
    return base, penalty, factor, age, score(base, penalty, factor)


def record_age(generation: int, record_id: int) -> int:
    """Generations between a record and the newest one stored (never negative)."""
    return max(generation - record_id, 0)


def rank_key(score_value: float, record_id: int) -> tuple[float, int]:
    """Sort key for recall: best score first, ties broken by newest id.

    Sort ascending on this key.
    """
    return (-score_value, -record_id)


if TYPE_CHECKING:
    _T = TypeVar("_T")


def effective_limit(limit: int | None) -> int | None:
    """The limit rule: how many items to keep, None meaning every one.

    ``None`` and ``0`` both mean every item; anything but an integer from
    0 to 2^64 - 1 (a negative, a ``bool``, a ``float``) is BadRequest.  A
    limit past what a database can count is every item too, so it is
    clamped.
    """
    if limit is None or arguments.count(limit, "limit") == 0:
        return None
    return min(limit, INT64_MAX)


def apply_limit(items: list[_T], limit: int | None) -> list[_T]:
    """``items`` cut to :func:`effective_limit`."""
    keep = effective_limit(limit)
    return items if keep is None else items[:keep]
