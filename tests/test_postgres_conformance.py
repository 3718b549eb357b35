"""The whole conformance suite against the PostgreSQL backend, both ways.

In-process as ``--roteiro-backend postgres:DSN``, and through the wire as
``cmd:roteiro-memory protocol --backend postgres:DSN``, each against a schema
of its own on the test server.  Every case must pass; none may be skipped but
those checking Unsupported, since the backend declares every capability, and,
in-process, the durability entries (which start cmd: instances).
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
from roteiro_memory.suite.durability import ENTRIES

SUITE_SECONDS = 600


def _server_command() -> list[str]:
    script = shutil.which("roteiro-memory")
    return [script] if script else [sys.executable, "-m", "roteiro_memory"]


def _run_suite(spec: str, tmp_path: Path, *extra: str) -> dict[str, int]:
    totals: dict[str, int] = json.loads(_suite_run(spec, tmp_path, *extra)[0])["totals"]
    return totals


def _suite_run(spec: str, tmp_path: Path, *extra: str) -> tuple[str, str]:
    """The report a passing run wrote, and what it printed."""
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
            *extra,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=SUITE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    return report.read_text(encoding="utf-8"), done.stdout + done.stderr


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
        pg_server.drop_named_schemas(dsn)
    assert totals["passed"] > 100
    assert totals["failed"] == 0
    # Only the cases checking Unsupported skip a store declaring everything,
    # and, in-process, the durability entries: they start cmd: instances.
    unsupported = sum(1 for case in load_cases() if case.without)
    assert totals["skipped"] == unsupported + (len(ENTRIES) if form == "in-process" else 0)
    assert totals["known-failing"] == 0


def test_the_suite_on_a_dsn_works_in_a_throwaway_schema(tmp_path: Path) -> None:
    """``postgres:DSN``, the DSN a team gives ``--db``, leaves that store's
    schema as it was: the suite runs in a schema of its own, dropped after."""
    import os

    import psycopg

    from roteiro_memory.stores.postgres.store import DEFAULT_SCHEMA, PostgresStore

    dsn = pg_server.shared_server_dsn()
    if os.environ.get(pg_server.DSN_ENV):
        pytest.skip("uses the default schema, which a server the environment names may hold")
    team = PostgresStore(dsn)
    try:
        team.record(kind="lesson", body="the team's lesson")
        totals = _run_suite(f"postgres:{dsn}", tmp_path, "-k", "ids-increase or reset")
        assert totals["passed"] >= 1
        assert [r.body for r in team.list().records] == ["the team's lesson"]
        with psycopg.connect(dsn, autocommit=True) as conn:
            left = conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'roteiro_conformance%'"
            ).fetchall()
        assert left == []
    finally:
        team.drop()
    assert DEFAULT_SCHEMA == "roteiro"


SECRET = "S3cr3tPw!"


@pytest.mark.parametrize("form", ["in-process", "wire"])
def test_the_conformance_report_never_holds_the_dsn_password(form: str, tmp_path: Path) -> None:
    """The test server trusts its socket and never asks for the password the
    DSN carries: the run passes, and neither what it printed nor its report
    and summary hold the password."""
    dsn = pg_server.fresh_store_dsn()
    secret_dsn = dsn.replace("://postgres@", f"://postgres:{SECRET}@", 1)
    if secret_dsn == dsn:
        pytest.skip("the server the environment names is not postgresql://postgres@...")
    spec = f"postgres:{secret_dsn}"
    if form == "wire":
        spec = f"cmd:{shlex.join([*_server_command(), 'protocol', '--backend', spec])}"
    try:
        report, printed = _suite_run(
            spec, tmp_path, "-rs", "-k", "ids-increase or durability-shared-records"
        )
    finally:
        pg_server.drop_schema(dsn)
        pg_server.drop_named_schemas(dsn)
    summary = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert json.loads(report)["totals"]["passed"] >= 1
    assert SECRET not in report + summary + printed
    assert (
        f"postgres:{pg_server.shared_server_dsn()}".replace(
            "://postgres@", "://postgres:<password>@", 1
        )
        in json.loads(report)["backend"]
    )
