"""The shapes of PROTOCOL's requests and results, from ``protocol.schema.json``.

The schema is the machine-readable contract: ``$defs.ops`` holds, per op, the
capability it needs, the schema of its ``args`` and the schema of its result.
The runner checks every result against it, so a backend whose answer has the
wrong shape fails the case with the op and the JSON path, whatever the case's
own expectations look at.  The validators are compiled once per op.

This module does not import pytest.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs among the dev dependencies

from roteiro_memory.suite.data import builtin_dir

__all__ = [
    "PROTOCOL_SCHEMA_FILE",
    "op_schema",
    "protocol_schema",
    "response_problem",
    "result_path_problem",
    "result_problem",
]

JSON = Any
PROTOCOL_SCHEMA_FILE = "protocol.schema.json"
_SHOWN = 120


@cache
def protocol_schema() -> dict[str, Any]:
    """The shipped ``protocol.schema.json``."""
    path = builtin_dir() / PROTOCOL_SCHEMA_FILE
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def op_schema(op: str) -> dict[str, Any] | None:
    """``$defs.ops[op]`` (``x-capability``, ``args``, ``result``), or None."""
    found: dict[str, Any] | None = protocol_schema()["$defs"]["ops"].get(op)
    return found


@cache
def _validator(pointer: str) -> Any:
    schema = protocol_schema()
    return jsonschema.Draft202012Validator({"$ref": pointer, "$defs": schema["$defs"]})


def _problem(pointer: str, value: JSON) -> tuple[str, str] | None:
    error = jsonschema.exceptions.best_match(_validator(pointer).iter_errors(value))
    if error is None:
        return None
    return _json_path(error.absolute_path), _describe(error)


def _json_path(parts: Any) -> str:
    out = "$"
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _short(value: JSON) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def _describe(error: jsonschema.ValidationError) -> str:
    """One short line: what is wrong with the value, without echoing a schema."""
    validator = error.validator
    if validator == "required":
        missing = [name for name in error.validator_value if name not in error.instance]
        return f"lacks {', '.join(repr(m) for m in missing)}"
    if validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        return f"has unexpected field(s) {', '.join(repr(e) for e in extra)}"
    if validator in ("anyOf", "oneOf"):
        return f"{_short(error.instance)} fits none of the allowed shapes"
    if validator == "type":
        return f"{_short(error.instance)} is not of type {error.validator_value}"
    if validator in ("enum", "const"):
        values = error.validator_value if validator == "enum" else [error.validator_value]
        return f"{_short(error.instance)} is not one of {_short(values)}"
    if validator == "pattern":
        return f"{_short(error.instance)} does not match {error.validator_value!r}"
    message = str(error.message)
    return message if len(message) <= 2 * _SHOWN else message[: 2 * _SHOWN] + "..."


def result_problem(op: str, result: JSON) -> tuple[str, str] | None:
    """``(json_path, problem)`` when ``result`` breaks the shape of ``op``'s
    result in the schema, or None (also for an op the schema does not know)."""
    if op_schema(op) is None:
        return None
    return _problem(f"#/$defs/ops/{op}/result", result)


def response_problem(response: JSON) -> tuple[str, str] | None:
    """``(json_path, problem)`` when a whole wire response breaks its shape."""
    return _problem("#/$defs/response", response)


def result_path_problem(op: str, parts: list[str]) -> str | None:
    """Why the dotted path ``parts`` can name nothing in any result of ``op``
    that fits ``protocol.schema.json``; None when it may name something --
    always where the schema leaves the shape open (a choice of shapes, an
    op it does not know, a snapshot's any value)."""
    found = op_schema(op)
    schema: Any = found.get("result") if found is not None else None
    walked: list[str] = []
    for part in parts:
        schema = _resolved(schema)
        if not isinstance(schema, dict):
            return None
        kinds = schema.get("type")
        kinds = {kinds} if isinstance(kinds, str) else set(kinds or ())
        if not kinds:
            return None
        where = ".".join(walked) or "the result"
        if part == "#" and kinds & {"array", "object"}:
            schema = {"type": "integer"}
        elif "array" in kinds and part.lstrip("-").isdigit():
            schema = schema.get("items")
        elif "object" in kinds and isinstance(schema.get("properties"), dict):
            properties = schema["properties"]
            if part in properties:
                schema = properties[part]
            elif schema.get("additionalProperties") is False:
                return f"{where} of {op} has no {part!r} (it has {', '.join(properties)})"
            else:
                return None
        elif kinds & {"array", "object"}:
            return None
        else:
            return f"{where} of {op} is {' or '.join(sorted(kinds))}, which has no {part!r}"
        walked.append(part)
    return None


def _resolved(schema: Any) -> Any:
    """``schema`` with a ``$ref`` into ``$defs`` followed."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        name = schema["$ref"].removeprefix("#/$defs/")
        schema = protocol_schema()["$defs"].get(name)
    return schema
