"""The durability entries as plugin items: collected, run, judged and reported
like cases."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from wire import server_argv

from roteiro_memory.suite.durability import ENTRIES

pytest_plugins = ["pytester"]

MUTANTS = Path(__file__).with_name("durability_mutants.py")


def _cmd(argv: list[str]) -> str:
    return f"cmd:{shlex.join(argv)}"


def _report(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def test_durability_items_pass_on_the_reference_and_report_figures(
    pytester: pytest.Pytester,
) -> None:
    report = pytester.path / "report.json"
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance",
        "--roteiro-backend",
        _cmd(server_argv("sqlite")),
        "--roteiro-report",
        str(report),
        "-k",
        "durability",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=len(ENTRIES))
    result.stdout.fnmatch_lines(["shared *2*2*full*", "crash *2*2*full*"])
    cases = {c["case"]: c for c in _report(report)["cases"]}
    assert set(cases) == {entry.id for entry in ENTRIES}
    for entry in ENTRIES:
        message = cases[entry.id]["outcome"]["message"]
        assert "acknowledged" in message
        assert "present at the end" in message
        assert cases[entry.id]["capability"] == entry.capability


def test_durability_items_fail_on_a_server_that_loses_writes(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance",
        "--roteiro-backend",
        _cmd([sys.executable, str(MUTANTS), "write-behind"]),
        "-k",
        "durability-crash",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*durability-crash-records: * acknowledged writes are not there*",
            "FAILED conformance/durability::durability-crash-supersession*",
        ]
    )


def test_durability_items_honour_the_known_failures_file(pytester: pytest.Pytester) -> None:
    known = pytester.path / "known.yaml"
    known.write_text(
        "- {id: durability-crash-records, reason: saves every eighth write}\n", encoding="utf-8"
    )
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance",
        "--roteiro-backend",
        _cmd([sys.executable, str(MUTANTS), "write-behind"]),
        "--roteiro-known-failures",
        str(known),
        "-k",
        "durability-crash-records",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(xfailed=1)


def test_durability_items_skip_in_process_backends_naming_the_capability(
    pytester: pytest.Pytester,
) -> None:
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance", "-k", "durability", "-rs", "-p", "no:randomly"
    )
    result.assert_outcomes(skipped=len(ENTRIES))
    result.stdout.fnmatch_lines(["*'shared' is checked by starting instances of a cmd: backend*"])
