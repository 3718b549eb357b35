"""``roteiro-conformance``: the ADR-0013 conformance suite against a backend.

For repositories that implement a backend.  The backend is named in the hook's
``args`` (``--backend SPEC``: a registered name, ``module.path:factory``
importable from the repository's root, or ``cmd:COMMAND LINE``), or else by
``roteiro_backend`` in the repository's pytest configuration; named by
neither, the hook fails saying so (the suite's own default, this package's
SQLite store, is no backend of the repository's).  The suite
runs in its own pytest process from the repository's root, with the
repository's pytest configuration but none of its ``addopts``, and keeps no
pytest cache there; each failing case is one line,
``FILE:LINE: case 'ID': ...``, a file of the repository's named by its path
from the repository's root (a shipped one by its name).

``roteiro-conformance report FILE.json... --html OUT.html`` publishes reports
instead (:mod:`roteiro_memory.precommit.conformance_report`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from roteiro_memory.errors import UsageError
from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.precommit.report import Finding, parser, report
from roteiro_memory.terminal import to_stderr

__all__ = ["main", "run_suite"]

_FAILED = ("failed",)
_CONFIGURED = "roteiro_backend"
"""How a backend named by the pytest configuration rather than ``--backend``
is called in a finding."""


def _pytest_args(args: Any, report_path: Path) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "-q",
        "--no-header",
        "-rE",
        "--tb=no",
        "--roteiro-conformance",
        "--roteiro-report",
        str(report_path),
    ]
    if args.backend is not None:
        command += ["--roteiro-backend", args.backend]
    else:  # the configuration's, or none: never this package's own sqlite in its stead
        command.append("--roteiro-backend-required")
    for folder in args.cases:
        command += ["--roteiro-cases", folder]
    if not args.shipped:
        command.append("--roteiro-no-builtin-cases")
    if args.known_failures is not None:
        command += ["--roteiro-known-failures", args.known_failures]
    if args.timeout is not None:
        command += ["--roteiro-timeout", str(args.timeout)]
    return command


_VALUE_CHARS = 120
_PYTEST_USAGE_ERROR = 4
"""pytest's ``ExitCode.USAGE_ERROR`` (pytest is not imported here)."""


def _value(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _VALUE_CHARS else text[: _VALUE_CHARS - 3] + "..."


def _error_line(message: str) -> str:
    """What went wrong in a case that ended before an outcome: pytest's last
    ``E`` line, else the message's first line."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    return (errors or lines or ["failed"])[-1 if errors else 0]


def _case_line(case: Mapping[str, Any]) -> str:
    outcome = case.get("outcome")
    file = case.get("path") or case["file"]  # by its path in the repository, where it is in it
    where = f"{file}:{case['line']}: case {case['case']!r}"
    if not isinstance(outcome, Mapping):
        return f"{where}: {_error_line(str(case.get('message') or ''))}"
    if outcome.get("line"):
        where = f"{file}:{outcome['line']}: case {case['case']!r}"
    problem = str(outcome.get("message") or "failed")
    if outcome.get("step") is not None:
        problem = f"step {outcome['step']} {outcome.get('op')}: {problem}"
    if outcome.get("path") is not None:
        problem += (
            f" (expected {_value(outcome.get('expected'))}, actual {_value(outcome.get('actual'))})"
        )
    return f"{where}: {problem}"


def _case_findings(cases: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    for case in cases:
        if case.get("status") in _FAILED:
            yield _case_line(case)


def _suite_errors(spec: str | None, completed: subprocess.CompletedProcess[str]) -> list[Finding]:
    """The run failed before or beside its cases: pytest's ``ERROR`` lines (a
    case file that does not load), else its last line about an error.  The
    backend ``spec`` (None: the configuration's) is shown, as the plugin
    shows it, with any DSN's password withheld, and so is what pytest said."""
    from roteiro_memory.suite.drivers import NO_BACKEND_NAMED, shown_spec, withheld

    if spec is None and NO_BACKEND_NAMED in completed.stderr:
        return [Finding("roteiro-conformance", NO_BACKEND_NAMED)]
    backend = shown_spec(spec) if spec else _CONFIGURED
    lines = [
        withheld(line.strip(), spec or "")
        for line in (completed.stderr + completed.stdout).splitlines()
        if line.strip() and not line.startswith("=")
    ]
    errors = [line.removeprefix("ERROR ") for line in lines if line.startswith("ERROR ")]
    if errors:
        return [Finding(f"backend {backend!r}", error) for error in errors]
    about = [line for line in lines if "error" in line.lower()]
    problem = (about or lines or [f"pytest exited with status {completed.returncode}"])[-1]
    problem = problem.removeprefix("ERROR: ")
    if problem.startswith(f"backend {backend!r}"):  # the plugin names it too
        problem = problem.removeprefix(f"backend {backend!r}").removeprefix(":").strip()
    return [Finding(f"backend {backend!r}", problem)]


def _no_cases_left(args: Any, completed: subprocess.CompletedProcess[str]) -> str | None:
    """Why the suite refused to run no case at all -- the shipped ones left
    out, no folder named -- in the hook's words, not the plugin's; None when
    it did not refuse that."""
    from roteiro_memory.suite.cases import no_cases_left

    # The plugin's refusal, less the words that told it to leave the shipped cases out.
    plugins = no_cases_left("").strip()
    if completed.returncode != _PYTEST_USAGE_ERROR or plugins not in completed.stderr:
        return None
    leaving_out = (
        "--no-shipped-cases"
        if not args.shipped
        else "roteiro_builtin_cases = false (pytest configuration)"
    )
    return no_cases_left(leaving_out, "--cases", "or roteiro_cases in the pytest configuration")


def run_suite(args: Any) -> Iterator[Finding | str]:
    """Run the suite as ``args`` asks; one finding per failing case, or one
    for a run that could not check its cases.  :class:`UsageError` when
    ``args`` leave it no case to run."""
    with tempfile.TemporaryDirectory(prefix="roteiro-conformance-") as folder:
        report_path = Path(folder) / "report.json"
        completed = subprocess.run(
            _pytest_args(args, report_path),
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode == 0:
            return
        refused = _no_cases_left(args, completed)
        if refused is not None:
            raise UsageError(refused)
        if completed.returncode == 1 and report_path.is_file():
            loaded = json.loads(report_path.read_text(encoding="utf-8"))
            found = list(_case_findings(loaded.get("cases", [])))
            if found:
                yield from found
                return
        yield from _suite_errors(args.backend, completed)


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] == ["report"]:
        from roteiro_memory.precommit.conformance_report import main as publish

        return publish(given[1:])
    cli = parser(
        "roteiro-conformance",
        "Run the ADR-0013 conformance suite against a backend; one line per failing case.",
        takes_files=False,  # pass_filenames: false; the suite reads its own case folders
    )
    cli.add_argument(
        "--backend",
        metavar="SPEC",
        help="sqlite, memory, a registered name, module.path:factory, or 'cmd:COMMAND LINE' "
        "(default: roteiro_backend in the repository's pytest configuration)",
    )
    cli.add_argument(
        "--cases",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder of the repository's own case files (repeatable)",
    )
    cli.add_argument(
        "--no-shipped-cases",
        dest="shipped",
        action="store_false",
        help="run only the cases in --cases folders",
    )
    cli.add_argument("--known-failures", metavar="FILE", help="YAML list of expected failures")
    cli.add_argument("--timeout", type=_timeout, metavar="SECONDS", help="per request, cmd: only")
    cli.add_argument(
        "--install-requirements",
        action="store_true",
        help="first install the suite's requirements into this environment if they are "
        "missing (the pre-commit hook does, as pre-commit installs only the package)",
    )
    args = cli.parse_args(given)
    from roteiro_memory.suite.extras import SUITE_MODULES, ensure_suite

    missing = ensure_suite(
        "roteiro-conformance", ("pytest", *SUITE_MODULES), install=args.install_requirements
    )
    if missing is not None:
        to_stderr(f"{missing}\n")
        return int(ExitCode.USAGE)
    try:
        return report(run_suite(args))
    except UsageError as error:
        to_stderr(f"roteiro-conformance: {error}\n")
        return int(ExitCode.USAGE)


def _timeout(text: str) -> float:
    """``--timeout``'s value, refused as pytest's ``--roteiro-timeout`` refuses it."""
    from roteiro_memory.suite.timeouts import timeout_problem

    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    problem = timeout_problem(seconds)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return seconds


if __name__ == "__main__":
    raise SystemExit(main())
