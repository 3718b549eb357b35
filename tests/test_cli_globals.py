"""Global options before the subcommand work as git users expect, and a
value given twice is refused rather than silently replaced."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from roteiro_memory.cli.commands import load, names, syncs
from roteiro_memory.cli.main import ExitCode, command_parser, main
from roteiro_memory.cli.parser import UsageFailure, split_globals
from roteiro_memory.stores.sqlite.store import SQLiteStore


def _records(db: Path) -> list[str]:
    with SQLiteStore(db) as store:
        return [r.body for r in store.list().records]


def test_db_before_the_command_chooses_the_store(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    assert main(["--db", str(db), "add", "before the command", "--no-sync"]) == 0
    assert main([f"--db={db}", "--no-sync", "add", "with an equals sign"]) == 0
    assert _records(db) == ["with an equals sign", "before the command"]


def test_json_before_the_command_prints_the_envelope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "--no-sync", "add", "x"]) == 0
    capsys.readouterr()
    assert main(["--json", "--db", db, "--no-sync", "list"]) == 0
    envelope = json.loads(capsys.readouterr().out)
    assert [r["body"] for r in envelope["result"]["records"]] == ["x"]


def test_global_options_reach_a_cache_action(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "--no-sync", "--json", "cache", "put", "k", "fp", "[1]"]) == 0
    capsys.readouterr()
    assert main(["--db", db, "--json", "cache", "list", "--no-sync"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["entries"][0]["key"] == "k"


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--db", "a.db", "add", "x", "--db", "b.db"], "--db given twice"),
        (["--db", "a.db", "--db", "b.db", "add", "x"], "--db given twice"),
        (["--db"], "--db"),
        (["--json", "protocol"], "--json does not apply to protocol"),
        (["--db", "x.db", "completion", "bash"], "--db does not apply to completion"),
        (["--no-sync", "sync"], "--no-sync does not apply to sync"),
        (["add", "x", "--kind", "lesson", "--kind", "decision"], "--kind given twice"),
        (["add", "x", "--anchor", "file:a", "--anchor", "file:b"], "--anchor given twice"),
        (["cache", "put", "k", "f", "1", "--anchor", "file:a", "--anchor", "file:b"], "--anchor"),
    ],
)
def test_a_global_option_given_twice_or_out_of_place_is_refused(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    named: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == ExitCode.USAGE
    out, err = capsys.readouterr()
    # Under --json the error envelope is on stdout, but for a command whose
    # stdout is a protocol's wire (protocol, mcp): that is one line on stderr.
    said = out if "--json" in argv and "protocol" not in argv else err
    if "protocol" in argv:
        assert out == ""
    assert len(said.splitlines()) == 1, said
    assert named in said
    assert not list(tmp_path.iterdir()), "nothing is created when the command line is refused"


@pytest.mark.parametrize("argv", [["--json", "protocol"], ["--json", "protocol", "--bogus"]])
def test_the_protocol_servers_stdout_carries_responses_only_when_it_cannot_start(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv) == ExitCode.USAGE
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.splitlines()) == 1, err


def test_the_same_db_on_both_sides_is_accepted(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "add", "x", "--db", db, "--no-sync"]) == 0


def test_no_sync_is_a_no_op_where_a_command_never_syncs(tmp_path: Path) -> None:
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "--no-sync", "add", "x"]) == 0
    assert main(["--db", db, "--no-sync", "forget", "1"]) == 0


def test_split_globals_stops_at_the_command() -> None:
    given, rest = split_globals(["--json", "--db", "x", "list", "--db", "y", "--json"])
    assert given == {"json": True, "db": "x"}
    assert rest == ["list", "--db", "y", "--json"]


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and its actions' parsers (``cache stats``, ...)."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found.extend(_parsers(sub))
    return found


def test_every_command_that_opens_a_store_takes_no_sync_after_it_too() -> None:
    for name in names():
        command = load(name)
        for parser in _parsers(command_parser(name, command)):
            options = parser._option_string_actions
            if "--db" in options:
                assert ("--no-sync" in options) == syncs(command), parser.prog


@pytest.mark.parametrize(
    "argv",
    [
        ["check"],
        ["export"],
        ["forget", "99"],
        ["cache", "stats"],
        ["cache", "forget", "k"],
    ],
)
def test_no_sync_after_a_command_that_never_syncs_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "add", "x", "--no-sync"]) == 0
    after = main([*argv, "--db", db, "--no-sync"])
    capsys.readouterr()
    assert after == main(["--db", db, "--no-sync", *argv])
    assert after != ExitCode.USAGE, capsys.readouterr().err


def test_an_unknown_option_of_a_cache_action_names_the_action(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["cache", "stats", "--bogus"]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "cache stats has no option --bogus" in err
    assert "`roteiro-memory cache stats --help`" in err


def test_no_help_text_names_a_json_the_command_does_not_take() -> None:
    for name in names():
        command = load(name)
        if getattr(command, "OPTIONS_WHEN_NAMED", False):
            continue  # eval: its harness's own parser, --json included
        for parser in _parsers(command_parser(name, command)):
            if "--json" not in parser._option_string_actions:
                assert "--json" not in parser.format_help(), parser.prog


def test_protocol_help_names_every_backend_it_serves() -> None:
    from roteiro_memory.stores.naming import BACKENDS

    said = " ".join(command_parser("protocol", load("protocol")).format_help().split())
    for backend in (*BACKENDS, "postgres:DSN", "postgresql://"):
        assert backend in said, backend
    assert "fresh store" not in said


def test_every_option_taking_one_value_refuses_a_second() -> None:
    """Only an option that says it may be repeated (``action="append"``, as
    ``--kind`` and ``--anchor`` of ``list`` and ``recall``) takes a second
    value; any other that takes one is refused given twice, rather than the
    last silently winning (``add --supersedes 1 --supersedes 2`` superseded 2
    alone)."""
    for name in names():
        command = load(name)
        if getattr(command, "OPTIONS_WHEN_NAMED", False):
            continue  # eval: its harness's own parser
        for parser in _parsers(command_parser(name, command)):
            for action in parser._actions:
                if not action.option_strings or action.nargs == 0:
                    continue
                if isinstance(action, argparse._AppendAction):
                    continue
                option = action.option_strings[-1]
                namespace = argparse.Namespace()
                action(parser, namespace, "1", option)
                with pytest.raises(UsageFailure, match=f"{option} given twice"):
                    action(parser, namespace, "2", option)


@pytest.mark.parametrize(
    "option",
    [["--supersedes", "1", "--supersedes", "2"], ["--confidence", "0.1", "--confidence", "1"]],
)
def test_a_record_is_not_written_with_one_of_two_values_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: list[str]
) -> None:
    db = str(tmp_path / "m.db")
    assert main(["--db", db, "--no-sync", "add", "one"]) == 0
    assert main(["--db", db, "--no-sync", "add", "two"]) == 0
    before = Path(db).read_bytes()
    capsys.readouterr()
    assert main(["--db", db, "--no-sync", "add", "three", *option]) == ExitCode.USAGE
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert f"{option[0]} given twice" in err
    assert Path(db).read_bytes() == before
    assert _records(Path(db)) == ["two", "one"]
