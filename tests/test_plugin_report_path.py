"""Options the plugin refuses before any case runs, rather than failing after
the whole run: a report path it cannot write, one ending in ``.md`` (its own
summary's name), and a timeout no clock can wait."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from roteiro_memory.precommit.conformance import main
from roteiro_memory.suite.report import report_path_problem  # imports yaml once, for every run

pytest_plugins = ["pytester"]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--roteiro-conformance", "-k", "ids-increase", *args)


@pytest.mark.parametrize(
    ("report", "problem"),
    [
        ("folder", "is a folder, not a file to write"),
        ("file/report.json", "cannot be made: "),
        ("/proc/report.json", "cannot be written"),
    ],
)
def test_an_unwritable_report_path_is_one_usage_error_before_any_case(
    pytester: pytest.Pytester, report: str, problem: str
) -> None:
    pytester.mkdir("folder")
    (pytester.path / "file").write_text("", encoding="utf-8")
    result = _run(pytester, "--roteiro-report", report)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--roteiro-report: {pytester.path / report if report[0] != '/' else report}" in (
        result.stderr.str()
    )
    assert problem in result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "passed" not in result.stdout.str()


def test_a_report_path_ending_in_md_is_refused_as_its_summarys_name(
    pytester: pytest.Pytester,
) -> None:
    result = _run(pytester, "--roteiro-report", "out/report.md")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ends in .md, which names the Markdown summary" in result.stderr.str()
    assert not (pytester.path / "out").exists()


def test_a_report_that_cannot_be_written_at_the_end_is_one_line(
    pytester: pytest.Pytester,
) -> None:
    """The path was writable when the run began; the folder it needs is a
    file by the end: one line, a failing status, no traceback."""
    pytester.makeconftest(
        "from pathlib import Path\n"
        "def pytest_collection_finish(session):\n"
        "    Path('out').write_text('in the way', encoding='utf-8')\n"
    )
    result = _run(pytester, "--roteiro-report", "out/report.json")
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    assert "Traceback" not in text
    assert f"report: cannot write {pytester.path / 'out'}" in result.stdout.str()
    assert result.ret != pytest.ExitCode.OK


@pytest.mark.parametrize("seconds", ["inf", "1e300", "nan", "0", "-1", "86401"])
def test_a_timeout_must_be_finite_positive_and_at_most_a_day(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str], seconds: str
) -> None:
    result = _run(pytester, "--roteiro-timeout", seconds)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--roteiro-timeout:" in result.stderr.str()
    assert "above 0 and at most 86400 (a day)" in result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    with pytest.raises(SystemExit) as exit_info:
        main(["--timeout", seconds])
    assert exit_info.value.code == 2
    assert "at most 86400 (a day)" in capsys.readouterr().err


def test_a_day_is_a_timeout_the_suite_waits(pytester: pytest.Pytester) -> None:
    _run(pytester, "--roteiro-timeout", "86400").assert_outcomes(passed=1)


def test_a_report_path_is_checked_without_changing_what_is_there(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text("earlier", encoding="utf-8")
    assert report_path_problem(report) is None
    assert report.read_text(encoding="utf-8") == "earlier"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda p: os.mkfifo(p / "report.json"), "it is a FIFO"),
        (lambda p: os.mkfifo(p / "report.md"), "it is a FIFO"),
        (lambda p: (p / "report.json").symlink_to("/dev/null"), "it is a character device"),
        (lambda p: (p / "report.json").symlink_to("/dev/stdout"), "it names an open stream"),
    ],
)
def test_a_report_path_that_is_no_regular_file_is_refused_without_opening_it(
    tmp_path: Path, make: Callable[[Path], object], problem: str
) -> None:
    """The report replaces a regular file or nothing: a FIFO (whose opening
    waits for a reader), a device or a stream is refused at once."""
    make(tmp_path)
    found: list[str | None] = []
    checker = threading.Thread(
        target=lambda: found.append(report_path_problem(tmp_path / "report.json")), daemon=True
    )
    checker.start()
    checker.join(60)
    assert found, "checking the path never ended"
    assert found[0] is not None
    assert problem in found[0]


def test_a_report_path_that_is_a_symlink_is_the_path_given(pytester: pytest.Pytester) -> None:
    """The report is written at the path given, its summary beside it: a
    symlink there is replaced, not followed to a folder made for it."""
    (pytester.path / "report.json").symlink_to("elsewhere/target.json")
    _run(pytester, "--roteiro-report", "report.json").assert_outcomes(passed=1)
    assert (pytester.path / "report.md").is_file()
    assert not (pytester.path / "report.json").is_symlink()
    assert json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))["totals"]
    assert not (pytester.path / "elsewhere").exists()


def test_a_report_path_through_an_open_stream_is_refused(pytester: pytest.Pytester) -> None:
    (pytester.path / "report.json").symlink_to("/dev/stdout")
    result = _run(pytester, "--roteiro-report", "report.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "it names an open stream (/dev/stdout)" in result.stderr.str()
