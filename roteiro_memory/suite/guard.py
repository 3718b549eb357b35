"""Refusing to erase a store the suite did not fill.

Every case and every property example starts with ``reset``, which empties
the store.  Pointed at a store that holds real data -- a team's PostgreSQL
schema, a ``--db`` file -- the suite would erase it, so before its first reset
it asks what the store holds, through reads only: ``cache.entries``
(``cache``), ``graph.export`` (``graph``) and ``memory.list`` with
``include_superseded`` (``episodic``), as far as the backend declares them.
Anything there was not put there by this run, and the run is refused unless
the user says the store may be erased (``--roteiro-allow-reset``).

A read may itself write (a ``memory.list`` that leaves a cache entry behind),
which would make the suite's own traces look like a team's data.  So the
reads are asked twice: when the second round answers otherwise than the
first, the suite's reads changed the store, which breaks "reads never mutate"
(PROTOCOL [P-reads-pure]), and that is what the suite says.  Data the first
round already saw was there before any read of this run could have written
it only where no earlier read of the round might have; the suite refuses
the run when it cannot tell.

A read the backend refuses (an :class:`OpError`) tells nothing and is passed
over: the cases will show what is wrong with it.  A backend that cannot answer
at all (:class:`BackendFailure`) is left to the caller.

This module does not import pytest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roteiro_memory.suite.checks import json_equal
from roteiro_memory.suite.errors import OpError
from roteiro_memory.suite.runner import Backend

__all__ = [
    "ALLOW_RESET_HINT",
    "Preflight",
    "held_data",
    "mutation_note",
    "preflight",
    "refusal",
]

ALLOW_RESET_HINT = (
    "point the suite at an empty store (the default backends make their own), "
    "or pass --roteiro-allow-reset (ini: roteiro_allow_reset = true) to let it erase the store"
)

_PROBES: tuple[tuple[str, str, dict[str, Any], str | None, str], ...] = (
    ("cache", "cache.entries", {}, None, "cache entr(y/ies)"),
    ("graph", "graph.export", {}, "nodes", "graph node(s)"),
    ("episodic", "memory.list", {"include_superseded": True}, "records", "record(s)"),
)
"""The reads, in the order asked: those of the tiers a read is likeliest to
write (the cache) first, so their first answer comes before any other read."""


def _count(value: Any, key: str | None = None) -> int:
    if key is not None:
        value = value.get(key) if isinstance(value, dict) else None
    return len(value) if isinstance(value, list) else 0


@dataclass(frozen=True)
class Preflight:
    """What the reads before the first reset found.

    ``held`` lists what the first round of reads saw (``3 record(s)``);
    ``changed`` says, when the second round answered otherwise, which read
    answered what before and after -- the suite's own reads wrote.
    ``before_any_write`` is whether everything in ``held`` was seen before
    any read that a second round showed to write.
    """

    held: tuple[str, ...]
    changed: str | None
    before_any_write: bool


def _round(backend: Backend, declared: frozenset[str]) -> list[tuple[str, Any, str | None, str]]:
    answers = []
    for capability, op, args, key, what in _PROBES:
        if capability not in declared:
            continue
        try:
            answers.append((op, backend.call(op, args), key, what))
        except OpError:
            continue
    return answers


def preflight(backend: Backend) -> Preflight:
    """Ask ``backend`` what its store holds, twice, through reads only."""
    declared = backend.capabilities()
    first = _round(backend, declared)
    second = _round(backend, declared)
    held = tuple(
        f"{_count(result, key)} {what}" for _, result, key, what in first if _count(result, key)
    )
    changed = None
    before = {op: result for op, result, _, _ in first}
    for op, result, key, what in second:
        if op in before and not json_equal(before[op], result):
            changed = (
                f"{op} answered {_count(before[op], key)} {what} before and "
                f"{_count(result, key)} after the suite's own reads"
                if _count(before[op], key) != _count(result, key)
                else f"{op} answered otherwise the second time the suite asked"
            )
            break
    # Only the first read of a round is sure to see the store untouched.
    first_op = first[0][0] if first else None
    untouched = all(op == first_op for op, result, key, _ in first if _count(result, key))
    return Preflight(held, changed, changed is None or untouched)


def held_data(backend: Backend) -> list[str]:
    """What ``backend``'s store holds, as phrases (``3 record(s)``); empty
    when it holds nothing the reads can see."""
    return list(preflight(backend).held)


def _reads_write(backend: Backend, changed: str) -> str:
    return (
        f"backend {backend.name!r}: reading what its store holds changed it ({changed}), "
        'so its reads write, which breaks "reads never mutate" (PROTOCOL [P-reads-pure])'
    )


def refusal(backend: Backend, found: Preflight | None = None) -> str | None:
    """Why the suite must not reset ``backend``, or None when it may: its
    store held nothing before the suite's reads (which may have written)."""
    found = preflight(backend) if found is None else found
    if not found.held:
        return None
    if found.changed is not None and not found.before_any_write:
        return (
            f"{_reads_write(backend, found.changed)}; it now holds {', '.join(found.held)} and "
            "the suite cannot tell what of it was there before this run, and every case starts "
            "with reset, which would erase it; " + ALLOW_RESET_HINT
        )
    also = "" if found.changed is None else f" (and its reads write: {found.changed})"
    return (
        f"backend {backend.name!r}: its store already holds {', '.join(found.held)}, which this "
        f"run did not create{also}, and every case starts with reset, which would erase them; "
        + ALLOW_RESET_HINT
    )


def mutation_note(backend: Backend, found: Preflight) -> str | None:
    """The note a run carries when the suite's own reads changed an empty store."""
    if found.changed is None:
        return None
    return (
        f"{_reads_write(backend, found.changed)}; the store held nothing before, so the run "
        "goes on and the cases of reads-never-mutate show where"
    )
