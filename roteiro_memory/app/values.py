"""Numbers as a person types them or an agent sends them, read in one place.

A command line gives text (``--limit 20``), a tool call gives JSON (``20``,
or ``20.0``: JSON has one number type).  Each reader takes either and names
the input the way its surface does -- ``what`` is ``--limit`` on the command
line, ``limit`` in a tool call -- so the error says which input was wrong,
what it held and what is allowed.
"""

from __future__ import annotations

import math
import os

from roteiro_memory import eviction
from roteiro_memory import semantics as sem
from roteiro_memory.errors import (
    InvalidConfidence,
    InvalidScope,
    UsageError,
    excerpt,
    given_excerpt,
    json_excerpt,
)

__all__ = [
    "budget_bytes",
    "check_scope",
    "confidence",
    "kind_token",
    "record_id",
    "spell_option",
    "superseded_id",
    "whole",
]


def check_scope(scope: str | None, what: str) -> None:
    """A scope no record can have is refused as :class:`InvalidScope` on a
    read's filter as on a write, on every surface (the write's own rule,
    :func:`~roteiro_memory.semantics.validate_scope`), rather than answered
    with nothing; an empty one is named as ``what``."""
    if scope is None:
        return
    if not scope:
        raise InvalidScope(f"{what} is empty: a scope is 1 to {sem.MAX_SCOPE_BYTES} bytes")
    sem.validate_scope(scope)


_TOO_LARGE = sem.INT64_MAX + 1
"""A whole number no store holds: what digits beyond 64 bits are read as."""


def _integer(value: object) -> int | None:
    """The whole number ``value`` is (digits as text, or a JSON integer, or a
    JSON number with no fraction); None for anything else.  Digits too many
    for 64 bits give :data:`_TOO_LARGE`, so the refusal says what is allowed."""
    if isinstance(value, str):
        number = sem.parse_whole_number(value)
        digits = value[1:] if value.startswith("+") else value
        if number is None and digits.isascii() and digits.isdigit():
            return _TOO_LARGE
        return number
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value if isinstance(value, int) else None


def whole(
    value: object,
    what: str,
    *,
    minimum: int = 0,
    maximum: int | None = None,
    default: int | None = None,
    allowed: str | None = None,
) -> int | None:
    """The whole number ``value`` holds, at least ``minimum``, at most
    ``maximum`` when given, and fitting 64 bits; ``default`` when it is None.
    ``allowed`` says what is allowed, in the refusal (by default: what
    ``minimum`` implies, 0 meaning no limit)."""
    if value is None:
        return default
    number = _integer(value)
    over = number is not None and maximum is not None and number > maximum
    if number is None or number < minimum or over or not sem.fits_int64(number):
        if allowed is None:
            allowed = {
                0: "a whole number, 0 or more (0 = no limit)",
                1: "a positive whole number",
            }.get(minimum, f"a whole number of at least {minimum}")
            if number is not None and number >= minimum:  # whole, but too large
                largest = sem.INT64_MAX if maximum is None else min(maximum, sem.INT64_MAX)
                allowed += f", at most {largest:,}"
        raise UsageError(f"invalid {what} {given_excerpt(value)}: expected {allowed}")
    return number


def _pasted(value: object) -> object:
    """An id as it is pasted: from a table (`` 12``, padded to its column) or
    a digest (``#12``); the white space and one ``#`` are not part of it."""
    if isinstance(value, str):
        stripped = value.strip()
        return stripped[1:].strip() if stripped.startswith("#") else stripped
    return value


def record_id(value: object, what: str = "ID") -> int:
    """A record's id: a positive whole number, also as pasted (``#12``, `` 12``)."""
    number = whole(_pasted(value), what, minimum=1)
    if number is None:
        raise UsageError(f"{what} is required: the id of a record")
    return number


def superseded_id(value: object, what: str = "--supersedes") -> int | None:
    """The id a write supersedes (None when it supersedes nothing), also as pasted."""
    return whole(_pasted(value), what, minimum=1)


def kind_token(value: str) -> str:
    """A kind as typed, matched without regard to case (``Lesson``), so the
    closed vocabulary refuses only what names no kind."""
    lowered = value.lower()
    return lowered if lowered in sem.KIND_TOKENS else value


def spell_option(name: str) -> str:
    """How the command line names an input: ``--limit``, ``--budget-mb``;
    the record id, or ids, the positional ``ID``."""
    return "ID" if name in ("id", "ids") else "--" + name.replace("_", "-")


_NUMBER_CHARACTERS = frozenset("0123456789.eE+-")
"""What a number given as text is written with (a decimal, perhaps with an
exponent); :func:`float` judges the rest."""


def confidence(value: object, what: str = "--confidence") -> float | None:
    """A confidence as given (text or a JSON number); whether it is in [0, 1]
    is :func:`~roteiro_memory.semantics.validate_write`'s rule."""
    if value is None:
        return None
    if isinstance(value, str):
        # Written plainly, as --budget-mb and ids must be: Python's float()
        # also takes "1_0" (ten), surrounding spaces and "inf".
        if value and value.isascii() and all(c in _NUMBER_CHARACTERS for c in value):
            try:
                number = float(value)
            except ValueError:
                number = math.nan
            if math.isfinite(number):  # not 1e309, which is beyond a double
                return number
        raise InvalidConfidence(
            f"invalid {what} {excerpt(value)}: expected a number from 0 to 1 written with"
            " ASCII digits and a point, e.g. 0.8"
        )
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidConfidence(
            f"invalid {what} {json_excerpt(value)}: expected a number from 0 to 1"
        )
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            raise InvalidConfidence(
                f"invalid {what}: an integer beyond any double, expected a number from 0 to 1"
            ) from None
    return value


def budget_bytes(value: str | None, what: str = "--budget-mb") -> int:
    """The cache budget in bytes: ``value`` (whole megabytes), else the
    environment's :data:`~roteiro_memory.eviction.CACHE_BUDGET_ENV`, else
    the default; either refused by the one rule,
    :func:`~roteiro_memory.eviction.parse_cache_budget`."""
    if value is None:
        return eviction.parse_cache_budget(os.environ.get(eviction.CACHE_BUDGET_ENV))
    return eviction.parse_cache_budget(value, what)
