"""``pytest --roteiro-conformance``: the conformance cases as pytest items.

Off unless ``--roteiro-conformance`` (or ``roteiro_conformance = true`` in the
ini file) is given: then it adds no collection and imports nothing beyond this
module and the hookspecs.  When on, every YAML case is one item named by its
case id under ``conformance/FILE``, so ``-k``, ``-x``, ``--lf``, ``-n`` and
``--junitxml`` work as for any test.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from roteiro_memory.suite.cases import Case, Invariant
    from roteiro_memory.suite.report import KnownFailure
    from roteiro_memory.suite.runner import Backend, Outcome  # noqa: F401 -- in a string annotation

__all__ = ["RoteiroConfig"]

GROUP = "roteiro"
NODE_PREFIX = "conformance"
RECORDER = "roteiro-recorder"


@dataclass(frozen=True)
class RoteiroConfig:
    """The plugin's options, resolved once from the command line and ini file."""

    enabled: bool
    backend: str = "sqlite"
    case_dirs: tuple[Path, ...] = ()
    builtin_cases: bool = True
    report: Path | None = None
    known_failures: Path | None = None
    timeout: float = 10.0


@dataclass
class _Session:
    """What one run holds: the backend (created on first use), the registry,
    known failures, and every case result seen (on the xdist controller too)."""

    config: RoteiroConfig
    registry: dict[str, Invariant] = field(default_factory=dict)
    known: dict[str, KnownFailure] = field(default_factory=dict)
    backend: Backend | None = None
    results: list[dict[str, Any]] = field(default_factory=list)


CONFIG_KEY = pytest.StashKey[RoteiroConfig]()
SESSION_KEY = pytest.StashKey[_Session]()
OUTCOME_KEY = pytest.StashKey["Outcome"]()


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


def _resolve_config(config: pytest.Config) -> RoteiroConfig:
    def pick(option: str, ini: str) -> Any:
        value = config.getoption(option)
        return value if value is not None else config.getini(ini)

    enabled = bool(pick("roteiro_conformance", "roteiro_conformance"))
    if not enabled:
        return RoteiroConfig(enabled=False)
    cli_dirs = config.getoption("roteiro_cases")
    if cli_dirs:
        dirs = [Path(d).resolve() for d in cli_dirs]
    else:
        dirs = list(config.getini("roteiro_cases"))
    no_builtin = config.getoption("roteiro_no_builtin_cases")
    if no_builtin is not None:
        builtin = not no_builtin
    else:
        builtin = bool(config.getini("roteiro_builtin_cases"))
    report = pick("roteiro_report", "roteiro_report")
    known = pick("roteiro_known_failures", "roteiro_known_failures")
    timeout_raw = pick("roteiro_timeout", "roteiro_timeout")
    try:
        timeout = float(timeout_raw)
    except ValueError:
        raise pytest.UsageError(
            f"roteiro_timeout: {timeout_raw!r} is not a number of seconds"
        ) from None
    if not timeout > 0:
        raise pytest.UsageError(f"--roteiro-timeout must be positive, got {timeout}")
    return RoteiroConfig(
        enabled=True,
        backend=str(pick("roteiro_backend", "roteiro_backend")),
        case_dirs=tuple(Path(d) for d in dirs),
        builtin_cases=builtin,
        report=Path(report).resolve() if report else None,
        known_failures=Path(known).resolve() if known else None,
        timeout=timeout,
    )


def _enabled(config: pytest.Config) -> bool:
    return config.stash.get(CONFIG_KEY, None) is not None and config.stash[CONFIG_KEY].enabled


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    roteiro = _resolve_config(config)
    config.stash[CONFIG_KEY] = roteiro
    if not roteiro.enabled:
        return
    from roteiro_memory.suite.cases import CAPABILITIES, CORE, CaseFileError, load_registry
    from roteiro_memory.suite.report import load_known_failures

    session = _Session(roteiro)
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
    _backend(config, session)
    config.stash[SESSION_KEY] = session
    config.pluginmanager.register(_Recorder(session), RECORDER)
    config.addinivalue_line("markers", "roteiro: an ADR-0013 conformance case")
    for tag in session.registry:
        config.addinivalue_line("markers", f"{_marker('invariant', tag)}: cases of invariant {tag}")
    for capability in (*CAPABILITIES, CORE):
        config.addinivalue_line(
            "markers", f"{_marker('capability', capability)}: cases needing {capability}"
        )


def _check_known_ids(session: _Session) -> None:
    """Refuse a known-failures file naming a case or property entry that does
    not exist.

    Checked before collection so that an xdist controller refuses it too.  A
    file that does not load is left for collection to report.
    """
    from roteiro_memory.suite.cases import CaseFileError, load_cases
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


def _marker(prefix: str, name: str) -> str:
    return f"{prefix}_{name.replace('-', '_')}"


# --- Collection ----------------------------------------------------------------


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With the suite on and no paths named, the cases are the whole run."""
    if _enabled(config) and config.args_source != pytest.Config.ArgsSource.ARGS:
        return True
    return None


class CaseFile(pytest.Collector):
    """One YAML case file; its items are its cases."""

    label = "conformance case file"
    """What the file is, as a collection error names it."""

    def __init__(self, *, source: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        from roteiro_memory.suite.cases import load_file

        session = self.config.stash[SESSION_KEY]
        return [
            CaseItem.from_parent(self, name=case.id, case=case)
            for case in load_file(self.source, session.registry)
        ]

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str:
        from roteiro_memory.suite.cases import CaseFileError

        if isinstance(excinfo.value, CaseFileError):
            return f"invalid {self.label}\n{excinfo.value}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.source, None, self.name


class CaseFailed(Exception):
    """A case whose outcome is a failure; rendered by :meth:`CaseItem.repr_failure`."""


class CaseItem(pytest.Item):
    """One conformance case."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.add_marker("roteiro")
        self.add_marker(_marker("invariant", case.invariant))
        session = self.config.stash[SESSION_KEY]
        invariant = session.registry[case.invariant]
        capabilities = set(case.requires) | {invariant.capability}
        for capability in sorted(capabilities):
            self.add_marker(_marker("capability", capability))
        self.user_properties.append(("invariant", case.invariant))

    def runtest(self) -> None:
        from roteiro_memory.suite.runner import run_case

        session = self.config.stash[SESSION_KEY]
        outcome = run_case(self.case, _backend(self.config, session))
        self.stash[OUTCOME_KEY] = outcome
        known = session.known.get(self.case.id)
        if outcome.status == "skipped":
            pytest.skip(outcome.message)
        if known is not None:
            if outcome.status == "failed":
                pytest.xfail(f"known failure: {known.describe()}")
            raise CaseFailed(
                f"case {self.case.id} is listed in {session.config.known_failures} "
                f"({known.reason}) but now passes: remove it from that file"
            )
        if outcome.status == "failed":
            raise CaseFailed()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        from roteiro_memory.suite.runner import format_outcome

        if isinstance(excinfo.value, CaseFailed):
            if excinfo.value.args:
                return str(excinfo.value.args[0])
            session = self.config.stash[SESSION_KEY]
            clause = f"{self.case.clause} [{session.registry[self.case.invariant].clause}]"
            return format_outcome(self.case, self.stash[OUTCOME_KEY], clause=clause)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.case.file, self.case.line - 1, f"{self.case.id}: {self.case.title}"


def _backend(config: pytest.Config, session: _Session) -> Backend:
    if session.backend is None:
        from roteiro_memory.suite.drivers import BackendSpecError, resolve_backend

        spec = session.config.backend
        made = config.hook.pytest_roteiro_make_backend(config=config, spec=spec)
        if made is None:
            factories: dict[str, Any] = {}
            for found in config.hook.pytest_roteiro_backend_factories(config=config):
                factories.update(found or {})
            try:
                made = resolve_backend(spec, factories, timeout=session.config.timeout)
            except BackendSpecError as error:
                raise pytest.UsageError(str(error)) from None
            except Exception as error:
                # A factory that raises is the backend's fault, reported as such.
                raise pytest.UsageError(
                    f"backend {spec!r} could not be created: {type(error).__name__}: {error}"
                ) from error
        session.backend = made
    return session.backend


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not _enabled(config):
        return
    from _pytest.runner import collect_one_node

    from roteiro_memory.suite.cases import CaseFileError, case_files

    state = config.stash[SESSION_KEY]
    try:
        files = case_files(state.config.case_dirs, builtin=state.config.builtin_cases)
    except CaseFileError as error:
        raise pytest.UsageError(str(error)) from None
    found: dict[str, CaseItem] = {}
    for path in files:
        collector = CaseFile.from_parent(
            session, name=path.name, nodeid=f"{NODE_PREFIX}/{path.name}", source=path
        )
        report = collect_one_node(collector)
        if report.passed:
            for node in report.result:
                assert isinstance(node, CaseItem)
                first = found.get(node.case.id)
                if first is not None:
                    duplicate = CaseFileError(
                        path,
                        f"duplicate case id, first defined at {first.case.file}:{first.case.line}",
                        line=node.case.line,
                        case_id=node.case.id,
                    )
                    report.outcome = "failed"
                    report.longrepr = f"invalid conformance case file\n{duplicate}"
                    report.result = []
                    break
                found[node.case.id] = node
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
    if isinstance(item, CaseItem) and (call.when == "call" or report.outcome != "passed"):
        outcome = item.stash.get(OUTCOME_KEY, None)
        session = item.config.stash[SESSION_KEY]
        report.roteiro = {  # type: ignore[attr-defined]
            "case": item.case.id,
            "title": item.case.title,
            "file": item.case.file.name,
            "line": item.case.line,
            "invariant": item.case.invariant,
            "capability": session.registry[item.case.invariant].capability,
            "requires": list(item.case.requires),
            "declared": _declared(session),
            "implementation": _implementation(session),
            "outcome": outcome.to_json() if outcome is not None else None,
        }
    return report


def _declared(session: _Session) -> list[str] | None:
    """The capabilities the backend declared, if hello has been answered."""
    from roteiro_memory.suite.runner import BackendFailure, OpError

    if session.backend is None:
        return None
    try:
        return sorted(session.backend.capabilities())
    except (OpError, BackendFailure):
        return None


def _implementation(session: _Session) -> str | None:
    """The implementation's name and version from hello, when it gives them."""
    from roteiro_memory.suite.runner import BackendFailure, OpError

    describe = getattr(session.backend, "implementation", None)
    if not callable(describe):
        return None
    try:
        found = describe()
    except (OpError, BackendFailure):
        return None
    return found if isinstance(found, str) else None


class _Recorder:
    """Collects case results as reports arrive (from xdist workers too), then
    writes the report and the compliance table."""

    def __init__(self, state: _Session) -> None:
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
