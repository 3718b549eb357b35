"""Compliance levels count only what ran."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from roteiro_memory.stores.model import ModelStore
from roteiro_memory.suite.cases import CAPABILITIES, Case, load_cases, load_registry
from roteiro_memory.suite.drivers import InProcessBackend
from roteiro_memory.suite.report import (
    case_result,
    compliance,
    compliance_table,
    invariant_verdicts,
    write_report,
)
from roteiro_memory.suite.runner import run_case


def _results(capabilities: tuple[str, ...], cases: list[Case]) -> list[dict[str, Any]]:
    """Every case run on the reference model declaring only ``capabilities``."""
    store = ModelStore()
    store.capabilities = capabilities
    backend = InProcessBackend(store, "partial")
    registry = load_registry()
    return [
        {
            "case": case.id,
            "invariant": case.invariant,
            "capability": registry[case.invariant].capability,
            "status": run_case(case, backend).status,
        }
        for case in cases
    ]


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_cases()


def test_a_backend_declaring_only_episodic_is_full_on_episodic(cases: list[Case]) -> None:
    results = _results(("episodic",), cases)
    assert not [r["case"] for r in results if r["status"] == "failed"]
    rows = {row["capability"]: row for row in compliance(results, load_registry())}
    assert rows["episodic"]["level"] == "full"
    assert rows["episodic"]["passed"] >= 20
    assert rows["core"]["level"] == "full"
    for capability in ("cache", "graph", "snapshot", "budget", "durable"):
        assert rows[capability]["level"] == "not run", rows[capability]
        assert rows[capability]["not run"] == rows[capability]["invariants"]
    table = "\n".join(compliance_table(results, load_registry()))
    assert "not run" in table.splitlines()[0]


def test_every_episodic_invariant_has_a_case_needing_episodic_alone_where_it_can(
    cases: list[Case],
) -> None:
    """Drifted and unverifiable anchors need nodes with blobs, so those two
    rules cannot be checked without the graph; every other one can."""
    needs_the_graph = {"drifted-below-vanished", "unverifiable-not-valid"}
    verdicts = invariant_verdicts(_results(("episodic",), cases), load_registry())
    episodic = [t for t, inv in load_registry().items() if inv.capability == "episodic"]
    unrun = sorted(t for t in episodic if verdicts[t] != "passed")
    assert unrun == sorted(needs_the_graph)


def test_unsupported_cases_run_only_where_the_capability_is_missing(cases: list[Case]) -> None:
    """The Unsupported cases are skipped by a full backend and pass on partial ones."""
    full = _results(CAPABILITIES, cases)
    without = [c.id for c in cases if c.without]
    assert len(without) >= 4
    assert {r["status"] for r in full if r["case"] in without} == {"skipped"}
    rest = tuple(c for c in CAPABILITIES if c != "episodic")
    for capabilities in (("episodic",), rest):
        partial = {r["case"]: r["status"] for r in _results(capabilities, cases)}
        assert "failed" not in partial.values()
    ran = {
        r["case"]
        for capabilities in (("episodic",), rest)
        for r in _results(capabilities, cases)
        if r["case"] in without and r["status"] == "passed"
    }
    assert ran == set(without)


def test_an_invariant_whose_cases_were_all_skipped_leaves_the_level_alone() -> None:
    registry = load_registry()
    tags = [t for t, inv in registry.items() if inv.capability == "cache"][:2]
    results = [
        {"case": "a", "invariant": tags[0], "capability": "cache", "status": "passed"},
        {"case": "b", "invariant": tags[1], "capability": "cache", "status": "skipped"},
    ]
    row = next(r for r in compliance(results, registry) if r["capability"] == "cache")
    assert row["level"] == "full"
    assert row["passed"] == 1
    assert row["not run"] == row["invariants"] - 1


SECRET = "S3cr3tPw!"
RAW = f"postgres:postgresql://alice:{SECRET}@db.example/memory"
SHOWN = "postgres:postgresql://alice:<password>@db.example/memory"


def test_the_conformance_report_never_holds_the_dsn_password(tmp_path: Path) -> None:
    """A backend named by a DSN is named without its password, and the report
    built of its run -- given the spec as typed, with messages quoting it --
    holds it nowhere, in the JSON or the Markdown, and still fits its schema."""
    from roteiro_memory.precommit.conformance_report import load_report

    store = ModelStore()
    store.capabilities = ("episodic",)
    backend = InProcessBackend(store, RAW)
    assert backend.name == SHOWN
    registry = load_registry()
    needs_cache = next(case for case in load_cases() if "cache" in case.requires)
    outcome = run_case(needs_cache, backend)
    assert outcome.status == "skipped"
    results = [
        {
            **case_result(needs_cache, registry, backend, outcome),
            "status": "skipped",
            "message": f"{outcome.message} ({RAW})",
        }
    ]
    written, summary = write_report(
        tmp_path / "report.json",
        results=results,
        registry=registry,
        backend=RAW,
        notes=[f"reading {RAW} wrote to it"],
    )
    text = written.read_text(encoding="utf-8") + summary.read_text(encoding="utf-8")
    assert SECRET not in text
    report = load_report(written)  # fits report.schema.json
    assert report["backend"] == SHOWN
    assert SHOWN in report["cases"][0]["message"]
    assert f"# Conformance report: `{SHOWN}`" in summary.read_text(encoding="utf-8")
