"""The plugin's configuration and per-run state, kept in pytest's stash.

Only pytest and the standard library are imported here: the plugin module
imports this whether or not the suite is enabled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from roteiro_memory.suite.cases import Invariant
    from roteiro_memory.suite.report import KnownFailure
    from roteiro_memory.suite.runner import Backend, Outcome  # noqa: F401 -- in a string annotation

__all__ = ["CONFIG_KEY", "OUTCOME_KEY", "STATE_KEY", "RoteiroConfig", "RunState", "resolve_config"]


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
class RunState:
    """What one run holds: the backend (created on first use), the registry,
    known failures, and every case result seen (on the xdist controller too)."""

    config: RoteiroConfig
    registry: dict[str, Invariant] = field(default_factory=dict)
    known: dict[str, KnownFailure] = field(default_factory=dict)
    backend: Backend | None = None
    results: list[dict[str, Any]] = field(default_factory=list)


CONFIG_KEY = pytest.StashKey[RoteiroConfig]()
STATE_KEY = pytest.StashKey[RunState]()
OUTCOME_KEY = pytest.StashKey["Outcome"]()


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


def enabled(config: pytest.Config) -> bool:
    """Whether the suite runs in this session."""
    resolved = config.stash.get(CONFIG_KEY, None)
    return resolved is not None and resolved.enabled
