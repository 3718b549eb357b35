"""The ADR-0013 conformance suite's engine, usable without pytest.

:mod:`.cases` loads and validates case files, :mod:`.runner` runs one case,
:mod:`.drivers` resolves a backend, :mod:`.report` judges compliance, and
:mod:`.sequences` and :mod:`.properties` generate and run the property
entries.  None imports pytest, so the command line, the pre-commit hooks and
the plugin (:mod:`pytest_roteiro`) all use the same engine::

    from roteiro_memory.suite import load_cases, resolve_backend, run_case

    backend = resolve_backend("sqlite")
    outcomes = [run_case(case, backend) for case in load_cases()]

The names below are loaded on first use, so importing this package costs nothing.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "Backend",
    "BackendFailure",
    "Case",
    "CaseFileError",
    "OpError",
    "Outcome",
    "load_cases",
    "load_registry",
    "resolve_backend",
    "run_case",
]

_HOMES = {
    "Backend": "runner",
    "BackendFailure": "errors",
    "Case": "cases",
    "CaseFileError": "errors",
    "OpError": "errors",
    "Outcome": "runner",
    "load_cases": "cases",
    "load_registry": "cases",
    "resolve_backend": "drivers",
    "run_case": "runner",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'roteiro_memory.suite' has no attribute {name!r}")
    return getattr(importlib.import_module(f"roteiro_memory.suite.{home}"), name)
