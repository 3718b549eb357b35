"""The plugin's configuration and per-run state, kept in pytest's stash.

Only pytest and the standard library are imported here: the plugin module
imports this whether or not the suite is enabled.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from roteiro_memory.suite.cases import Invariant
    from roteiro_memory.suite.report import KnownFailure
    from roteiro_memory.suite.runner import Backend, Outcome  # noqa: F401 -- in a string annotation

__all__ = [
    "CONFIG_KEY",
    "OUTCOME_KEY",
    "SEED_INPUT",
    "STATE_KEY",
    "RoteiroConfig",
    "RunState",
    "resolve_config",
]


@dataclass(frozen=True)
class RoteiroConfig:
    """The plugin's options, resolved once from the command line and ini file."""

    enabled: bool
    backend: str = "sqlite"
    """The backend spec as given: what the backend is made of, never shown."""
    backend_shown: str = "sqlite"
    """The backend spec as the summary, the reports and every message show
    it: with the password of any DSN in it withheld
    (:func:`roteiro_memory.suite.drivers.shown_spec`)."""
    case_dirs: tuple[Path, ...] = ()
    builtin_cases: bool = True
    report: Path | None = None
    known_failures: Path | None = None
    timeout: float = 10.0
    cases_only: bool = True
    """Whether, with no paths named, the cases are the whole run: so when the
    suite is switched on by ``--roteiro-conformance``; when it is switched on
    by the ini file, the project's own tests (``testpaths``) run beside them."""
    explore: bool = False
    """Whether the properties try new sequences (a seed drawn for the run, or given)."""
    seed: int = 0
    """The seed every property draws its sequences from; printed in the report."""
    allow_reset: bool = False
    """Whether the suite may reset a store that already holds data."""


@dataclass
class RunState:
    """What one run holds: the backend (created on first use), the registry,
    known failures, and every case result seen (on the xdist controller too)."""

    config: RoteiroConfig
    registry: dict[str, Invariant] = field(default_factory=dict)
    known: dict[str, KnownFailure] = field(default_factory=dict)
    backend: Backend | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    selected: tuple[str, ...] = ()
    """Node ids of cases named on the command line; none means every case."""
    notes: list[str] = field(default_factory=list)
    """What the run found before its first case and goes on with (the
    backend's reads wrote to its empty store): the summary and report say it."""
    report_problem: str | None = None
    """Why the report could not be written at the end, when it could not."""


SEED_INPUT = "roteiro_seed"
"""The key under which an xdist controller hands its seed to the workers."""
CONFIG_KEY = pytest.StashKey[RoteiroConfig]()
STATE_KEY = pytest.StashKey[RunState]()
OUTCOME_KEY = pytest.StashKey["Outcome"]()


def _backend_named(config: pytest.Config) -> bool:
    """Whether the command line or the configuration names the backend (else
    it is the ini's default, ``sqlite``)."""
    overrides = config.getoption("override_ini") or []
    return (
        config.getoption("roteiro_backend") is not None
        or "roteiro_backend" in config.inicfg
        or any(item.partition("=")[0].strip() == "roteiro_backend" for item in overrides)
    )


def resolve_config(config: pytest.Config) -> RoteiroConfig:
    """The options as given on the command line, else in the ini file."""

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
    report = _ini_path(config, "roteiro_report")
    known = _ini_path(config, "roteiro_known_failures")
    timeout_raw = pick("roteiro_timeout", "roteiro_timeout")
    try:
        timeout = float(timeout_raw)
    except ValueError:
        raise pytest.UsageError(
            f"roteiro_timeout: {timeout_raw!r} is not a number of seconds"
        ) from None
    from roteiro_memory.suite.timeouts import timeout_problem

    problem = timeout_problem(timeout)
    if problem is not None:
        raise pytest.UsageError(f"--roteiro-timeout: {problem}")
    explore, seed = _seed(config, bool(pick("roteiro_explore", "roteiro_explore")))
    from roteiro_memory.suite.drivers import NO_BACKEND_NAMED, shown_spec

    if config.getoption("roteiro_backend_required") and not _backend_named(config):
        raise pytest.UsageError(NO_BACKEND_NAMED)
    backend = str(pick("roteiro_backend", "roteiro_backend"))
    return RoteiroConfig(
        enabled=True,
        backend=backend,
        backend_shown=shown_spec(backend),
        case_dirs=tuple(Path(d) for d in dirs),
        builtin_cases=builtin,
        report=report,
        known_failures=known,
        timeout=timeout,
        cases_only=config.getoption("roteiro_conformance") is not None,
        explore=explore,
        seed=seed,
        allow_reset=bool(pick("roteiro_allow_reset", "roteiro_allow_reset")),
    )


def _ini_path(config: pytest.Config, name: str) -> Path | None:
    """A path option: from the command line against the current folder, from
    the ini file against that file's folder (as pytest's ``paths`` type does).
    Made absolute, never resolved: a symlink there is the file named (the
    report replaces it, its summary is written beside it), and
    ``/dev/stdout`` stays the stream it names."""
    given = config.getoption(name)
    if given is not None and not given.strip():
        option = "--" + name.replace("_", "-")
        raise pytest.UsageError(f"{option}: the path given is empty; give a file's path")
    if given:
        return Path(os.path.abspath(given))
    value = str(config.getini(name) or "")
    if not value:
        return None
    base = config.inipath.parent if config.inipath is not None else config.rootpath
    return Path(os.path.abspath(base / value))


def _seed(config: pytest.Config, explore: bool) -> tuple[bool, int]:
    """Whether the run explores, and its seed.

    A seed given (``--roteiro-seed``, ini ``roteiro_seed``, or Hypothesis's own
    ``--hypothesis-seed``) is used as is; ``--roteiro-explore`` alone draws a
    new one, which the report prints so the run can be repeated.  Otherwise
    every run uses the same fixed seed.
    """
    from roteiro_memory.suite.properties import DEFAULT_SEED

    raw = config.getoption("roteiro_seed")
    if raw is None:
        raw = config.getoption("hypothesis_seed", None)
    if raw is None:
        raw = config.getini("roteiro_seed") or None
    worker = getattr(config, "workerinput", {}).get(SEED_INPUT)
    if worker is not None:
        # An xdist worker runs with the controller's seed, so all agree.
        return bool(worker["explore"]), int(worker["seed"])
    if raw is not None:
        try:
            return True, int(str(raw), 0)
        except ValueError:
            raise pytest.UsageError(
                f"--roteiro-seed: {raw!r} is not a whole number; give the seed the report printed"
            ) from None
    if explore:
        return True, random.SystemRandom().getrandbits(32)
    return False, DEFAULT_SEED


def enabled(config: pytest.Config) -> bool:
    """Whether the suite runs in this session."""
    resolved = config.stash.get(CONFIG_KEY, None)
    return resolved is not None and resolved.enabled
