"""Conformance case files: loading, validation and the invariant registry.

A case file is YAML holding ``cases``, each a list of PROTOCOL steps with
expectations.  Every file is checked against ``case.schema.json`` and then
against what a schema cannot say (a known invariant tag, unique ids, references
to values saved by an earlier step, capabilities that cover the ops used).  Any
fault is a :class:`CaseFileError` naming the file, the line, the case id and the
path inside the case -- never a crash and never a silently dropped case.

This module does not import pytest.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs among the dev dependencies

from roteiro_memory.suite.caseyaml import json_path, line_at, read_yaml
from roteiro_memory.suite.data import builtin_dir
from roteiro_memory.suite.errors import CaseFileError
from roteiro_memory.suite.vocabulary import CAPABILITIES, CORE, OP_CAPABILITY

__all__ = [
    "CASE_FILE_SUFFIX",
    "MAX_CASES_PER_FILE",
    "MAX_CASE_FILE_BYTES",
    "Case",
    "CaseFileError",
    "Check",
    "Invariant",
    "Step",
    "builtin_dir",
    "case_files",
    "claim_case_id",
    "did_you_mean",
    "json_path",
    "line_at",
    "load_cases",
    "load_file",
    "load_registry",
    "no_cases_left",
    "read_yaml",
    "refs_in",
    "schema_problem",
]

JSON = Any

REGISTRY_FILE = "invariants.yaml"
RESERVED_FILES = frozenset({REGISTRY_FILE, "properties.yaml"})
"""YAML files in a case folder that are not case files: the registry, and the
property list that :mod:`roteiro_memory.suite.properties` reads."""
SCHEMA_FILE = "case.schema.json"
_CHECK_KINDS = ("expect", "approx", "one_of", "types", "order", "contains", "absent")
_REF = "$ref"
RAW_OP = "(raw)"
"""The op name a step with ``raw`` is reported under."""
_REPEAT = "$repeat"
MAX_REPEATED = 10**7
"""The most characters a ``$repeat`` may make, whatever its text and times."""
MAX_CASE_FILE_BYTES = 1024 * 1024
"""The most bytes a case file may hold (the largest shipped one holds 26 KB):
a larger file is refused before it is parsed, so an oversized one costs
neither the time nor the memory of reading it."""
MAX_CASES_PER_FILE = 1000
"""The most cases one file may hold (the shipped ones hold at most 23),
counted before any case is checked against the schema."""
_SPLIT = ": split its cases among several files in the folder, one topic each"


@dataclass(frozen=True)
class Invariant:
    """One registry entry: a rule of ADR-0013 the suite checks."""

    tag: str
    title: str
    clause: str
    capability: str


@dataclass(frozen=True)
class Check:
    """One expectation on a step's result.

    ``kind`` is ``expect`` (equality at ``path``), ``approx`` (a number within
    ``tolerance``), ``one_of`` (equal to one of the listed values), ``types``
    (the JSON type at ``path``), ``order`` (the list at ``path``, each item
    projected by ``key``, equals ``value`` in order), ``contains`` / ``absent``
    (each of ``value`` is / is not among the list's projected items, or a key
    of the object at ``path``).
    """

    kind: str
    path: str
    value: JSON
    key: str | None = None
    tolerance: float = 1e-9


@dataclass(frozen=True)
class Step:
    """One op of a case, with what it saves and what it expects."""

    number: int
    line: int
    op: str
    args: Mapping[str, JSON]
    save: Mapping[str, str] = field(default_factory=dict)
    checks: tuple[Check, ...] = ()
    error: str | None = None
    unchanged: str | None = None
    changed: str | None = None
    note: str | None = None
    raw: str | None = None
    """A request line sent as is (``op`` is then ``(raw)``); the checks apply
    to the whole response."""


@dataclass(frozen=True)
class Case:
    """One conformance case: a sequence of steps run on a freshly reset store."""

    id: str
    title: str
    clause: str
    invariant: str
    requires: tuple[str, ...]
    steps: tuple[Step, ...]
    file: Path
    line: int
    topic: str
    rules: tuple[str, ...] = ()
    """The PROTOCOL.md rules the case checks, by tag."""
    without: tuple[str, ...] = ()
    """Capabilities the backend must not declare for the case to run."""

    @property
    def location(self) -> str:
        return f"{self.file.name}:{self.line}"


# --- Messages ----------------------------------------------------------------


def did_you_mean(value: object, allowed: Iterable[str]) -> str:
    """``; did you mean 'x'?`` for the closest of ``allowed``, or nothing."""
    close = difflib.get_close_matches(str(value), list(allowed), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


# --- Packaged data ---------------------------------------------------------


@cache
def _schema() -> dict[str, Any]:
    path = builtin_dir() / SCHEMA_FILE
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


# --- The registry ----------------------------------------------------------


def load_registry(dirs: Iterable[Path] = ()) -> dict[str, Invariant]:
    """The invariant registry: the built-in one plus any ``invariants.yaml``
    in ``dirs`` (a tag there replaces the built-in entry of that tag)."""
    registry: dict[str, Invariant] = {}
    for folder in [builtin_dir(), *dirs]:
        path = Path(folder) / REGISTRY_FILE
        if path.is_file():
            registry.update(_registry_file(path))
    if not registry:
        raise CaseFileError(builtin_dir() / REGISTRY_FILE, "no invariant registry found")
    return registry


def _registry_file(path: Path) -> dict[str, Invariant]:
    document = read_yaml(path)
    entries = document.get("invariants") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise CaseFileError(path, "expected a mapping with a list 'invariants'")
    allowed = (*CAPABILITIES, CORE)
    out: dict[str, Invariant] = {}
    for index, entry in enumerate(entries):
        where = f"invariants[{index}]"
        line = getattr(entry, "line", None)
        if not isinstance(entry, dict):
            raise CaseFileError(path, "expected a mapping", line=line, path=where)
        missing = [k for k in ("tag", "title", "clause", "capability") if k not in entry]
        extra = sorted(set(entry) - {"tag", "title", "clause", "capability"})
        if missing or extra:
            problem = f"missing {missing}" if missing else f"unknown field(s) {extra}"
            raise CaseFileError(
                path, f"{problem}; allowed: tag, title, clause, capability", line=line, path=where
            )
        if not all(isinstance(entry[k], str) and entry[k] for k in entry):
            raise CaseFileError(path, "every field must be a non-empty string", line=line)
        tag = entry["tag"]
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", tag):
            raise CaseFileError(
                path, f"tag {tag!r} must be lower-case words joined by '-'", line=line, path=where
            )
        if tag in out:
            raise CaseFileError(path, f"duplicate tag {tag!r}", line=line, path=where)
        if entry["capability"] not in allowed:
            raise CaseFileError(
                path,
                f"capability {entry['capability']!r} is not one of {', '.join(allowed)}",
                line=line,
                path=f"{where}.capability",
            )
        out[tag] = Invariant(tag, entry["title"], entry["clause"], entry["capability"])
    return out


# --- Case files --------------------------------------------------------------


CASE_FILE_SUFFIX = ".yaml"
"""How a case file's name ends: a folder's other files are not loaded."""


def no_cases_left(
    leaving_out: str, folders: str = "--roteiro-cases", configured: str = "ini: roteiro_cases"
) -> str:
    """Why a run that leaves the shipped cases out and names no folder of case
    files is refused -- it would check nothing -- in the words of the front
    end that refuses it: ``leaving_out``, what told the run to; ``folders``,
    the option naming a folder; ``configured``, where else one is named.  The
    defaults are the pytest plugin's words."""
    return (
        f"{leaving_out} runs only the cases in {folders} folders, and none is named: name "
        f"a folder of case files with {folders} DIR ({configured}), or leave the option "
        "out to run the shipped cases"
    )


def case_files(dirs: Iterable[Path] = (), *, builtin: bool = True) -> list[Path]:
    """Every case file to load: the built-in ones, then those in ``dirs``.

    A file in a later folder with the same name as an earlier one replaces it,
    so a folder can both add topics and override shipped ones.  Files named in
    :data:`RESERVED_FILES` or starting with ``_`` are not case files.
    """
    chosen: dict[str, Path] = {}
    folders = [builtin_dir()] if builtin else []
    for folder in [*folders, *(Path(d) for d in dirs)]:
        if not folder.is_dir():
            raise CaseFileError(folder, "is not a folder of case files")
        for path in sorted(folder.glob(f"*{CASE_FILE_SUFFIX}")):
            if path.name not in RESERVED_FILES and not path.name.startswith("_"):
                chosen[path.name] = path
    return [chosen[name] for name in sorted(chosen)]


def load_cases(
    dirs: Iterable[Path] = (),
    *,
    builtin: bool = True,
    registry: Mapping[str, Invariant] | None = None,
) -> list[Case]:
    """Every case from :func:`case_files`, validated; ids unique across files."""
    folders = [Path(d) for d in dirs]
    if registry is None:
        registry = load_registry(folders)
    seen: dict[str, Case] = {}
    out: list[Case] = []
    for path in case_files(folders, builtin=builtin):
        for case in load_file(path, registry):
            duplicate = claim_case_id(seen, case)
            if duplicate is not None:
                raise duplicate
            out.append(case)
    return out


def claim_case_id(seen: dict[str, Case], case: Case) -> CaseFileError | None:
    """Record ``case`` in ``seen`` under its id, or -- when another case has
    the id already -- the error naming both, leaving ``seen`` as it was.

    Case ids are unique across every file the suite loads together: an id is
    what ``-k``, the known-failures file and the report name a case by.
    """
    first = seen.setdefault(case.id, case)
    if first is case:
        return None
    return CaseFileError(
        case.file,
        f"duplicate case id, first defined at {first.file}:{first.line}",
        line=case.line,
        case_id=case.id,
    )


def load_file(path: Path, registry: Mapping[str, Invariant]) -> list[Case]:
    """The cases of one file, or :class:`CaseFileError`."""
    path = Path(path)
    document = read_yaml(path, max_bytes=MAX_CASE_FILE_BYTES, split=_SPLIT)
    cases = document.get("cases") if isinstance(document, dict) else None
    if isinstance(cases, list) and len(cases) > MAX_CASES_PER_FILE:
        raise CaseFileError(
            path,
            f"holds {len(cases):,} cases, more than the {MAX_CASES_PER_FILE:,} a case file "
            f"may hold{_SPLIT}",
        )
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))
    if errors:
        first = min(errors, key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
        found = [_schema_error(path, document, e) for e in errors]
        primary = found[errors.index(first)]
        primary.more = tuple(
            sorted((f for f in found if f is not primary), key=lambda f: f.line or 0)
        )
        raise primary
    topic = document.get("topic", path.stem)
    return [_build_case(path, topic, raw, registry) for raw in document["cases"]]


def _schema_error(path: Path, document: JSON, error: jsonschema.ValidationError) -> CaseFileError:
    parts = list(error.absolute_path)
    inner = parts[2:] if len(parts) >= 2 and parts[0] == "cases" else parts
    return CaseFileError(
        path,
        schema_problem(error),
        line=line_at(document, parts),
        case_id=_case_id_along(document, parts),
        path=json_path(inner) or "(top level)",
    )


def _case_id_along(document: JSON, parts: Sequence[str | int]) -> str | None:
    if len(parts) >= 2 and parts[0] == "cases":
        try:
            raw = document["cases"][parts[1]]
        except (KeyError, IndexError, TypeError):
            return None
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            return str(raw["id"])
        return f"#{parts[1]}"
    return None


def schema_problem(error: jsonschema.ValidationError, document: str = "a case file") -> str:
    """A schema error in words: what is allowed, and the closest allowed value;
    for a whole file that is no mapping (``document`` says what file), what
    it must hold and what it holds instead."""
    if error.validator == "type" and not error.absolute_path:
        return _not_a_mapping(error, document)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        return f"{error.message}; allowed: {', '.join(allowed)}"
    if error.validator == "not" and isinstance(error.instance, dict) and "raw" in error.instance:
        return (
            "a step with 'raw' sends its line as is: it takes no args, error, unchanged or "
            "changed; check the response object with expect"
        )
    if error.validator == "not":
        return (
            "a step with 'error' cannot also save or check a result "
            "(save, expect, approx, types, order, contains, absent): a failed op has none"
        )
    if error.validator in ("oneOf", "anyOf") and error.context:
        best = jsonschema.exceptions.best_match(error.context)
        return f"{error.instance!r} fits none of the allowed forms ({best.message})"
    if error.validator == "enum":
        hint = did_you_mean(error.instance, [str(v) for v in error.validator_value])
        return f"{error.instance!r} is not allowed{hint}; expected one of {error.validator_value}"
    return str(error.message)


_JSON_TYPES = {"array": "a list", "object": "a mapping", "string": "text"}
_FOUND = {list: "a list", str: "text", bool: "a boolean", int: "a number", float: "a number"}


def _not_a_mapping(error: jsonschema.ValidationError, document: str) -> str:
    """A file whose top level is no mapping: what it must hold (the keys
    the schema requires, and those it allows), and what it holds."""
    fields = error.schema.get("properties", {})
    required = [name for name in error.schema.get("required", []) if name in fields]

    def named(name: str) -> str:
        shape = _JSON_TYPES.get(fields[name].get("type"))
        return f"{name!r} ({shape})" if shape else repr(name)

    needs = " and ".join(named(name) for name in required)
    may = [named(name) for name in fields if name not in required]
    also = f", and may have {', '.join(may)}" if may else ""
    found = error.instance
    holds = "it is empty" if found is None else f"it holds {_FOUND.get(type(found), 'a value')}"
    return f"{document} must be a mapping with {needs}{also}; {holds}"


def _ref_problem(source: tuple[str, str], rest: str) -> str | None:
    """Why ``rest``, a path into a value saved at ``source`` (its op and
    path), can name nothing, where ``protocol.schema.json`` says; else None."""
    from roteiro_memory.suite.shapes import result_path_problem

    op, at = source
    parts = [*([] if at == "$" else at.split(".")), *(rest.split(".") if rest else [])]
    return result_path_problem(op, parts)


def refs_in(value: JSON) -> Iterator[str]:
    """The references ``value`` makes (``{$ref: NAME.PATH}``), at any depth."""
    if isinstance(value, dict):
        if set(value) == {_REPEAT, "times"}:
            return
        if set(value) == {_REF}:
            yield str(value[_REF])
            return
        for item in value.values():
            yield from refs_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs_in(item)


def _bad_repeat(value: JSON) -> str | None:
    """The first malformed ``{$repeat, times}`` in ``value``, described."""
    if isinstance(value, dict):
        if _REPEAT in value:
            times = value.get("times")
            if set(value) != {_REPEAT, "times"} or not isinstance(value[_REPEAT], str):
                return "$repeat takes exactly {$repeat: TEXT, times: N}"
            if not isinstance(times, int) or isinstance(times, bool) or not 0 <= times <= 10**7:
                return f"$repeat times must be a whole number 0..10000000, got {times!r}"
            if len(value[_REPEAT]) * times > MAX_REPEATED:
                return (
                    f"$repeat makes {len(value[_REPEAT]) * times} characters; "
                    f"it may make at most {MAX_REPEATED}"
                )
            return None
        return next((p for p in map(_bad_repeat, value.values()) if p), None)
    if isinstance(value, list):
        return next((p for p in map(_bad_repeat, value) if p), None)
    return None


def _plain(value: JSON) -> JSON:
    """Strip line bookkeeping so values compare and serialize as JSON."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _build_case(path: Path, topic: str, raw: JSON, registry: Mapping[str, Invariant]) -> Case:
    case_id = raw["id"]

    def fail(problem: str, where: str, line: int | None = None) -> CaseFileError:
        return CaseFileError(path, problem, line=line or raw.line, case_id=case_id, path=where)

    if raw["invariant"] not in registry:
        raise fail(
            f"unknown invariant {raw['invariant']!r}{did_you_mean(raw['invariant'], registry)} "
            f"(add it to {REGISTRY_FILE}, or use one of {', '.join(sorted(registry))})",
            "invariant",
        )
    requires = tuple(raw.get("requires", ()))
    without = tuple(raw.get("without", ()))
    rules = tuple(raw.get("rules", ()))
    if rules:
        from roteiro_memory.suite.rules import PROTOCOL_FILE, protocol_rules

        unknown_rules = [tag for tag in rules if tag not in protocol_rules()]
        if unknown_rules:
            raise fail(
                f"unknown rule(s) {', '.join(unknown_rules)}: {PROTOCOL_FILE} defines "
                f"{', '.join(protocol_rules())}",
                "rules",
            )
    both = sorted(set(requires) & set(without))
    if both:
        raise fail(f"{', '.join(both)} is both required and excluded ('without')", "without")
    saved: dict[str, tuple[str, str]] = {}
    """Each name saved so far: the op whose result it was saved from, and the path."""
    steps: list[Step] = []
    needed: set[str] = set()
    for index, raw_step in enumerate(raw["steps"]):
        where = f"steps[{index}]"
        line = raw_step.line
        op = raw_step.get("op", RAW_OP)
        named = "raw" not in raw_step
        if named and op not in OP_CAPABILITY and raw_step.get("error") != "BadRequest":
            raise fail(
                f"unknown op {op!r}{did_you_mean(op, OP_CAPABILITY)}: expected one of "
                f"{', '.join(OP_CAPABILITY)} (a step may "
                "name an op outside PROTOCOL only when it expects error: BadRequest)",
                f"{where}.op",
                line,
            )
        capability = OP_CAPABILITY.get(op)
        expected_error = raw_step.get("error")
        if capability in without:
            # Only refusals: Unsupported, or BadRequest, which comes first.
            if expected_error not in ("Unsupported", "BadRequest"):
                raise fail(
                    f"{op} needs {capability!r}, which the case excludes ('without'); only a "
                    "step expecting Unsupported or BadRequest may use it",
                    f"{where}.op",
                    line,
                )
        elif expected_error == "Unsupported" and capability is not None:
            raise fail(
                f"expects Unsupported from {op}, whose capability {capability!r} the "
                "case does not exclude; add it to 'without'",
                f"{where}.error",
                line,
            )
        elif capability is not None:
            needed.add(capability)
        repeat_problem = _bad_repeat(raw_step)
        if repeat_problem:
            raise fail(repeat_problem, where, line)
        for kind in _CHECK_KINDS:
            if kind in raw_step and _unanswerable(raw_step[kind]):
                raise fail(
                    f"{kind} holds NaN or an infinity, which no answer can carry (JSON has "
                    "no such number); only a request's args may send one",
                    f"{where}.{kind}",
                    line,
                )
        for ref in refs_in(raw_step):
            name, _, rest = ref.partition(".")
            if name not in saved:
                raise fail(f"refers to {name!r}, which no earlier step saves", where, line)
            problem = _ref_problem(saved[name], rest)
            if problem is not None:
                raise fail(f"$ref {ref!r} can name nothing: {problem}", where, line)
        for key in ("unchanged", "changed"):
            if key in raw_step:
                needed.add("snapshot")
                if saved.get(raw_step[key]) != ("store.snapshot", "$"):
                    raise fail(
                        f"{key}: {raw_step[key]!r} names no snapshot saved by an earlier step "
                        "(one is saved as {op: store.snapshot, save: {NAME: $}})",
                        f"{where}.{key}",
                        line,
                    )
        for name, at in raw_step.get("save", {}).items():
            problem = _ref_problem((op, "$"), "" if at == "$" else str(at))
            if problem is not None:
                raise fail(f"save {name}: {at!r} can name nothing: {problem}", where, line)
            saved[name] = (op, str(at))
        steps.append(_build_step(index + 1, raw_step))
    missing = sorted(needed - set(requires))
    if missing:
        raise fail(
            f"the steps need {', '.join(missing)} but 'requires' lists only "
            f"{', '.join(requires) or 'nothing'}; add the missing capabilities",
            "requires",
        )
    return Case(
        id=case_id,
        title=raw["title"],
        clause=raw["clause"],
        invariant=raw["invariant"],
        requires=requires,
        steps=tuple(steps),
        file=path,
        line=raw.line,
        topic=topic,
        rules=rules,
        without=without,
    )


def _unanswerable(value: JSON) -> bool:
    """Whether ``value`` holds a float that is NaN or infinite anywhere."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, dict):
        return any(_unanswerable(item) for item in value.values())
    if isinstance(value, list):
        return any(_unanswerable(item) for item in value)
    return False


def _checks_of(kind: str, spec: JSON) -> list[Check]:
    if kind in ("expect", "approx", "one_of", "types"):
        out = []
        for check_path, value in spec.items():
            tolerance = 1e-9
            if kind == "approx" and isinstance(value, dict):
                tolerance = float(value.get("tolerance", tolerance))
                value = value["value"]
            out.append(Check(kind, check_path, _plain(value), tolerance=tolerance))
        return out
    items = spec if isinstance(spec, list) else [spec]
    return [
        Check(kind, item.get("path", "$"), _plain(item["values"]), key=item.get("key"))
        for item in items
    ]


def _build_step(number: int, raw: JSON) -> Step:
    checks: list[Check] = []
    for kind in _CHECK_KINDS:
        if kind in raw:
            checks.extend(_checks_of(kind, raw[kind]))
    return Step(
        number=number,
        line=raw.line,
        op=raw.get("op", RAW_OP),
        args=_plain(raw.get("args", {})),
        save=dict(raw.get("save", {})),
        checks=tuple(checks),
        error=raw.get("error"),
        unchanged=raw.get("unchanged"),
        changed=raw.get("changed"),
        note=raw.get("note"),
        raw=raw.get("raw"),
    )
