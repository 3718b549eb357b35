"""protocol.schema.json and the reference server's argument checking agree.

The schema is the contract an implementer in any language reads; ``OPS`` in
:mod:`roteiro_memory.protocol` is the same contract in Python, kept for its
exact error messages.  These tests hold the two to one meaning: the same ops,
capabilities, argument names, required arguments, defaults and ranges, and the
same verdict on every sample request.
"""

from __future__ import annotations

import math
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs among the dev dependencies
import pytest
from test_protocol_args import ACCEPTED, VALID, WRONG

from roteiro_memory.errors import BadRequest
from roteiro_memory.protocol import _RANGES, OPS, check_args
from roteiro_memory.semantics import is_utf8
from roteiro_memory.suite.cases import OP_CAPABILITY
from roteiro_memory.suite.shapes import op_schema, protocol_schema, result_problem

SCHEMA = protocol_schema()
SCHEMA_OPS: dict[str, Any] = SCHEMA["$defs"]["ops"]

_JSON_TYPES = {
    "string": ["string"],
    "string or null": ["string", "null"],
    "integer": ["integer"],
    "integer or null": ["integer", "null"],
    "number or null": ["number", "null"],
    "boolean": ["boolean"],
    "array of strings": ["array"],
    "array of nodes": ["array"],
}


def _args_validator(op: str) -> Any:
    return jsonschema.Draft202012Validator(
        {"$ref": f"#/$defs/ops/{op}/args", "$defs": SCHEMA["$defs"]}
    )


def test_the_schema_is_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_the_schema_names_every_op_with_its_capability() -> None:
    assert list(SCHEMA_OPS) == list(OPS)
    assert SCHEMA["properties"]["op"]["enum"] == list(OPS)
    for op, spec in OPS.items():
        assert SCHEMA_OPS[op]["x-capability"] == spec.capability, op
        if op != "shutdown":
            assert OP_CAPABILITY[op] == spec.capability, op


@pytest.mark.parametrize("op", list(OPS))
def test_arguments_agree_in_name_type_requirement_default_and_range(op: str) -> None:
    schema = SCHEMA_OPS[op]["args"]
    spec = OPS[op]
    assert schema["additionalProperties"] is False
    assert list(schema["properties"]) == [arg.name for arg in spec.args]
    assert set(schema["required"]) == {arg.name for arg in spec.args if arg.required}
    for arg in spec.args:
        prop = schema["properties"][arg.name]
        types = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
        assert types == _JSON_TYPES[arg.type], (op, arg.name)
        if not arg.required and arg.default is not None:
            assert prop["default"] == arg.default, (op, arg.name)
        if arg.name in _RANGES:
            assert (prop["minimum"], prop["maximum"]) == _RANGES[arg.name], (op, arg.name)


def _expressible(value: Any) -> bool:
    """JSON Schema cannot see a lone surrogate or a NaN (PROTOCOL [P-wire-json]),
    and counts ``1.0`` as an integer, which PROTOCOL does not."""
    if isinstance(value, float):
        return not math.isnan(value) and not value.is_integer()
    if isinstance(value, str):
        return is_utf8(value)
    if isinstance(value, list):
        return all(_expressible(v) for v in value)
    if isinstance(value, dict):
        return all(_expressible(v) for v in value.values())
    return True


def _server_accepts(op: str, args: dict[str, Any]) -> bool:
    try:
        check_args(op, args)
    except BadRequest:
        return False
    return True


@pytest.mark.parametrize("op", list(OPS))
def test_schema_and_server_give_the_same_verdict_on_every_sample(op: str) -> None:
    validator = _args_validator(op)
    samples: list[dict[str, Any]] = [VALID[op], {**VALID[op], "unknown_argument": 1}]
    for arg in OPS[op].args:
        samples.append({k: v for k, v in VALID[op].items() if k != arg.name})
        for value in [*WRONG[arg.type], *ACCEPTED[arg.type], -1, 2**64, -(2**63) - 1]:
            samples.append({**VALID[op], arg.name: value})
    checked = 0
    for args in samples:
        if not _expressible(args):
            continue
        assert validator.is_valid(args) == _server_accepts(op, args), (op, args)
        checked += 1
    assert checked >= 2


def test_result_shapes_accept_the_reference_and_name_the_path_of_a_fault() -> None:
    from roteiro_memory.protocol import Ops
    from roteiro_memory.stores.naming import open_store

    ops = Ops(open_store("memory"))
    ops.call("graph.put_nodes", {"nodes": [{"key": "n", "blob": "b", "path": "p"}]})
    ops.call("memory.record", {"kind": "lesson", "body": "x", "anchor": "n"})
    ops.call("cache.put", {"key": "k", "fingerprint": "f", "json": "1", "anchor": "n"})
    for op, args in [
        ("hello", {}),
        ("memory.get", {"id": 1}),
        ("memory.list", {}),
        ("memory.recall", {"decay": "linear:4"}),
        ("cache.entries", {}),
        ("cache.get", {"key": "k"}),
        ("cache.stats", {"budget_bytes": 1}),
        ("cache.sweep", {"budget_bytes": 1}),
        ("cache.budget", {"env": None}),
        ("graph.export", {}),
        ("memory.forget", {"id": 1}),
    ]:
        assert result_problem(op, ops.call(op, args)) is None, op
    record = ops.call("memory.record", {"kind": "lesson", "body": "y"})
    got = ops.call("memory.get", {"id": record["id"]})
    assert result_problem("memory.get", {**got, "created_at": "yesterday"}) == (
        "$.created_at",
        "\"yesterday\" does not match '^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$'",
    )
    listing = ops.call("memory.list", {})
    listing["records"][0]["anchor"] = {"key": 5, "blob": None, "path": None}
    where, problem = result_problem("memory.list", listing) or ("", "")
    assert where == "$.records[0].anchor.key"
    assert "is not of type" in problem
    assert op_schema("no.such.op") is None
    assert result_problem("no.such.op", 1) is None


class _Misshapen:
    """The reference model whose memory.get answers with created_at in ISO form."""

    def __init__(self) -> None:
        from roteiro_memory.protocol import Ops
        from roteiro_memory.stores.model import ModelStore

        self.ops = Ops(ModelStore())

    def call(self, op: str, args: Any = None) -> Any:
        result = self.ops.call(op, args)
        if op == "memory.get" and isinstance(result, dict):
            result["created_at"] = "2026-12-01T08:00:00Z" + "x" * 500
        return result


def test_a_result_of_the_wrong_shape_fails_the_case_naming_op_and_path() -> None:
    from roteiro_memory.suite.cases import load_cases
    from roteiro_memory.suite.drivers import InProcessBackend
    from roteiro_memory.suite.runner import format_outcome, run_case

    case = next(c for c in load_cases() if c.id == "a-record-has-every-field-and-a-utc-created-at")
    outcome = run_case(case, InProcessBackend(_Misshapen(), "misshapen"))
    assert outcome.status == "failed"
    assert outcome.op == "memory.get"
    assert outcome.path == "$.created_at"
    assert outcome.message.startswith(
        "memory.get: the result breaks protocol.schema.json at $.created_at: "
    )
    assert len(outcome.message) < 400
    text = format_outcome(case, outcome)
    assert "  rules: P-record-shape, P-created-at (conformance/PROTOCOL.md)" in text


@pytest.mark.parametrize("op", ["memory.record", "cache.put"])
def test_the_anchor_limit_is_the_schema_s_and_the_server_s(op: str) -> None:
    """PROTOCOL [P-validate-anchor]: the schema states the byte limit
    (x-max-utf8-bytes) and the part JSON Schema can check (maxLength, code
    points); on ASCII anchors both give the server's verdict exactly."""
    from roteiro_memory.semantics import MAX_ANCHOR_BYTES

    prop = SCHEMA_OPS[op]["args"]["properties"]["anchor"]
    assert prop["x-max-utf8-bytes"] == prop["maxLength"] == MAX_ANCHOR_BYTES
    validator = _args_validator(op)
    for size in (MAX_ANCHOR_BYTES, MAX_ANCHOR_BYTES + 1):
        args = {**VALID[op], "anchor": "a" * size}
        assert validator.is_valid(args) == _server_accepts(op, args) == (size <= MAX_ANCHOR_BYTES)
    # Two-byte characters: within maxLength, over the byte limit the schema names.
    wide = {**VALID[op], "anchor": "é" * (MAX_ANCHOR_BYTES // 2 + 1)}
    assert validator.is_valid(wide)
    assert not _server_accepts(op, wide)
