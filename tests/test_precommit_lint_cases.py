"""``roteiro-lint-cases``: case files the suite could not load are findings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml
from precommit_plants import BAD_CASES, GOOD_CASE, plant_cases, plant_fifo

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


def test_lint_cases_reads_reserved_files_as_what_they_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``properties.yaml`` is checked as a properties file, never as a case file."""
    folder = tmp_path / "conformance"
    folder.mkdir()
    reserved = sorted(RESERVED_FILES - {"invariants.yaml"})
    assert reserved == ["properties.yaml"], "the loader reserves names beside the registry"
    (folder / "properties.yaml").write_text("not: [a, case, file]\n")
    status, lines = _run(capsys, folder / "properties.yaml")
    assert status == 1
    assert all("properties.yaml" in line and "case " not in line for line in lines)
    assert any("'properties' is a required property" in line for line in lines)


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


def _two_faults(folder: Path) -> Path:
    path = folder / "conformance" / "two.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "cases:\n"
        "  - {id: one, title: t, clause: c, invariant: ids-never-reused,\n"
        "     requires: [episodic], stepz: []}\n"
        "  - {id: two, title: t, clause: c, invariant: ids-never-reused,\n"
        "     requires: [episodc], steps: [{op: memory.list}]}\n",
        encoding="utf-8",
    )
    return path


def test_lint_cases_reports_every_schema_error_of_a_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status, lines = _run(capsys, "--no-shipped", _two_faults(tmp_path))
    assert status == 1
    assert any("case 'one'" in line and "'stepz' was unexpected" in line for line in lines)
    assert any("case 'two'" in line and "did you mean 'episodic'?" in line for line in lines)


def test_lint_cases_suggests_the_closest_tag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "conformance" / "typo.yaml"
    path.parent.mkdir()
    path.write_text(
        "cases:\n"
        "  - {id: one, title: t, clause: c, invariant: ids-never-reusd,\n"
        "     requires: [episodic], steps: [{op: memory.lst, error: BadRequest}]}\n",
        encoding="utf-8",
    )
    status, lines = _run(capsys, "--no-shipped", path)
    assert status == 1
    assert "unknown invariant 'ids-never-reusd'; did you mean 'ids-never-reused'?" in lines[0]


def test_lint_cases_checks_a_properties_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "conformance" / "properties.yaml"
    path.parent.mkdir()
    path.write_text(
        "properties:\n"
        "  - {id: prop-x, property: reads-never-mutat, invariant: reads-never-mutate,\n"
        "     requires: [snapshot]}\n",
        encoding="utf-8",
    )
    status, lines = _run(capsys, "--no-shipped", path)
    assert status == 1
    assert len(lines) == 1
    assert "did you mean 'reads-never-mutate'?" in lines[0]
    shipped = builtin_dir() / "properties.yaml"
    assert _run(capsys, shipped) == (0, [])


def test_lint_cases_refuses_an_alias_bomb_in_args_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nine levels of ten aliases stand for 10**9 values; refused in well under a second."""
    import time

    levels = ["a: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        levels.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * 10) + "]")
    path = tmp_path / "conformance" / "bomb.yaml"
    path.parent.mkdir()
    path.write_text(
        "\n".join(levels) + "\ncases:\n"
        "  - {id: bomb, title: t, clause: c, invariant: ids-never-reused, requires: [episodic],\n"
        "     steps: [{op: memory.list, args: {x: *l8}}]}\n",
        encoding="utf-8",
    )
    started = time.perf_counter()
    status, lines = _run(capsys, "--no-shipped", path)
    assert time.perf_counter() - started < 5
    assert status == 1
    assert len(lines) == 1
    assert "a YAML alias (*name) repeats a mapping or list here" in lines[0]


@pytest.mark.parametrize("through", ["fifo", "symlink"])
def test_lint_cases_names_a_fifo_without_blocking(tmp_path: Path, through: str) -> None:
    """Issue 22, item 10: a FIFO given as a case file, or beside one, is
    never read (it would wait for a writer for ever)."""
    import subprocess

    folder = tmp_path / "conformance"
    folder.mkdir()
    good = folder / "extra.yaml"
    good.write_text(GOOD_CASE)
    named = plant_fifo(folder / "pipe.yaml", through)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "roteiro_memory.precommit.lint_cases",
            "--no-shipped",
            str(named),
            str(good),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        f"{named}: not a regular file, so not a case file (a case file is YAML text)"
    ]


def test_lint_cases_names_a_symlink_loop_and_lints_its_siblings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A loop of links is a file that cannot be read, said once; it breaks
    neither the other files given nor the search of the folder for ids."""
    folder = tmp_path / "conformance"
    folder.mkdir()
    (folder / "l1.yaml").symlink_to("l2.yaml")
    (folder / "l2.yaml").symlink_to("l1.yaml")
    good = folder / "extra.yaml"
    good.write_text(GOOD_CASE)
    status, lines = _run(capsys, folder / "l1.yaml", good)
    assert status == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{folder / 'l1.yaml'}: cannot be read (")
    assert _run(capsys, good) == (0, [])


def test_lint_cases_says_a_path_it_cannot_read_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file in no folder, under a file, or with a name too long ended in
    a CaseFileError or OSError traceback."""
    (tmp_path / "notdir").write_text("")
    given = [
        tmp_path / "nosuchdir" / "x.yaml",
        tmp_path / "notdir" / "x.yaml",
        tmp_path / ("a" * 300 + ".yaml"),
    ]
    status, lines = _run(capsys, *given)
    assert status == 1
    reasons = ["No such file or directory", "Not a directory", "File name too long"]
    assert lines == [
        f"{path}: cannot be read ({reason}), so it was not examined"
        for path, reason in zip(given, reasons, strict=True)
    ]


def test_lint_cases_refuses_a_file_the_suite_would_never_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``.yml`` case file was linted as valid, and its ids checked for
    duplicates, though the suite loads only ``*.yaml``."""
    folder = tmp_path / "conformance"
    folder.mkdir()
    (folder / "extra.yml").write_text(GOOD_CASE)
    (folder / "extra.yaml").write_text(GOOD_CASE)
    status, lines = _run(capsys, folder / "extra.yml", folder / "extra.yaml")
    assert status == 1
    assert lines == [
        f"{folder / 'extra.yml'}: not a case file: the suite loads only files named *.yaml"
    ]


@pytest.mark.parametrize(
    ("content", "holds"),
    [("", "it is empty"), ("# nothing yet\n", "it is empty"), ("- a\n", "it holds a list")],
)
def test_a_case_file_that_is_no_mapping_is_told_it_must_be_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, holds: str
) -> None:
    """An empty case file (or one holding a list) is named, and told what a
    case file must be and what it holds instead -- never a bare schema
    error about ``None``."""
    path = tmp_path / "conformance" / "extra.yaml"
    path.parent.mkdir()
    path.write_text(content, encoding="utf-8")
    assert _run(capsys, "--no-shipped", path) == (
        1,
        [
            f"{path}: at (top level): a case file must be a mapping with 'cases' (a list), "
            f"and may have 'topic' (text), 'description' (text); {holds}"
        ],
    )
    properties = tmp_path / "conformance" / "properties.yaml"
    properties.write_text("", encoding="utf-8")
    status, lines = _run(capsys, "--no-shipped", properties)
    assert (status, len(lines)) == (1, 1), lines
    assert lines[0].endswith(
        "a properties file must be a mapping with 'properties' (a list), and may have "
        "'description' (text); it is empty"
    )


def test_lint_cases_a_file_named_twice_is_linted_once_never_its_own_duplicate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file given twice (``conformance/*.yaml conformance/extra.yaml``),
    or by two names (``./``, a symlink), had each of its cases reported as a
    duplicate of itself; it is one file, linted once.  A fault in it is
    still found, once."""
    good = tmp_path / "conformance" / "extra.yaml"
    good.parent.mkdir()
    good.write_text(GOOD_CASE)
    link = tmp_path / "conformance" / "link.yaml"
    link.symlink_to(good.name)
    assert _run(capsys, good, good, link, f"{good.parent}/./{good.name}") == (0, [])
    planted = plant_cases(tmp_path / "other" / "conformance", "op")
    status, lines = _run(capsys, *planted.files, *planted.files)
    assert status == 1
    assert len(lines) == 1
    assert lines[0].startswith(planted.expected)
