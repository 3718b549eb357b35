"""No command ends in a traceback: every subcommand, given hostile arguments
or run on every planted bad store, exits with a documented status (0, 1, 2,
or 3 for a store that is corrupt or failing) with at most one line on
stderr; closed or undecodable standard streams are one-line errors too."""

from __future__ import annotations

import argparse
import importlib
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from precommit_plants import BAD_STORES, plant_bad_store, plant_store

from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.stores.sqlite.store import SQLiteStore

HOSTILE = (
    "",
    " ",
    "-",
    "\x1b[2J\x00",
    "x" * 70_000,
    "-1",
    "18446744073709551616",
    "1e999",
    "no/such/folder/x",
    "a::",
    "::b",
    "file:",
    "[" * 5_000,
    "\u202e\ufeff",
)
"""Values no option or argument should crash on.  Each names, as a path, a
file inside the test's folder or none at all: ``export -o VALUE`` writes
there, so no value may climb out of it."""

cli = importlib.import_module("roteiro_memory.cli.main")
commands = importlib.import_module("roteiro_memory.cli.commands")
cache_command = importlib.import_module("roteiro_memory.cli.commands.cache")

POSITIONAL = {
    "add": ["a body"],
    "show": ["1"],
    "forget": ["1"],
    "confirm": ["1"],
    "reanchor": ["1"],
    "import": ["missing.jsonl"],
    "cache get": ["context:a"],
    "cache put": ["k", "fp", "1"],
    "cache forget": ["context:a"],
}
"""Benign positional arguments, by subcommand; the others take none."""


def _subcommands() -> list[str]:
    """Every subcommand the parser builds, ``cache`` actions included: a new
    one joins these tests without an edit here."""
    names = []
    for name in commands.names():
        if name == "cache":
            names += [f"cache {action}" for action, *_ in cache_command.ACTIONS]
        else:
            names.append(name)
    return names


def _options(name: str) -> list[str]:
    """The options of subcommand ``name`` that take a value."""
    first = name.split()[0]
    parser = cli.command_parser(first, commands.load(first))
    found: list[str] = []

    def walk(p: argparse.ArgumentParser, words: list[str]) -> None:
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for choice, sub in action.choices.items():
                    if not words or words[0] == choice:
                        walk(sub, words[1:])
            elif (
                action.option_strings and action.nargs != 0 and "--db" not in action.option_strings
            ):
                found.append(action.option_strings[-1])

    walk(parser, name.split())
    return sorted(set(found) - {"--help"})


def _run(argv: list[str], stdin: bytes = b"") -> tuple[int, list[str], str]:
    """``main(argv)`` in this process: exit status, stderr lines, stdout."""
    # Standard output has a binary buffer, as a real one does (the mcp
    # server writes to it).
    out, err = io.BytesIO(), io.StringIO()
    saved = sys.stdin, sys.stdout, sys.stderr
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    wrapper = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
    sys.stdout, sys.stderr = wrapper, err
    try:
        try:
            status = cli.main(argv)
        except SystemExit as exit_:
            status = int(exit_.code or 0)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    # The mcp server closes the stream it was given when it ends.
    written = b""
    if not out.closed:
        written = out.getvalue()
        wrapper.detach()  # so collecting the wrapper leaves ``out`` alone
    return status, err.getvalue().splitlines(), written.decode("utf-8", "replace")


def _one_line(argv: list[str], status: int, lines: list[str]) -> None:
    shown = [a[:40] for a in argv]
    assert status in (ExitCode.OK, ExitCode.NOTHING, ExitCode.USAGE, ExitCode.STORE), (
        shown,
        status,
        lines,
    )
    assert len(lines) <= 1, (shown, lines[:3])
    assert not any("Traceback" in line for line in lines), (shown, lines)
    # The last resort answers what nothing reports on purpose: none of these.
    assert not any("unexpected failure" in line for line in lines), (shown, lines)
    if status in (ExitCode.USAGE, ExitCode.STORE):
        assert lines, (shown, "a refusal says why")


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder outside any repository, with no store named by the environment."""
    for name in list(os.environ):
        if name.startswith("ROTEIRO_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", _subcommands())
def test_every_subcommand_answers_hostile_arguments_in_one_line(outside: Path, name: str) -> None:
    for value in HOSTILE:
        if "\0" not in value and len(value) < 4096:
            # export -o writes wherever a value points: never outside this folder.
            assert (outside / value).resolve().is_relative_to(outside.resolve()), value
    db = outside / "memory.db"
    plant_store(db)
    words = name.split()
    benign = POSITIONAL.get(name, [])
    runs: list[list[str]] = []
    for value in HOSTILE:
        if benign:
            for index in range(len(benign)):
                runs.append([*words, *benign[:index], value, *benign[index + 1 :]])
        for option in _options(name):
            runs.append([*words, *benign, f"{option}={value}"])
    for argv in runs:
        status, lines, _ = _run([*argv, "--db", str(db)], stdin=b"[" * 5_000)
        _one_line(argv, status, lines)


@pytest.mark.parametrize("how", sorted(BAD_STORES))
def test_every_subcommand_on_every_planted_store_is_one_line(outside: Path, how: str) -> None:
    """A store damaged behind the library's back is reported, never a crash;
    ``check`` finds every one of them."""
    pristine = plant_bad_store(outside / "planted.db", how)
    for name in _subcommands():
        db = outside / "copy.db"
        shutil.copyfile(pristine, db)
        argv = [*name.split(), *POSITIONAL.get(name, []), "--db", str(db)]
        if name == "import":
            argv = ["import", "-", "--db", str(outside / "fresh.db")]
            (outside / "fresh.db").unlink(missing_ok=True)
        status, lines, _ = _run(argv, stdin=b"")
        _one_line(argv, status, lines)
        if name == "check":
            assert status == 1, (how, lines)
        db.unlink()
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)


def _script(
    args: list[str], *, close: int | None = None, stdin: bytes = b"", cwd: Path
) -> subprocess.CompletedProcess[bytes]:
    """The console script, with file descriptor ``close`` closed before it starts."""
    script = shutil.which("roteiro-memory")
    assert script is not None
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}

    def closing() -> None:
        if close is not None:
            os.close(close)

    return subprocess.run(
        [script, *args],
        input=None if close == 0 else stdin,
        stdin=subprocess.DEVNULL if close == 0 else None,
        capture_output=True,
        preexec_fn=closing,
        cwd=cwd,
        env=env,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "close"),
    [
        (["add", "-"], 0),
        (["cache", "put", "k", "fp"], 0),
        (["import", "-"], 0),
        (["list"], 1),
        (["--json", "list"], 1),
        (["protocol"], 1),
        (["protocol"], 0),
        (["mcp"], 1),
        (["mcp"], 0),
    ],
    ids=[
        "add-stdin",
        "cache-put-stdin",
        "import-stdin",
        "list-stdout",
        "json-list-stdout",
        "protocol-stdout",
        "protocol-stdin",
        "mcp-stdout",
        "mcp-stdin",
    ],
)
def test_a_closed_standard_stream_is_a_one_line_error(
    tmp_path: Path, args: list[str], close: int
) -> None:
    db = tmp_path / "memory.db"
    argv = [*args, "--db", str(db)]
    done = _script(argv, close=close, cwd=tmp_path)
    lines = done.stderr.decode("utf-8", "replace").splitlines()
    assert done.returncode == 2, lines
    assert len(lines) == 1, lines
    assert "standard " in lines[0]
    assert "closed" in lines[0]
    if db.exists():
        with SQLiteStore(db) as store:
            assert store.list().records == []
            assert store.cache_entries() == []


@pytest.mark.parametrize("stderr", ["closed", "full"])
@pytest.mark.parametrize(
    ("args", "stdin", "status"),
    [
        (["--bogus"], b"", ExitCode.USAGE),
        (["recall", "--limit", "-1"], b"", ExitCode.USAGE),
        (["show", "999"], b"", ExitCode.NOTHING),
        (["list", "--db", "not-a-store.db"], b"", ExitCode.STORE),
        (["hook"], b"not an event", ExitCode.OK),
    ],
    ids=["bad-option", "bad-value", "absent", "not-a-store", "hook"],
)
def test_a_failure_stderr_cannot_take_exits_with_the_status_it_maps_to(
    tmp_path: Path, args: list[str], stdin: bytes, status: ExitCode, stderr: str
) -> None:
    """With stderr closed (``2>&-``) or full (``2>/dev/full``) the one line is
    given up, and the status is still the failure's (``hook``: still 0), not
    an exception's 1 or the 120 of a flush failing at exit."""
    (tmp_path / "not-a-store.db").write_bytes(b"not a store\n" * 100)
    argv = [*args, "--db", str(tmp_path / "memory.db")] if args[0] == "show" else args
    if stderr == "closed":
        done = _script(argv, close=2, stdin=stdin, cwd=tmp_path)
    else:
        script = shutil.which("roteiro-memory")
        assert script is not None
        with open(os.devnull, "rb") as empty, open("/dev/full", "wb") as full:
            done = subprocess.run(
                [script, *argv],
                input=stdin or None,
                stdin=None if stdin else empty,
                stdout=subprocess.PIPE,
                stderr=full,
                cwd=tmp_path,
                timeout=60,
                check=False,
            )
    assert done.returncode == status, done.stderr


def test_a_json_failure_nobody_can_read_is_one_line_on_stderr(tmp_path: Path) -> None:
    """Under ``--json`` a failure goes in the envelope on stdout; with stdout
    closed, or its reader gone, it is the one line on stderr instead."""
    closed = _script(["--json", "no-such-command"], close=1, cwd=tmp_path)
    script = shutil.which("roteiro-memory")
    assert script is not None
    read, write = os.pipe()
    os.close(read)
    try:
        gone = subprocess.run(
            [script, "--json", "no-such-command"],
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write)
    for done in (closed, gone):
        lines = done.stderr.decode("utf-8", "replace").splitlines()
        assert done.returncode == 2, lines
        assert len(lines) == 1, lines
        assert "unknown command 'no-such-command'" in lines[0]


@pytest.mark.parametrize(
    ("payload", "said"),
    [(b'{"a": "\xff"}', "not valid UTF-8"), (b"[" * 5_000 + b"]" * 5_000, "too deeply")],
    ids=["not-utf8", "deep"],
)
def test_cache_put_stdin_that_cannot_be_read_is_one_line(
    tmp_path: Path, payload: bytes, said: str
) -> None:
    db = tmp_path / "memory.db"
    done = _script(["cache", "put", "k", "fp", "--db", str(db)], stdin=payload, cwd=tmp_path)
    lines = done.stderr.decode("utf-8", "replace").splitlines()
    assert done.returncode == 2
    assert len(lines) == 1, lines
    assert said in lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["add", "a body", "--anchor", "LONG", "--anchor", "file:b.py"],
        ["--db", "LONG", "list", "--db", "other.db"],
        ["--db", "LONG", "--db", "other.db", "list"],
    ],
    ids=["option-twice", "db-before-and-after", "global-db-twice"],
)
def test_a_value_given_twice_is_quoted_as_a_bounded_excerpt(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from roteiro_memory.cli.main import main

    long = "a" * 60_000 + "SECRET"
    status = main([long if arg == "LONG" else arg for arg in argv])
    err = capsys.readouterr().err
    assert status == ExitCode.USAGE
    assert "given twice" in err
    assert "SECRET" not in err
    assert len(err) < 1_000


def test_warnings_escape_control_characters(capsys: pytest.CaptureFixture[str]) -> None:
    from roteiro_memory.cli.output import warn

    warn("\x1b[2Jexport.jsonl: an export from before the trailer")
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "\\x1b[2Jexport.jsonl" in err


def test_a_cache_payload_reaches_a_terminal_escaped_and_a_pipe_exactly(tmp_path: Path) -> None:
    import pty

    db = tmp_path / "m.db"
    payload = "\x1b]0;pwned\x07\x1b[2J \u009b2J \u202eevil"
    store = SQLiteStore(db)
    try:
        store.cache_put("k", "f", payload)
    finally:
        store.close()
    argv = [sys.executable, "-m", "roteiro_memory", "--db", str(db), "cache", "get", "k"]
    piped = subprocess.run(argv, capture_output=True, text=True, check=True)
    assert piped.stdout == payload + "\n"
    leader, follower = pty.openpty()
    try:
        shown = subprocess.run(argv, stdout=follower, stderr=subprocess.PIPE, check=True)
        assert shown.stderr == b""
        os.close(follower)
        follower = -1
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all is read
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    text = out.decode()
    for raw in ("\x1b", "\x07", "\u009b", "\u202e"):
        assert raw not in text
    assert "\\x1b]0;pwned\\x07" in text


INDEX_DAMAGE = {
    "memory_cells": "UPDATE memory_cells SET tail = X'ffffffffffffffff'",
    "memory_segments": "UPDATE memory_segments SET postings = X'09090909'",
    "memory_members": "UPDATE memory_members SET lengths = X'00'",
    "memory_recent": "UPDATE memory_recent SET terms = 'not lines of terms'",
}
"""Term index bytes no version writes, by the table they damage."""


@pytest.mark.parametrize("table", sorted(INDEX_DAMAGE))
def test_a_damaged_term_index_is_named_in_one_line_by_every_subcommand(
    outside: Path, table: str
) -> None:
    """Index bytes damaged behind the library's back stop a search, a forget
    or a write with one line naming the table and the row, as check does --
    never the last resort's "report it as a bug"."""
    from roteiro_memory.store import MemoryWrite
    from roteiro_memory.stores.sql import index

    pristine = outside / "indexed.db"
    with SQLiteStore(pristine) as store:
        # Merged into segments; then a recent tier the next write merges.
        store.record_many([MemoryWrite("lesson", "retry the cache") for _ in range(300)])
        waiting = index.RECENT_RECORDS - 1
        store.record_many([MemoryWrite("lesson", "retry once more") for _ in range(waiting)])
        store.connection.execute(INDEX_DAMAGE[table])
        assert store.snapshot()  # a snapshot shows what it can read
    named = 0
    for name in _subcommands():
        db = outside / "copy.db"
        shutil.copyfile(pristine, db)
        argv = [*name.split(), *POSITIONAL.get(name, []), "--db", str(db)]
        if name == "recall":
            argv = ["recall", "retry cache", "--no-sync", "--db", str(db)]
        if name == "import":
            continue  # reads no store but the one it makes
        status, lines, _ = _run(argv, stdin=b"")
        _one_line(argv, status, lines)
        if lines and "the term index is damaged" in lines[0]:
            named += 1
            assert status == ExitCode.STORE, (argv, lines)
            assert lines[0].split(": ")[2].startswith(table), (argv, lines)
        db.unlink()
        for suffix in ("-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
    assert named, "a search meets the damage"


@pytest.mark.parametrize(
    "argv",
    [
        ["add", "--supersedes", "5", "x"],
        ["confirm", "1"],
        ["show", "1"],
        ["forget", "1"],
        ["cache", "get", "k"],
        ["cache", "forget", "k"],
        ["list"],
    ],
    ids=" ".join,
)
def test_a_refused_command_leaves_no_store_where_there_was_none(
    outside: Path, argv: list[str]
) -> None:
    """A store a command made for itself and wrote nothing to goes when the
    command is refused or finds nothing: the disk is as it was."""
    db = outside / "new.db"
    status, lines, _ = _run([*argv, "--db", str(db)])
    assert status in (ExitCode.NOTHING, ExitCode.USAGE), lines
    assert sorted(p.name for p in outside.iterdir()) == []


@pytest.mark.parametrize(
    "argv",
    [["show", "1"], ["forget", "1"], ["list"], ["add", "--supersedes", "5", "x"]],
    ids=" ".join,
)
def test_a_refused_command_through_a_dangling_symlink_leaves_no_store_at_its_target(
    outside: Path, argv: list[str]
) -> None:
    """A dangling symlink names no file: the store a command makes through it
    (at its target) is one it made for itself, and goes as any other does
    when the command is refused or finds nothing.  The link is left alone."""
    link = outside / "link.db"
    link.symlink_to(outside / "target.db")
    status, lines, _ = _run([*argv, "--db", str(link)])
    assert status in (ExitCode.NOTHING, ExitCode.USAGE), lines
    assert sorted(p.name for p in outside.iterdir()) == ["link.db"]
    assert link.is_symlink()


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
@pytest.mark.parametrize("argv", [["show", "5"], ["add", "a lesson"]], ids=" ".join)
def test_a_side_file_beside_no_store_is_left_as_it_was(
    outside: Path, argv: list[str], suffix: str
) -> None:
    """A file named as a store's side file, beside no store, is somebody
    else's: SQLite would take it for a new store's own and remove it, so no
    store is made there, and the file is as it was."""
    side = outside / f"notes{suffix}"
    side.write_bytes(b"precious notes\n")
    status, lines, _ = _run([*argv, "--db", str(outside / "notes")])
    assert status == ExitCode.USAGE, lines
    (line,) = lines
    assert f"notes{suffix}" in line
    assert "move it away" in line
    assert sorted(p.name for p in outside.iterdir()) == [side.name]
    assert side.read_bytes() == b"precious notes\n"


def test_a_store_that_fails_to_open_leaves_no_file_it_made(
    outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files SQLite made before the open failed go with the failure."""
    from roteiro_memory.errors import StoreUnavailable

    def failing(self: SQLiteStore, *args: object) -> None:
        raise StoreUnavailable("new.db: the disk failed while the store was made")

    monkeypatch.setattr(SQLiteStore, "_migrate", failing)
    status, lines, _ = _run(["list", "--db", str(outside / "new.db")])
    assert status == ExitCode.STORE, lines
    assert lines == ["roteiro-memory: error: new.db: the disk failed while the store was made"]
    assert sorted(p.name for p in outside.iterdir()) == []


@pytest.mark.parametrize("argv", [["show", "1"], ["list"], ["list", "--json"]], ids=" ".join)
def test_a_damaged_value_is_quoted_in_part_however_large(outside: Path, argv: list[str]) -> None:
    """A value planted where the store keeps text is named by its row and
    column and quoted in part: a message is a line, not the value."""
    import sqlite3

    db = outside / "m.db"
    assert _run(["add", "a lesson", "--db", str(db)])[0] == ExitCode.OK
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE agent_memory SET body = zeroblob(5000000)")
    conn.close()
    status, lines, out = _run([*argv, "--db", str(db), "--no-sync"])
    assert status == ExitCode.STORE
    said = out if "--json" in argv else "\n".join(lines)
    assert "agent_memory row 1: body holds b'" in said
    assert "(5000000 bytes in all)" in said
    assert len(said) < 2_000  # of 5,000,000 bytes


def test_a_body_on_stdin_is_read_no_further_than_a_body_may_be(outside: Path) -> None:
    """A body is at most 65,536 bytes, so no more is read from standard
    input (which may never end, as ``/dev/zero`` does not): one byte more is
    refused in one line, and exactly that many are stored."""
    db = outside / "m.db"
    status, lines, _ = _run(["add", "-", "--db", str(db)], stdin=b"a" * 65_537)
    assert status == ExitCode.USAGE
    assert lines == [
        "roteiro-memory: error: the body on standard input is over 65,536 bytes, the most it"
        " may be; nothing was read past that"
    ]
    assert not db.exists()
    status, lines, _ = _run(["add", "-", "--db", str(db)], stdin=b"a" * 65_536)
    assert status == ExitCode.OK, lines


def test_a_command_that_writes_keeps_the_store_it_made(outside: Path) -> None:
    db = outside / "new.db"
    status, _, _ = _run(["add", "a lesson", "--db", str(db)])
    assert status == ExitCode.OK
    assert db.stat().st_size > 0


def test_a_command_line_naming_no_command_is_one_line(outside: Path) -> None:
    status, lines, out = _run([])
    assert (status, out) == (ExitCode.USAGE, "")
    assert lines == [
        "roteiro-memory: error: a command is required; `roteiro-memory --help` lists them"
    ]


NOT_PLAIN = ["1_0", " 0.5", "0.5 ", "inf", "nan", "0x1p-1", "\u0660.\u0665", "", "1e309"]
"""Confidences float() takes or nearly does, none written plainly (1e309,
plain digits, is beyond a double: float() makes it infinity)."""


@pytest.mark.parametrize("typed", NOT_PLAIN)
def test_a_confidence_not_written_plainly_is_refused_as_typed(outside: Path, typed: str) -> None:
    """float() takes "1_0" as ten and pads of space: refused, quoting what
    was typed, as --budget-mb refuses them."""
    db = outside / "m.db"
    status, lines, _ = _run(["add", "--confidence", typed, "a lesson", "--db", str(db)])
    assert status == ExitCode.USAGE, lines
    assert lines == [
        f"roteiro-memory: error: invalid --confidence {typed!r}: expected a number from 0 to 1"
        " written with ASCII digits and a point, e.g. 0.8"
    ]
    assert not db.exists()


@pytest.mark.parametrize("typed", ["0.5", "1", "0", ".5", "1e-1", "+0.25"])
def test_a_confidence_written_plainly_is_taken(outside: Path, typed: str) -> None:
    status, lines, _ = _run(["add", "--confidence", typed, "a lesson", "--db", "m.db"])
    assert status == ExitCode.OK, lines


def test_an_export_into_a_folder_that_is_not_there_says_so(outside: Path) -> None:
    _run(["add", "a lesson", "--db", "m.db"])
    status, lines, _ = _run(["export", "-o", "nowhere/x.jsonl", "--db", "m.db"])
    assert status == ExitCode.USAGE
    assert len(lines) == 1
    assert lines[0].endswith("(its folder does not exist: create it, or choose another --output)")


def test_a_cache_payload_on_stdin_is_read_no_further_than_its_limit(
    outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cache_command, "MAX_PAYLOAD_BYTES", 1_000)
    db = outside / "m.db"
    status, lines, _ = _run(["cache", "put", "k", "fp", "--db", str(db)], stdin=b"1" * 1_001)
    assert status == ExitCode.USAGE
    assert lines == [
        "roteiro-memory: error: the cache payload on standard input is over 1,000 bytes, the"
        " most it may be; nothing was read past that"
    ]
    assert not db.exists()
    status, lines, _ = _run(["cache", "put", "k", "fp", "--db", str(db)], stdin=b"1" * 1_000)
    assert status == ExitCode.OK, lines


@pytest.mark.parametrize("name", _subcommands())
def test_every_subcommand_run_in_a_removed_folder_is_one_line(
    outside: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """The folder a command was started in may be removed under it: a
    relative store path then names nothing, and no repository holds it."""
    gone = outside / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    argv = [*name.split(), *POSITIONAL.get(name, [])]
    for db in ("rel.db", str(outside / "abs.db")):
        status, lines, _ = _run([*argv, "--db", db])
        _one_line([*argv, db], status, lines)
    status, lines, _ = _run(["list", "--db", "rel.db"])
    assert lines == [
        "roteiro-memory: error: rel.db (--db) is a relative path, but the folder the command"
        " runs in is gone; run it from a folder that exists, or give an absolute path"
    ]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("COLUMNS", "9" * 5_000),
        ("COLUMNS", "\u00b2"),
        ("ROTEIRO_MEMORY_BUSY_TIMEOUT_MS", "9" * 5_000),
        ("ROTEIRO_MEMORY_BUSY_TIMEOUT_MS", "\u0661"),
    ],
    ids=["columns-digits", "columns-superscript", "busy-digits", "busy-arabic-indic"],
)
def test_a_number_in_the_environment_past_what_int_reads_is_one_line(
    outside: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    """int() refuses 4,301 digits and "²", which str.isdigit() takes: the
    width falls back to the terminal's, the busy timeout is refused."""
    plant_store(outside / "m.db")
    monkeypatch.setenv(name, value)
    status, lines, out = _run(["list", "--db", "m.db", "--no-sync"])
    _one_line(["list", name], status, lines)
    if name == "COLUMNS":
        assert status == ExitCode.OK, lines
        assert out
    else:
        assert status == ExitCode.USAGE
        assert lines[0].startswith(f"roteiro-memory: error: {name} is '")


@pytest.mark.parametrize(
    ("argv", "status"),
    [(["export"], ExitCode.STORE), (["check"], ExitCode.STORE)],
    ids=["export", "check"],
)
def test_a_store_path_that_cannot_be_looked_at_is_never_taken_for_no_store(
    outside: Path, argv: list[str], status: int
) -> None:
    """A path that cannot be looked at (a symlink loop here) is not "no
    store ... nothing has been recorded there yet": export and check refuse
    it as every other command does, as they refuse a FIFO there (``check``
    included: it is no finding about a store)."""
    (outside / "a.db").symlink_to(outside / "b.db")
    (outside / "b.db").symlink_to(outside / "a.db")
    code, lines, out = _run([*argv, "--db", str(outside / "a.db")])
    said = "\n".join([*lines, out])
    assert code == status, said
    assert "no store" not in said
    assert "lead round in a loop (Too many levels of symbolic links)" in said
    assert sorted(p.name for p in outside.iterdir()) == ["a.db", "b.db"]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("name", ["broken.py", "broken\nname.py"], ids=["plain", "newline"])
def test_a_failing_command_says_its_warnings_in_its_one_failure(
    tmp_path: Path, as_json: bool, name: str
) -> None:
    """A warning said while a command runs (the sync's: a file that does
    not parse, whose name may hold a line break), then a failure: exactly
    one line on stderr, or one envelope and nothing on stderr, carrying
    both; a command that succeeds still says each warning on a line of its
    own, one line whatever it quotes."""
    from test_cli import Repo

    repo = Repo.committed(tmp_path / "repo", {"a.py": "x = 1\n"})
    repo.write(name, "def f(:\n")
    done = repo.run(*(["--json"] if as_json else []), "confirm", "99")
    assert done.returncode == ExitCode.USAGE, done.stderr
    shown = name if as_json else name.replace("\n", "\\x0a")
    warned = f"; warning: {shown} does not parse (line 1: invalid syntax)"
    if as_json:
        assert done.stderr == ""
        (line,) = done.stdout.splitlines()
        error = json.loads(line)["error"]
        assert error["kind"] == "NotFound"
        assert error["message"].startswith("no memory record with id 99")
        assert warned in error["message"]
    else:
        (line,) = done.stderr.splitlines()
        assert line.startswith("roteiro-memory: error: no memory record with id 99")
        assert warned in line
    if not as_json:
        listed = repo.run("list")
        assert listed.returncode == ExitCode.NOTHING
        (line,) = listed.stderr.splitlines()  # one line, whatever the name holds
        assert line.startswith(f"roteiro-memory: warning: {shown} does not parse ("), line
