"""A failing command's one line carries the warnings said before it failed,
the first few quoted and the rest counted: a sync that meets many files
that do not parse still fails in a line that can be read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_cli import Repo

from roteiro_memory.cli.output import Warnings
from roteiro_memory.exitcodes import ExitCode

FOLDED_WARNINGS = 3
"""How many warnings a failure quotes: the first three, in the order said."""


@pytest.mark.parametrize(
    ("count", "tail"),
    [
        (0, ""),
        (1, "; warning: w1"),
        (FOLDED_WARNINGS, "".join(f"; warning: w{n}" for n in range(1, FOLDED_WARNINGS + 1))),
        (FOLDED_WARNINGS + 1, "; and 1 more warning"),
        (FOLDED_WARNINGS + 500, "; and 500 more warnings"),
    ],
)
def test_a_failure_quotes_the_first_few_warnings_and_counts_the_rest(count: int, tail: str) -> None:
    warnings = Warnings()
    for n in range(1, count + 1):
        warnings(f"w{n}")
    said = warnings.folded("it failed")
    quoted = "".join(f"; warning: w{n}" for n in range(1, min(count, FOLDED_WARNINGS) + 1))
    assert said.startswith("it failed" + quoted)
    assert said.endswith(tail)
    assert said.count("; warning: ") == min(count, FOLDED_WARNINGS)
    assert said == "it failed" + quoted + (tail if count > FOLDED_WARNINGS else "")
    assert warnings.take() == []  # taken: said once


BROKEN = 40
"""How many files of :func:`_unparsable`'s repository do not parse."""


def _unparsable(tmp_path: Path) -> Repo:
    """A repository of :data:`BROKEN` Python files that do not parse, and one that does."""
    broken = {f"b{n:02}.py": "def f(:\n" for n in range(BROKEN)}
    return Repo.committed(tmp_path / "repo", broken | {"a.py": ""})


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_failure_after_many_files_do_not_parse_stays_one_short_line(
    tmp_path: Path, as_json: bool
) -> None:
    repo = _unparsable(tmp_path)
    done = repo.run(*(["--json"] if as_json else []), "confirm", "99")
    assert done.returncode == ExitCode.USAGE, done.stderr
    if as_json:
        assert done.stderr == ""
        (line,) = done.stdout.splitlines()
        said = json.loads(line)["error"]["message"]
    else:
        (line,) = done.stderr.splitlines()
        said = line.removeprefix("roteiro-memory: error: ")
    assert said.startswith("no memory record with id 99; warning: b00.py does not parse (")
    named = [part.partition(" ")[0] for part in said.split("; warning: ")[1:]]
    assert named == [f"b{n:02}.py" for n in range(FOLDED_WARNINGS)]  # the first, in order
    assert len(said) < 1_000, len(said)
    assert said.endswith(f"; and {BROKEN - FOLDED_WARNINGS} more warnings")


@pytest.mark.parametrize("count", [0, 1, FOLDED_WARNINGS, FOLDED_WARNINGS + 1, 1_000])
def test_a_command_that_succeeds_says_the_first_few_warnings_and_counts_the_rest(
    count: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """A line each for the first few, then one line saying how many more
    there are and how to have them all said; every one under ``--json``."""
    for every in (False, True):
        warnings = Warnings(every=every)
        for n in range(1, count + 1):
            warnings(f"w{n}")
        warnings.release()
        lines = capsys.readouterr().err.splitlines()
        said = count if every else min(count, FOLDED_WARNINGS)
        assert lines[:said] == [f"roteiro-memory: warning: w{n}" for n in range(1, said + 1)]
        rest = count - said
        if rest:
            noun = "warning" if rest == 1 else "warnings"
            assert lines[said:] == [
                f"roteiro-memory: warning: and {rest} more {noun}, not shown (with --json every "
                "warning is said)"
            ]
        else:
            assert lines[said:] == []


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_command_after_many_files_do_not_parse_says_a_few_unless_json(
    tmp_path: Path, as_json: bool
) -> None:
    repo = _unparsable(tmp_path)
    done = repo.run(*(["--json"] if as_json else []), "list")
    assert done.returncode == ExitCode.NOTHING, done.stderr
    lines = done.stderr.splitlines()
    named = [line.split()[2] for line in lines if "does not parse" in line]
    if as_json:
        assert named == [f"b{n:02}.py" for n in range(BROKEN)]
        assert len(lines) == BROKEN
    else:
        assert named == [f"b{n:02}.py" for n in range(FOLDED_WARNINGS)]
        assert lines[FOLDED_WARNINGS:] == [
            f"roteiro-memory: warning: and {BROKEN - FOLDED_WARNINGS} more warnings, not shown "
            "(with --json every warning is said)"
        ]
