"""Case files whose values are not JSON, or whose references can name
nothing, are refused where they are written -- file, line and field -- at load
and by ``roteiro-lint-cases``; a reference that names nothing only at run time
is the case file's fault, not the backend's."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from roteiro_memory.precommit.lint_cases import main as lint
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.suite.cases import (
    MAX_CASE_FILE_BYTES,
    MAX_CASES_PER_FILE,
    CaseFileError,
    load_file,
    load_registry,
)
from roteiro_memory.suite.drivers import InProcessBackend
from roteiro_memory.suite.runner import run_case

HEAD = """\
cases:
  - id: c1
    title: t
    clause: c
    invariant: only-forget-removes
    requires: [episodic, snapshot]
    steps:
"""
RECORD = "      - {op: memory.record, args: {kind: lesson, body: x}, save: {a: id}}\n"


def _write(tmp_path: Path, steps: str) -> Path:
    path = tmp_path / "topic.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(steps), "      "), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("steps", "line", "field", "problem"),
    [
        pytest.param(
            "- {op: memory.record, args: {kind: lesson, body: !!binary aGVsbG8=}}\n",
            8,
            None,
            "binary data (!!binary) is no JSON value",
            id="binary",
        ),
        pytest.param(
            "- {op: memory.record, args: {kind: lesson, body: !!set {a, b}}}\n",
            8,
            None,
            "a set (!!set) is no JSON value",
            id="set",
        ),
        pytest.param(
            "- {op: memory.record, args: {kind: lesson, body: 2024-01-01}}\n",
            8,
            None,
            "an unquoted date or time is no JSON value",
            id="date",
        ),
        pytest.param(
            "- {op: memory.record, args: {kind: lesson, body: {$repeat: xxxx, times: 10000000}}}\n",
            8,
            "steps[0]",
            "$repeat makes 40000000 characters; it may make at most 10000000",
            id="repeat-length",
        ),
        pytest.param(
            RECORD.strip() + "\n- {op: memory.get, args: {id: {$ref: a.0.zz}}}\n",
            9,
            "steps[1]",
            "$ref 'a.0.zz' can name nothing: id of memory.record is integer, which has no '0'",
            id="ref-into-an-integer",
        ),
        pytest.param(
            "- {op: memory.list, save: {r: $}}\n"
            "- {op: memory.get, args: {id: {$ref: r.recordz}}}\n",
            9,
            "steps[1]",
            "the result of memory.list has no 'recordz'",
            id="ref-to-no-field",
        ),
        pytest.param(
            "- {op: memory.record, args: {kind: lesson, body: x}, save: {a: 'zz.#.1'}}\n",
            8,
            "steps[0]",
            "save a: 'zz.#.1' can name nothing: the result of memory.record has no 'zz'",
            id="save-path",
        ),
        pytest.param(
            RECORD.strip() + "\n- {op: memory.list, unchanged: a}\n",
            9,
            "steps[1].unchanged",
            "'a' names no snapshot saved by an earlier step",
            id="unchanged-names-no-snapshot",
        ),
        pytest.param(
            "- {op: memory.list, expect: {records.#: .nan}}\n",
            8,
            "steps[0].expect",
            "expect holds NaN or an infinity, which no answer can carry",
            id="expected-nan",
        ),
        pytest.param(
            "- {op: memory.list, contains: {path: records, key: id, values: [-.inf]}}\n",
            8,
            "steps[0].contains",
            "contains holds NaN or an infinity",
            id="contained-infinity",
        ),
    ],
)
def test_a_case_file_error_names_file_line_and_field_at_load_and_lint(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    steps: str,
    line: int,
    field: str | None,
    problem: str,
) -> None:
    path = _write(tmp_path, steps)
    with pytest.raises(CaseFileError) as caught:
        load_file(path, load_registry())
    error = caught.value
    assert (error.file, error.line, error.path) == (str(path), line, field)
    assert problem in error.problem
    assert lint(["--no-shipped", str(path)]) == 1
    said = capsys.readouterr()
    assert f"{path}:{line}:" in said.out + said.err
    assert problem in said.out + said.err


def test_a_snapshot_and_a_path_the_schema_leaves_open_are_accepted(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """\
        - {op: store.snapshot, save: {before: $}}
        - {op: memory.list, save: {r: $}}
        - {op: memory.get, args: {id: {$ref: r.records.0.id}}, error: NotFound, unchanged: before}
        """,
    )
    (case,) = load_file(path, load_registry())
    assert len(case.steps) == 3


def test_a_ref_that_names_nothing_at_run_time_is_a_case_file_error(tmp_path: Path) -> None:
    """The listing is empty, so ``records.0`` names nothing: the case's fault."""
    path = _write(
        tmp_path,
        """\
        - {op: memory.list, save: {r: $}}
        - {op: memory.get, args: {id: {$ref: r.records.0.id}}}
        """,
    )
    (case,) = load_file(path, load_registry())
    backend = InProcessBackend(ModelStore(), "memory")
    with pytest.raises(CaseFileError) as caught:
        run_case(case, backend)
    assert (caught.value.line, caught.value.path, caught.value.case_id) == (9, "steps[1]", "c1")
    assert "$ref 'r.records.0.id' names nothing in what 'r' saved" in caught.value.problem


def test_a_case_file_over_the_byte_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    """The size is the refusal, not what a parser would make of the text:
    past the limit the file is not even YAML, and that is never read."""
    path = tmp_path / "huge.yaml"
    padding = "#" + "x" * (MAX_CASE_FILE_BYTES - 1) + "\n"
    path.write_text(HEAD + RECORD + padding + "cases: [not: yaml: {\n", encoding="utf-8")
    with pytest.raises(CaseFileError) as refused:
        load_file(path, load_registry())
    assert str(refused.value) == (
        f"{path}: is larger than {MAX_CASE_FILE_BYTES:,} bytes, the most such a file may "
        "hold: split its cases among several files in the folder, one topic each"
    )


def test_a_case_file_cut_by_the_byte_limit_inside_a_character_is_refused_for_its_size(
    tmp_path: Path,
) -> None:
    """The limit can fall inside a character of several bytes: the refusal
    is still the size, not an undecodable read."""
    path = tmp_path / "wide.yaml"
    body = (HEAD + RECORD).encode("utf-8")
    fill = MAX_CASE_FILE_BYTES - len(body) - 1  # '#' and then 'é' straddling the limit
    path.write_bytes(body + b"#" + b"x" * fill + "é".encode() * 4 + b"\n")
    with pytest.raises(CaseFileError) as refused:
        load_file(path, load_registry())
    assert "is larger than 1,048,576 bytes" in str(refused.value)


def test_a_case_file_holding_more_cases_than_the_limit_is_refused_naming_both(
    tmp_path: Path,
) -> None:
    one = HEAD.removeprefix("cases:\n") + RECORD
    path = tmp_path / "many.yaml"
    cases = "".join(one.replace("id: c1", f"id: c{n}") for n in range(MAX_CASES_PER_FILE + 1))
    path.write_text("cases:\n" + cases, encoding="utf-8")
    assert path.stat().st_size < MAX_CASE_FILE_BYTES
    with pytest.raises(CaseFileError) as refused:
        load_file(path, load_registry())
    assert str(refused.value) == (
        f"{path}: holds {MAX_CASES_PER_FILE + 1:,} cases, more than the "
        f"{MAX_CASES_PER_FILE:,} a case file may hold: split its cases among several files "
        "in the folder, one topic each"
    )
    kept = path.read_text(encoding="utf-8").split("  - id: c1000\n")[0]
    path.write_text(kept, encoding="utf-8")
    assert len(load_file(path, load_registry())) == MAX_CASES_PER_FILE


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"cases: []\n\xff\n", "is not UTF-8 text: byte 10 is b'\\xff'"),
        ("cases: []\n".encode("utf-16"), "is UTF-16 text (its byte order mark says)"),
    ],
)
def test_a_case_file_that_is_not_utf8_says_case_files_are(
    tmp_path: Path, data: bytes, said: str
) -> None:
    """Never the codec's own words alone: the file is named, what is wrong
    with it, and what a case file must be."""
    path = tmp_path / "odd.yaml"
    path.write_bytes(data)
    with pytest.raises(CaseFileError) as refused:
        load_file(path, load_registry())
    message = str(refused.value)
    assert message.startswith(f"{path}: {said}"), message
    assert message.endswith("a case file is UTF-8: save it as UTF-8"), message
    assert "codec" not in message
