"""``roteiro-conformance``: the suite against a repository's own backend."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from precommit_plants import plant_backend_repo

from roteiro_memory.precommit.conformance import main


@pytest.fixture
def backend_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    repo = plant_backend_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    return repo


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    status = main(list(args))
    out, err = capsys.readouterr()
    assert err == ""
    return status, out.splitlines()


def test_conformance_passes_a_sound_backend_on_every_shipped_case(
    backend_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(capsys, "--backend", "mybackend:sound") == (0, [])
    assert not (backend_repo / ".pytest_cache").exists()


def test_conformance_reports_each_failing_case_on_one_line(
    backend_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, lines = _run(
        capsys, "--backend", "mybackend:broken", "--cases", "cases", "--no-shipped-cases"
    )
    assert status == 1
    assert lines == [
        "cases/extra.yaml:8: case 'extra-record-returns-id': step 1 memory.record: "
        "id differs (expected 1, actual 101)"
    ]


def test_a_failing_case_is_named_by_its_files_path_in_the_repository(
    backend_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder of cases nested in the repository, given by its absolute
    path: a failing case is named by its file's path from the repository's
    root, which an editor opens -- never by the file's name alone, which
    files of two folders may share."""
    nested = backend_repo / "suites" / "own"
    nested.mkdir(parents=True)
    (backend_repo / "cases" / "extra.yaml").rename(nested / "extra.yaml")
    status, lines = _run(
        capsys,
        "--backend",
        "mybackend:broken",
        "--cases",
        str(nested),
        "--no-shipped-cases",
    )
    assert status == 1
    assert lines == [
        "suites/own/extra.yaml:8: case 'extra-record-returns-id': step 1 memory.record: "
        "id differs (expected 1, actual 101)"
    ]


def test_conformance_reports_a_backend_that_cannot_be_made_once(
    backend_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, lines = _run(
        capsys, "--backend", "nosuchmodule:make", "--cases", "cases", "--no-shipped-cases"
    )
    assert status == 1
    assert len(lines) == 1
    assert lines[0].startswith("backend 'nosuchmodule:make': cannot import module 'nosuchmodule'")


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        ("RuntimeError('cannot start')", "RuntimeError: cannot start"),
        # sys.exit in the factory ended pytest's session with an INTERNALERROR.
        ("SystemExit('gave up')", "SystemExit: gave up"),
    ],
)
def test_conformance_reports_a_backend_that_fails_to_start(
    backend_repo: Path, capsys: pytest.CaptureFixture[str], raised: str, said: str
) -> None:
    (backend_repo / "explode.py").write_text(f"def make():\n    raise {raised}\n")
    status, lines = _run(capsys, "--backend", "explode:make", "--cases", "cases")
    assert status == 1
    assert lines == [f"backend 'explode:make': could not be created: {said}"]


def test_conformance_reports_a_missing_cases_folder(
    backend_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, lines = _run(capsys, "--backend", "mybackend:sound", "--cases", "missing")
    assert status == 1
    assert len(lines) == 1
    assert lines[0].startswith("backend 'mybackend:sound': ")
    assert "missing: is not a folder of case files" in lines[0]


def test_conformance_reports_a_case_file_that_does_not_load(
    backend_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (backend_repo / "cases" / "broken.yaml").write_text("cases: [\n")
    status, lines = _run(
        capsys, "--backend", "mybackend:sound", "--cases", "cases", "--no-shipped-cases"
    )
    assert status == 1
    assert len(lines) == 1
    assert lines[0].startswith("backend 'mybackend:sound': ")
    assert "broken.yaml" in lines[0]


def test_conformance_takes_the_backend_from_the_pytest_configuration(
    backend_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (backend_repo / "pytest.ini").write_text(
        "[pytest]\nroteiro_backend = mybackend:broken\naddopts = --no-such-option\n"
    )
    status, lines = _run(capsys, "--cases", "cases", "--no-shipped-cases")
    assert status == 1
    assert lines == [
        "cases/extra.yaml:8: case 'extra-record-returns-id': step 1 memory.record: "
        "id differs (expected 1, actual 101)"
    ]


def test_conformance_with_no_backend_named_checks_nothing_and_says_so(
    backend_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The plugin's own default, sqlite, was checked in the backend's stead,
    and the hook passed a repository whose backend could not even be made."""
    from roteiro_memory.suite.drivers import NO_BACKEND_NAMED

    assert _run(capsys) == (1, [f"roteiro-conformance: {NO_BACKEND_NAMED}"])
    (backend_repo / "pytest.ini").write_text("[pytest]\nroteiro_backend = memory\n")
    assert _run(capsys, "--cases", "cases", "--no-shipped-cases") == (0, [])


@pytest.mark.parametrize(
    ("given", "ini", "leaving_out"),
    [
        (("--no-shipped-cases",), "", "--no-shipped-cases"),
        (
            (),
            "roteiro_builtin_cases = false\n",
            "roteiro_builtin_cases = false (pytest configuration)",
        ),
    ],
)
def test_conformance_with_no_case_left_to_run_is_refused_in_its_own_words(
    backend_repo: Path,
    capsys: pytest.CaptureFixture[str],
    given: tuple[str, ...],
    ini: str,
    leaving_out: str,
) -> None:
    """The shipped cases left out and no folder named: one line on stderr,
    status 2, naming the hook's options (--cases), not the plugin's
    (--roteiro-cases, --roteiro-no-builtin-cases) the user never typed."""
    (backend_repo / "pytest.ini").write_text(f"[pytest]\n{ini}")
    status = main(["--backend", "mybackend:sound", *given])
    out, err = capsys.readouterr()
    assert (status, out) == (2, "")
    assert err == (
        f"roteiro-conformance: {leaving_out} runs only the cases in --cases folders, and none "
        "is named: name a folder of case files with --cases DIR (or roteiro_cases in the "
        "pytest configuration), or leave the option out to run the shipped cases\n"
    )


def test_conformance_runs_the_configured_cases_alone(
    backend_repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder named by the pytest configuration is a folder: not refused."""
    (backend_repo / "pytest.ini").write_text("[pytest]\nroteiro_cases = cases\n")
    assert _run(capsys, "--backend", "mybackend:sound", "--no-shipped-cases") == (0, [])


def test_conformance_takes_no_files(capsys: pytest.CaptureFixture[str]) -> None:
    """It named ``[FILE ...]`` in its usage and ignored them."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--backend", "memory", "extra.yaml"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: extra.yaml" in capsys.readouterr().err


def test_conformance_usage_error_is_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--timeout", "soon"])
    assert exit_info.value.code == 2
    assert "--timeout" in capsys.readouterr().err


@pytest.mark.parametrize("through", ["in-process", "cmd"])
def test_the_conformance_hook_never_prints_the_dsn_password(
    backend_repo: Path, capsys: pytest.CaptureFixture[str], through: str
) -> None:
    """A PostgreSQL backend that cannot connect is one finding naming it, as
    the plugin names it: with its password withheld."""
    if not os.environ.get("CI"):  # CI installs the [postgres] extra: there, a missing one fails
        pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")
    spec = "postgres:postgresql://alice:WrongPw9@127.0.0.1:1/postgres"
    if through == "cmd":
        spec = f"cmd:{sys.executable} -m roteiro_memory protocol --backend {spec}"
    status, lines = _run(capsys, "--backend", spec, "--cases", "cases")
    assert status == 1
    assert len(lines) == 1, lines
    assert "WrongPw9" not in lines[0]
    assert lines[0].startswith(f"backend {spec.replace('WrongPw9', '<password>')!r}: ")
    assert "cannot connect" in lines[0]
