"""The cache tier's rules, as pure functions with no I/O (ADR-0013): an
entry's size, the byte budget, and which entries a sweep evicts.

The tier is re-derivable, so it is bounded: a sweep evicts, first to go
first, entries whose anchor no longer applies, then the least recently used,
then by key (:data:`EVICTION_ORDER`), until what it holds fits the budget;
it always keeps the most recently used entry and the current generation's
entries that still apply (:func:`is_pinned`).  Sizes are fixed at write
(:func:`cache_entry_bytes`), so a sweep reads sizes, never payloads.
"""

from __future__ import annotations

from collections.abc import Iterable

from roteiro_memory.errors import Corrupt, InvalidBudget, excerpt
from roteiro_memory.semantics import (
    INT64_MAX,
    U64_MAX,
    check_utf8,
    parse_whole_number,
    strip_white_space,
)

__all__ = [
    "CACHE_BUDGET_ENV",
    "CLOCK_STOPS",
    "DEFAULT_CACHE_BUDGET_BYTES",
    "EVICTION_ORDER",
    "MOST_RECENTLY_USED",
    "advanced",
    "cache_entry_bytes",
    "evict_count",
    "eviction_key",
    "evictions_until_fits",
    "is_pinned",
    "parse_cache_budget",
]

DEFAULT_CACHE_BUDGET_BYTES = 256 * 1024 * 1024
"""The cache tier's byte budget when :data:`CACHE_BUDGET_ENV` is unset."""

CACHE_BUDGET_ENV = "ROTEIRO_CACHE_BUDGET_MB"
"""Environment variable naming the cache budget in whole megabytes."""


def cache_entry_bytes(key: str, fingerprint: str, json: str) -> int:
    """An entry's size, fixed at write: UTF-8 bytes of key + fingerprint +
    json.  A part UTF-8 cannot carry is refused (:func:`~.semantics.check_utf8`),
    so every backend refuses the entry before anything is written."""
    parts = (("cache key", key), ("cache fingerprint", fingerprint), ("cache json", json))
    return sum(check_utf8(part, field) for field, part in parts)


CLOCK_STOPS = {
    "ticks": "no cache put or get can take a tick",
    "generation": "no sweep can advance the generation",
}
"""What stops when the cache clock's count is at the largest 64-bit
integer, which has no next (:func:`advanced`; the check reports it too)."""


def advanced(name: str, value: int) -> int:
    """The cache clock's ``name`` (``ticks`` or ``generation``) one step on:
    ``value + 1``, or Corrupt, with nothing written, when ``value`` is the
    largest 64-bit integer (SQLite would store a real number, and PostgreSQL
    refuses it).  No store counts that far in use; an import can set the
    clock one step short of it (one at it is refused, as the check reports it)."""
    if value >= INT64_MAX:
        raise Corrupt(
            f"agent_cache_clock: {name} is at the largest 64-bit integer, {value}: "
            f"{CLOCK_STOPS[name]}; nothing was written"
        )
    return value + 1


def parse_cache_budget(env: str | None, what: str | None = None) -> int:
    """The cache budget in bytes from the value of ``ROTEIRO_CACHE_BUDGET_MB``,
    or of the input ``what`` names (``--budget-mb``) when given.

    Unset means the 256 MiB default.  Anything that is not a whole number of
    megabytes whose byte count fits in 64 bits is refused, never defaulted,
    as :class:`InvalidBudget` whichever input gave it: an operator who asked
    for a bound must be told it did not land.
    """
    if env is None:
        return DEFAULT_CACHE_BUDGET_BYTES
    megabytes = parse_whole_number(strip_white_space(env))
    if megabytes is None or megabytes * 1024 * 1024 > U64_MAX:
        named = f"{CACHE_BUDGET_ENV}={excerpt(env)}" if what is None else f"{what} {excerpt(env)}"
        default = DEFAULT_CACHE_BUDGET_BYTES // (1024 * 1024)
        raise InvalidBudget(
            f"invalid {named}: expected a whole number of megabytes (ASCII digits) whose byte "
            f"count fits in 64 bits; the default is {default} MB"
        )
    return megabytes * 1024 * 1024


EVICTION_ORDER: tuple[str, ...] = ("applies", "last_used", "key")
"""The order eviction candidates go in, first to go first, every field
ascending: entries whose anchor does not apply, then least recently used, then
by key.  :func:`eviction_key` and :func:`roteiro_memory.stores.sql.expressions.eviction_order`
both read it."""

MOST_RECENTLY_USED: tuple[str, ...] = ("last_used", "key")
"""The entry a sweep always keeps is the greatest by these fields."""


def eviction_key(applies: bool, last_used: int, key: str) -> tuple[bool | int | str, ...]:
    """Sort key for eviction candidates (:data:`EVICTION_ORDER`), ascending."""
    fields: dict[str, bool | int | str] = {"applies": applies, "last_used": last_used, "key": key}
    return tuple(fields[name] for name in EVICTION_ORDER)


def is_pinned(
    is_most_recently_used: bool,
    entry_generation: int,
    current_generation: int,
    applies: bool,
) -> bool:
    """Whether a sweep must keep an entry: the most-recently-used one always,
    and any entry of the current generation whose anchor applies."""
    return is_most_recently_used or (entry_generation >= current_generation and applies)


def evictions_until_fits(sizes_in_order: Iterable[int], held_bytes: int, budget_bytes: int) -> int:
    """How many of the evictable entries, taken in eviction order, must go so
    that ``held_bytes`` (everything the tier holds, pinned entries included)
    fits ``budget_bytes``.  Consumes sizes only while the tier is over, so a
    caller can stream them; stops the moment it fits."""
    total = held_bytes
    evict = 0
    for size in sizes_in_order:
        if total <= budget_bytes:
            break
        total -= size
        evict += 1
    return evict


def evict_count(evictable_in_order: Iterable[int], pinned_bytes: int, budget_bytes: int) -> int:
    """How many evictable entries (sizes in eviction order) must go so the
    tier fits ``budget_bytes``.  Pinned bytes count against the budget but are
    never freed, so the result may leave the tier over budget."""
    sizes = list(evictable_in_order)
    return evictions_until_fits(sizes, pinned_bytes + sum(sizes), budget_bytes)
