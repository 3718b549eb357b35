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
from typing import Any

import pytest

from pytest_roteiro.config import (
    CONFIG_KEY,
    OUTCOME_KEY,
    STATE_KEY,
    RoteiroConfig,
    RunState,
    enabled,
    resolve_config,
)

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
        help="write a JSON report to PATH and a Markdown summary beside it (ini: roteiro_report).",
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
        help="per-request timeout for cmd: backends, default 10 (ini: roteiro_timeout).",
    )
    parser.addini("roteiro_conformance", "run the conformance cases", type="bool", default=False)
    parser.addini("roteiro_backend", "backend spec for the conformance cases", default="sqlite")
    parser.addini("roteiro_cases", "extra folders of case files", type="paths", default=[])
    parser.addini("roteiro_builtin_cases", "run the shipped cases", type="bool", default=True)
    parser.addini("roteiro_report", "path of the JSON conformance report", default="")
    parser.addini("roteiro_known_failures", "known-failures YAML file", default="")
    parser.addini("roteiro_timeout", "per-request timeout for cmd: backends", default="10")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_roteiro import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    roteiro = resolve_config(config)
    config.stash[CONFIG_KEY] = roteiro
    if not roteiro.enabled:
        return
    from pytest_roteiro.items import backend, marker
    from roteiro_memory.suite.cases import load_registry
    from roteiro_memory.suite.errors import CaseFileError
    from roteiro_memory.suite.report import load_known_failures
    from roteiro_memory.suite.vocabulary import CAPABILITIES, CORE

    session = RunState(roteiro)
    extra = [Path(d) for d in _hook_case_dirs(config)]
    if extra:
        roteiro = RoteiroConfig(**{**roteiro.__dict__, "case_dirs": (*roteiro.case_dirs, *extra)})
        config.stash[CONFIG_KEY] = roteiro
        session.config = roteiro
    try:
        session.registry = load_registry(roteiro.case_dirs)
        if roteiro.known_failures is not None:
            session.known = load_known_failures(roteiro.known_failures)
    except CaseFileError as error:
        raise pytest.UsageError(str(error)) from None
    if session.known:
        _check_known_ids(session)
    # Resolved now so a wrong spec is a usage error, not a failure per case;
    # a cmd: program is started only by its first request.
    backend(config, session)
    config.stash[STATE_KEY] = session
    config.pluginmanager.register(_Recorder(session), RECORDER)
    config.addinivalue_line("markers", "roteiro: an ADR-0013 conformance case")
    for tag in session.registry:
        config.addinivalue_line("markers", f"{marker('invariant', tag)}: cases of invariant {tag}")
    for capability in (*CAPABILITIES, CORE):
        config.addinivalue_line(
            "markers", f"{marker('capability', capability)}: cases needing {capability}"
        )


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
    """With the suite on and no paths named, the cases are the whole run."""
    if enabled(config) and config.args_source != pytest.Config.ArgsSource.ARGS:
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


# --- Results, report and summary ---------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if not enabled(item.config):
        return report
    from pytest_roteiro.items import CaseItem

    if isinstance(item, CaseItem) and (call.when == "call" or report.outcome != "passed"):
        from roteiro_memory.suite.report import case_result

        state = item.config.stash[STATE_KEY]
        outcome = item.stash.get(OUTCOME_KEY, None)
        report.roteiro = case_result(  # type: ignore[attr-defined]
            item.case, state.registry, state.backend, outcome
        )
    return report


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

        write_report(
            state.config.report,
            results=state.results,
            registry=state.registry,
            backend=state.config.backend,
        )

    def pytest_terminal_summary(self, terminalreporter: Any, config: pytest.Config) -> None:
        state = self.state
        if _is_worker(config) or not state.results:
            return
        from roteiro_memory.suite.report import compliance_table

        implementation = next(
            (r["implementation"] for r in state.results if r.get("implementation")), None
        )
        heading = f"roteiro conformance: {state.config.backend}"
        if implementation:
            heading += f" ({implementation})"
        terminalreporter.section(heading)
        for line in compliance_table(state.results, state.registry):
            terminalreporter.line(line)
        if state.config.report is not None:
            md = state.config.report.with_suffix(".md")
            terminalreporter.line(f"report: {state.config.report} (summary: {md})")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_unconfigure(config: pytest.Config) -> None:
    recorder = config.pluginmanager.get_plugin(RECORDER)
    if recorder is not None:
        config.pluginmanager.unregister(recorder)
