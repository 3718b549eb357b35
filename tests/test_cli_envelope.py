"""``--json`` answers every command with one envelope, success and failure
alike, on stdout: ``schema``, ``ok``, and ``result`` or ``error: {kind,
message}`` with a PROTOCOL error kind.  The exit status is the one the
command has without ``--json``, and a refused command changes nothing."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_cli import GIT_ENV
from wire_servers import RECORD_FIELDS

from roteiro_memory.cli.envelope import SCHEMA, iso_utc
from roteiro_memory.cli.main import ExitCode, main
from roteiro_memory.errors import ERROR_KINDS
from roteiro_memory.stores.sqlite.store import SQLiteStore

RECORD_KEYS = list(RECORD_FIELDS)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A committed repository holding one record (id 1) and one cache entry
    ``k``, the current directory for the test."""
    root = tmp_path / "repo"
    root.mkdir()
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    for name in [n for n in os.environ if n.startswith("ROTEIRO_")]:
        monkeypatch.delenv(name)
    (root / "mod.py").write_text("def f():\n    return 1\n")
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *argv], cwd=root, check=True)
    monkeypatch.chdir(root)
    assert main(["add", "first lesson", "--anchor", "mod.py::f"]) == 0
    assert main(["cache", "put", "k", "fp", "[1, 2]"]) == 0
    return root


def _store(root: Path) -> dict[str, Any]:
    with SQLiteStore(root / ".git" / "roteiro" / "memory.db") as store:
        return store.snapshot()


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, dict[str, Any], str]:
    capsys.readouterr()
    status = main(argv)
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert len(lines) == 1, out
    return status, json.loads(lines[0]), err


# (argv, exit status, the result's keys, or for a list result None)
SUCCESSES: list[tuple[list[str], int, list[str] | None]] = [
    (["add", "second", "--kind", "decision"], ExitCode.OK, ["id", "existing", "record"]),
    (["list"], ExitCode.OK, ["schema", "records", "live", "superseded"]),
    (
        ["recall"],
        ExitCode.OK,
        ["schema", "generation", "decay", "reproducible", "results", "live", "superseded"],
    ),
    (["show", "1"], ExitCode.OK, RECORD_KEYS),
    (["forget", "1"], ExitCode.OK, ["id", "restored"]),
    (
        ["sync"],
        ExitCode.OK,
        [
            "tree",
            "up_to_date",
            "files",
            "symbols",
            "written",
            "removed",
            "parsed",
            "unparsable",
            "notices",
        ],
    ),
    (["cache", "stats"], ExitCode.OK, ["schema", "entries", "bytes", "budget_bytes", "generation"]),
    (
        ["cache", "sweep"],
        ExitCode.OK,
        [
            "schema",
            "budget_bytes",
            "scanned",
            "pinned",
            "evicted",
            "freed_bytes",
            "retained_bytes",
            "over_budget",
            "generation",
        ],
    ),
    (["cache", "list"], ExitCode.OK, ["schema", "entries"]),
    (
        ["cache", "get", "k"],
        ExitCode.OK,
        ["key", "fingerprint", "json", "bytes", "generation", "last_used", "hits", "anchor_state"],
    ),
    (["cache", "put", "k2", "fp", "{}"], ExitCode.OK, ["key", "fingerprint", "bytes"]),
    (["cache", "forget", "k"], ExitCode.OK, ["key"]),
    (["check"], ExitCode.OK, ["store", "findings", "migrates"]),
    (["export", "-o", "dump.jsonl"], ExitCode.OK, ["output", "lines"]),
    (["recall", "nothing-matches-this"], ExitCode.NOTHING, None),
    (["completion", "bash"], ExitCode.OK, ["shell", "script"]),
    (["--version"], ExitCode.OK, ["version"]),
]


@pytest.mark.parametrize(
    ("argv", "status", "keys"), SUCCESSES, ids=[" ".join(a) for a, _, _ in SUCCESSES]
)
def test_every_command_answers_json_with_one_success_envelope(
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: int,
    keys: list[str] | None,
) -> None:
    code, envelope, err = _run(capsys, [*argv, "--json"])
    assert code == status
    assert list(envelope) == ["schema", "ok", "result"]
    assert envelope["schema"] == SCHEMA
    assert envelope["ok"] is True
    if keys is not None:
        assert list(envelope["result"]) == keys
    assert "Traceback" not in err


def test_import_answers_json_with_the_counts(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["export", "-o", "dump.jsonl"]) == 0
    code, envelope, _ = _run(capsys, ["import", "dump.jsonl", "--db", "fresh.db", "--json"])
    assert code == ExitCode.OK
    assert envelope["result"] == {"nodes": 2, "records": 1, "cache": 1}


# (argv, exit status, error kind)
FAILURES: list[tuple[list[str], int, str]] = [
    (["add", "x", "--kind", "rumour"], ExitCode.USAGE, "InvalidKind"),
    (["add", "   "], ExitCode.USAGE, "InvalidBody"),
    (["add", "x", "--confidence", "2"], ExitCode.USAGE, "InvalidConfidence"),
    (["add", "x", "--supersedes", "99"], ExitCode.USAGE, "NotFound"),
    (["add", "x", "--anchor", "mod.py::nope"], ExitCode.USAGE, "BadRequest"),
    (["add", "x", "--kind", "lesson", "--kind", "pattern"], ExitCode.USAGE, "BadRequest"),
    (["list", "--kind", "rumour"], ExitCode.USAGE, "InvalidKind"),
    (["list", "--rev", "no-such-rev"], ExitCode.USAGE, "BadRequest"),
    (["recall", "--decay", "clock"], ExitCode.USAGE, "InvalidDecay"),
    (["recall", "--limit", "ten"], ExitCode.USAGE, "BadRequest"),
    (["show", "99"], ExitCode.NOTHING, "NotFound"),
    (["show", "abc"], ExitCode.USAGE, "BadRequest"),
    (["forget", "99"], ExitCode.NOTHING, "NotFound"),
    (["sync", "--db", ""], ExitCode.USAGE, "BadRequest"),
    (["cache", "stats", "--budget-mb", "-1"], ExitCode.USAGE, "InvalidBudget"),
    (["cache", "sweep", "--budget-mb", "lots"], ExitCode.USAGE, "InvalidBudget"),
    (["cache", "list", "--db", "mod.py"], ExitCode.STORE, "Corrupt"),
    (["cache", "get", "nope"], ExitCode.NOTHING, "NotFound"),
    (["cache", "put", "k", "fp", "{not json"], ExitCode.USAGE, "BadRequest"),
    (["cache", "forget", "nope"], ExitCode.NOTHING, "NotFound"),
    (["cache", "frobnicate"], ExitCode.USAGE, "BadRequest"),
    (["check", "--db", "no-such.db"], ExitCode.USAGE, "BadRequest"),
    (["export"], ExitCode.USAGE, "BadRequest"),
    (["import", "no-such-file.jsonl"], ExitCode.USAGE, "BadRequest"),
    (["completion", "tcsh"], ExitCode.USAGE, "BadRequest"),
    (["frobnicate"], ExitCode.USAGE, "BadRequest"),
    ([], ExitCode.USAGE, "BadRequest"),
    (["list", "--no-such-option"], ExitCode.USAGE, "BadRequest"),
]
"""Failures of every command but the servers (``mcp``, ``protocol``), whose
stdout carries their protocol's messages only: their refusals are one line
on stderr, --json or not (tests/test_cli_globals.py, tests/test_mcp_wire.py)."""


@pytest.mark.parametrize(
    ("argv", "status", "kind"), FAILURES, ids=[" ".join(a) or "(none)" for a, _, _ in FAILURES]
)
def test_every_failure_under_json_is_one_error_envelope_on_stdout(
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    status: int,
    kind: str,
) -> None:
    before = _store(repo)
    code, envelope, err = _run(capsys, ["--json", *argv])
    assert code == status
    assert list(envelope) == ["schema", "ok", "error"]
    assert (envelope["schema"], envelope["ok"]) == (SCHEMA, False)
    assert list(envelope["error"]) == ["kind", "message"]
    assert envelope["error"]["kind"] == kind
    assert kind in ERROR_KINDS
    assert envelope["error"]["message"]
    assert err == ""
    assert _store(repo) == before


@pytest.mark.parametrize(("argv", "status", "kind"), FAILURES[:12])
def test_exit_status_is_the_same_with_and_without_json(
    repo: Path, capsys: pytest.CaptureFixture[str], argv: list[str], status: int, kind: str
) -> None:
    assert main(argv) == status
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("action", ["stats", "sweep"])
@pytest.mark.parametrize("budget", ["-1", "lots", "1.5", "", str(2**44)])
def test_a_cache_budget_is_refused_alike_from_the_option_and_the_environment(
    repo: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    action: str,
    budget: str,
) -> None:
    """``--budget-mb`` and ``ROTEIRO_CACHE_BUDGET_MB`` give one value, so a
    bad one is one error: InvalidBudget, the same status, the same words
    after the name of what gave it."""
    before = _store(repo)
    option = _run(capsys, ["--json", "cache", action, "--budget-mb", budget])
    monkeypatch.setenv("ROTEIRO_CACHE_BUDGET_MB", budget)
    variable = _run(capsys, ["--json", "cache", action])
    said = []
    for (code, envelope, err), named in (
        (option, f"--budget-mb {budget!r}"),
        (variable, f"ROTEIRO_CACHE_BUDGET_MB={budget!r}"),
    ):
        assert (code, envelope["ok"], err) == (ExitCode.USAGE, False, "")
        assert envelope["error"]["kind"] == "InvalidBudget"
        prefix = f"invalid {named}: "
        assert envelope["error"]["message"].startswith(prefix), envelope
        said.append(envelope["error"]["message"].removeprefix(prefix))
    assert said[0] == said[1]
    assert said[0].startswith("expected a whole number of megabytes")
    assert _store(repo) == before


def test_recall_with_no_results_is_ok_with_exit_status_one(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty answer is not an error: ``ok`` is true and the results are
    empty, and the exit status 1 says "nothing found" to a hook."""
    assert main(["--json", "forget", "1"]) == 0
    code, envelope, err = _run(capsys, ["--json", "recall"])
    assert code == ExitCode.NOTHING
    assert envelope["ok"] is True
    assert envelope["result"]["results"] == []
    assert err == ""


def test_an_empty_store_recalls_nothing_without_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "new.db")
    code, envelope, _ = _run(capsys, ["--json", "--db", db, "--no-sync", "recall"])
    assert code == ExitCode.NOTHING
    assert envelope["ok"] is True
    assert (envelope["result"]["live"], envelope["result"]["results"]) == (0, [])


def test_created_at_is_iso_8601_with_its_zone_and_stored_as_before(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, envelope, _ = _run(capsys, ["--json", "show", "1"])
    created = datetime.fromisoformat(envelope["result"]["created_at"])
    assert created.utcoffset() == timedelta(0)
    assert envelope["result"]["created_at"].endswith("Z")
    with SQLiteStore(repo / ".git" / "roteiro" / "memory.db") as store:
        record = store.get(1)
    assert record is not None
    assert record.created_at == envelope["result"]["created_at"][:-1].replace("T", " ")


def test_superseded_at_is_converted_wherever_it_appears(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["add", "better", "--supersedes", "1"]) == 0
    _, envelope, _ = _run(capsys, ["--json", "list", "--all"])
    old = next(r for r in envelope["result"]["records"] if r["id"] == 1)
    assert old["superseded_at"].endswith("Z")
    assert datetime.fromisoformat(old["superseded_at"]).utcoffset() == timedelta(0)


def test_iso_utc_leaves_a_value_in_another_form_as_it_is() -> None:
    assert iso_utc("2026-03-01 12:00:05") == "2026-03-01T12:00:05Z"
    assert iso_utc("2026-03-01 12:00:05.250") == "2026-03-01T12:00:05.250Z"
    assert iso_utc("yesterday") == "yesterday"
    for other in (
        "2026-03-01T12:00:05",
        "2026-03-01  12:00:05",
        "2026-03-01 12:00:05 ",
        "2026-03-01 12:00:05.",
        "2026-03-01 12:00:05.2a",
        "2026-3-01 12:00:05",
        "2026-03-01 12:00",
        "2026/03/01 12:00:05",
        "\uff12026-03-01 12:00:05",
        "2026-03-01 12:00:05.\u0665",
        "",
    ):
        assert iso_utc(other) == other, other


def test_help_is_text_and_exits_zero_even_under_json(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--json", "list", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: roteiro-memory list")
