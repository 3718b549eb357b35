"""Argument checking for every op in :data:`roteiro_memory.protocol.OPS`, in process.

Table-driven: each op has a minimal valid request, and every argument is
tried with every JSON value of the wrong type for it.  Adding an op to
``OPS`` without adding it here fails :func:`test_every_op_has_a_valid_request`.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from roteiro_memory.errors import BadRequest, Unsupported
from roteiro_memory.protocol import OPS, Ops, check_args, handle_line
from roteiro_memory.results import GraphNode
from roteiro_memory.semantics import U64_MAX
from roteiro_memory.store import STORE_CAPABILITIES as CAPABILITIES
from roteiro_memory.stores.model import ModelStore

VALID: dict[str, dict[str, Any]] = {
    "hello": {},
    "reset": {},
    "shutdown": {},
    "graph.put_nodes": {
        "nodes": [{"key": "a", "kind": "fn", "name": "f", "path": "p", "blob": None}]
    },
    "graph.remove_nodes": {"keys": ["a", "b"]},
    "graph.set_tree": {"tree": "t"},
    "graph.rebuild": {},
    "graph.export": {},
    "memory.record": {"kind": "lesson", "body": "b"},
    "memory.get": {"id": 1},
    "memory.list": {},
    "memory.recall": {},
    "memory.search": {"query": "retry"},
    "memory.forget": {"id": 1},
    "cache.put": {"key": "k", "fingerprint": "f", "json": "{}"},
    "cache.get": {"key": "k"},
    "cache.entries": {},
    "cache.forget": {"key": "k"},
    "cache.stats": {"budget_bytes": 0},
    "cache.sweep": {"budget_bytes": 0},
    "cache.budget": {"env": None},
    "store.snapshot": {},
    "store.reopen": {},
}
"""A minimal valid ``args`` for each op."""

DEFAULTS: dict[str, dict[str, Any]] = {
    "memory.record": {"scope": "repo", "anchor": None, "confidence": None, "supersedes": None},
    "memory.list": {
        "scope": None,
        "kind": None,
        "anchor_key": None,
        "include_superseded": False,
        "limit": None,
    },
    "memory.recall": {
        "scope": None,
        "kind": None,
        "anchor_key": None,
        "query": None,
        "decay": "none",
        "applicable_only": False,
        "limit": None,
    },
    "memory.search": {
        "scope": None,
        "kind": None,
        "anchor_key": None,
        "decay": "none",
        "applicable_only": False,
        "limit": None,
    },
    "cache.put": {"anchor": None},
}
"""What check_args fills in for the optional arguments left out of VALID."""

_SURROGATE = "\ud800"

WRONG: dict[str, list[Any]] = {
    "string": [None, 0, 1.5, True, [], {}, ["s"], _SURROGATE],
    "string or null": [0, 1.5, False, [], {}, "a" + _SURROGATE],
    "integer": [None, "1", 1.0, 1.5, True, False, [], {}],
    "integer or null": ["1", 1.0, True, False, [1], {}],
    "number or null": ["0.5", True, False, [], {}, float("nan")],
    "boolean": [None, 0, 1, "true", [], {}],
    "array of strings": [None, "a", {}, [1], [None], [["a"]], [_SURROGATE]],
    "array of nodes": [
        None,
        "a",
        {"key": "a"},
        [1],
        ["a"],
        [{}],
        [{"key": None}],
        [{"key": 1}],
        [{"key": "a", "blob": 1}],
        [{"key": "a", "path": True}],
        [{"key": "a", "kind": []}],
        [{"key": "a", "name": {}}],
        [{"key": "a", "hash": "h"}],
        [{"key": _SURROGATE}],
        [{"key": "a"}, {"kind": "no key"}],
    ],
}
"""Values of the wrong JSON shape, by the argument type OPS declares."""

ACCEPTED: dict[str, list[Any]] = {
    "string": ["", "x", "日本"],
    "string or null": [None, "", "x"],
    "integer": [0, 1, 2**63, 2**64 - 1],
    "integer or null": [None, 0, 7, 2**64 - 1],
    "number or null": [None, 0, 1, 0.5, 1e300, float("inf")],
    "boolean": [True, False],
    "array of strings": [[], ["a", "b"]],
    "array of nodes": [[], [{"key": "a"}, {"key": "b", "blob": None}]],
}
"""Values of the right shape; whether they are valid is not check_args' concern."""

NON_NEGATIVE = {"limit", "id", "budget_bytes"}


def _arg_cases() -> list[Any]:
    cases = []
    for op, spec in OPS.items():
        for arg in spec.args:
            cases.append(pytest.param(op, arg.name, arg.type, id=f"{op}.{arg.name}"))
    return cases


ARG_CASES = _arg_cases()


def test_every_op_has_a_valid_request() -> None:
    assert sorted(VALID) == sorted(OPS)


def test_every_declared_argument_type_is_covered() -> None:
    types = {arg.type for spec in OPS.values() for arg in spec.args}
    assert types <= set(WRONG)
    assert types <= set(ACCEPTED)


@pytest.mark.parametrize("op", sorted(OPS))
def test_valid_args_are_returned_with_defaults_filled(op: str) -> None:
    checked = check_args(op, json.loads(json.dumps(VALID[op])))
    expected = {**VALID[op], **DEFAULTS.get(op, {})}
    if op == "graph.put_nodes":
        assert checked == {"nodes": [GraphNode("a", "fn", "f", "p", None)]}
    else:
        assert checked == expected
    assert set(checked) == {arg.name for arg in OPS[op].args}


@pytest.mark.parametrize("op", sorted(OPS))
def test_absent_or_null_args_mean_no_args(op: str) -> None:
    required = [arg.name for arg in OPS[op].args if arg.required]
    for args in (None, {}):
        if required:
            with pytest.raises(BadRequest, match=repr(required[0])):
                check_args(op, args)
        else:
            assert check_args(op, args) == {**DEFAULTS.get(op, {})}


@pytest.mark.parametrize("args", [[], "x", 1, True, [["id", 1]]])
@pytest.mark.parametrize("op", ["hello", "memory.get"])
def test_args_that_are_not_an_object_are_bad_requests(op: str, args: Any) -> None:
    with pytest.raises(BadRequest, match="must be an object"):
        check_args(op, args)


@pytest.mark.parametrize("op", ["", "memory", "memory.delete", "HELLO", " hello", "hello "])
def test_unknown_ops_are_bad_requests(op: str) -> None:
    with pytest.raises(BadRequest, match="unknown op"):
        check_args(op, {})


@pytest.mark.parametrize("op", sorted(OPS))
def test_unknown_argument_names_are_bad_requests(op: str) -> None:
    for name in ("bogus", "", "ID", _SURROGATE):
        with pytest.raises(BadRequest, match="unknown argument"):
            check_args(op, {**VALID[op], name: 1})


@pytest.mark.parametrize(("op", "name", "type_name"), ARG_CASES)
def test_missing_required_argument_is_a_bad_request(op: str, name: str, type_name: str) -> None:
    spec = next(arg for arg in OPS[op].args if arg.name == name)
    args = {k: v for k, v in VALID[op].items() if k != name}
    if spec.required:
        with pytest.raises(BadRequest, match=f"missing required argument {name!r}"):
            check_args(op, args)
    else:
        assert check_args(op, args)[name] == spec.default


@pytest.mark.parametrize(("op", "name", "type_name"), ARG_CASES)
def test_wrong_json_type_is_a_bad_request(op: str, name: str, type_name: str) -> None:
    for value in WRONG[type_name]:
        with pytest.raises(BadRequest, match=name):
            check_args(op, {**VALID[op], name: value})


@pytest.mark.parametrize(("op", "name", "type_name"), ARG_CASES)
def test_a_lone_surrogate_is_named_as_what_makes_text_the_wrong_type(
    op: str, name: str, type_name: str
) -> None:
    """Text is refused for its lone surrogate in words that say so, not as
    though it were no string; a value of another type is not said to hold one."""
    for value in WRONG[type_name]:
        with pytest.raises(BadRequest) as refused:
            check_args(op, {**VALID[op], name: value})
        lone = "\\ud800" in json.dumps(value)  # escaped wherever it is in the value
        named = re.search(
            r"holds a lone surrogate \(U\+D800 at character \d+\) and is not Unicode text",
            str(refused.value),
        )
        assert (named is not None) is lone


@pytest.mark.parametrize(("op", "name", "type_name"), ARG_CASES)
def test_right_json_type_is_accepted(op: str, name: str, type_name: str) -> None:
    for value in ACCEPTED[type_name]:
        if name == "budget_bytes" and value > U64_MAX:
            continue
        checked = check_args(op, {**VALID[op], name: value})
        if type_name != "array of nodes":
            assert checked[name] == value
            assert type(checked[name]) is type(value)


@pytest.mark.parametrize(
    ("op", "name"),
    [(op, arg.name) for op, spec in OPS.items() for arg in spec.args if arg.name in NON_NEGATIVE],
)
def test_negative_counts_are_bad_requests(op: str, name: str) -> None:
    for value in (-1, -(2**70)):
        with pytest.raises(BadRequest, match="negative"):
            check_args(op, {**VALID[op], name: value})
    assert check_args(op, {**VALID[op], name: 0})[name] == 0


@pytest.mark.parametrize("op", ["cache.stats", "cache.sweep"])
def test_budget_bytes_must_fit_64_bits(op: str) -> None:
    assert check_args(op, {"budget_bytes": U64_MAX}) == {"budget_bytes": U64_MAX}
    with pytest.raises(BadRequest, match="64 bits"):
        check_args(op, {"budget_bytes": U64_MAX + 1})


@pytest.mark.parametrize(
    ("op", "name", "low", "high"),
    [
        ("memory.get", "id", 0, U64_MAX),
        ("memory.forget", "id", 0, U64_MAX),
        ("memory.list", "limit", 0, U64_MAX),
        ("memory.recall", "limit", 0, U64_MAX),
        ("memory.record", "supersedes", -(2**63), U64_MAX),
    ],
)
def test_integer_arguments_have_64_bit_ranges(op: str, name: str, low: int, high: int) -> None:
    """PROTOCOL [P-args-ranges]: the bounds are accepted, one beyond is BadRequest."""
    for value in (low, high):
        assert check_args(op, {**VALID[op], name: value})[name] == value
    for value in (low - 1, high + 1):
        with pytest.raises(BadRequest, match=f"{name}.*must (fit 64 bits|not be negative)"):
            check_args(op, {**VALID[op], name: value})


def test_check_args_does_not_mutate_the_request() -> None:
    args = {"kind": "lesson", "body": "b"}
    check_args("memory.record", args)
    assert args == {"kind": "lesson", "body": "b"}


# --- capabilities ------------------------------------------------------------


def _narrow(capabilities: tuple[str, ...]) -> ModelStore:
    class Narrow(ModelStore):
        pass

    Narrow.capabilities = capabilities
    return Narrow()


GATED = sorted(op for op, spec in OPS.items() if spec.capability is not None)


def test_every_gated_op_names_a_protocol_capability() -> None:
    assert {OPS[op].capability for op in GATED} == set(CAPABILITIES)


@pytest.mark.parametrize("op", GATED)
def test_op_outside_declared_capabilities_is_unsupported(op: str) -> None:
    capability = OPS[op].capability
    store = _narrow(tuple(c for c in CAPABILITIES if c != capability))
    ops = Ops(store)
    before = store.snapshot()
    with pytest.raises(Unsupported, match=repr(capability)):
        ops.call(op, VALID[op])
    assert store.snapshot() == before
    assert capability not in ops.call("hello")["capabilities"]


@pytest.mark.parametrize("op", [op for op in GATED if OPS[op].args])
def test_bad_request_is_decided_before_unsupported(op: str) -> None:
    ops = Ops(_narrow(()))
    with pytest.raises(BadRequest):
        ops.call(op, {**VALID[op], "bogus": 1})


@pytest.mark.parametrize("op", ["hello", "reset", "shutdown"])
def test_session_ops_need_no_capability(op: str) -> None:
    ops = Ops(_narrow(()))
    result = ops.call(op)
    if op == "hello":
        assert result["capabilities"] == []
    else:
        assert result is None


def test_unsupported_travels_the_wire_form_with_the_request_id() -> None:
    ops = Ops(_narrow(("episodic",)))
    line = json.dumps({"id": 11, "op": "cache.entries"}).encode()
    answer, done = handle_line(ops, line)
    assert json.loads(answer)["error"]["kind"] == "Unsupported"
    assert json.loads(answer)["id"] == 11
    assert done is False
