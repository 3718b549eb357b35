"""The ADR-0013 conformance suite as a pytest plugin.

``pytest --roteiro-conformance --roteiro-backend SPEC`` runs every YAML case in
``conformance/`` against a backend and reports, invariant by invariant, whether
it honours ADR-0013.  The pieces that do not need pytest -- :mod:`.cases`
(loading and validating case files), :mod:`.runner` (running one case),
:mod:`.backends` (resolving a backend) and :mod:`.report` -- import nothing from
pytest, so other tools can use them::

    from pytest_roteiro import load_cases, resolve_backend, run_case

    backend = resolve_backend("sqlite")
    outcomes = [run_case(case, backend) for case in load_cases()]

The names below are loaded on first use, so importing this package (as pytest
does for every run through the ``pytest11`` entry point) costs nothing.
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
    "BackendFailure": "runner",
    "Case": "cases",
    "CaseFileError": "cases",
    "OpError": "runner",
    "Outcome": "runner",
    "load_cases": "cases",
    "load_registry": "cases",
    "resolve_backend": "backends",
    "run_case": "runner",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'pytest_roteiro' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pytest_roteiro.{home}"), name)
