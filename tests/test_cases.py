"""The shipped case files, the registry, and the loader's refusals."""

from __future__ import annotations

import collections
import json
import textwrap
from pathlib import Path

import jsonschema  # type: ignore[import-untyped]  # no stubs among the dev dependencies
import pytest
import yaml

from roteiro_memory.suite.cases import (
    CaseFileError,
    builtin_dir,
    case_files,
    load_cases,
    load_file,
    load_registry,
)
from roteiro_memory.suite.drivers import resolve_backend
from roteiro_memory.suite.durability import ENTRIES
from roteiro_memory.suite.runner import run_case


def test_every_registry_invariant_has_a_case() -> None:
    registry = load_registry()
    cited = collections.Counter(case.invariant for case in load_cases())
    # The shared and crash rules are checked by the durability entries, not cases.
    cited.update(entry.invariant for entry in ENTRIES)
    missing = sorted(tag for tag in registry if tag not in cited)
    assert not missing, f"invariants with no case: {missing}"


def test_registry_covers_the_issue_list() -> None:
    """A floor: the suite must not quietly shrink below the invariants it was asked for."""
    assert len(load_registry()) >= 43


def test_case_ids_are_unique_and_files_are_topics() -> None:
    cases = load_cases()
    ids = [case.id for case in cases]
    assert len(ids) == len(set(ids))
    assert len(case_files()) >= 12
    assert len(cases) >= 80


def test_every_shipped_file_matches_the_schema() -> None:
    schema = json.loads((builtin_dir() / "case.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    for path in case_files():
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator(schema).validate(document)


@pytest.mark.parametrize("backend", ["sqlite", "memory"])
def test_every_case_passes_on_the_reference_backends(backend: str) -> None:
    opened = resolve_backend(backend)
    try:
        outcomes = [(c, run_case(c, opened)) for c in load_cases()]
    finally:
        opened.close()
    failed = [o for _, o in outcomes if o.status == "failed"]
    assert not failed, [f"{o.case_id}: {o.message}" for o in failed]
    # Only the cases checking Unsupported skip a backend that declares everything.
    skipped = [c.id for c, o in outcomes if o.status == "skipped"]
    assert skipped == [c.id for c, _ in outcomes if c.without]


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "topic.yaml"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


GOOD_STEP = "{op: memory.record, args: {kind: lesson, body: x}}"


@pytest.mark.parametrize(
    ("body", "line", "case_id", "where", "problem"),
    [
        pytest.param(
            f"""\
            cases:
              - id: c1
                title: t
                clause: c
                invariant: no-such-tag
                requires: [episodic]
                steps: [{GOOD_STEP}]
            """,
            2,
            "c1",
            "invariant",
            "unknown invariant 'no-such-tag'",
            id="unknown-invariant",
        ),
        pytest.param(
            """\
            cases:
              - id: c2
                title: t
                clause: c
                invariant: ids-never-reused
                requires: [episodic]
                steps:
                  - op: memory.record
                    args: {kind: lesson, body: x}
                    expect: {id: 1}
                    bogus: 1
            """,
            8,
            "c2",
            "steps[0]",
            "'bogus' was unexpected",
            id="unknown-step-field",
        ),
        pytest.param(
            """\
            cases:
              - id: c3
                title: t
                clause: c
                invariant: ids-never-reused
                steps:
                  - {op: memory.get, args: {id: {$ref: a}}}
            """,
            7,
            "c3",
            "steps[0]",
            "refers to 'a', which no earlier step saves",
            id="reference-before-save",
        ),
        pytest.param(
            f"""\
            cases:
              - id: c4
                title: t
                clause: c
                invariant: ids-never-reused
                steps: [{GOOD_STEP}]
            """,
            2,
            "c4",
            "requires",
            "the steps need episodic",
            id="capability-not-declared",
        ),
        pytest.param(
            """\
            cases:
              - id: c5
                title: t
                clause: c
                invariant: ids-never-reused
                requires: [episodic]
                steps:
                  - {op: memory.forgett, args: {id: 1}, error: NotFound}
            """,
            8,
            "c5",
            "steps[0].op",
            "unknown op 'memory.forgett'",
            id="unknown-op",
        ),
        pytest.param(
            """\
            cases:
              - id: c6
                title: t
                clause: c
                invariant: ids-never-reused
                requires: [episodic]
                steps:
                  - {op: memory.get, args: {id: 1}, error: NotFound, expect: {id: 1}}
            """,
            8,
            "c6",
            "steps[0]",
            "cannot also save or check",
            id="error-with-expectation",
        ),
        pytest.param(
            """\
            cases:
              - id: Bad_Id
                title: t
                clause: c
                invariant: ids-never-reused
                steps: [{op: hello}]
            """,
            2,
            "Bad_Id",
            "id",
            "does not match",
            id="malformed-id",
        ),
        pytest.param(
            """\
            cases:
              - id: c8
                title: t
                clause: c
                invariant: ids-never-reused
                requires: [episodic]
                steps:
                  - {op: memory.record, args: {kind: lesson, body: {$repeat: x, times: -1}}}
            """,
            8,
            "c8",
            "steps[0]",
            "$repeat times must be a whole number",
            id="bad-repeat",
        ),
    ],
)
def test_malformed_case_names_file_line_case_and_path(
    tmp_path: Path, body: str, line: int, case_id: str, where: str, problem: str
) -> None:
    path = _write(tmp_path, body)
    with pytest.raises(CaseFileError) as caught:
        load_file(path, load_registry())
    error = caught.value
    assert error.file == str(path)
    assert error.line == line
    assert error.case_id == case_id
    assert error.path == where
    assert problem in str(error)
    assert str(error).startswith(f"{path}:{line}: case {case_id!r}: at {where}: ")


@pytest.mark.parametrize(
    ("steps", "extra", "where", "problem"),
    [
        pytest.param(
            "[{op: graph.export, error: Unsupported}]",
            "",
            "steps[0].error",
            "whose capability 'graph' the case does not exclude",
            id="unsupported-without-without",
        ),
        pytest.param(
            "[{op: graph.export}]",
            "without: [graph]\n",
            "steps[0].op",
            "which the case excludes ('without')",
            id="excluded-op-expecting-success",
        ),
        pytest.param(
            "[{op: graph.export, error: Unsupported}]",
            "without: [graph]\nrequires: [graph]\n",
            "without",
            "both required and excluded",
            id="required-and-excluded",
        ),
        pytest.param(
            "[{raw: '{}', args: {a: 1}}]",
            "",
            "steps[0]",
            "a step with 'raw' sends its line as is",
            id="raw-with-args",
        ),
    ],
)
def test_malformed_capability_and_raw_steps_are_refused(
    tmp_path: Path, steps: str, extra: str, where: str, problem: str
) -> None:
    indented = "".join(f"    {line}\n" for line in extra.splitlines())
    path = _write(
        tmp_path,
        "cases:\n  - id: c9\n    title: t\n    clause: c\n    invariant: bad-request\n"
        f"{indented}    steps: {steps}\n",
    )
    with pytest.raises(CaseFileError) as caught:
        load_file(path, load_registry())
    assert caught.value.path == where
    assert problem in str(caught.value)


def test_invalid_yaml_is_a_case_file_error(tmp_path: Path) -> None:
    path = _write(tmp_path, "cases:\n  - id: [unclosed\n")
    with pytest.raises(CaseFileError, match=r"topic\.yaml:\d+: is not valid YAML"):
        load_file(path, load_registry())


def test_duplicate_ids_across_files_are_refused(tmp_path: Path) -> None:
    case = f"""\
        cases:
          - id: same
            title: t
            clause: c
            invariant: ids-never-reused
            requires: [episodic]
            steps: [{GOOD_STEP}]
        """
    (tmp_path / "a.yaml").write_text(textwrap.dedent(case), encoding="utf-8")
    (tmp_path / "b.yaml").write_text(textwrap.dedent(case), encoding="utf-8")
    with pytest.raises(CaseFileError, match=r"duplicate case id, first defined at .*a\.yaml:2"):
        load_cases([tmp_path], builtin=False)


def test_a_file_in_an_extra_folder_replaces_the_shipped_one(tmp_path: Path) -> None:
    (tmp_path / "ranking.yaml").write_text(
        textwrap.dedent(
            f"""\
            cases:
              - id: my-only-ranking-case
                title: t
                clause: c
                invariant: score-then-newest
                requires: [episodic]
                steps: [{GOOD_STEP}]
            """
        ),
        encoding="utf-8",
    )
    ids = {case.id for case in load_cases([tmp_path])}
    assert "my-only-ranking-case" in ids
    assert "penalty-drifted-is-a-quarter" not in ids
    assert "superseded-record-leaves-recall-at-once" in ids


def test_steps_keep_their_line_numbers() -> None:
    case = next(c for c in load_cases() if c.id == "penalty-drifted-is-a-quarter")
    lines = (builtin_dir() / "ranking.yaml").read_text(encoding="utf-8").splitlines()
    assert lines[case.line - 1].strip() == "- id: penalty-drifted-is-a-quarter"
    recall = case.steps[3]
    assert recall.op == "memory.recall"
    assert lines[recall.line - 1].strip() == "- op: memory.recall"


def test_reference_backends_are_registered_as_entry_points() -> None:
    from roteiro_memory.suite.drivers import entry_point_factories

    assert {"sqlite", "memory"} <= set(entry_point_factories())
