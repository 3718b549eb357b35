"""Built-in properties: the reference passes them, broken backends fail them,
and a failure prints a case that reproduces it on its own."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any

import mutants
import pytest
from mutants import MUTANTS

from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.naming import open_store
from roteiro_memory.suite.cases import CaseFileError, builtin_dir, load_file, load_registry
from roteiro_memory.suite.drivers import InProcessBackend, SubprocessBackend
from roteiro_memory.suite.errors import BackendFailure
from roteiro_memory.suite.properties import (
    PROPERTIES,
    PropertySpec,
    format_property_outcome,
    hypothesis_settings,
    load_properties,
    run_property,
)
from roteiro_memory.suite.runner import Backend, run_case

pytest_plugins = ["pytester"]

REQUIRED = {
    "reads-never-mutate",
    "refused-writes-never-mutate",
    "supersession-is-immediate",
    "sweep-never-touches-episodic",
    "equivalent-to-reference",
    "search-equivalent-to-reference",
}


def shipped() -> dict[str, PropertySpec]:
    specs = load_properties(builtin_dir() / "properties.yaml", load_registry())
    return {spec.rule: spec for spec in specs}


def test_shipped_properties_file_lists_every_required_property() -> None:
    specs = shipped()
    assert set(specs) == REQUIRED == set(PROPERTIES)
    assert all(spec.max_examples >= 20 and spec.max_steps >= 10 for spec in specs.values())


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
@pytest.mark.parametrize("rule", sorted(REQUIRED))
def test_reference_backend_keeps_the_property(backend: str, rule: str) -> None:
    target = InProcessBackend(open_store(backend), backend)
    try:
        outcome = run_property(shipped()[rule], target)
    finally:
        target.close()
    assert outcome.status == "passed", outcome.message + "\n" + (outcome.case_yaml or "")


CAUGHT = [
    ("reads-never-mutate", "ListTicks"),
    ("refused-writes-never-mutate", "RefusedWriteInserts"),
    ("supersession-is-immediate", "SupersededStillListed"),
    ("sweep-never-touches-episodic", "SQLiteSweepDeletesSuperseded"),
    ("equivalent-to-reference", "ZeroVanishedPenalty"),
    ("equivalent-to-reference", "SupersedeTwice"),
]


def mutant_backend(name: str) -> Backend:
    factory = MUTANTS[name].factory if name in MUTANTS else getattr(mutants, name)
    return InProcessBackend(factory(), name)


@pytest.mark.parametrize(("rule", "name"), CAUGHT)
def test_failure_prints_a_case_that_reproduces_it(
    rule: str, name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The printed case loads as a case file, passes on both reference
    backends and fails on the broken one."""
    monkeypatch.setenv("CI", "1")  # derandomized: the same counterexample every run
    broken = mutant_backend(name)
    try:
        outcome = run_property(shipped()[rule], broken)
        assert outcome.status == "failed"
        assert outcome.case_yaml is not None
        spec = shipped()[rule]
        assert f"  rules: {', '.join(spec.rules)} (conformance/PROTOCOL.md)" in (
            format_property_outcome(spec, outcome).splitlines()
        )
        folder = tmp_path / "cases"
        folder.mkdir()
        (folder / "found.yaml").write_text(outcome.case_yaml, encoding="utf-8")
        (case,) = load_file(folder / "found.yaml", load_registry())
        assert case.invariant == shipped()[rule].invariant
        assert run_case(case, broken).status == "failed"
    finally:
        broken.close()
    for spec in ("memory", "sqlite"):
        reference = InProcessBackend(open_store(spec), spec)
        try:
            result = run_case(case, reference)
        finally:
            reference.close()
        assert result.passed, f"{spec}: {result.message}\n{outcome.case_yaml}"


def test_counterexample_is_shrunk_to_a_few_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "1")
    outcome = run_property(
        shipped()["supersession-is-immediate"], mutant_backend("SupersededStillListed")
    )
    assert 2 <= len(outcome.steps) <= 4
    assert "$ref: r1" in (outcome.case_yaml or "")


def test_settings_keep_no_database_and_ignore_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sequences depend on the seed alone: CI set or not, the settings agree."""
    spec = shipped()["reads-never-mutate"]
    monkeypatch.setenv("CI", "true")
    under_ci = hypothesis_settings(spec)
    monkeypatch.delenv("CI")
    chosen = hypothesis_settings(spec)
    assert chosen.derandomize is under_ci.derandomize is False
    assert chosen.database is None
    assert chosen.max_examples == spec.max_examples


def test_one_seed_gives_one_verdict_and_another_may_not() -> None:
    """The fault-order mutant is caught with some seeds only (4, not 0, with the
    Hypothesis this was written against); a seed's verdict never varies."""
    spec = shipped()["equivalent-to-reference"]
    verdicts = {}
    for seed in (0, 4):
        runs = {
            run_property(spec, mutant_backend("FaultOrderForCasedKinds"), seed_value=seed).status
            for _ in range(2)
        }
        assert len(runs) == 1, f"seed {seed} gave {runs}"
        verdicts[seed] = runs.pop()
    assert set(verdicts.values()) == {"passed", "failed"}


def test_a_crash_inside_a_property_shows_the_shrunk_sequence() -> None:
    class CrashesOnSweep(InProcessBackend):
        def call(self, op: str, args: Any) -> Any:
            if op == "cache.sweep":
                raise BackendFailure("cache.sweep: the program closed its output")
            return super().call(op, args)

    spec = shipped()["sweep-never-touches-episodic"]
    outcome = run_property(spec, CrashesOnSweep(ModelStore(), "crashy"))
    assert outcome.status == "failed"
    assert "the program closed its output" in outcome.message
    assert outcome.steps[-1].call.op == "cache.sweep"
    assert len(outcome.steps) <= 3
    assert "op: cache.sweep" in (outcome.case_yaml or "")


def test_a_request_answered_twice_fails_the_sequence_that_sent_it() -> None:
    """[P-wire-response]: a sequence ends with the check every case ends with,
    so a ``memory.get`` answered twice as the last step fails that sequence,
    shrunk to end with it, rather than the next sequence's reset (which would
    make the verdict hang on what ran before), in a sequence's terms, not a
    case's.  The same verdict every run."""
    spec = dataclasses.replace(shipped()["refused-writes-never-mutate"], max_examples=20)
    mutant = Path(__file__).with_name("wire_mutant.py")
    for _ in range(2):
        backend = SubprocessBackend([sys.executable, str(mutant), "get-answered-twice"])
        try:
            outcome = run_property(spec, backend)
        finally:
            backend.close()
        assert outcome.status == "failed", outcome.message
        assert outcome.message.startswith(
            "the backend failed: after the sequence's last step, the hello sent to find a "
            "request answered twice: the program answered request "
        ), outcome.message
        assert "(memory.get) a second time" in outcome.message
        assert "[P-wire-response]" in outcome.message
        assert "the case's last step" not in outcome.message
        assert [step.call.op for step in outcome.steps][-1:] == ["memory.get"], outcome.case_yaml


def test_a_run_leaves_no_hypothesis_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CI", raising=False)
    outcome = run_property(
        shipped()["supersession-is-immediate"], mutant_backend("SupersededStillListed")
    )
    assert outcome.status == "failed"
    assert list(tmp_path.iterdir()) == []


def test_a_backend_without_the_capability_is_skipped() -> None:
    class NoSnapshot(InProcessBackend):
        def capabilities(self) -> frozenset[str]:
            return frozenset({"episodic"})

    outcome = run_property(shipped()["reads-never-mutate"], NoSnapshot(open_store("memory"), "x"))
    assert outcome.status == "skipped"
    assert "snapshot" in outcome.message


BAD = [
    ("properties: []", "should be non-empty"),
    (
        "properties: [{id: prop-x, property: no-such-rule, invariant: reads-never-mutate}]",
        "no-such-rule",
    ),
    (
        "properties: [{id: prop-x, property: reads-never-mutate, invariant: nope, "
        "requires: [snapshot]}]",
        "unknown invariant 'nope'",
    ),
    (
        "properties: [{id: prop-x, property: reads-never-mutate, invariant: reads-never-mutate}]",
        "needs snapshot",
    ),
    (
        "properties: [{id: prop-x, property: reads-never-mutate, invariant: reads-never-mutate, "
        "requires: [snapshot], settings: {max_examples: 0}}]",
        "less than the minimum",
    ),
    (
        "properties: [{id: prop-x, property: reads-never-mutate, invariant: reads-never-mutate, "
        "requires: [snapshot], settings: {seed: 3}}]",
        "'seed' was unexpected",
    ),
]


@pytest.mark.parametrize(("text", "problem"), BAD)
def test_invalid_properties_file_is_refused_with_the_fault(
    text: str, problem: str, tmp_path: Path
) -> None:
    path = tmp_path / "properties.yaml"
    path.write_text(text + "\n", encoding="utf-8")
    with pytest.raises(CaseFileError, match=r"properties\.yaml") as raised:
        load_properties(path, load_registry())
    assert problem in str(raised.value)


def test_plugin_collects_each_property_as_an_item(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--roteiro-conformance",
        "--roteiro-backend",
        "memory",
        "-k",
        "prop-",
        "-v",
    )
    result.assert_outcomes(passed=len(REQUIRED))
    result.stdout.fnmatch_lines(["*conformance/properties.yaml::prop-reads-never-mutate PASSED*"])


def test_plugin_failure_shows_the_case_to_paste(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "1")
    pytester.makepyfile(
        broken="""
        from roteiro_memory.stores.model import ModelStore

        class Broken(ModelStore):
            def list(self, **kw):
                self._state.ticks += 1
                return super().list(**kw)
        """
    )
    pytester.syspathinsert()
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--roteiro-conformance",
        "--roteiro-backend",
        "broken:Broken",
        "-k",
        "prop-reads-never-mutate",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*property prop-reads-never-mutate (reads-never-mutate)*",
            "*memory.list * changed the snapshot*",
            "*shrunk to this case (paste it into a file in conformance/):*",
            "*- {op: memory.list, unchanged: before}*",
        ]
    )


def test_differences_become_the_checks_that_fail() -> None:
    """Differing leaves are expected (fractions within a tolerance), a list of
    another length by its ``#``, and a key that should not be there as absent."""
    from roteiro_memory.suite.properties import _differences

    expected = {"live": 1, "results": [{"score": 0.175, "record": {"id": 1}}]}
    actual = {"live": 2, "results": [{"score": 0.0, "record": {"id": 1, "anchor": {"key": "k"}}}]}
    assert _differences(expected, actual) == {
        "expect": {"live": 1},
        "approx": {"results.0.score": 0.175},
        "absent": [{"path": "results.0.record", "values": ["anchor"]}],
    }
    assert _differences({"r": [1]}, {"r": [1, 2]}) == {"expect": {"r.#": 1}}
    assert _differences(None, {"id": 1}) == {"expect": {"$": None}}
