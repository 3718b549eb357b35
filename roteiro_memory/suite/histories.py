"""Judging what concurrent instances and crashes left behind, against the model.

A history is the list of :class:`Event` -- one op sent by one instance, when it
was sent and when its answer was read, and the answer.  Only answered ops are
in it: a write that got no answer (its instance was killed) is not
acknowledged, and :func:`check_crash_state` decides what may have become of it.

:func:`check_history` decides whether one serial order of the events explains
them all -- whether the history is linearizable with respect to the in-memory
model.  At these sizes this is exact and quick, because the model fixes the
order of the writes: it hands out increasing ids, so in any explaining order the
successful ``memory.record`` calls come in the order of the ids they got.  What
remains is to place each op that changed nothing (a read, a refused write) in
one of the gaps between writes:

1. ids are unique, and a write answered before another was sent has the smaller id;
2. replaying the acknowledged writes on the model in id order succeeds (two
   successors acknowledged for one record fail here);
3. each op that changed nothing can go in gap ``g`` only if ``g`` respects real
   time (after every write answered before it was sent, before every write
   sent after it was answered) and the model after ``g`` writes gives its
   answer (a listing, a record, or the refusal's error kind);
4. and one gap per such op exists that never goes backwards in real time: an op
   answered before another was sent is not placed after it.  Taking ops in the
   order they were sent and giving each the smallest gap it can have decides
   this exactly.

Records are compared by id, kind, scope, body and ``superseded_by``; listings
by those records, in order, and the ``live`` and ``superseded`` counts.  Ids
are compared through the order they were handed out in, so a store whose ids
have gaps is judged by the same rule as the model's 1, 2, 3.

This module does not import pytest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roteiro_memory.suite.runner import Backend, render

__all__ = [
    "Event",
    "Violation",
    "Write",
    "check_crash_state",
    "check_history",
    "listing_view",
    "order_writes",
]

JSON = Any
Record = tuple[int, str, str, str, int | None]
"""A record as compared: id, kind, scope, body, superseded_by."""


class Violation(AssertionError):
    """A history no serial order explains, or a store state a crash cannot
    explain; the message says which op or record, and why."""


@dataclass(frozen=True)
class Event:
    """One answered op: which instance sent it, when (monotonic seconds), and
    the answer -- ``result`` when ``error`` is None, else the error kind."""

    instance: str
    op: str
    args: Mapping[str, JSON]
    invoked: float
    returned: float
    result: JSON = None
    error: str | None = None

    @property
    def wrote(self) -> bool:
        """Whether the op changed the store: an acknowledged ``memory.record``."""
        return self.op == "memory.record" and self.error is None

    def describe(self) -> str:
        answer = f"error {self.error}" if self.error is not None else render(self.result)
        if len(answer) > 300:
            answer = answer[:300] + "..."
        return f"{self.instance}: {self.op} {render(dict(self.args))} -> {answer}"


def _record(value: JSON) -> Record:
    if not isinstance(value, dict):
        raise Violation(f"expected a record, got {render(value)[:200]}")
    try:
        return (
            int(value["id"]),
            str(value["kind"]),
            str(value["scope"]),
            str(value["body"]),
            value.get("superseded_by"),
        )
    except (KeyError, TypeError, ValueError):
        raise Violation(f"a record lacks id, kind, scope or body: {render(value)[:200]}") from None


def listing_view(result: JSON) -> tuple[tuple[Record, ...], JSON, JSON]:
    """A ``memory.list`` answer as compared: its records, ``live``, ``superseded``."""
    if not isinstance(result, dict) or not isinstance(result.get("records"), list):
        raise Violation(f"memory.list answered {render(result)[:200]}, which is not a listing")
    records = tuple(_record(r) for r in result["records"])
    return records, result.get("live"), result.get("superseded")


def _rename(view: tuple[tuple[Record, ...], JSON, JSON], ids: Sequence[int]) -> JSON:
    """A model listing with the model's ids (1, 2, ...) as the store's."""
    records, live, superseded = view

    def to_store(model_id: int | None) -> int | None:
        return None if model_id is None else ids[model_id - 1]

    renamed = tuple((ids[r[0] - 1], r[1], r[2], r[3], to_store(r[4])) for r in records)
    return renamed, live, superseded


def order_writes(events: Sequence[Event]) -> list[Event]:
    """The acknowledged writes in the order of their ids; :class:`Violation`
    when an id was handed out twice, or real time contradicts that order."""
    writes = [e for e in events if e.wrote]
    ids: dict[int, Event] = {}
    for event in writes:
        got = event.result.get("id") if isinstance(event.result, dict) else None
        if not isinstance(got, int) or isinstance(got, bool):
            raise Violation(f"memory.record answered without an integer id: {event.describe()}")
        if got in ids:
            raise Violation(
                f"id {got} was handed out twice:\n  {ids[got].describe()}\n  {event.describe()}"
            )
        ids[got] = event
    ordered = [ids[i] for i in sorted(ids)]
    latest: Event | None = None
    for event in ordered:
        if latest is not None and latest.invoked > event.returned:
            raise Violation(
                "a write answered before another was sent got the larger id:\n"
                f"  {event.describe()}\n  answered before this one was sent:\n"
                f"  {latest.describe()}"
            )
        if latest is None or event.invoked > latest.invoked:
            latest = event
    return ordered


def _write_args(event: Event, ids: Mapping[int, int]) -> dict[str, JSON]:
    """The write's arguments for the model, its ``supersedes`` as a model id."""
    args = dict(event.args)
    target = args.get("supersedes")
    if target is not None:
        if target not in ids:
            raise Violation(
                f"{event.describe()} was acknowledged, but it supersedes an id no "
                "acknowledged write got"
            )
        args["supersedes"] = ids[target]
    return args


def _replay(writes: Sequence[Event], model: Backend, gaps: Iterable[int]) -> dict[int, JSON]:
    """The model's listings (``live`` and ``all``) after each of ``gaps``
    writes, replaying the writes once, in id order."""
    from roteiro_memory.suite.errors import OpError

    wanted = set(gaps)
    store_ids = [w.result["id"] for w in writes]
    model_ids: dict[int, int] = {}
    views: dict[int, JSON] = {}
    for done in range(len(writes) + 1):
        if done in wanted:
            views[done] = {
                name: _rename(
                    listing_view(model.call("memory.list", {"include_superseded": include})),
                    store_ids,
                )
                for name, include in (("live", False), ("all", True))
            }
        if done == len(writes):
            break
        event = writes[done]
        try:
            got = model.call("memory.record", _write_args(event, model_ids))
        except OpError as error:
            raise Violation(
                f"{event.describe()} was acknowledged, but in the order of the ids the "
                f"model refuses it: {error}"
            ) from None
        model_ids[event.result["id"]] = got["id"]
    return views


def _explains(event: Event, view: Mapping[str, JSON]) -> bool:
    """Whether the model state ``view`` gives ``event``'s answer."""
    records = {r[0]: r for r in view["all"][0]}
    if event.op == "memory.list":
        if event.error is not None:
            return False
        key = "all" if event.args.get("include_superseded") else "live"
        return bool(listing_view(event.result) == view[key])
    if event.op == "memory.get":
        if event.error is not None:
            return False
        want = records.get(event.args["id"])
        return (None if event.result is None else _record(event.result)) == want
    if event.op == "memory.record":
        target = event.args.get("supersedes")
        if target is None or target not in records:
            expected = "NotFound" if target is not None else None
        else:
            expected = "AlreadySuperseded" if records[target][4] is not None else None
        return event.error == expected
    raise Violation(f"the history holds an op this check does not know: {event.describe()}")


def check_history(events: Iterable[Event], model: Backend) -> None:
    """Raise :class:`Violation` unless one serial order explains ``events``
    (see the module docstring); ``model`` is a fresh model backend."""
    events = list(events)
    writes = order_writes(events)
    others = sorted((e for e in events if not e.wrote), key=lambda e: e.invoked)
    windows = [_window(event, writes) for event in others]
    gaps = {len(writes)}.union(*(range(low, high + 1) for low, high in windows))
    views = _replay(writes, model, gaps)
    placed: list[tuple[float, int]] = []
    for event, (low, high) in zip(others, windows, strict=True):
        floor = max((gap for returned, gap in placed if returned < event.invoked), default=0)
        gap = next(
            (g for g in range(max(low, floor), high + 1) if _explains(event, views[g])),
            None,
        )
        if gap is None:
            raise Violation(
                f"no serial order of the acknowledged operations explains\n  {event.describe()}\n"
                f"  (it may follow {low} to {high} of the {len(writes)} writes in id order"
                + (
                    f", but not fewer than {floor}, as a read answered before it did"
                    if floor > low
                    else ""
                )
                + ")"
            )
        placed.append((event.returned, gap))


def _window(event: Event, writes: Sequence[Event]) -> tuple[int, int]:
    """The gaps real time allows ``event``: after every write answered before
    it was sent, before every write sent after it was answered."""
    low = max((i + 1 for i, w in enumerate(writes) if w.returned < event.invoked), default=0)
    high = min((i for i, w in enumerate(writes) if w.invoked > event.returned), default=len(writes))
    return low, max(low - 1, high)


@dataclass(frozen=True)
class Write:
    """One write of a crash run: its arguments, and its id once acknowledged."""

    args: Mapping[str, JSON]
    id: int | None = None


def check_crash_state(
    listing: JSON, acknowledged: Sequence[Write], unanswered: Write | None, model: Backend
) -> Write | None:
    """Check the store after a restart; what became of the unanswered write --
    ``Write`` with its id if it is there whole, None if it is not there at all.

    Every acknowledged write must be there under its id with its body, and
    nothing else but the unanswered one (found by its body); a successor is
    stored exactly when its predecessor is superseded by it; and the whole
    listing is the model's after replaying what is there, in id order.
    """
    records, _, _ = listing_view(listing)
    by_body: dict[str, Record] = {}
    for record in records:
        if record[3] in by_body:
            first = by_body[record[3]][0]
            raise Violation(f"two records hold the body {record[3]!r}: ids {first} and {record[0]}")
        by_body[record[3]] = record
    missing = [w for w in acknowledged if by_body.get(w.args["body"], (None,))[0] != w.id]
    if missing:
        shown = ", ".join(f"id {w.id} ({w.args['body']!r})" for w in missing[:5])
        raise Violation(
            f"{len(missing)} of {len(acknowledged)} acknowledged writes are not there "
            f"(or not under the id they were given): {shown}"
        )
    known = {w.args["body"] for w in acknowledged}
    landed: Write | None = None
    if unanswered is not None and unanswered.args["body"] in by_body:
        landed = Write(unanswered.args, by_body[unanswered.args["body"]][0])
        known.add(unanswered.args["body"])
    strays = sorted(set(by_body) - known)
    if strays:
        raise Violation(f"records no write made are there: bodies {strays[:5]}")
    ids = {r[0]: r for r in records}
    for record in records:
        if record[4] is not None and record[4] not in ids:
            raise Violation(f"record {record[0]} is superseded by {record[4]}, which is not there")
    for write in [*acknowledged, *([landed] if landed else [])]:
        target = write.args.get("supersedes")
        if target is not None and ids[target][4] != write.id:
            raise Violation(
                f"record {write.id} supersedes {target}, yet {target} is superseded by "
                f"{ids[target][4]}: the write was half applied"
            )
    if unanswered is not None and landed is None:
        target = unanswered.args.get("supersedes")
        if target is not None and ids.get(target, (None,) * 5)[4] is not None:
            raise Violation(
                f"the write cut short by the kill ({unanswered.args['body']!r}) is not there, "
                f"yet record {target} it superseded is superseded by {ids[target][4]}: "
                "half applied"
            )
    events = [
        Event("replay", "memory.record", w.args, 0.0, 0.0, {"id": w.id})
        for w in [*acknowledged, *([landed] if landed else [])]
    ]
    writes = order_writes(events)
    want = _replay(writes, model, [len(writes)])[len(writes)]["all"]
    if listing_view(listing) != want:
        raise Violation(
            "the store after the restart is not the model's after the same writes:\n"
            f"  store: {render(listing_view(listing))[:600]}\n  model: {render(want)[:600]}"
        )
    return landed
