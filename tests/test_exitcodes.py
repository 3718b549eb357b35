"""One set of exit codes for the command line and the hooks, as documented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from roteiro_memory.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parents[1]


def test_exitcodes_are_the_documented_table() -> None:
    """docs/cli.md lists every code, and no other."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    documented = {int(n) for n in re.findall(r"^\| `(\d+)` \|", text, flags=re.MULTILINE)}
    assert documented == {int(code) for code in ExitCode}


def test_exitcodes_keep_their_numbers() -> None:
    """Scripts rely on them: a number never changes."""
    assert {code.name: int(code) for code in ExitCode} == {
        "OK": 0,
        "NOTHING": 1,
        "USAGE": 2,
        "STORE": 3,
        "UNREPORTED": 4,
        "INTERRUPTED": 130,
    }


def test_exitcodes_a_hook_with_findings_exits_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("cases: nope\n")
    done = subprocess.run(
        [sys.executable, "-m", "roteiro_memory.precommit.lint_cases", "--no-shipped", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == ExitCode.NOTHING, done.stderr
    assert str(bad) in done.stdout


def test_exitcodes_a_corrupt_store_is_not_a_usage_error(tmp_path: Path) -> None:
    from roteiro_memory.cli.main import main

    junk = tmp_path / "junk.db"
    junk.write_text("not a database\n")
    assert main(["list", "--db", str(junk)]) == ExitCode.STORE
    assert main(["list", "--limit", "lots", "--db", str(junk)]) == ExitCode.USAGE


def _documented_kinds() -> dict[int, set[str]]:
    """The status table of docs/cli.md: each status and the error kinds it lists."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\d+)` \| .* \| (.*) \|$", text, flags=re.MULTILINE)
    return {int(status): set(re.findall(r"`(\w+)`", kinds)) for status, kinds in rows}


def test_exitcodes_every_error_class_is_in_its_documented_row() -> None:
    """Each class carries its kind and status; the table says the same of
    every one, and names no kind that no class of that status has."""
    from roteiro_memory import errors

    documented = _documented_kinds()
    carried: dict[int, set[str]] = {}
    for cls in errors._CLASSES:
        assert cls.kind in documented[cls.exit_status], (cls.__name__, cls.kind, cls.exit_status)
        carried.setdefault(int(cls.exit_status), set()).add(cls.kind)
    assert {s: k for s, k in documented.items() if k} == carried


def test_exitcodes_error_kinds_are_read_off_the_classes_in_protocol_order() -> None:
    from roteiro_memory import errors

    text = (ROOT / "conformance" / "PROTOCOL.md").read_text(encoding="utf-8")
    table = text.split("## Error kinds", 1)[1].split("\n- ", 1)[0]
    assert tuple(re.findall(r"^\| `(\w+)` \|", table, flags=re.MULTILINE)) == errors.ERROR_KINDS


# --- issue 22, item 19: each case the finding named, against the table --------


def test_exitcodes_a_store_busy_beyond_the_wait_is_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import sqlite3

    from roteiro_memory.cli.main import main
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    db = tmp_path / "m.db"
    SQLiteStore(db).close()
    monkeypatch.setenv("ROTEIRO_MEMORY_BUSY_TIMEOUT_MS", "50")
    holder = sqlite3.connect(db, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        assert main(["add", "waits", "--db", str(db)]) == ExitCode.STORE
        assert "busy" in capsys.readouterr().err
        assert main(["--json", "add", "waits", "--db", str(db)]) == ExitCode.STORE
        assert json.loads(capsys.readouterr().out)["error"]["kind"] == "Unavailable"
    finally:
        holder.close()


def test_exitcodes_a_postgresql_server_that_cannot_be_reached_is_unavailable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    import json

    if not os.environ.get("CI"):  # CI installs the [postgres] extra: there, a missing one fails
        pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")
    from roteiro_memory.cli.main import main

    dsn = "postgresql://127.0.0.1:1/memory"  # port 1: nothing listens there
    assert main(["--json", "--db", dsn, "list"]) == ExitCode.STORE
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["kind"] == "Unavailable"
    assert "cannot connect" in error["message"]


def test_exitcodes_export_onto_a_full_disk_is_the_output_failing(tmp_path: Path) -> None:
    """The output is what failed, not the store (docs/cli.md): status 2, one
    line, the store as it was and nothing left where the export went."""
    import os

    from mounts import full_disk

    from roteiro_memory.stores.sqlite.store import SQLiteStore

    db = tmp_path / "m.db"
    with SQLiteStore(db) as store:
        store.record("lesson", "x" * 20_000)
    before = db.read_bytes()
    full = tmp_path / "full"
    full.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    done = subprocess.run(
        [
            *full_disk(full),
            sys.executable,
            "-m",
            "roteiro_memory",
            "export",
            "--db",
            str(db),
            "-o",
            str(full / "memory.jsonl"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "No space left on device" in done.stderr
    assert "nothing was written there" in done.stderr
    assert db.read_bytes() == before
    assert list(full.iterdir()) == []  # the tmpfs went with its namespace


def _to_full_disk(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The command line run with standard output on a full disk."""
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "roteiro_memory", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
            cwd=cwd,
        )


@pytest.mark.parametrize(
    "argv",
    [["export"], ["list"], ["--json", "list"]],
    ids=["export", "list", "list-json"],
)
def test_exitcodes_standard_output_on_a_full_disk_is_the_output_failing(
    tmp_path: Path, argv: list[str]
) -> None:
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    db = tmp_path / "m.db"
    with SQLiteStore(db) as store:
        store.record("lesson", "kept")
    # Outside a repository, so no sync writes its graph.
    done = _to_full_disk(*argv, "--db", str(db), cwd=tmp_path)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert done.stderr.splitlines() == [
        "roteiro-memory: error: cannot write to standard output (No space left on device); "
        "what was written there is incomplete (nothing stored was changed)"
    ]


@pytest.mark.parametrize(
    "argv",
    [["add", "a new lesson"], ["forget", "1"], ["cache", "get", "k"]],
    ids=["add", "forget", "cache-get"],
)
def test_exitcodes_a_change_whose_report_cannot_be_written_says_it_was_stored(
    tmp_path: Path, argv: list[str]
) -> None:
    """Standard output failing after a write committed: the write stays
    (a cache hit is counted), and the status and the line say so -- never
    that nothing was changed."""
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    db = tmp_path / "m.db"
    with SQLiteStore(db) as store:
        store.record("lesson", "kept")
        store.cache_put("k", "fp", "{}")
        before = store.snapshot()
    done = _to_full_disk(*argv, "--db", str(db), cwd=tmp_path)  # no sync: the change is its own
    assert done.returncode == ExitCode.UNREPORTED, done.stderr
    assert done.stderr.splitlines() == [
        "roteiro-memory: error: cannot write to standard output (No space left on device); "
        "what was written there is incomplete, but the command's change was stored"
    ]
    with SQLiteStore(db) as store:
        assert store.snapshot() != before


@pytest.mark.parametrize("argv", [["--version"], ["--json", "--version"], ["--help"]])
def test_exitcodes_the_version_and_help_on_a_full_disk_are_the_output_failing(
    argv: list[str],
) -> None:
    done = _to_full_disk(*argv)
    assert done.returncode == ExitCode.USAGE, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "cannot write to standard output" in done.stderr


def test_exitcodes_an_export_its_reader_cuts_short_is_the_output_failing(tmp_path: Path) -> None:
    """``export | head`` is no export: status 2 and one line saying so,
    where a listing cut short by its reader ends quietly."""
    from roteiro_memory.store import MemoryWrite
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    db = tmp_path / "m.db"
    with SQLiteStore(db) as store:  # well past what a pipe holds
        store.record_many([MemoryWrite("lesson", f"lesson {n} " * 40) for n in range(3_000)])
    reader = subprocess.Popen(
        [sys.executable, "-m", "roteiro_memory", "export", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    assert reader.stdout is not None
    assert reader.stderr is not None
    reader.stdout.read(10)
    reader.stdout.close()
    said = reader.stderr.read().decode()
    assert reader.wait(timeout=60) == ExitCode.USAGE, said
    assert len(said.splitlines()) == 1, said
    assert "closed by its reader" in said
    assert "incomplete" in said


@pytest.mark.parametrize("place", ["outside", "bare"])
def test_no_repository_to_find_the_store_in_exits_3_on_every_command(
    tmp_path: Path, place: str
) -> None:
    """With no store named, a command that uses one and finds no repository
    to find it in fails as the store's (docs/cli.md: 3, "no repository"):
    ``sync`` and ``reanchor`` as ``list`` and ``add``, with the same line,
    which says why (git's own words, in a bare repository)."""
    from test_cli import Repo

    here = tmp_path / "here"
    if place == "bare":
        subprocess.run(["git", "init", "-q", "--bare", str(here)], check=True)
    else:
        here.mkdir()
    outside = Repo(here)
    outside.env["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    said = set()
    for command in (["list"], ["add", "x"], ["sync"], ["reanchor"], ["reanchor", "--all-certain"]):
        done = outside.run(*command)
        assert done.returncode == ExitCode.STORE, (command, done.stderr)
        said.add(done.stderr)
    assert len(said) == 1, said
    # In a bare repository git itself says why there is no working tree.
    why = "must be run in a work tree" if place == "bare" else "not inside a git repository"
    assert why in said.pop()
