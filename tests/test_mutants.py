"""The conformance suite has teeth: every mutant in ``tests/mutants.py`` fails it.

Each mutant breaks one invariant; the suite must fail against it, and at least
one failing case must cite that very invariant -- a mutant caught only by some
unrelated case would show a gap in the cases of its own rule.  The reference
backends pass every case.  The kill rate is printed in the terminal summary.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mutants
import pytest
from mutants import MUTANTS, Mutant

from roteiro_memory.suite.cases import Case, load_cases
from roteiro_memory.suite.drivers import InProcessBackend, SubprocessBackend
from roteiro_memory.suite.runner import Outcome, format_outcome, run_case

ROOT = Path(__file__).resolve().parent.parent


@dataclass(eq=False)  # registered as a plugin, so hashed by identity
class KillBoard:
    """What each mutant came to; reported once at the end of the run."""

    rows: dict[str, tuple[str, int, int]] = field(default_factory=dict)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.rows:
            return
        killed = sum(1 for _, failed, on_target in self.rows.values() if failed and on_target)
        terminalreporter.section("roteiro mutants")
        for name in sorted(self.rows):
            invariant, failed, on_target = self.rows[name]
            verdict = "killed" if failed and on_target else "SURVIVED"
            terminalreporter.line(
                f"{verdict:8} {name:36} {invariant:34} "
                f"{failed:3} failing case(s), {on_target} of its invariant"
            )
        terminalreporter.line(f"killed {killed}/{len(self.rows)} mutants")


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_cases()


@pytest.fixture(scope="module")
def board(request: pytest.FixtureRequest) -> KillBoard:
    manager = request.config.pluginmanager
    found = manager.get_plugin("roteiro-mutant-board")
    if isinstance(found, KillBoard):
        return found
    made = KillBoard()
    manager.register(made, "roteiro-mutant-board")
    return made


def run_all(target: object, name: str, cases: list[Case]) -> list[tuple[Case, Outcome]]:
    backend = InProcessBackend(target, name)
    try:
        return [(case, run_case(case, backend)) for case in cases]
    finally:
        backend.close()


def test_mutants_cover_enough_invariants() -> None:
    """At least fifteen mutants, no two breaking the same invariant."""
    invariants = [m.invariant for m in MUTANTS.values()]
    assert len(MUTANTS) >= 15
    assert len(set(invariants)) == len(invariants)


@pytest.mark.parametrize("spec", ["memory", "sqlite"])
def test_reference_backend_passes_every_case(spec: str, cases: list[Case]) -> None:
    from roteiro_memory.stores.naming import open_store

    outcomes = run_all(open_store(spec), spec, cases)
    failed = [f"{case.id}: {outcome.message}" for case, outcome in outcomes if not outcome.passed]
    # A case checking Unsupported runs only where its capability is missing.
    expected = [case.id for case in cases if case.without]
    skipped = [case.id for case, outcome in outcomes if outcome.status == "skipped"]
    assert skipped == expected
    assert len(failed) == len(expected)
    assert len(outcomes) == len(cases) > 100


@pytest.mark.parametrize("mutant", list(MUTANTS.values()), ids=list(MUTANTS))
def test_mutant_is_killed_by_its_own_invariant(
    mutant: Mutant,
    cases: list[Case],
    board: KillBoard,
    record_property: Any,
) -> None:
    outcomes = run_all(mutant.factory(), mutant.name, cases)
    failed = [case for case, outcome in outcomes if outcome.status == "failed"]
    on_target = [case.id for case in failed if case.invariant == mutant.invariant]
    board.rows[mutant.name] = (mutant.invariant, len(failed), len(on_target))
    record_property("failing_cases", len(failed))
    record_property("failing_cases_of_its_invariant", len(on_target))
    assert failed, f"{mutant.name} ({mutant.flaw}) passed every case"
    assert on_target, (
        f"{mutant.name} ({mutant.flaw}) was caught only by cases of "
        f"{sorted({c.invariant for c in failed})}, none of {mutant.invariant!r}"
    )


def test_whole_plugin_run_against_a_mutant_fails_on_its_invariant(tmp_path: Path) -> None:
    """``--roteiro-backend tests.mutants:NAME`` runs the full pytest suite against it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CI": "1"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "--roteiro-conformance",
            "--roteiro-backend",
            "tests.mutants:SupersededStillListed",
            "-m",
            "invariant_supersession_immediate or invariant_reads_never_mutate",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "superseded-record-leaves-recall-at-once" in run.stdout
    assert "invariant: supersession-immediate" in run.stdout
    assert " failed" in run.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    ("flaw", "case_id"),
    [
        ("extra-fields", "unknown-request-fields-are-bad-requests"),
        ("string-ids", "the-request-id-must-be-an-integer"),
    ],
)
def test_a_server_loosening_the_wire_form_fails_its_cases(
    flaw: str, case_id: str, cases: list[Case]
) -> None:
    """The raw-line cases have teeth: a program bending the envelope fails them."""
    backend = SubprocessBackend([sys.executable, str(ROOT / "tests" / "wire_mutant.py"), flaw])
    try:
        outcomes = {case.id: run_case(case, backend) for case in cases if case.topic == "wire"}
    finally:
        backend.close()
    failed = sorted(case_id for case_id, outcome in outcomes.items() if outcome.status == "failed")
    assert failed == [case_id], {k: o.message for k, o in outcomes.items() if not o.passed}


def _plugin_run(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tests"), **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_a_backend_erasing_a_store_it_did_not_create_is_refused(tmp_path: Path) -> None:
    """``ErasesForeignStore`` holds a team's records before the first reset: the
    suite refuses it in one line and the records survive; only
    ``--roteiro-allow-reset`` lets the suite erase them."""
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    victim = tmp_path / "team.db"
    env = {"ROTEIRO_MUTANT_DB": str(victim)}
    spec = ["--roteiro-conformance", "--roteiro-backend", "mutants:ErasesForeignStore"]
    refused = _plugin_run(*spec, env=env, cwd=tmp_path)
    assert refused.returncode == pytest.ExitCode.USAGE_ERROR, refused.stdout + refused.stderr
    assert "already holds 2 record(s)" in refused.stderr
    assert "--roteiro-allow-reset" in refused.stderr
    store = SQLiteStore(victim)
    try:
        assert len(store.list(include_superseded=True).records) == 2
    finally:
        store.close()
    allowed = _plugin_run(
        *spec, "--roteiro-allow-reset", "-k", "ids-increase", env=env, cwd=tmp_path
    )
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    store = SQLiteStore(victim)
    try:
        bodies = {r.body for r in store.list(include_superseded=True).records}
        assert "retry at most three times" not in bodies
    finally:
        store.close()


def _failed_cases(target: object, cases: list[Case]) -> dict[str, Outcome]:
    outcomes = run_all(target, type(target).__name__, cases)
    return {case.id: outcome for case, outcome in outcomes if outcome.status == "failed"}


@pytest.mark.parametrize(
    ("name", "answer"),
    [
        ("HidesSearchServesIt", "succeeded, expected it to fail with Unsupported"),
        ("SearchIsAnUnknownOp", "failed with BadRequest (unknown op 'memory.search'), expected"),
    ],
)
def test_a_capability_is_checked_whenever_it_alone_is_undeclared(
    name: str, answer: str, cases: list[Case]
) -> None:
    """A backend hiding ``search`` in hello fails the search case of its own,
    whether it still serves ``memory.search`` or calls it an unknown op."""
    failed = _failed_cases(getattr(mutants, name)(), cases)
    assert sorted(failed) == ["search-op-is-unsupported-without-search"]
    assert answer in failed["search-op-is-unsupported-without-search"].message


def test_every_capability_with_ops_has_a_case_of_its_own(cases: list[Case]) -> None:
    from roteiro_memory.suite.vocabulary import OP_CAPABILITY

    with_ops = {c for c in OP_CAPABILITY.values() if c is not None}
    alone = {case.without[0] for case in cases if len(case.without) == 1}
    assert alone == with_ops


def test_a_case_shows_every_breach_with_a_count(cases: list[Case]) -> None:
    """``SignedIds`` breaks four steps of one case; one run shows all four."""
    failed = _failed_cases(mutants.SignedIds(), cases)
    outcome = failed["integer-arguments-have-64-bit-ranges"]
    assert [b.step for b in outcome.breaches] == [2, 3, 7, 11]
    assert outcome.tally() == "4 of 18 steps"
    assert outcome.stopped is None
    case = next(c for c in cases if c.id == "integer-arguments-have-64-bit-ranges")
    text = format_outcome(case, outcome)
    assert text.splitlines()[0].endswith("(and 3 more breaches: 4 of 18 steps)")
    assert text.count("  step ") == 4


def test_an_error_kind_protocol_does_not_define_is_named_as_such(cases: list[Case]) -> None:
    failed = _failed_cases(mutants.StoreErrorKind(), cases)
    outcome = failed["forget-absent-record-is-not-found"]
    assert "error kind 'StoreError', which PROTOCOL does not define" in outcome.message
    assert outcome.path == "error.kind"


def test_a_read_that_writes_is_told_from_a_store_holding_data(tmp_path: Path) -> None:
    """``ListWritesCacheEntry`` leaves an entry behind when listed: the run is
    not refused as holding foreign data; it says the reads write, and the
    reads-never-mutate cases fail."""
    run = _plugin_run(
        "--roteiro-conformance",
        "--roteiro-backend",
        "mutants:ListWritesCacheEntry",
        "-m",
        "invariant_reads_never_mutate",
        env={},
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "which this run did not create" not in run.stdout + run.stderr
    assert 'breaks "reads never mutate" (PROTOCOL [P-reads-pure])' in run.stdout
    assert "cache.entries answered 0 cache entr(y/ies) before and 1 after" in run.stdout
    assert " failed" in run.stdout.splitlines()[-1]
