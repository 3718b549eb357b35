"""Built-in properties: rules checked over random operation sequences.

Where a case pins one scenario, a property drives a backend through hundreds of
random PROTOCOL sequences (:mod:`.sequences`) and checks a rule after every
step.  ``properties.yaml`` names which properties run, against which invariant
tag, with which Hypothesis settings.  A failure is shrunk to a shortest
sequence and reported as a YAML case -- the steps, with ``save``/``$ref`` for
ids and the expectation that failed -- ready to paste into ``conformance/``.

Runs are reproducible: every property draws its sequences from one seed
(:data:`DEFAULT_SEED` unless the run explores, with a seed of its own that the
report prints), and never writes a ``.hypothesis`` folder (no example database).

This module does not import pytest.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, Literal

import jsonschema  # type: ignore[import-untyped]  # no stubs among the dev dependencies
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings

from roteiro_memory.suite.cases import (
    Invariant,
    builtin_dir,
    did_you_mean,
    json_path,
    line_at,
    read_yaml,
    schema_problem,
)
from roteiro_memory.suite.errors import BackendFailure, CaseFileError
from roteiro_memory.suite.hypothesis_home import private_storage
from roteiro_memory.suite.runner import Backend, end_of_case, json_equal, render
from roteiro_memory.suite.sequences import (
    READS,
    Call,
    CaseStep,
    Driver,
    Ref,
    Reply,
    reference_backend,
    render_case,
    sequences,
    strip_human_only,
)

__all__ = [
    "DEFAULT_SEED",
    "PROPERTIES",
    "PROPERTIES_FILE",
    "Property",
    "PropertyOutcome",
    "PropertySpec",
    "Violation",
    "load_properties",
    "run_property",
]

JSON = Any
PROPERTIES_FILE = "properties.yaml"
SCHEMA_FILE = "property.schema.json"
DEFAULT_SEED = 0
"""The seed of a run that does not explore: every run tries the same sequences,
so a verdict (and a known-failures entry) never depends on the run."""


class Violation(AssertionError):
    """A property broken at one step: what was wrong, and the case steps that
    show it (the sequence up to that step, plus the property's own probes)."""

    def __init__(self, message: str, steps: Sequence[CaseStep]) -> None:
        self.message = message
        self.steps = list(steps)
        super().__init__(message)


Check = Callable[[Backend, Sequence[Call]], None]


@dataclass(frozen=True)
class Property:
    """A built-in property: the capabilities it needs and its check."""

    name: str
    title: str
    requires: tuple[str, ...]
    check: Check
    draws: tuple[str, ...] = ()
    """Capabilities whose focused ops (:mod:`.sequences`) it also draws."""


def _prefix(calls: Sequence[Call], end: int) -> list[CaseStep]:
    return [CaseStep(call) for call in calls[:end]]


# --- The properties ----------------------------------------------------------------


def _reads_never_mutate(backend: Backend, calls: Sequence[Call]) -> None:
    driver = Driver(backend)
    for index, call in enumerate(calls):
        if call.op not in READS:
            driver.run(call)
            continue
        before = driver.snapshot()
        driver.run(call)
        if not json_equal(driver.snapshot(), before):
            raise Violation(
                f"{call.op} {render(driver.resolve(call.args))} changed the snapshot",
                [
                    *_prefix(calls, index),
                    CaseStep(Call("store.snapshot"), save={"before": "$"}),
                    CaseStep(call, checks={"unchanged": "before"}),
                ],
            )


def _refused_writes_never_mutate(backend: Backend, calls: Sequence[Call]) -> None:
    driver = Driver(backend)
    for index, call in enumerate(calls):
        if call.op in READS:
            driver.run(call)
            continue
        before = driver.snapshot()
        reply = driver.run(call)
        if not reply.ok and not json_equal(driver.snapshot(), before):
            raise Violation(
                f"{call.op} {render(driver.resolve(call.args))} was refused with "
                f"{reply.error} but changed the snapshot",
                [
                    *_prefix(calls, index),
                    CaseStep(Call("store.snapshot"), save={"before": "$"}),
                    CaseStep(call, checks={"unchanged": "before"}),
                ],
            )


def _listed_ids(call: Call, result: JSON) -> list[JSON]:
    if call.op == "memory.list" and isinstance(result, dict):
        return [r.get("id") for r in result.get("records", []) if isinstance(r, dict)]
    if call.op == "memory.recall" and isinstance(result, dict):
        return [
            r["record"].get("id")
            for r in result.get("results", [])
            if isinstance(r, dict) and isinstance(r.get("record"), dict)
        ]
    return []


def _absent(call: Call, refs: list[Ref]) -> CaseStep:
    where = (
        {"path": "records", "key": "id"}
        if call.op == "memory.list"
        else {"path": "results", "key": "record.id"}
    )
    return CaseStep(call, checks={"absent": {**where, "values": refs}})


def _supersession_immediate(backend: Backend, calls: Sequence[Call]) -> None:
    driver = Driver(backend)
    superseded: dict[int, Ref] = {}
    for index, call in enumerate(calls):
        reply = driver.run(call)
        if not reply.ok:
            continue
        probes: list[Call] = []
        if call.op == "memory.record" and isinstance(call.args.get("supersedes"), Ref):
            target = driver.resolve(call.args["supersedes"])
            superseded[target] = call.args["supersedes"]
            probes = [Call("memory.list"), Call("memory.recall")]
        elif call.op == "memory.forget" and isinstance(reply.result, dict):
            for restored in reply.result.get("restored", []):
                superseded.pop(restored, None)
            forgotten = reply.result.get("id")
            if isinstance(forgotten, int):
                superseded.pop(forgotten, None)
        elif call.op in ("memory.list", "memory.recall") and not call.args.get(
            "include_superseded"
        ):
            seen = [i for i in _listed_ids(call, reply.result) if i in superseded]
            if seen:
                raise Violation(
                    f"{call.op} {render(driver.resolve(call.args))} returned superseded "
                    f"record(s) {seen}",
                    [*_prefix(calls, index), _absent(call, [superseded[i] for i in seen])],
                )
        for probe in probes:
            result = driver.run(probe).result
            seen = [i for i in _listed_ids(probe, result) if i in superseded]
            if seen:
                refs = [superseded[i] for i in seen]
                raise Violation(
                    f"right after {call.op} {render(driver.resolve(call.args))}, "
                    f"{probe.op} still returned superseded record(s) {seen}",
                    [*_prefix(calls, index + 1), _absent(probe, refs)],
                )


def _sweep_never_touches_episodic(backend: Backend, calls: Sequence[Call]) -> None:
    driver = Driver(backend)
    every = Call("memory.list", {"include_superseded": True})
    export = Call("graph.export")
    has_graph = "graph" in backend.capabilities()
    for index, call in enumerate(calls):
        if call.op != "cache.sweep":
            driver.run(call)
            continue
        listing = driver.run(every).result
        nodes = driver.run(export).result if has_graph else None
        driver.run(call)
        after = driver.run(every).result
        nodes_after = driver.run(export).result if has_graph else None
        if json_equal(after, listing) and json_equal(nodes_after, nodes):
            continue
        what = "records" if not json_equal(after, listing) else "graph nodes"
        probes = [CaseStep(every, save={"records_before": "$"})]
        tail = [CaseStep(every, checks={"expect": {"$": {"$ref": "records_before"}}})]
        if has_graph:
            probes.append(CaseStep(export, save={"nodes_before": "$"}))
            tail.append(CaseStep(export, checks={"expect": {"$": {"$ref": "nodes_before"}}}))
        raise Violation(
            f"{call.op} {render(call.args)} changed the {what}",
            [*_prefix(calls, index), *probes, CaseStep(call), *tail],
        )


def _leaves(value: JSON, path: str = "") -> Iterable[tuple[str, JSON]]:
    """Every scalar in ``value`` by dotted path, and every list's length as ``#``."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}.{key}" if path else key)
    elif isinstance(value, list):
        yield (f"{path}.#" if path else "#"), len(value)
        for index, item in enumerate(value):
            yield from _leaves(item, f"{path}.{index}" if path else str(index))
    else:
        yield path or "$", value


def _prefixes(path: str) -> list[str]:
    parts = path.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _parent(path: str) -> str:
    return path.rpartition(".")[0]


def _differences(expected: JSON, actual: JSON) -> dict[str, JSON]:
    """The checks a case needs to show ``actual`` is not ``expected``."""
    want = dict(_leaves(expected))
    got = dict(_leaves(actual))
    differ = {p: v for p, v in want.items() if p not in got or not json_equal(got[p], v)}
    checks: dict[str, JSON] = {}
    # A fraction is checked within the default tolerance, a whole value exactly.
    approx = {p: v for p, v in differ.items() if isinstance(v, float) and not v.is_integer()}
    expect = {p: v for p, v in differ.items() if p not in approx}
    if expect:
        checks["expect"] = expect
    if approx:
        checks["approx"] = approx
    # Keys the result has and should not: report the outermost one, under an
    # object the expected result also has.
    objects = {""} if isinstance(expected, dict) else set()
    objects |= {_parent(p) for p in want if not p.endswith("#")} - {""}
    prefixes = {q for p in want for q in _prefixes(p)}
    extra: dict[str, list[str]] = {}
    for path in got:
        if path in want:
            continue
        outer = next(q for q in _prefixes(path) if q not in prefixes)
        key = outer.rpartition(".")[2]
        if not key.isdigit() and key != "#" and _parent(outer) in objects:
            extra.setdefault(_parent(outer) or "$", []).append(key)
    if extra:
        checks["absent"] = [{"path": p, "values": sorted(set(k))} for p, k in extra.items()]
    return checks


_RANKED = frozenset({"memory.recall", "memory.search"})
"""The ops whose numbers PROTOCOL lets a faithful ``ln`` or power move."""

_PROBES: tuple[tuple[str, Call], ...] = (
    ("episodic", Call("memory.list")),
    ("episodic", Call("memory.list", {"include_superseded": True})),
    ("episodic", Call("memory.list", {"scope": "team", "limit": 1})),
    ("episodic", Call("memory.recall")),
    ("episodic", Call("memory.recall", {"limit": 1})),
    ("episodic", Call("memory.recall", {"query": "FIX"})),
    ("episodic", Call("memory.recall", {"decay": "linear:2", "applicable_only": True})),
    ("search", Call("memory.search", {"query": "fix Cache parser src/ repo"})),
    ("search", Call("memory.search", {"query": "fix parser", "decay": "exponential:2"})),
    ("cache", Call("cache.entries")),
    ("cache", Call("cache.stats", {"budget_bytes": 0})),
    ("graph", Call("graph.export")),
)
"""Reads run on both stores after every write, so a difference in state shows
at the write that made it rather than whenever a later step happens to look."""


def _shown(value: JSON) -> str:
    text = render(value)
    return text if len(text) <= 400 else f"{text[:400]}..."


def _compare(
    call: Call, got: Reply, want: Reply, listing: JSON = None
) -> tuple[str, dict[str, JSON]] | None:
    """Why ``got`` is not ``want`` and the checks that show it, or None.
    ``listing`` is the reference model's live records, for the numbers a
    faithful ``ln`` or power may give otherwise."""
    if want.ok and got.ok:
        expected = strip_human_only(want.result)
        actual = strip_human_only(got.result)
        if listing is not None:
            from roteiro_memory.suite.drivers import reference_numbers

            actual = reference_numbers()(call.op, actual, expected, listing)
        if json_equal(expected, actual):
            return None
        return (
            f"answered {_shown(actual)}, the reference model {_shown(expected)}",
            _differences(expected, actual),
        )
    if want.error == got.error:
        return None
    if want.ok:
        return (
            f"was refused with {got.error}; the reference model accepts it",
            {"expect": dict(_leaves(strip_human_only(want.result)))},
        )
    done = "succeeded" if got.ok else f"was refused with {got.error}"
    return f"{done}; the reference model refuses it with {want.error}", {}


def _equivalent_to_reference(backend: Backend, calls: Sequence[Call]) -> None:
    driver = Driver(backend)
    model = Driver(reference_backend())
    model.backend.call("reset", {})
    declared = backend.capabilities()
    probes = [probe for capability, probe in _PROBES if capability in declared]
    for index, call in enumerate(calls):
        got = driver.run(call)
        want = model.run(call)
        listing = model.backend.call("memory.list", {}) if call.op in _RANKED else None
        found = _compare(call, got, want, listing)
        if found is not None:
            problem, checks = found
            raise Violation(
                f"step {index + 1}, {call.op} {render(driver.resolve(call.args))}, {problem}",
                [*_prefix(calls, index), CaseStep(call, checks=checks)],
            )
        if call.op in READS or not got.ok:
            continue
        for probe in probes:
            listing = model.backend.call("memory.list", {}) if probe.op in _RANKED else None
            found = _compare(probe, driver.run(probe), model.run(probe), listing)
            if found is not None:
                problem, checks = found
                raise Violation(
                    f"after step {index + 1}, {call.op} {render(driver.resolve(call.args))}, "
                    f"{probe.op} {render(probe.args)} {problem}",
                    [*_prefix(calls, index + 1), CaseStep(probe, checks=checks)],
                )


PROPERTIES: dict[str, Property] = {
    p.name: p
    for p in (
        Property(
            "reads-never-mutate",
            "Reads leave the snapshot unchanged",
            ("snapshot",),
            _reads_never_mutate,
        ),
        Property(
            "refused-writes-never-mutate",
            "A refused op leaves the snapshot unchanged",
            ("snapshot",),
            _refused_writes_never_mutate,
        ),
        Property(
            "supersession-is-immediate",
            "A superseded record never appears in live listing or recall",
            ("episodic",),
            _supersession_immediate,
        ),
        Property(
            "sweep-never-touches-episodic",
            "A cache sweep leaves every record (and node) as it was",
            ("episodic", "cache"),
            _sweep_never_touches_episodic,
        ),
        Property(
            "equivalent-to-reference",
            "Every result and error kind equals the reference model's, timestamps aside",
            ("episodic",),
            _equivalent_to_reference,
        ),
        Property(
            "search-equivalent-to-reference",
            "Random searches give the reference model's terms, results and numbers, "
            "ln and the power faithful",
            ("episodic", "search"),
            _equivalent_to_reference,
            draws=("search",),
        ),
    )
}
"""The built-in properties by name."""


# --- Entries of properties.yaml ----------------------------------------------------


@dataclass(frozen=True)
class PropertySpec:
    """One entry of ``properties.yaml``: a property to run and its settings."""

    id: str
    rule: str
    """The name of the built-in property (the entry's ``property``)."""
    title: str
    clause: str
    invariant: str
    requires: tuple[str, ...]
    rules: tuple[str, ...]
    """The PROTOCOL.md rules it checks, by tag."""
    max_examples: int
    max_steps: int
    file: Path
    line: int


@cache
def _schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((builtin_dir() / SCHEMA_FILE).read_text("utf-8"))
    return loaded


def property_files(dirs: Iterable[Path] = (), *, builtin: bool = True) -> list[Path]:
    """The ``properties.yaml`` in force: the last of the built-in one and those in ``dirs``."""
    folders = [builtin_dir()] if builtin else []
    found = [Path(d) / PROPERTIES_FILE for d in [*folders, *dirs]]
    existing = [p for p in found if p.is_file()]
    return existing[-1:]


def load_properties(path: Path, registry: Mapping[str, Invariant]) -> list[PropertySpec]:
    """The entries of one properties file, validated, or :class:`CaseFileError`."""
    document = read_yaml(path)
    errors = list(jsonschema.Draft202012Validator(_schema()).iter_errors(document))
    if errors:
        best = jsonschema.exceptions.best_match(errors)

        def located(error: Any) -> CaseFileError:
            parts = list(error.absolute_path)
            return CaseFileError(
                path,
                schema_problem(error, "a properties file"),
                line=line_at(document, parts),
                path=json_path(parts) or "(top level)",
            )

        primary = located(best)
        others = [located(e) for e in errors if e is not best]
        primary.more = tuple(sorted(others, key=lambda f: f.line or 0))
        raise primary
    out: list[PropertySpec] = []
    seen: set[str] = set()
    for index, raw in enumerate(document["properties"]):

        def fail(problem: str, where: str, raw: Any = raw, index: int = index) -> CaseFileError:
            return CaseFileError(
                path, problem, line=raw.line, case_id=raw["id"], path=f"properties[{index}].{where}"
            )

        if raw["id"] in seen:
            raise fail("duplicate property id", "id")
        seen.add(raw["id"])
        if raw["property"] not in PROPERTIES:
            raise fail(
                f"unknown property {raw['property']!r}{did_you_mean(raw['property'], PROPERTIES)}"
                f": expected one of {', '.join(PROPERTIES)}",
                "property",
            )
        if raw["invariant"] not in registry:
            hint = did_you_mean(raw["invariant"], registry)
            raise fail(f"unknown invariant {raw['invariant']!r}{hint}", "invariant")
        from roteiro_memory.suite.rules import PROTOCOL_FILE, protocol_rules

        unknown_rules = [tag for tag in raw.get("rules", ()) if tag not in protocol_rules()]
        if unknown_rules:
            raise fail(
                f"unknown rule(s) {', '.join(unknown_rules)}: {PROTOCOL_FILE} defines no such tag",
                "rules",
            )
        rule = PROPERTIES[raw["property"]]
        requires = tuple(raw.get("requires", ()))
        missing = [c for c in rule.requires if c not in requires]
        if missing:
            raise fail(
                f"property {rule.name!r} needs {', '.join(missing)}; add it to 'requires'",
                "requires",
            )
        options = raw.get("settings", {})
        out.append(
            PropertySpec(
                id=raw["id"],
                rule=rule.name,
                title=raw.get("title", rule.title),
                clause=raw.get("clause", registry[raw["invariant"]].clause),
                invariant=raw["invariant"],
                requires=requires,
                rules=tuple(raw.get("rules", ())),
                max_examples=options.get("max_examples", 50),
                max_steps=options.get("stateful_step_count", 20),
                file=path,
                line=raw.line,
            )
        )
    return out


# --- Running -------------------------------------------------------------------------


@dataclass(frozen=True)
class PropertyOutcome:
    """What running one property against one backend came to."""

    id: str
    status: Literal["passed", "failed", "skipped"]
    message: str = ""
    case_yaml: str | None = None
    steps: tuple[CaseStep, ...] = field(default=())
    duration: float = 0.0

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def hypothesis_settings(spec: PropertySpec) -> settings:
    """The settings a property runs with: the entry's budget, and never an
    example database in the user's folder.  The sequences tried depend only on
    the seed :func:`run_property` is given (a profile's ``derandomize``,
    ``database`` and ``max_examples`` are not used)."""
    return settings(
        max_examples=spec.max_examples,
        stateful_step_count=spec.max_steps,
        derandomize=False,
        database=None,
        deadline=None,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        phases=(Phase.explicit, Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )


class _Crashed(Exception):
    """The backend failed during a sequence; carries the sequence, so the
    shrunk one that still makes it fail can be shown."""

    def __init__(self, failure: BackendFailure, calls: Sequence[Call]) -> None:
        self.failure = failure
        self.calls = list(calls)
        super().__init__(failure.message)


def run_property(
    spec: PropertySpec, backend: Backend, *, seed_value: int = DEFAULT_SEED
) -> PropertyOutcome:
    """Run one property against ``backend`` with the sequences ``seed_value``
    draws; a failure (a broken rule or a crash) carries its shrunk case."""
    started = time.perf_counter()
    try:
        declared = backend.capabilities()
    except BackendFailure as failure:
        return _backend_failed(spec, failure, started)
    missing = [c for c in spec.requires if c not in declared]
    if missing:
        return PropertyOutcome(
            spec.id,
            "skipped",
            f"backend {backend.name!r} does not declare {', '.join(missing)}, "
            f"which property {spec.rule!r} requires",
        )
    rule = PROPERTIES[spec.rule]

    @seed(seed_value)
    @hypothesis_settings(spec)
    @given(sequences(declared, spec.max_steps, rule.draws))
    def check(calls: list[Call]) -> None:
        try:
            backend.call("reset", {})
            try:
                rule.check(backend, calls)
            finally:
                # Run whatever the sequence came to, so a second answer is never
                # read by the next sequence; it fails this one unless it broke the rule.
                ended = end_of_case(backend, "the sequence's last step")
            if ended is not None:
                raise ended
        except BackendFailure as failure:
            raise _Crashed(failure, calls) from None
        except RecursionError:
            deep = BackendFailure("a result is nested too deeply to compare")
            raise _Crashed(deep, calls) from None

    try:
        with private_storage():
            check()
    except Violation as violation:
        return _failed(spec, violation.message, violation.steps, started)
    except _Crashed as crash:
        detail = f"\n{crash.failure.stderr}" if crash.failure.stderr else ""
        steps = [CaseStep(call) for call in crash.calls]
        message = f"the backend failed: {crash.failure.message}{detail}"
        return _failed(spec, message, steps, started, what="crash of the backend")
    return PropertyOutcome(spec.id, "passed", duration=time.perf_counter() - started)


def _failed(
    spec: PropertySpec,
    message: str,
    steps: Sequence[CaseStep],
    started: float,
    *,
    what: str | None = None,
) -> PropertyOutcome:
    case_yaml = render_case(
        steps,
        case_id=f"{spec.id}-counterexample",
        title=f"Counterexample to {spec.rule} found by {spec.id}"
        if what is None
        else f"A {what} found by {spec.id}",
        clause=spec.clause,
        invariant=spec.invariant,
    )
    return PropertyOutcome(
        spec.id, "failed", message, case_yaml, tuple(steps), time.perf_counter() - started
    )


def _backend_failed(spec: PropertySpec, failure: BackendFailure, started: float) -> PropertyOutcome:
    detail = f"\n{failure.stderr}" if failure.stderr else ""
    return PropertyOutcome(
        spec.id,
        "failed",
        f"the backend failed: {failure.message}{detail}",
        duration=time.perf_counter() - started,
    )


def format_property_outcome(
    spec: PropertySpec, outcome: PropertyOutcome, *, style: str = "long"
) -> str:
    """A failed outcome in the property's terms, led by its message's first
    line, with its case to paste (``style`` ``line``: that first line only)."""
    first = outcome.message.splitlines()[0] if outcome.message else outcome.status
    first = first if len(first) <= 200 else first[:197] + "..."
    if style == "line":
        return f"{spec.file}:{spec.line}: {first}"
    lines = [
        first,
        f"property {spec.id} ({spec.rule}): {spec.title}",
        f"  invariant: {spec.invariant}",
        *([f"  rules: {', '.join(spec.rules)} (conformance/PROTOCOL.md)"] if spec.rules else []),
        f"  clause: {spec.clause}",
        f"  {outcome.message}",
    ]
    if outcome.case_yaml:
        lines.append("  shrunk to this case (paste it into a file in conformance/):")
        lines.extend(f"    {line}" for line in outcome.case_yaml.splitlines())
    return "\n".join(lines)
