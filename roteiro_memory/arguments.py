"""What the library's operations take, by type and range: one check for each
sort of argument, called where its value is first validated, so that every
store refuses the same mistaken value with the same error and message.

The convention, for every operation of :class:`~roteiro_memory.store.Store`:
a value of the wrong Python type (``None`` where text is wanted, a ``bool``
or a ``float`` where an integer is), or an integer outside its range, is
:class:`~roteiro_memory.errors.BadRequest` naming the parameter, the value
(its ``repr``) and what is allowed -- the kind PROTOCOL gives a mistyped or
out-of-range argument ([P-args-types], [P-args-ranges]: a ``limit`` or
``budget_bytes`` outside 0 to 2^64 - 1), so every surface reports it alike
and the store is left as it was.  One range differs from the wire's: an id
is checked for its type only, and one no store hands out (negative, or past
:data:`INT64_MAX`) names no record, as a library caller asking for it
expects (:meth:`~roteiro_memory.store.Store.get` answers None).  A field with an error
kind of its own (a kind, a confidence, a decay) refuses a value of any wrong
type as that kind instead.  Imports nothing but the errors: every command
loads it.
"""

from __future__ import annotations

from roteiro_memory.errors import BadRequest, excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import TypeGuard, TypeVar

    _T = TypeVar("_T")

__all__ = [
    "INT64_MAX",
    "U64_MAX",
    "count",
    "fits_int64",
    "integer",
    "is_integer",
    "items",
    "optional_integer",
    "optional_text",
    "parse_whole_number",
    "text",
    "wait_ms",
]

INT64_MAX = 2**63 - 1
"""The largest id a store hands out, and the largest a database column holds."""

U64_MAX = 2**64 - 1
"""The largest whole number a budget, span, half-life, limit or id may be."""


def fits_int64(value: int) -> bool:
    """Whether a database integer column can hold ``value``; an id beyond it
    names no stored record."""
    return -INT64_MAX - 1 <= value <= INT64_MAX


def is_integer(value: object) -> TypeGuard[int]:
    """Whether ``value`` is an integer: an ``int`` that is no ``bool``
    (PROTOCOL: ``true`` is never ``1``)."""
    return isinstance(value, int) and not isinstance(value, bool)


def integer(value: object, name: str, *, minimum: int | None = None) -> int:
    """``value`` when it is an integer, at least ``minimum`` when given;
    else BadRequest.  A ``bool`` is no integer (PROTOCOL: ``true`` is never
    ``1``), nor is a ``float``, even ``1.0``.  An id has no bound here: one
    no store hands out (negative, or past :data:`INT64_MAX`) names no record."""
    least = "" if minimum is None else f" of at least {minimum}"
    if not is_integer(value):
        raise BadRequest(
            f"invalid {name} {excerpt(value)}: expected an integer{least} "
            f"(an int, not {type(value).__name__})"
        )
    if minimum is not None and value < minimum:
        raise BadRequest(f"invalid {name} {excerpt(value)}: expected an integer{least}")
    return value


def count(value: object, name: str) -> int:
    """``value`` when it is an integer from 0 to :data:`U64_MAX`, the range
    PROTOCOL gives a ``limit`` and a ``budget_bytes`` ([P-args-ranges]);
    else BadRequest."""
    number = integer(value, name, minimum=0)
    if number > U64_MAX:
        raise BadRequest(
            f"invalid {name} {excerpt(value)}: expected an integer from 0 to {U64_MAX}"
        )
    return number


def wait_ms(value: object, name: str, *, minimum: int) -> int:
    """How long to wait for another process's lock, in milliseconds: an
    integer from ``minimum`` to 2**31 - 1, the most SQLite's busy timeout
    and PostgreSQL's ``lock_timeout`` hold; else BadRequest naming ``name``."""
    if not is_integer(value) or not minimum <= value < 2**31:
        raise BadRequest(
            f"invalid {name} {excerpt(value)}: expected a whole number of "
            f"milliseconds (an int from {minimum} to 2**31 - 1)"
        )
    return value


def optional_integer(value: object, name: str, *, minimum: int | None = None) -> int | None:
    """None, or :func:`integer`."""
    return None if value is None else integer(value, name, minimum=minimum)


def parse_whole_number(text: str) -> int | None:
    """``text`` as a whole number, or None: one or more ASCII digits, a single
    leading ``+`` tolerated, fitting an unsigned 64-bit integer.  No other
    sign, underscore, inner space or non-ASCII digit."""
    digits = text[1:] if text.startswith("+") else text
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    significant = digits.lstrip("0") or "0"  # measured first: int() refuses 4,301 digits
    value = int(significant) if len(significant) <= len(str(U64_MAX)) else U64_MAX + 1
    return value if value <= U64_MAX else None


def text(value: object, name: str) -> str:
    """``value`` when it is a ``str``; else BadRequest naming ``name``."""
    if not isinstance(value, str):
        raise BadRequest(
            f"invalid {name} {excerpt(value)}: expected text (a str), not {type(value).__name__}"
        )
    return value


def optional_text(value: object, name: str) -> str | None:
    """None, or :func:`text`."""
    return None if value is None else text(value, name)


def items(value: Iterable[_T], name: str, each: str) -> list[_T]:
    """The items of a collection argument, as a list; BadRequest for a
    value that is not a collection of ``each`` (text is refused too: a
    string's characters are no collection of anything a store takes)."""
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise BadRequest(
            f"invalid {name} {excerpt(value)}: expected a collection of {each}, "
            f"not {type(value).__name__}"
        )
    return list(value)
