"""Random PROTOCOL operation sequences: generating, running and rendering them.

A sequence is a list of :class:`Call` -- an op and its arguments -- where an id
argument may be a :class:`Ref` to the record written by an earlier
``memory.record`` call of the same sequence, so a sequence means the same thing
on any backend whatever ids it hands out.  :func:`sequences` is the Hypothesis
strategy; :class:`Driver` runs calls on a backend, resolving refs from that
backend's own answers; :func:`render_case` turns a (shrunk) sequence into a YAML
case in the format of ``conformance/``, its refused steps marked with the error
kind the reference model gives, and its ids carried by ``save`` and ``$ref``.

This module does not import pytest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import strategies as st

from roteiro_memory.suite.errors import OpError
from roteiro_memory.suite.runner import Backend
from roteiro_memory.suite.vocabulary import CAPABILITIES, OP_CAPABILITY, READS

__all__ = [
    "ABSENT_ID",
    "HUMAN_ONLY",
    "READS",
    "Call",
    "Driver",
    "Ref",
    "Reply",
    "reference_backend",
    "render_case",
    "sequences",
    "strip_human_only",
]

JSON = Any

ABSENT_ID = 999
"""The id used where a sequence names a record that was never written."""

HUMAN_ONLY = frozenset({"created_at", "superseded_at"})
"""Result fields for humans only: wall-clock times, never compared."""


@dataclass(frozen=True)
class Ref:
    """The id of the record written by the ``index``-th ``memory.record`` call
    of the sequence (0-based, counting only ``memory.record`` calls)."""

    index: int
    optional: bool = field(default=False, compare=False)
    """Drawn only: the argument holding it is left out when no record was
    written before (rather than naming an absent one)."""


@dataclass(frozen=True)
class Call:
    """One op of a sequence.  ``args`` may hold :class:`Ref` values."""

    op: str
    args: Mapping[str, JSON] = field(default_factory=dict)

    def refs(self) -> Iterator[Ref]:
        yield from _refs_in(self.args)


def _refs_in(value: JSON) -> Iterator[Ref]:
    if isinstance(value, Ref):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _refs_in(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _refs_in(item)


# --- Generating ------------------------------------------------------------------

NODE_KEYS = ("fn:a", "fn:b", "mod::Parse")
_keys = st.sampled_from(NODE_KEYS)
_anchors = st.none() | st.sampled_from((*NODE_KEYS, "fn:gone"))
_blobs = st.sampled_from((None, "b1", "b2"))
_paths = st.sampled_from((None, "src/a.py", "Lib/Parse.py"))


def _pick(options: Sequence[st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of ``options``, each listed as often as it should be drawn (a
    strategy listed twice is drawn twice as often, which ``one_of`` would not
    do); shrinks toward the first."""
    return st.sampled_from(range(len(options))).flatmap(lambda index: options[index])


def _mostly(valid: st.SearchStrategy[Any], messy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``valid`` three times in four, ``messy`` otherwise."""
    return _pick([valid, valid, valid, messy])


# Values come well-formed or bad; writes are mostly well-formed (a messy write
# has one fault), so later steps have records to act on while every refusal
# still happens.
_valid_kinds = st.sampled_from(("lesson", "decision", "pattern", "attempt", "outcome"))
_bad_kinds = st.sampled_from(("note", "Lesson", ""))
_words = st.sampled_from(("fix", "Cache", "parser", "run::fix", "\u00e9cole", "src/", "repo"))
_valid_bodies = st.lists(_words, min_size=1, max_size=3).map(" ".join)
_bad_bodies = st.sampled_from(("", " \t", "\u3000"))
_valid_scopes = st.sampled_from(("repo", "team"))
_bad_scopes = st.sampled_from((" repo", "a\x1cb", ""))
_valid_confidences = st.sampled_from((None, 0.0, 0.25, 0.5, 1.0))
_bad_confidences = st.sampled_from((1.5, -0.1))
_ids = _mostly(st.integers(min_value=0, max_value=63).map(Ref), st.just(ABSENT_ID))
"""Mostly a record written earlier in the sequence, now and then one never written."""
_limits = st.sampled_from((None, 0, 1, 2))
_filter_scopes = st.sampled_from((None, "repo", "team", "re"))
_filter_kinds = _mostly(st.sampled_from((None, "lesson", "decision")), st.just("note"))
_queries = st.sampled_from(
    (None, "", "fix", "FIX parser", "mod::parse", "src/", "repo", "\u00c9cole")
)
_decays = _mostly(
    st.sampled_from(("none", "linear", "linear:3", "exponential:2", "linear:0")), st.just("none:5")
)
_cache_keys = st.sampled_from(("k1", "k2", "k3"))
_budgets = st.sampled_from((0, 12, 30, 60, 1000))


def _optional(**values: JSON) -> dict[str, JSON]:
    """Arguments with the unset (None) ones left out, as a case would write them."""
    return {k: v for k, v in values.items() if v is not None}


def _record(
    kinds: st.SearchStrategy[str],
    bodies: st.SearchStrategy[str],
    scopes: st.SearchStrategy[str],
    confidences: st.SearchStrategy[float | None],
    supersedes: st.SearchStrategy[Ref | int | None],
) -> st.SearchStrategy[Call]:
    return st.builds(
        lambda kind, body, scope, anchor, confidence, supersedes: Call(
            "memory.record",
            {
                "kind": kind,
                "body": body,
                **({"scope": scope} if scope != "repo" else {}),
                **_optional(anchor=anchor, confidence=confidence, supersedes=supersedes),
            },
        ),
        kinds,
        bodies,
        scopes,
        _anchors,
        confidences,
        supersedes,
    )


_recent = st.integers(min_value=0, max_value=3).map(lambda i: Ref(i, optional=True))
"""One of the last few records written (a ``supersedes`` of it is left out
before the first record)."""
_valid_record = _record(_valid_kinds, _valid_bodies, _valid_scopes, _valid_confidences, st.none())
_successor = _record(_valid_kinds, _valid_bodies, _valid_scopes, _valid_confidences, _recent)
_messy_record = _pick(
    [
        _record(_bad_kinds, _valid_bodies, _valid_scopes, _valid_confidences, st.none()),
        _record(_valid_kinds, _valid_bodies, _bad_scopes, _valid_confidences, st.none()),
        _record(_valid_kinds, _bad_bodies, _valid_scopes, _valid_confidences, st.none()),
        _record(_valid_kinds, _valid_bodies, _valid_scopes, _bad_confidences, st.none()),
        _record(_valid_kinds, _valid_bodies, _valid_scopes, _valid_confidences, _ids),
        _record(_bad_kinds, _bad_bodies, _bad_scopes, _bad_confidences, _ids),
    ]
)
"""A write with one fault (or, last, with every one, for the order of faults)."""


def _list() -> st.SearchStrategy[Call]:
    return st.builds(
        lambda scope, kind, anchor, everything, limit: Call(
            "memory.list",
            {
                **_optional(scope=scope, kind=kind, anchor_key=anchor, limit=limit),
                **({"include_superseded": True} if everything else {}),
            },
        ),
        _filter_scopes,
        _filter_kinds,
        st.none() | _keys,
        st.booleans(),
        _limits,
    )


def _recall() -> st.SearchStrategy[Call]:
    return st.builds(
        lambda scope, kind, query, decay, applicable, limit: Call(
            "memory.recall",
            {
                **_optional(scope=scope, kind=kind, query=query, limit=limit),
                **({"decay": decay} if decay != "none" else {}),
                **({"applicable_only": True} if applicable else {}),
            },
        ),
        _filter_scopes,
        _filter_kinds,
        _queries,
        _decays,
        st.booleans(),
        _limits,
    )


_search_queries = st.sampled_from(
    (
        "fix",
        "Cache caches",
        "parser fix",
        "run::fix",
        "\u00c9cole",
        "src/ repo",
        "the of",
        "fix fix",
    )
)


def _search() -> st.SearchStrategy[Call]:
    return st.builds(
        lambda query, scope, decay, applicable, limit: Call(
            "memory.search",
            {
                "query": query,
                **_optional(scope=scope, limit=limit),
                **({"decay": decay} if decay != "none" else {}),
                **({"applicable_only": True} if applicable else {}),
            },
        ),
        _search_queries,
        _filter_scopes,
        _decays,
        st.booleans(),
        _limits,
    )


def _node() -> st.SearchStrategy[dict[str, JSON]]:
    return st.builds(
        lambda key, blob, path: {"key": key, **_optional(blob=blob, path=path)},
        _keys,
        _blobs,
        _paths,
    )


_put_nodes = st.builds(
    lambda nodes: Call("graph.put_nodes", {"nodes": nodes}),
    st.lists(_node(), min_size=1, max_size=2),
)
_cache_put = st.builds(
    lambda key, fp, payload, anchor: Call(
        "cache.put",
        {"key": key, "fingerprint": fp, "json": payload, **_optional(anchor=anchor)},
    ),
    _cache_keys,
    st.sampled_from(("f1", "f2")),
    st.sampled_from(("{}", '{"a":1}', '"\u00e9t\u00e9"')),
    _anchors,
)
_SETUP: dict[str, list[st.SearchStrategy[Call]]] = {
    "episodic": [_valid_record, _successor],
    "graph": [_put_nodes],
    "cache": [_cache_put],
}
"""Ops that put something in the store, drawn first so later ops have
records, nodes and entries to act on."""

_BY_CAPABILITY: dict[str, list[st.SearchStrategy[Call]]] = {
    "episodic": [
        _valid_record,
        _valid_record,
        _successor,
        _successor,
        _messy_record,
        st.builds(lambda i: Call("memory.forget", {"id": i}), _recent),
        st.builds(lambda i: Call("memory.forget", {"id": i}), _ids),
        st.builds(lambda i: Call("memory.get", {"id": i}), _ids),
        _list(),
        _list(),
        _recall(),
        _recall(),
    ],
    "graph": [
        _put_nodes,
        _put_nodes,
        st.builds(
            lambda keys: Call("graph.remove_nodes", {"keys": keys}),
            st.lists(_keys, min_size=1, max_size=2, unique=True),
        ),
        st.builds(
            lambda tree: Call("graph.set_tree", {"tree": tree}), st.sampled_from([None, "t1"])
        ),
        st.just(Call("graph.rebuild")),
        st.just(Call("graph.export")),
    ],
    "cache": [
        _cache_put,
        _cache_put,
        st.builds(lambda key: Call("cache.get", {"key": key}), _cache_keys),
        st.builds(lambda key: Call("cache.get", {"key": key}), _cache_keys),
        st.builds(lambda key: Call("cache.forget", {"key": key}), _cache_keys),
        st.just(Call("cache.entries")),
        st.builds(lambda b: Call("cache.stats", {"budget_bytes": b}), _budgets),
        st.builds(lambda b: Call("cache.sweep", {"budget_bytes": b}), _budgets),
    ],
    "budget": [
        st.builds(
            lambda env: Call("cache.budget", {"env": env}),
            st.sampled_from((None, "1", " 2 ", "+3", "x", "-1", "")),
        )
    ],
    "durable": [st.just(Call("store.reopen"))],
}

_FOCUSED: dict[str, list[st.SearchStrategy[Call]]] = {
    "search": [_search(), _search(), _search()],
}
"""Ops drawn only by a property that asks for them (``Property.draws``), so
adding one leaves every other property's sequences -- and so its verdicts
under the fixed seed -- as they were."""


def _settle_refs(calls: list[Call]) -> list[Call]:
    """Point every ref at an earlier ``memory.record`` call, or at
    :data:`ABSENT_ID` when there is none yet.  A drawn index counts back from
    the newest record (wrapping), so small draws -- which shrinking prefers --
    name the records just written."""
    out: list[Call] = []
    written = 0

    def settle(value: JSON) -> JSON:
        if isinstance(value, Ref):
            return Ref(written - 1 - value.index % written) if written else ABSENT_ID
        if isinstance(value, Mapping):
            return {
                k: settle(v)
                for k, v in value.items()
                if written or k != "supersedes" or not (isinstance(v, Ref) and v.optional)
            }
        if isinstance(value, list):
            return [settle(v) for v in value]
        return value

    for call in calls:
        out.append(Call(call.op, settle(call.args)))
        if call.op == "memory.record":
            written += 1
    return out


def sequences(
    capabilities: frozenset[str], max_steps: int, draws: tuple[str, ...] = ()
) -> st.SearchStrategy[list[Call]]:
    """Random sequences of at most ``max_steps`` ops, using only ops whose
    capability is among ``capabilities``; those of :data:`_FOCUSED` only for
    the capabilities in ``draws``."""
    choices = [s for cap, found in _BY_CAPABILITY.items() if cap in capabilities for s in found]
    choices += [s for cap in draws if cap in capabilities for s in _FOCUSED[cap]]
    if not choices:
        raise ValueError(
            f"no op to generate: the backend declares none of {', '.join(_BY_CAPABILITY)}"
        )
    setup = [s for cap, found in _SETUP.items() if cap in capabilities for s in found]
    writes = st.lists(_pick(setup), max_size=5) if setup else st.just([])
    steps = st.lists(_pick(choices), min_size=1, max_size=max_steps)
    more = st.lists(_pick(choices), max_size=max_steps)
    # A few writes first, so the ops after them have something to act on;
    # two runs of ops, as one list drawn by Hypothesis is short on average.
    return st.tuples(writes, steps, more).map(
        lambda parts: _settle_refs([*parts[0], *parts[1], *parts[2]][:max_steps])
    )


# --- Running -------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """What one call came to: a result, or the error kind it was refused with."""

    result: JSON = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class Driver:
    """Runs calls on one backend, resolving refs from its own answers."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.written: list[int | None] = []

    def resolve(self, value: JSON) -> JSON:
        if isinstance(value, Ref):
            found = self.written[value.index] if value.index < len(self.written) else None
            return ABSENT_ID if found is None else found
        if isinstance(value, Mapping):
            return {k: self.resolve(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value

    def run(self, call: Call) -> Reply:
        """Run ``call``; a refusal is a reply, a backend failure propagates."""
        try:
            result = self.backend.call(call.op, self.resolve(call.args))
        except OpError as error:
            reply = Reply(error=error.kind)
        else:
            reply = Reply(result=result)
        if call.op == "memory.record":
            new_id = reply.result.get("id") if reply.ok and isinstance(reply.result, dict) else None
            self.written.append(new_id if isinstance(new_id, int) else None)
        return reply

    def snapshot(self) -> JSON:
        return self.backend.call("store.snapshot", {})


def strip_human_only(value: JSON) -> JSON:
    """``value`` without the wall-clock fields, at any depth."""
    if isinstance(value, dict):
        return {k: strip_human_only(v) for k, v in value.items() if k not in HUMAN_ONLY}
    if isinstance(value, list):
        return [strip_human_only(v) for v in value]
    return value


def reference_backend() -> Backend:
    """The in-memory model, driven in-process as any backend is."""
    from roteiro_memory.suite.drivers import InProcessBackend, memory_store

    return InProcessBackend(memory_store(), "memory")


# --- Rendering ------------------------------------------------------------------


@dataclass(frozen=True)
class CaseStep:
    """A call as a case step, with what the case should check after it
    (``checks`` holds the YAML keys: ``expect``, ``absent``, ``unchanged``...)."""

    call: Call
    checks: Mapping[str, JSON] = field(default_factory=dict)
    save: Mapping[str, str] = field(default_factory=dict)


def _ref_name(ref: Ref) -> str:
    return f"r{ref.index + 1}"


def _yaml_value(value: JSON, saved: set[int]) -> JSON:
    if isinstance(value, Ref):
        return {"$ref": _ref_name(value)} if value.index in saved else ABSENT_ID
    if isinstance(value, Mapping):
        return {k: _yaml_value(v, saved) for k, v in value.items()}
    if isinstance(value, list):
        return [_yaml_value(v, saved) for v in value]
    return value


_ID_PATH = re.compile(r"(^|\.)(id|superseded_by)$|(^|\.)restored\.\d+$")
"""Paths in a result that hold a record id."""


def _ids_as_refs(
    steps: Sequence[CaseStep], ids: Mapping[int, int], earlier: Sequence[int]
) -> list[CaseStep]:
    """``steps`` with every expected record id (by path) turned into a ref to
    the record that got it, so the case holds whatever ids a backend hands out.
    ``earlier[i]`` is how many records were written before step ``i``: only
    those can be referred to."""
    out = []
    for step, before in zip(steps, earlier, strict=True):
        expect = step.checks.get("expect")
        if isinstance(expect, Mapping):
            expect = {
                path: Ref(ids[value])
                if _ID_PATH.search(path)
                and isinstance(value, int)
                and ids.get(value, before) < before
                else value
                for path, value in expect.items()
            }
            step = CaseStep(step.call, {**step.checks, "expect": expect}, step.save)
        out.append(step)
    return out


def render_case(
    steps: Sequence[CaseStep],
    *,
    case_id: str,
    title: str,
    clause: str,
    invariant: str,
) -> str:
    """``steps`` as a YAML case file, ready to paste into ``conformance/``.

    The steps are run on the reference model: a step it refuses is marked
    ``error: KIND``, a record some later step refers to saves its id, and an
    expected record id is written as a ref to that record.
    """
    first = Driver(reference_backend())
    first.backend.call("reset", {})
    earlier = []
    for step in steps:
        earlier.append(len(first.written))
        first.run(step.call)
    ids = {new_id: index for index, new_id in enumerate(first.written) if new_id is not None}
    steps = _ids_as_refs(steps, ids, earlier)
    wanted = {ref.index for step in steps for ref in _refs_in((step.call.args, dict(step.checks)))}
    model = Driver(reference_backend())
    model.backend.call("reset", {})
    saved: set[int] = set()
    rendered: list[dict[str, JSON]] = []
    needs: set[str] = set()
    for step in steps:
        record_index = len(model.written)
        reply = model.run(step.call)
        out: dict[str, JSON] = {"op": step.call.op}
        if step.call.args:
            out["args"] = _yaml_value(dict(step.call.args), saved)
        capability = OP_CAPABILITY.get(step.call.op)
        if capability is not None:
            needs.add(capability)
        if not reply.ok:
            out["error"] = reply.error
        save = dict(step.save)
        if step.call.op == "memory.record" and reply.ok and record_index in wanted:
            save[_ref_name(Ref(record_index))] = "id"
            saved.add(record_index)
        if save and reply.ok:
            out["save"] = save
        for key, value in step.checks.items():
            if reply.ok or key in ("unchanged", "changed"):
                out[key] = _yaml_value(value, saved)
            if key in ("unchanged", "changed"):
                needs.add("snapshot")
        rendered.append(out)
    case = {
        "id": case_id,
        "title": title,
        "clause": clause,
        "invariant": invariant,
        "requires": [c for c in CAPABILITIES if c in needs],
        "steps": rendered,
    }
    document = {"topic": "found-by-properties", "cases": [case]}
    return yaml.safe_dump(
        document, sort_keys=False, allow_unicode=True, default_flow_style=None, width=100
    )
