"""The whole conformance suite against the PostgreSQL backend, both ways.

In-process as ``--roteiro-backend postgres:DSN``, and through the wire as
``cmd:roteiro-memory protocol --backend postgres:DSN``, each against a schema
of its own on the test server.  Every case must pass; none may be skipped
but those checking Unsupported, since the backend declares every capability.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pg_server
import pytest

from roteiro_memory.suite.cases import load_cases

SUITE_SECONDS = 600


def _server_command() -> list[str]:
    script = shutil.which("roteiro-memory")
    return [script] if script else [sys.executable, "-m", "roteiro_memory"]


def _run_suite(spec: str, tmp_path: Path) -> dict[str, int]:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "--roteiro-conformance",
            "--roteiro-backend",
            spec,
            "--roteiro-report",
            str(report),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=SUITE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    totals: dict[str, int] = json.loads(report.read_text())["totals"]
    return totals


@pytest.mark.parametrize("form", ["in-process", "wire"])
def test_every_conformance_case_passes_against_postgres(form: str, tmp_path: Path) -> None:
    dsn = pg_server.fresh_store_dsn()
    if form == "in-process":
        spec = f"postgres:{dsn}"
    else:
        argv = [*_server_command(), "protocol", "--backend", f"postgres:{dsn}"]
        spec = f"cmd:{shlex.join(argv)}"
    try:
        totals = _run_suite(spec, tmp_path)
    finally:
        pg_server.drop_schema(dsn)
    assert totals["passed"] > 100
    assert totals["failed"] == 0
    # Only the cases checking Unsupported skip a store declaring everything.
    assert totals["skipped"] == sum(1 for case in load_cases() if case.without)
    assert totals["known-failing"] == 0
