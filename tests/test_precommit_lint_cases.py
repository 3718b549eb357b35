"""``roteiro-lint-cases``: case files the suite could not load are findings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from precommit_plants import BAD_CASES, GOOD_CASE, plant_cases

from roteiro_memory.precommit.lint_cases import main
from roteiro_memory.suite.cases import RESERVED_FILES, builtin_dir, case_files


def _run(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, list[str]]:
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert err == ""
    return status, out.splitlines()


def test_lint_cases_passes_the_shipped_cases(capsys: pytest.CaptureFixture[str]) -> None:
    files = case_files(builtin=True)
    assert files, "the package ships case files"
    assert _run(capsys, *files, builtin_dir() / "invariants.yaml") == (0, [])


def test_lint_cases_passes_a_new_valid_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "conformance" / "extra.yaml"
    good.parent.mkdir()
    good.write_text(GOOD_CASE)
    assert _run(capsys, good) == (0, [])


@pytest.mark.parametrize("how", sorted(BAD_CASES))
def test_lint_cases_reports_each_planted_fault(
    how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    planted = plant_cases(tmp_path / "conformance", how)
    status, lines = _run(capsys, *planted.files)
    assert status == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith(planted.expected), how
    assert planted.mentions in lines[0]


def test_lint_cases_reports_an_id_a_shipped_case_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = case_files(builtin=True)[0]
    folder = tmp_path / "conformance"
    folder.mkdir()
    taken = yaml.safe_load(shipped.read_text())["cases"][0]["id"]
    copy = folder / "mine.yaml"
    copy.write_text(GOOD_CASE.replace("id: extra-record-returns-id", f"id: {taken}"))
    status, lines = _run(capsys, copy)
    assert status == 1
    assert len(lines) == 1
    assert lines[0].startswith(f"{copy}:2: case {taken!r}: duplicate case id, first defined at ")
    line = next(
        n for n, text in enumerate(shipped.read_text().splitlines(), 1) if f"id: {taken}" in text
    )
    assert lines[0].endswith(f"{shipped.name}:{line}")
    assert _run(capsys, "--no-shipped", copy) == (0, [])
    # A file named like the shipped one replaces it, so its ids are its own.
    replacement = folder / shipped.name
    copy.rename(replacement)
    assert _run(capsys, replacement) == (0, [])


def test_lint_cases_finds_an_id_an_unchanged_file_uses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pre-commit passes only changed files; the folder's others still count."""
    planted = plant_cases(tmp_path / "conformance", "duplicate")
    changed = planted.files[1]
    status, lines = _run(capsys, changed)
    assert status == 1
    assert lines == [planted.expected]


def test_lint_cases_checks_each_folder_on_its_own(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad registry in one folder does not hide a fault in another."""
    registry = plant_cases(tmp_path / "one" / "conformance", "registry")
    op = plant_cases(tmp_path / "two" / "conformance", "op")
    status, lines = _run(capsys, *registry.files, *op.files)
    assert status == 1
    assert len(lines) == 2
    assert lines[0].startswith(registry.expected)
    assert lines[1].startswith(op.expected)


def test_lint_cases_passes_over_reserved_files_that_are_not_cases(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "conformance"
    folder.mkdir()
    reserved = sorted(RESERVED_FILES - {"invariants.yaml"})
    assert reserved, "the loader reserves names beside the registry"
    files = [folder / name for name in reserved]
    for path in files:
        path.write_text("not: [a, case, file]\n")
    assert _run(capsys, *files) == (0, [])


def test_lint_cases_without_the_suite_extra_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pip install roteiro-memory`` alone: the exact install command, no traceback."""
    from roteiro_memory.suite.extras import suite_install_command

    monkeypatch.setitem(sys.modules, "jsonschema", None)
    status = main([str(tmp_path / "a.yaml")])
    out, err = capsys.readouterr()
    assert status == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    assert "roteiro-lint-cases needs roteiro-memory's 'suite' extra" in err
    assert err.strip().endswith(suite_install_command())
    assert "'jsonschema>=4.20'" in suite_install_command()
