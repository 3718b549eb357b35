"""The pytest plugin, driven through pytester as a user would run it."""

from __future__ import annotations

import hashlib
import json
import sys
import textwrap
from pathlib import Path

import pytest

from roteiro_memory.suite.cases import builtin_dir, load_cases
from roteiro_memory.suite.durability import ENTRIES as DURABILITY_ENTRIES

pytest_plugins = ["pytester"]

MUTANT = '''
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.protocol import Ops


class DriftSilenced:
    """Answers like the model store, except that drift silences a record."""

    def __init__(self):
        self.ops = Ops(ModelStore())

    def call(self, op, args):
        result = self.ops.call(op, args)
        if op == "memory.recall":
            for item in result["results"]:
                if item["record"]["anchor_state"] == "drifted":
                    item["anchor_penalty"] = 0.0
                    item["score"] = 0.0
        return result


def make():
    return DriftSilenced()


def episodic_only():
    store = ModelStore()
    store.capabilities = ("episodic",)
    return store
'''

FAILING = "penalty-drifted-is-a-quarter"
PASSING = "ids-increase"


@pytest.fixture
def mutant(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(mutant_backend=MUTANT)
    pytester.syspathinsert()
    return pytester


def test_plugin_is_inert_without_the_flag(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain=textwrap.dedent(
            """
            import sys

            def test_nothing_heavy_was_imported():
                heavy = ["roteiro_memory.suite.cases", "roteiro_memory.suite.runner", "jsonschema",
                         "roteiro_memory"]
                assert [m for m in heavy if m in sys.modules] == []
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert "roteiro conformance" not in result.stdout.str()


def test_options_appear_in_their_group(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    text = result.stdout.str()
    assert "roteiro conformance suite (ADR-0013):" in text
    for option in (
        "--roteiro-conformance",
        "--roteiro-backend=SPEC",
        "--roteiro-cases=DIR",
        "--roteiro-report=PATH",
        "--roteiro-known-failures=FILE",
        "--roteiro-timeout=SECONDS",
    ):
        assert option in text
    assert "roteiro_backend (string)" in text


def test_suite_runs_from_an_empty_folder(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--roteiro-conformance", "-k", "ids-")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*roteiro conformance: sqlite*", "*episodic*"])


def test_the_ini_file_can_turn_the_suite_on(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nroteiro_conformance = true\nroteiro_backend = memory\n")
    result = pytester.runpytest("-k", "ids-increase")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*roteiro conformance: memory*"])


def test_items_are_named_by_case_id_with_markers(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--roteiro-conformance", "--collect-only", "-q", "-m", "invariant_ids_never_reused"
    )
    ids = [c.id for c in load_cases() if c.invariant == "ids-never-reused"]
    for case_id in ids:
        result.stdout.fnmatch_lines([f"conformance/*.yaml::{case_id}"])
    result.stdout.fnmatch_lines([f"{len(ids)}/* tests collected*"])


def test_malformed_case_file_is_a_collection_error(pytester: pytest.Pytester) -> None:
    cases = pytester.mkdir("mycases")
    (cases / "broken.yaml").write_text(
        textwrap.dedent(
            """\
            cases:
              - id: my-broken-case
                title: t
                clause: c
                invariant: ids-never-reused
                requires: [episodic]
                steps:
                  - op: memory.record
                    args: {kind: lesson, body: x}
                    expect: {id: 1}
                    approx: {id: "one"}
            """
        ),
        encoding="utf-8",
    )
    result = pytester.runpytest("--roteiro-conformance", "--roteiro-cases", str(cases))
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*ERROR collecting conformance/broken.yaml*", "*1 error*"])
    where = f"{cases / 'broken.yaml'}:11: case 'my-broken-case': at steps[0].approx.id: "
    assert where + "'one' fits none of the allowed forms" in result.stdout.str()


def test_missing_capability_skips_with_the_reason(mutant: pytest.Pytester) -> None:
    result = mutant.runpytest(
        "--roteiro-conformance",
        "--roteiro-backend",
        "mutant_backend:episodic_only",
        "-rs",
        "-k",
        f"{PASSING} or cache-bytes-count-utf8",
    )
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["*SKIPPED*does not declare the capability 'cache'*(declared: episodic)*"]
    )


def _step_line(case_id: str, step: int) -> int:
    case = next(c for c in load_cases() if c.id == case_id)
    return case.steps[step - 1].line


def test_failure_reads_like_an_assertion(mutant: pytest.Pytester) -> None:
    result = mutant.runpytest(
        "--roteiro-conformance", "--roteiro-backend", "mutant_backend:make", "-k", FAILING
    )
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    line = _step_line(FAILING, 4)
    for expected in (
        f"case {FAILING}: A drifted record is demoted to a quarter",
        "clause: ADR-0013",
        "invariant: penalty-never-zero",
        f"step 4 at {builtin_dir() / 'ranking.yaml'}:{line}",
        "op: memory.recall {}",
        "results.0.anchor_penalty differs",
        "expected: 0.25",
        "actual:   0.0",
    ):
        assert expected in text
    assert "Traceback" not in text
    assert "pytest_roteiro/" not in text.replace(str(builtin_dir()), "")


def test_structures_are_shown_as_a_diff(mutant: pytest.Pytester) -> None:
    cases = mutant.mkdir("diffcases")
    (cases / "diff.yaml").write_text(
        textwrap.dedent(
            """\
            cases:
              - id: whole-result
                title: t
                clause: c
                invariant: ids-never-reused
                requires: [episodic]
                steps:
                  - op: memory.list
                    expect: {$: {schema: roteiro.memory/v1, records: [], live: 1, superseded: 0}}
            """
        ),
        encoding="utf-8",
    )
    result = mutant.runpytest(
        "--roteiro-conformance",
        "--roteiro-no-builtin-cases",
        "--roteiro-cases",
        str(cases),
        "--roteiro-backend",
        "memory",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*diff (expected -> actual):*", '*-  "live": 1,*', '*+  "live": 0,*']
    )


def test_known_failures(mutant: pytest.Pytester) -> None:
    mutant.makefile(
        ".yaml",
        known=f"- id: {FAILING}\n  reason: drift is silenced\n  link: https://example.org/1\n",
    )
    result = mutant.runpytest(
        "--roteiro-conformance",
        "--roteiro-backend",
        "mutant_backend:make",
        "--roteiro-known-failures",
        "known.yaml",
        "-rx",
        "-k",
        f"{FAILING} or {PASSING}",
    )
    result.assert_outcomes(passed=1, xfailed=1)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*XFAIL*drift is silenced (https://example.org/1)*"])
    result.stdout.fnmatch_lines(["*known-failing*", "*episodic*1 *"])


def test_a_known_failure_that_passes_fails_the_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", known=f"- id: {PASSING}\n  reason: was broken once\n")
    result = pytester.runpytest(
        "--roteiro-conformance", "--roteiro-known-failures", "known.yaml", "-k", PASSING
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*case {PASSING} is listed in*known.yaml*but now passes*"])


def test_a_known_failure_may_name_a_property_entry(pytester: pytest.Pytester) -> None:
    """Property entries are listed like cases; the reference keeps this one, so
    the listed entry now passes and the run fails, as for a case."""
    prop = "prop-reads-never-mutate"
    pytester.makefile(".yaml", known=f"- id: {prop}\n  reason: slow to fix\n")
    result = pytester.runpytest(
        "--roteiro-conformance", "--roteiro-known-failures", "known.yaml", "-k", prop
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*{prop} is listed in*known.yaml*but now passes*"])


def test_a_known_failure_naming_no_case_is_an_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", known="- id: no-such-case\n  reason: typo\n")
    result = pytester.runpytest("--roteiro-conformance", "--roteiro-known-failures", "known.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*known.yaml*'no-such-case' name no conformance case*"])


def test_report_files_are_written(mutant: pytest.Pytester) -> None:
    result = mutant.runpytest(
        "--roteiro-conformance",
        "--roteiro-backend",
        "mutant_backend:make",
        "--roteiro-report",
        "out/report.json",
        "-k",
        f"{FAILING} or {PASSING} or penalty-vanished",
    )
    result.assert_outcomes(passed=2, failed=1)
    report = json.loads((mutant.path / "out" / "report.json").read_text(encoding="utf-8"))
    assert report["backend"] == "mutant_backend:make"
    assert report["implementation"].startswith("roteiro-memory (")  # from its hello
    result.stdout.fnmatch_lines(["*roteiro conformance: mutant_backend:make (roteiro-memory (*"])
    assert report["totals"] == {"passed": 2, "failed": 1, "skipped": 0, "known-failing": 0}
    verdicts = {inv["tag"]: inv["verdict"] for inv in report["invariants"]}
    assert verdicts["penalty-never-zero"] == "failed"
    assert verdicts["ids-never-reused"] == "passed"
    assert verdicts["eviction-order"] == "not run"
    episodic = next(row for row in report["compliance"] if row["capability"] == "episodic")
    assert (episodic["passed"], episodic["failed"], episodic["level"]) == (1, 1, "partial")
    failed = next(c for c in report["cases"] if c["status"] == "failed")
    assert failed["outcome"]["step"] == 4
    assert failed["outcome"]["expected"] == 0.25
    assert failed["rules"] == ["P-score"]
    assert [b["path"] for b in failed["outcome"]["breaches"]] == [
        "results.0.anchor_penalty",
        "results.0.score",
    ]
    assert (failed["outcome"]["breached_steps"], failed["outcome"]["steps"]) == (1, 4)
    assert report["suite"]["protocol"] == "roteiro.conformance/v1"
    digest = hashlib.sha256((builtin_dir() / "PROTOCOL.md").read_bytes()).hexdigest()
    assert report["suite"]["protocol_sha256"] == digest
    from roteiro_memory.precommit.conformance_report import load_report

    assert load_report(mutant.path / "out" / "report.json") == report  # fits report.schema.json
    markdown = (mutant.path / "out" / "report.md").read_text(encoding="utf-8")
    not_run = episodic["invariants"] - 2
    assert f"| episodic | {episodic['invariants']} | 1 | 1 | 0 | {not_run} | partial |" in markdown
    assert f"### `{FAILING}` -- failed" in markdown
    assert f"Implementation: `{report['implementation']}`." in markdown


def test_junitxml_and_last_failed(mutant: pytest.Pytester) -> None:
    args = ["--roteiro-conformance", "--roteiro-backend", "mutant_backend:make"]
    first = mutant.runpytest(
        *args, "-k", "penalty-drifted or penalty-vanished", "--junitxml", "junit.xml"
    )
    first.assert_outcomes(passed=1, failed=1)
    xml = (mutant.path / "junit.xml").read_text(encoding="utf-8")
    assert f'name="{FAILING}"' in xml
    assert 'classname="conformance.ranking.yaml"' in xml
    again = mutant.runpytest(*args, "--lf")
    again.assert_outcomes(failed=1)
    again.stdout.fnmatch_lines(["*run-last-failure*"])


def test_exitfirst_stops_after_the_first_failure(mutant: pytest.Pytester) -> None:
    result = mutant.runpytest(
        "--roteiro-conformance", "--roteiro-backend", "mutant_backend:make", "-x"
    )
    outcomes = result.parseoutcomes()
    assert outcomes["failed"] == 1
    assert outcomes.get("passed", 0) < len(load_cases()) - 1


def test_xdist_runs_the_cases_and_reports_once(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance",
        "-n",
        "2",
        "-k",
        "eviction-parity or ids-",
        "--roteiro-report",
        "r.json",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(passed=7)
    report = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    assert report["totals"]["passed"] == 7
    assert result.stdout.str().count("roteiro conformance: sqlite") == 1


def test_a_conftest_hook_can_register_a_named_backend(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        textwrap.dedent(
            """
            from roteiro_memory.stores.model import ModelStore

            def pytest_roteiro_backend_factories(config):
                return {"from-conftest": ModelStore}
            """
        )
    )
    result = pytester.runpytest(
        "--roteiro-conformance", "--roteiro-backend", "from-conftest", "-k", PASSING
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*roteiro conformance: from-conftest*"])


def test_a_conftest_hook_can_build_the_backend_itself(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        textwrap.dedent(
            """
            from roteiro_memory.suite.drivers import InProcessBackend
            from roteiro_memory.stores.model import ModelStore

            BUILT = []

            def pytest_roteiro_make_backend(config, spec):
                if spec == "special":
                    BUILT.append(spec)
                    return InProcessBackend(ModelStore(), "special")
                return None

            def pytest_sessionfinish(session):
                assert BUILT == ["special"]
            """
        )
    )
    result = pytester.runpytest(
        "--roteiro-conformance", "--roteiro-backend", "special", "-k", PASSING
    )
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK


def test_an_unknown_backend_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(
        "--roteiro-conformance", "--roteiro-backend", "nosuch", "-k", PASSING
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown backend 'nosuch': expected one of *memory*sqlite*"])


def test_a_factory_that_raises_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(broken_backend="def make():\n    raise RuntimeError('no database')\n")
    pytester.syspathinsert()
    result = pytester.runpytest(
        "--roteiro-conformance", "--roteiro-backend", "broken_backend:make", "-k", PASSING
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*backend 'broken_backend:make' could not be created: RuntimeError: no database*"]
    )


def _verdicts(run: pytest.RunResult) -> dict[str, str]:
    """Each item's outcome, from ``-rA``'s short summary."""
    found: dict[str, str] = {}
    for line in run.outlines:
        word, _, rest = line.partition(" ")
        if word == "SKIPPED":  # SKIPPED [N] where: why -- several items to a line
            found[rest.split(" ", 1)[1]] = word
        elif word in ("PASSED", "FAILED", "XFAIL", "XPASS", "ERROR"):
            found[rest.split(" ")[0]] = word
    return found


def test_two_runs_give_the_same_verdicts_without_ci(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Against a backend that reports faults in the wrong order for some
    inputs only, two runs of the whole suite agree, CI set or not; the seed
    is printed.  (With random sequences they agreed by chance.)"""
    import mutants

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("PYTHONPATH", str(Path(mutants.__file__).parent))
    runs = []
    for hash_seed in ("1", "2"):
        monkeypatch.setenv("PYTHONHASHSEED", hash_seed)
        run = pytester.runpytest_subprocess(
            "--roteiro-conformance",
            "--roteiro-backend",
            "mutants:FaultOrderForCasedKinds",
            "-rA",
            "-p",
            "no:cacheprovider",
        )
        runs.append(run)
        assert "Properties used the fixed seed 0, the same every run" in run.stdout.str()
    first, second = (_verdicts(run) for run in runs)
    assert first == second
    totals = runs[0].parseoutcomes()
    assert totals == runs[1].parseoutcomes()
    counted = sum(totals.get(word, 0) for word in ("passed", "failed", "skipped", "xfailed"))
    from roteiro_memory.suite.properties import PROPERTIES

    assert counted == len(load_cases()) + len(PROPERTIES) + len(DURABILITY_ENTRIES)


@pytest.mark.parametrize(
    "command",
    ["./nope", "python -c 'import sys; sys.exit(3)'", "python -c 'raise SystemExit(1/0)'"],
)
def test_a_backend_that_cannot_start_is_one_error(pytester: pytest.Pytester, command: str) -> None:
    """Not a failure per case, nor a traceback per property: one line, exit 4."""
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance", "--roteiro-backend", f"cmd:{command}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.errlines if line.strip()]
    assert len(errors) == 1, result.errlines
    assert errors[0].startswith("ERROR: backend ")
    assert "cannot be used: hello failed" in errors[0]
    assert "restarted" not in errors[0]
    assert "Traceback" not in result.stdout.str()
    if "1/0" in command:
        assert "ZeroDivisionError" in errors[0]


def test_a_cmd_backend_over_a_store_holding_data_is_refused(pytester: pytest.Pytester) -> None:
    """``cmd:roteiro-memory protocol --db victim.db`` on a team's store: refused, kept."""
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    victim = pytester.path / "victim.db"
    store = SQLiteStore(victim)
    store.record(kind="decision", body="keep the team's records")
    store.close()
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance",
        "--roteiro-backend",
        f"cmd:{sys.executable} -m roteiro_memory protocol --db {victim}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: backend *already holds 1 record(s)*--roteiro-allow-reset*"]
    )
    store = SQLiteStore(victim)
    assert [r.body for r in store.list().records] == ["keep the team's records"]
    store.close()


def test_the_short_summary_shows_the_first_mismatch(
    mutant: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-ra`` names what differed, not the case again; so does each block's first line."""
    monkeypatch.setenv("COLUMNS", "300")
    args = ["--roteiro-conformance", "--roteiro-backend", "mutant_backend:make", "-k", FAILING]
    headline = (
        "results.0.anchor_penalty: expected 0.25, actual 0.0 (and 1 more breach: 1 of 4 steps)"
    )
    for extra in ([], ["-n", "2"]):
        result = mutant.runpytest_subprocess(
            *args, "-ra", "-o", "console_output_style=classic", *extra
        )
        result.stdout.fnmatch_lines([f"FAILED conformance/ranking.yaml::{FAILING} - {headline}"])


@pytest.mark.parametrize("style", ["short", "line"])
def test_tb_short_and_line_shorten_the_block(mutant: pytest.Pytester, style: str) -> None:
    args = ["--roteiro-conformance", "--roteiro-backend", "mutant_backend:make", "-k", FAILING]
    full = mutant.runpytest(*args).stdout.str()
    result = mutant.runpytest(*args, f"--tb={style}")
    text = result.stdout.str()
    assert len(text.splitlines()) < len(full.splitlines())
    where = f"{builtin_dir() / 'ranking.yaml'}:{_step_line(FAILING, 4)}"
    if style == "line":
        result.stdout.fnmatch_lines(
            [f"{where}: results.0.anchor_penalty: expected 0.25, actual 0.0 (and 1 more*"]
        )
        assert "clause:" not in text
    else:
        assert "results.0.anchor_penalty: expected 0.25, actual 0.0" in text
        assert "op: memory.recall {}" in text


def test_a_skip_points_at_the_yaml_case(mutant: pytest.Pytester) -> None:
    result = mutant.runpytest(
        "--roteiro-conformance", "--roteiro-backend", "mutant_backend:episodic_only", "-rs"
    )
    skips = [line for line in result.outlines if line.startswith("SKIPPED")]
    assert skips
    # A case's skip names its YAML line; a durability entry, which has none,
    # the suite module that defines it -- never the plugin.
    cases = [line for line in skips if "suite/durability.py:" not in line]
    assert cases
    assert all(".yaml:" in line and "plugin.py" not in line for line in cases), skips


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]])
def test_a_node_id_from_a_failed_line_runs_that_case(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """Also in a project with a ``conformance/`` folder of its own."""
    own = pytester.mkdir("conformance")
    (own / "test_theirs.py").write_text("def test_theirs():\n    pass\n", encoding="utf-8")
    (own / "ranking.yaml").write_text("not: a case file\n", encoding="utf-8")
    result = pytester.runpytest_subprocess(
        "--roteiro-conformance",
        "-p",
        "no:cacheprovider",
        "-v",
        f"conformance/ranking.yaml::{FAILING}",
        "conformance/properties.yaml::prop-reads-never-mutate",
        *xdist,
    )
    result.assert_outcomes(passed=2)
    ran = [line for line in result.outlines if f"conformance/ranking.yaml::{FAILING}" in line]
    assert any("PASSED" in line for line in ran)
    whole = pytester.runpytest_subprocess("--roteiro-conformance", "conformance/ranking.yaml")
    whole.assert_outcomes(passed=len([c for c in load_cases() if c.file.name == "ranking.yaml"]))
    unknown = pytester.runpytest_subprocess("--roteiro-conformance", "conformance/ranking.yaml::no")
    assert unknown.ret == pytest.ExitCode.USAGE_ERROR


def test_a_node_id_with_a_case_folder_that_is_not_one_names_the_folder(
    pytester: pytest.Pytester,
) -> None:
    """A case folder that cannot be read is the one error, as it is without
    a node id: never pytest's "not found" for the node id it hid."""
    result = pytester.runpytest(
        "--roteiro-conformance", "--roteiro-cases", "missing", "conformance/lifecycle.yaml"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"{pytester.path / 'missing'}: is not a folder of case files" in result.stderr.str()
    assert "not found" not in result.stdout.str() + result.stderr.str()


def test_the_ini_switch_keeps_the_projects_own_testpaths(pytester: pytest.Pytester) -> None:
    """``roteiro_conformance = true`` adds the cases; it does not drop ``testpaths``."""
    pytester.makeini(
        "[pytest]\nroteiro_conformance = true\nroteiro_backend = memory\ntestpaths = tests\n"
    )
    tests = pytester.mkdir("tests")
    (tests / "test_mine.py").write_text("def test_mine():\n    pass\n", encoding="utf-8")
    result = pytester.runpytest("-k", "ids-increase or test_mine")
    result.assert_outcomes(passed=2)
    only_cases = pytester.runpytest("--roteiro-conformance", "-k", "ids-increase or test_mine")
    only_cases.assert_outcomes(passed=1)


def test_ini_paths_resolve_against_the_ini_file(pytester: pytest.Pytester) -> None:
    """As pytest's ``paths`` type does: run from a subfolder, the report lands
    beside the ini file, and the known-failures file is found there."""
    pytester.makeini(
        "[pytest]\nroteiro_report = out/report.json\nroteiro_known_failures = known.yaml\n"
    )
    pytester.path.joinpath("known.yaml").write_text("[]\n", encoding="utf-8")
    sub = pytester.mkdir("sub")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(sub)
        result = pytester.runpytest("--roteiro-conformance", "-k", "ids-increase")
    result.assert_outcomes(passed=1)
    assert (pytester.path / "out" / "report.json").is_file()
    assert not (sub / "out").exists()


def test_the_suite_without_its_extra_is_one_line(pytester: pytest.Pytester) -> None:
    """Not ``INTERNALERROR ... No module named 'jsonschema'``: the install command."""
    from roteiro_memory.suite.extras import suite_install_command

    script = pytester.makepyfile(
        run_without_jsonschema=(
            "import sys\n"
            "sys.modules['jsonschema'] = None\n"
            "import pytest\n"
            "sys.exit(pytest.main(['--roteiro-conformance', '-p', 'no:cacheprovider']))\n"
        )
    )
    result = pytester.run(sys.executable, str(script))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines == [
        f"ERROR: pytest --roteiro-conformance needs roteiro-memory's 'suite' extra "
        f"(import of jsonschema halted; None in sys.modules); install it with: "
        f"{suite_install_command()}"
    ]


def test_exploring_prints_a_seed_that_repeats_the_run(pytester: pytest.Pytester) -> None:
    """``--roteiro-explore`` draws a seed and prints it; ``--roteiro-seed`` takes it back.
    No ``.hypothesis`` folder is left behind."""
    args = ["--roteiro-conformance", "-k", "prop-reads-never-mutate", "-p", "no:cacheprovider"]
    explored = pytester.runpytest(*args, "--roteiro-explore")
    explored.assert_outcomes(passed=1)
    line = next(x for x in explored.outlines if x.startswith("Properties explored with seed"))
    seed = line.split()[4].rstrip(":")
    assert f"--roteiro-seed {seed} repeats this run" in line
    repeated = pytester.runpytest(*args, "--roteiro-seed", seed)
    repeated.assert_outcomes(passed=1)
    assert line in repeated.outlines
    report = pytester.path / "report.json"
    pytester.runpytest_subprocess(*args, "--roteiro-report", str(report))
    assert json.loads(report.read_text())["properties"] == {"seed": 0, "explore": False}
    assert not (pytester.path / ".hypothesis").exists()


SECRET = "S3cr3tPw!"
SPEC = f"postgres:postgresql://alice:{SECRET}@db.example/memory"
"""A backend spec whose DSN holds :data:`SECRET` as its password."""
SHOWN = "postgres:postgresql://alice:<password>@db.example/memory"
"""How :data:`SPEC` is shown: its password withheld."""


def test_the_conformance_run_never_shows_the_dsn_password(pytester: pytest.Pytester) -> None:
    """A backend named by a DSN carrying a password: the terminal summary, the
    skip reasons (a capability not declared, a durability entry that needs a
    cmd: backend) and both report files name it with the password withheld."""
    pytester.makeconftest(
        textwrap.dedent(
            """
            from roteiro_memory.stores.model import ModelStore

            def episodic_only(dsn):
                store = ModelStore()
                store.capabilities = ("episodic",)
                return store

            def pytest_roteiro_backend_factories(config):
                return {"postgres": episodic_only}
            """
        )
    )
    result, report, summary = _reported_run(
        pytester, "-rs", "-k", f"{PASSING} or durability-shared-records or eviction-parity-budget-0"
    )
    result.assert_outcomes(passed=1, skipped=2)
    printed = result.stdout.str() + result.stderr.str()
    assert SECRET not in printed
    result.stdout.fnmatch_lines([f"*roteiro conformance: {SHOWN} (roteiro-memory (*"])
    assert f"{SHOWN!r} is not one" in printed
    assert SECRET not in report + summary
    assert json.loads(report)["backend"] == SHOWN


def _reported_run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, str, str]:
    """The suite run on :data:`SPEC` with ``args``, writing its report: the
    run, and the text of report.json and of report.md."""
    result = pytester.runpytest(
        "--roteiro-conformance",
        "--roteiro-backend",
        SPEC,
        "--roteiro-report",
        "out/report.json",
        *args,
    )
    written = pytester.path / "out"
    return (
        result,
        (written / "report.json").read_text(encoding="utf-8"),
        (written / "report.md").read_text(encoding="utf-8"),
    )


def test_a_backend_that_cannot_be_used_is_named_without_its_dsn_password(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(
        textwrap.dedent(
            """
            from roteiro_memory.errors import StoreUnavailable

            def unreachable(dsn):
                raise StoreUnavailable(f"cannot connect to {dsn}")

            def pytest_roteiro_backend_factories(config):
                return {"postgres": unreachable}
            """
        )
    )
    result = pytester.runpytest("--roteiro-conformance", "--roteiro-backend", SPEC)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert SECRET not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines([f"*backend {SHOWN!r}: cannot connect*"])


@pytest.mark.parametrize("tb", ["long", "line"])
def test_a_live_report_withholds_the_dsn_password_from_its_free_text(
    pytester: pytest.Pytester, tb: str
) -> None:
    """A backend named by a DSN whose store, once made, fails every operation
    in words quoting the DSN's password: the failure printed (in either
    traceback style) and the case's messages in report.json and report.md
    show it nowhere -- the report withholds the passwords of the spec as
    given, not of the spec already shown (whose only one is <password>)."""
    pytester.makeconftest(
        textwrap.dedent(
            """
            from roteiro_memory.errors import StoreUnavailable
            from roteiro_memory.protocol import Ops
            from roteiro_memory.stores.model import ModelStore

            class RefusingPassword:
                def __init__(self, dsn):
                    self.ops = Ops(ModelStore())
                    self.password = dsn.partition(":")[2].partition(":")[2].partition("@")[0]

                def call(self, op, args):
                    if op == "hello":
                        return self.ops.call(op, args)
                    raise StoreUnavailable(f"password {self.password} rejected by the server")

            def pytest_roteiro_backend_factories(config):
                return {"postgres": RefusingPassword}
            """
        )
    )
    result, report, summary = _reported_run(
        pytester, "--roteiro-allow-reset", f"--tb={tb}", "-rf", "-k", PASSING
    )
    result.assert_outcomes(failed=1)
    assert json.loads(report)["backend"] == SHOWN
    assert "password <password> rejected by the server" in report
    assert SECRET not in report
    assert SECRET not in summary
    result.stdout.fnmatch_lines(["*password <password> rejected by the server*"])
    assert SECRET not in result.stdout.str() + result.stderr.str()


@pytest.mark.parametrize("option", ["--roteiro-report", "--roteiro-known-failures"])
def test_an_empty_path_option_is_a_usage_error(pytester: pytest.Pytester, option: str) -> None:
    """An empty path names no file: not the option left out (no report
    written, no failure known, without a word)."""
    result = pytester.runpytest("--roteiro-conformance", option, "", "-k", PASSING)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{option}: the path given is empty; give a file's path*"])


def test_a_known_failures_path_that_is_a_folder_says_so(pytester: pytest.Pytester) -> None:
    pytester.mkdir("known")
    result = pytester.runpytest("--roteiro-conformance", "--roteiro-known-failures", "known")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*known*is a folder, where a known-failures file (YAML)*"])


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (("--roteiro-no-builtin-cases",), "--roteiro-no-builtin-cases"),
        (("-o", "roteiro_builtin_cases=false"), "roteiro_builtin_cases = false (ini)"),
    ],
)
def test_leaving_the_shipped_cases_out_needs_a_folder_of_cases(
    pytester: pytest.Pytester, given: tuple[str, ...], named: str
) -> None:
    """With the shipped cases left out and no folder named there is nothing
    to check: a usage error naming --roteiro-cases, not "no tests ran"."""
    result = pytester.runpytest("--roteiro-conformance", *given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"*{named} runs only the cases in --roteiro-cases folders, and none is named: "
            "name a folder of case files with --roteiro-cases DIR*"
        ]
    )
    assert "no tests ran" not in result.stdout.str()
