"""Checking a step's answer: paths into a result, saved values, JSON equality
and the expectations a case writes (``expect``, ``approx``, ``one_of``,
``types``, ``order``, ``contains``, ``absent``).

This module does not import pytest.
"""

from __future__ import annotations

import difflib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from roteiro_memory.suite.cases import Check

__all__ = [
    "MISSING",
    "Mismatch",
    "Unresolved",
    "apply_check",
    "json_equal",
    "render",
    "resolve_path",
    "structure_diff",
    "substitute",
    "value_at",
]

JSON = Any


class Mismatch(Exception):
    """A step whose answer is not what the case expects.

    ``fatal`` says the store may no longer be in the state the later steps
    assume (a write that should have failed succeeded, a snapshot that should
    be unchanged changed), so the case stops there; any other mismatch is
    recorded and the case goes on.
    """

    def __init__(
        self,
        message: str,
        path: str | None,
        expected: JSON,
        actual: JSON,
        *,
        fatal: bool = False,
    ) -> None:
        self.message = message
        self.path = path
        self.expected = expected
        self.actual = actual
        self.fatal = fatal
        super().__init__(message)


MISSING = object()
"""Stands for a value a path did not lead to."""


# --- Paths and references ----------------------------------------------------


def resolve_path(value: JSON, path: str) -> JSON:
    """The value at a dotted ``path`` (``$`` is the whole value; a number
    indexes a list; ``#`` is the length so far).  Raises KeyError naming the
    first part that is not there."""
    if path == "$":
        return value
    current = value
    walked: list[str] = []
    for part in path.split("."):
        if part == "#" and isinstance(current, (list, dict)):
            current = len(current)
        elif isinstance(current, list) and _is_index(part):
            index = int(part)
            if not -len(current) <= index < len(current):
                raise KeyError(f"{'.'.join([*walked, part])}: the list has {len(current)} item(s)")
            current = current[index]
        elif isinstance(current, dict) and part in current:
            current = current[part]
        else:
            kind = type(current).__name__ if current is not None else "null"
            raise KeyError(f"{'.'.join([*walked, part])}: not present (found a {kind} there)")
        walked.append(part)
    return current


def _is_index(part: str) -> bool:
    return part.lstrip("-").isdigit()


class Unresolved(Exception):
    """A case's ``$ref`` that names nothing in the value saved: the case
    file's fault, whatever the backend answered before."""


def substitute(value: JSON, saved: Mapping[str, JSON]) -> JSON:
    """``value`` with each ``$ref`` replaced by what it names and each
    ``$repeat`` by its text; :class:`Unresolved` when a ``$ref`` names nothing."""
    if isinstance(value, dict):
        if set(value) == {"$ref"}:
            name, _, rest = str(value["$ref"]).partition(".")
            try:
                return resolve_path(saved[name], rest or "$")
            except KeyError as missing:
                raise Unresolved(
                    f"$ref {value['$ref']!r} names nothing in what {name!r} saved: "
                    f"{missing.args[0]}"
                ) from None
        if set(value) == {"$repeat", "times"}:
            return str(value["$repeat"]) * int(value["times"])
        return {k: substitute(v, saved) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, saved) for v in value]
    return value


# --- Comparison ----------------------------------------------------------------


def json_equal(a: JSON, b: JSON) -> bool:
    """JSON equality: booleans are not numbers, 1 equals 1.0, key order is moot."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def render(value: JSON) -> str:
    """A value as compact JSON for messages."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def structure_diff(expected: JSON, actual: JSON) -> str | None:
    """A unified diff of two structures, or None for scalars."""
    if not isinstance(expected, (dict, list)) or not isinstance(actual, (dict, list)):
        return None
    lines_e = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    lines_a = json.dumps(actual, indent=2, sort_keys=True, ensure_ascii=False).splitlines()
    diff = difflib.unified_diff(lines_e, lines_a, "expected", "actual", lineterm="", n=2)
    return "\n".join(diff)


def value_at(result: JSON, path: str) -> JSON:
    try:
        return resolve_path(result, path)
    except KeyError as error:
        raise Mismatch(f"path {error.args[0]}", path, "(a value)", MISSING) from None


def _project(items: Sequence[JSON], key: str | None, path: str) -> list[JSON]:
    if key is None:
        return list(items)
    out = []
    for index, item in enumerate(items):
        try:
            out.append(resolve_path(item, key))
        except KeyError as error:
            raise Mismatch(
                f"item {index} of {path} has no {key!r} ({error.args[0]})", path, key, item
            ) from None
    return out


def apply_check(check: Check, result: JSON, saved: Mapping[str, JSON]) -> None:
    """Raise :class:`Mismatch` when ``result`` breaks ``check``."""
    expected = substitute(check.value, saved)
    actual = value_at(result, check.path)
    if check.kind == "expect":
        if not json_equal(expected, actual):
            raise Mismatch(f"{check.path} differs", check.path, expected, actual)
    elif check.kind == "approx":
        is_number = isinstance(actual, (int, float)) and not isinstance(actual, bool)
        if not is_number or not math.isclose(
            actual, expected, rel_tol=check.tolerance, abs_tol=check.tolerance
        ):
            raise Mismatch(
                f"{check.path} is not within {check.tolerance:g} of {expected!r}",
                check.path,
                expected,
                actual,
            )
    elif check.kind == "one_of":
        if not any(json_equal(value, actual) for value in expected):
            raise Mismatch(
                f"{check.path} is none of the {len(expected)} allowed values",
                check.path,
                {"one of": expected},
                actual,
            )
    elif check.kind == "types":
        if not _has_json_type(actual, expected):
            raise Mismatch(
                f"{check.path} is not of JSON type {expected}",
                check.path,
                expected,
                f"{_json_type(actual)} {render(actual)}",
            )
    else:
        _check_members(check, expected, actual)


def _json_type(value: JSON) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _has_json_type(value: JSON, type_name: str) -> bool:
    actual = _json_type(value)
    return actual == type_name or (type_name == "number" and actual == "integer")


def _check_members(check: Check, expected: list[JSON], actual: JSON) -> None:
    if isinstance(actual, dict) and check.kind in ("contains", "absent") and check.key is None:
        members: list[JSON] = list(actual)
        what = "keys of"
    elif isinstance(actual, list):
        members = _project(actual, check.key, check.path)
        what = "items of" if check.key is None else f"{check.key} of the items of"
    else:
        raise Mismatch(
            f"{check.path} is not a list{' or an object' if check.kind != 'order' else ''}",
            check.path,
            "(a list)",
            actual,
        )
    label = f"{what} {check.path}"
    if check.kind == "order":
        if not json_equal(expected, members):
            raise Mismatch(f"{label} are not in the expected order", check.path, expected, members)
        return
    for value in expected:
        present = any(json_equal(value, m) for m in members)
        if check.kind == "contains" and not present:
            raise Mismatch(f"{render(value)} is not among the {label}", check.path, value, members)
        if check.kind == "absent" and present:
            raise Mismatch(f"{render(value)} is among the {label}", check.path, value, members)
