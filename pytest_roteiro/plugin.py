"""``pytest --roteiro-conformance``: the conformance cases as pytest items.

Off unless ``--roteiro-conformance`` (or ``roteiro_conformance = true`` in the
ini file) is given: then it adds no collection and imports nothing beyond this
module, its configuration (:mod:`.config`) and the hookspecs.  When on, every
YAML case is one item named by its case id under ``conformance/FILE``, so
``-k``, ``-x``, ``--lf``, ``-n`` and ``--junitxml`` work as for any test.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_roteiro.config import (
    CONFIG_KEY,
    OUTCOME_KEY,
    SEED_INPUT,
    STATE_KEY,
    RoteiroConfig,
    RunState,
    enabled,
    resolve_config,
)

if TYPE_CHECKING:
    from roteiro_memory.suite.runner import Backend

__all__ = ["RoteiroConfig"]

GROUP = "roteiro"
RECORDER = "roteiro-recorder"


# --- Options -------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup(GROUP, "roteiro conformance suite (ADR-0013)")
    group.addoption(
        "--roteiro-conformance",
        action="store_true",
        default=None,
        help="run the ADR-0013 conformance cases against --roteiro-backend "
        "(ini: roteiro_conformance).",
    )
    group.addoption(
        "--roteiro-backend",
        metavar="SPEC",
        default=None,
        help="backend to check: sqlite (default), memory, a registered name, "
        "module.path:factory, or 'cmd:COMMAND LINE' for a program speaking the "
        "protocol (ini: roteiro_backend).",
    )
    group.addoption(
        "--roteiro-cases",
        metavar="DIR",
        action="append",
        default=None,
        help="extra folder of case files; a file named like a shipped one replaces "
        "it. Repeatable (ini: roteiro_cases).",
    )
    group.addoption(
        "--roteiro-no-builtin-cases",
        action="store_true",
        default=None,
        help="run only the cases in --roteiro-cases folders (ini: roteiro_builtin_cases).",
    )
    group.addoption(
        "--roteiro-report",
        metavar="PATH",
        default=None,
        help="write a JSON report to PATH (not ending in .md) and a Markdown summary beside it "
        "(ini: roteiro_report).",
    )
    group.addoption(
        "--roteiro-known-failures",
        metavar="FILE",
        default=None,
        help="YAML list of {id, reason, link?}: failing cases reported as expected "
        "failures (ini: roteiro_known_failures).",
    )
    group.addoption(
        "--roteiro-timeout",
        metavar="SECONDS",
        type=float,
        default=None,
        help="per-request timeout for cmd: backends, in seconds above 0 and at most 86400 "
        "(a day); default 10 (ini: roteiro_timeout).",
    )
    group.addoption(
        "--roteiro-explore",
        action="store_true",
        default=None,
        help="let the properties try new sequences, from a seed drawn for this run and "
        "printed in the report; by default every run uses the same fixed seed "
        "(ini: roteiro_explore).",
    )
    group.addoption(
        "--roteiro-seed",
        metavar="N",
        default=None,
        help="draw the properties' sequences from seed N, e.g. the one a report printed "
        "(ini: roteiro_seed; --hypothesis-seed is read the same way).",
    )
    group.addoption(
        "--roteiro-allow-reset",
        action="store_true",
        default=None,
        help="let the suite reset (erase) a backend whose store already holds data; "
        "without it such a backend is refused (ini: roteiro_allow_reset).",
    )
    group.addoption(
        "--roteiro-backend-required",
        action="store_true",
        default=False,
        help="refuse to run when neither --roteiro-backend nor roteiro_backend names the "
        "backend, rather than checking sqlite, this package's own (the roteiro-conformance "
        "hook passes it).",
    )
    parser.addini("roteiro_conformance", "run the conformance cases", type="bool", default=False)
    parser.addini("roteiro_backend", "backend spec for the conformance cases", default="sqlite")
    parser.addini("roteiro_cases", "extra folders of case files", type="paths", default=[])
    parser.addini("roteiro_builtin_cases", "run the shipped cases", type="bool", default=True)
    parser.addini("roteiro_report", "path of the JSON conformance report", default="")
    parser.addini("roteiro_known_failures", "known-failures YAML file", default="")
    parser.addini("roteiro_timeout", "per-request timeout for cmd: backends", default="10")
    parser.addini("roteiro_explore", "properties try new sequences", type="bool", default=False)
    parser.addini("roteiro_seed", "seed of the properties' sequences", default="")
    parser.addini(
        "roteiro_allow_reset", "the suite may erase a store with data", type="bool", default=False
    )


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_roteiro import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if _asked_for(config):
        from roteiro_memory.suite.extras import missing_suite_dependency

        missing = missing_suite_dependency("pytest --roteiro-conformance")
        if missing is not None:
            raise pytest.UsageError(missing)
    roteiro = resolve_config(config)
    config.stash[CONFIG_KEY] = roteiro
    if not roteiro.enabled:
        return
    from pytest_roteiro.items import backend, marker
    from roteiro_memory.suite.cases import load_registry, no_cases_left
    from roteiro_memory.suite.errors import CaseFileError
    from roteiro_memory.suite.report import load_known_failures, report_path_problem
    from roteiro_memory.suite.vocabulary import CAPABILITIES, CORE

    if roteiro.report is not None and not _is_worker(config):
        # Found now, not by a traceback once every case has run.
        problem = report_path_problem(roteiro.report)
        if problem is not None:
            raise pytest.UsageError(f"--roteiro-report: {problem}")
    session = RunState(roteiro)
    extra = [Path(d) for d in _hook_case_dirs(config)]
    if extra:
        roteiro = RoteiroConfig(**{**roteiro.__dict__, "case_dirs": (*roteiro.case_dirs, *extra)})
        config.stash[CONFIG_KEY] = roteiro
        session.config = roteiro
    if not roteiro.builtin_cases and not roteiro.case_dirs:
        # It would check nothing, and end as pytest's "no tests ran".
        raise pytest.UsageError(no_cases_left(_no_builtin_option(config)))
    try:
        session.registry = load_registry(roteiro.case_dirs)
        if roteiro.known_failures is not None:
            session.known = load_known_failures(roteiro.known_failures)
    except CaseFileError as error:
        raise pytest.UsageError(str(error)) from None
    if session.known:
        _check_known_ids(session)
    session.selected = _claim_node_ids(config, roteiro)
    # Resolved and greeted now, so a wrong spec or a backend that cannot start
    # is one usage error, not a failure per case.
    made = backend(config, session)
    if not _is_worker(config):
        session.notes.extend(_check_backend(made, roteiro))
    config.stash[STATE_KEY] = session
    config.pluginmanager.register(_Recorder(session), RECORDER)
    config.addinivalue_line("markers", "roteiro: an ADR-0013 conformance case")
    for tag in session.registry:
        config.addinivalue_line("markers", f"{marker('invariant', tag)}: cases of invariant {tag}")
    for capability in (*CAPABILITIES, CORE):
        config.addinivalue_line(
            "markers", f"{marker('capability', capability)}: cases needing {capability}"
        )


def _no_builtin_option(config: pytest.Config) -> str:
    """How the run was told to leave the shipped cases out."""
    if config.getoption("roteiro_no_builtin_cases"):
        return "--roteiro-no-builtin-cases"
    return "roteiro_builtin_cases = false (ini)"


def _check_backend(made: Backend, roteiro: RoteiroConfig) -> list[str]:
    """Refuse, before the first case, a backend that cannot answer ``hello``
    and one whose store holds data this run did not create; the notes the
    run carries (reads that wrote to an empty store).

    Checked once, by the controller of an xdist run: its workers' backends
    name the same store, and one worker's cases must not look like data
    another did not create.
    """
    from roteiro_memory.suite.drivers import RESTARTED, withheld
    from roteiro_memory.suite.errors import BackendFailure, OpError
    from roteiro_memory.suite.guard import mutation_note, preflight, refusal

    asked = "hello"
    notes: list[str] = []
    try:
        made.capabilities()
        asked = "reading what its store holds"
        problem = None
        if not roteiro.allow_reset:
            found = preflight(made)
            problem = refusal(made, found)
            note = mutation_note(made, found)
            if problem is None and note is not None:
                notes.append(note)
    except (BackendFailure, OpError) as error:
        tail = getattr(error, "stderr", None) or made.stderr_tail() or ""
        said = [line.strip() for line in tail.splitlines() if line.strip()][-4:]
        detail = f"; its stderr ends: {' | '.join(said)}" if said else ""
        why = str(error).removesuffix(RESTARTED)
        problem = f"backend {roteiro.backend_shown!r} cannot be used: {asked} failed: {why}{detail}"
    if problem is not None:
        made.close()
        raise pytest.UsageError(withheld(problem, roteiro.backend))
    return notes


def _asked_for(config: pytest.Config) -> bool:
    """Whether the suite is switched on, read before anything else is."""
    given = config.getoption("roteiro_conformance")
    return bool(given if given is not None else config.getini("roteiro_conformance"))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hand an xdist worker the controller's seed, so every worker draws the
    same sequences (an exploring run's seed is drawn once)."""
    roteiro = node.config.stash.get(CONFIG_KEY, None)
    if roteiro is not None and roteiro.enabled:
        node.workerinput[SEED_INPUT] = {"explore": roteiro.explore, "seed": roteiro.seed}


def _claim_node_ids(config: pytest.Config, roteiro: RoteiroConfig) -> tuple[str, ...]:
    """Take out of the command line's paths the node ids of cases
    (``conformance/FILE.yaml`` or ``conformance/FILE.yaml::ID``, as a FAILED
    line prints them), so pytest does not look for them on disk -- where a
    project's own ``conformance/`` folder may be -- and return them."""
    from pytest_roteiro.items import NODE_PREFIX
    from roteiro_memory.suite.cases import case_files
    from roteiro_memory.suite.errors import CaseFileError
    from roteiro_memory.suite.properties import property_files

    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return ()
    try:
        dirs, builtin = roteiro.case_dirs, roteiro.builtin_cases
        files = [*case_files(dirs, builtin=builtin), *property_files(dirs, builtin=builtin)]
    except CaseFileError as error:
        # The error collection would give, before pytest looks for the ids on disk.
        raise pytest.UsageError(str(error)) from None
    names = {path.name for path in files}
    claimed: list[str] = []
    kept: list[str] = []
    for arg in config.args:
        where, sep, rest = arg.partition("::")
        parts = Path(where).parts
        if len(parts) == 2 and parts[0] == NODE_PREFIX and parts[1] in names:
            claimed.append(f"{NODE_PREFIX}/{parts[1]}{sep}{rest}")
        else:
            kept.append(arg)
    if claimed:
        config.args[:] = kept
    return tuple(claimed)


def _selected(items: list[pytest.Item], selected: tuple[str, ...]) -> list[pytest.Item]:
    """The case and property items a claimed node id names (a file's id names
    all of its items); any id naming none is a usage error."""
    from pytest_roteiro.items import CaseItem

    ours = [item for item in items if isinstance(item, CaseItem)]
    kept = {
        item.nodeid
        for item in ours
        for node_id in selected
        if item.nodeid == node_id or item.nodeid.startswith(f"{node_id}::")
    }
    unknown = [
        node_id
        for node_id in selected
        if not any(k == node_id or k.startswith(f"{node_id}::") for k in kept)
    ]
    if unknown:
        raise pytest.UsageError(
            f"{', '.join(unknown)}: no conformance case or property has this node id "
            "(ids are conformance/FILE.yaml::CASE-ID, as a FAILED line shows them)"
        )
    return [item for item in items if not isinstance(item, CaseItem) or item.nodeid in kept]


def _check_known_ids(session: RunState) -> None:
    """Refuse a known-failures file naming a case or property entry that does
    not exist.

    Checked before collection so that an xdist controller refuses it too.  A
    file that does not load is left for collection to report.
    """
    from roteiro_memory.suite.cases import load_cases
    from roteiro_memory.suite.errors import CaseFileError
    from roteiro_memory.suite.properties import load_properties, property_files

    dirs, builtin = session.config.case_dirs, session.config.builtin_cases
    try:
        ids = {case.id for case in load_cases(dirs, builtin=builtin, registry=session.registry)}
        for path in property_files(dirs, builtin=builtin):
            ids.update(spec.id for spec in load_properties(path, session.registry))
        if builtin:
            from roteiro_memory.suite.durability import ENTRIES

            ids.update(spec.id for spec in ENTRIES)
    except CaseFileError:
        return
    unknown = sorted(set(session.known) - ids)
    if unknown:
        raise pytest.UsageError(
            f"{session.config.known_failures}: {', '.join(repr(u) for u in unknown)} "
            "name no conformance case or property; remove them or fix the ids"
        )


def _hook_case_dirs(config: pytest.Config) -> list[Path]:
    found: list[Path] = []
    for dirs in config.hook.pytest_roteiro_case_dirs(config=config):
        found.extend(Path(d) for d in dirs or ())
    return found


# --- Collection ----------------------------------------------------------------


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With ``--roteiro-conformance`` and no paths named, the cases are the
    whole run; switched on by the ini file, the suite runs beside the
    project's own tests."""
    if (
        enabled(config)
        and config.stash[CONFIG_KEY].cases_only
        and config.args_source != pytest.Config.ArgsSource.ARGS
    ):
        return True
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not enabled(config):
        return
    from _pytest.runner import collect_one_node

    from pytest_roteiro.items import NODE_PREFIX, CaseFile, CaseItem
    from roteiro_memory.suite.cases import Case, case_files, claim_case_id
    from roteiro_memory.suite.errors import CaseFileError

    state = config.stash[STATE_KEY]
    try:
        files = case_files(state.config.case_dirs, builtin=state.config.builtin_cases)
    except CaseFileError as error:
        raise pytest.UsageError(str(error)) from None
    seen: dict[str, Case] = {}
    for path in files:
        collector = CaseFile.from_parent(
            session, name=path.name, nodeid=f"{NODE_PREFIX}/{path.name}", source=path
        )
        report = collect_one_node(collector)
        if report.passed:
            for node in report.result:
                assert isinstance(node, CaseItem)
                duplicate = claim_case_id(seen, node.case)
                if duplicate is not None:
                    report.outcome = "failed"
                    report.longrepr = f"invalid {CaseFile.label}\n{duplicate}"
                    report.result = []
                    break
        session.ihook.pytest_collectreport(report=report)
        if report.passed:
            items.extend(n for n in report.result if isinstance(n, pytest.Item))
    from pytest_roteiro.property_items import collect_properties

    cfg = state.config
    items.extend(collect_properties(session, cfg.case_dirs, builtin=cfg.builtin_cases))
    if cfg.builtin_cases:
        from pytest_roteiro.durability_items import collect_durability

        items.extend(collect_durability(session))
    if state.selected:
        kept = _selected(items, state.selected)
        config.hook.pytest_deselected(items=[item for item in items if item not in kept])
        items[:] = kept


# --- Results, report and summary ---------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not enabled(item.config):
        return report
    from pytest_roteiro.items import CaseItem

    if isinstance(item, CaseItem) and report.skipped and isinstance(report.longrepr, tuple):
        # The skip is the case's (a capability it needs), not the plugin's line.
        _, _, reason = report.longrepr
        report.longrepr = (str(item.case.file), item.case.line, reason)
    if isinstance(item, CaseItem):
        _withhold_passwords(report, item.config.stash[STATE_KEY].config.backend)
    if isinstance(item, CaseItem) and (call.when == "call" or report.outcome != "passed"):
        from roteiro_memory.suite.report import case_result

        state = item.config.stash[STATE_KEY]
        outcome = item.stash.get(OUTCOME_KEY, None)
        report.roteiro = case_result(  # type: ignore[attr-defined]
            item.case, state.registry, state.backend, outcome
        )
    return report


def _withhold_passwords(report: pytest.TestReport, spec: str) -> None:
    """Withhold the passwords of the backend ``spec`` (as given) from what a
    case's report prints -- its failure, its skip or expected-failure reason,
    which quote what the backend said -- and so from the message the report
    records of it."""
    from pytest_roteiro.items import CaseRepr
    from roteiro_memory.suite.drivers import withheld

    longrepr = report.longrepr
    if isinstance(longrepr, tuple):
        path, line, reason = longrepr
        report.longrepr = (path, line, withheld(reason, spec))
    elif isinstance(longrepr, CaseRepr):
        longrepr.text = withheld(longrepr.text, spec)
        longrepr.reprcrash.message = withheld(longrepr.reprcrash.message, spec)
    elif isinstance(longrepr, str):
        report.longrepr = withheld(longrepr, spec)
    if isinstance(getattr(report, "wasxfail", None), str):
        report.wasxfail = withheld(report.wasxfail, spec)


class _Recorder:
    """Collects case results as reports arrive (from xdist workers too), then
    writes the report and the compliance table."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "roteiro", None)
        if data is None:
            return
        if hasattr(report, "wasxfail"):
            status, message = "known-failing", str(report.wasxfail)
        elif report.failed:
            status, message = "failed", report.longreprtext
        elif report.skipped:
            status = "skipped"
            longrepr = report.longrepr
            message = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        else:
            status, message = "passed", ""
        self.state.results.append({**data, "status": status, "message": message})

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        state = self.state
        if state.backend is not None:
            backend, state.backend = state.backend, None
            backend.close()
        if _is_worker(session.config) or state.config.report is None:
            return
        from roteiro_memory.suite.report import write_report

        try:
            write_report(
                state.config.report,
                results=state.results,
                registry=state.registry,
                backend=state.config.backend,  # written as shown, its passwords withheld
                seed=_seed_of(state),
                notes=state.notes,
            )
        except OSError as error:
            # Checked before the run; what changed since is one line, not a traceback.
            where = error.filename or state.config.report
            state.report_problem = f"cannot write {where}: {error.strerror or error}"
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        state = self.state
        if _is_worker(config) or not state.results:
            return
        from roteiro_memory.suite.drivers import withheld
        from roteiro_memory.suite.report import compliance_table

        implementation = next(
            (r["implementation"] for r in state.results if r.get("implementation")), None
        )
        heading = f"roteiro conformance: {state.config.backend_shown}"
        if implementation:
            heading += f" ({implementation})"
        terminalreporter.section(heading)
        for line in compliance_table(state.results, state.registry):
            terminalreporter.line(line)
        for note in state.notes:
            terminalreporter.line(f"note: {withheld(note, state.config.backend)}")
        seed = _seed_of(state)
        if seed is not None:
            from roteiro_memory.suite.report import seed_line

            terminalreporter.line(seed_line(seed["seed"], seed["explore"]))
        if state.report_problem is not None:
            terminalreporter.line(f"report: {state.report_problem}", red=True)
        elif state.config.report is not None:
            from roteiro_memory.suite.report import summary_path

            md = summary_path(state.config.report)
            terminalreporter.line(f"report: {state.config.report} (summary: {md})")


def _seed_of(state: RunState) -> dict[str, Any] | None:
    """The properties' seed, when any property ran."""
    from roteiro_memory.suite.properties import PROPERTIES_FILE

    if not any(r.get("file") == PROPERTIES_FILE for r in state.results):
        return None
    return {"seed": state.config.seed, "explore": state.config.explore}


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = config.pluginmanager.get_plugin(RECORDER)
    if recorder is not None:
        config.pluginmanager.unregister(recorder)
