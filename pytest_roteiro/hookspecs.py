"""Hooks the conformance plugin calls, for other plugins and conftest files.

Registered through ``pytest_addhooks``.  Implement them in a ``conftest.py`` or
an installed pytest plugin; a backend package that is not a pytest plugin can
use the ``roteiro.backends`` entry-point group instead.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from pluggy import HookspecMarker

if TYPE_CHECKING:
    import pytest

    from roteiro_memory.suite.runner import Backend

hookspec = HookspecMarker("pytest")


@hookspec
def pytest_roteiro_backend_factories(
    config: pytest.Config,
) -> dict[str, Callable[[], object]] | None:
    """Return named backend factories, usable as ``--roteiro-backend NAME``.

    A factory takes no arguments and returns a ``roteiro_memory`` ``Store``
    or any object with ``call(op, args)`` that returns JSON results and raises
    exceptions carrying a PROTOCOL error ``kind``.  Every implementation's
    mapping is merged; names are matched exactly.
    """


@hookspec(firstresult=True)
def pytest_roteiro_make_backend(config: pytest.Config, spec: str) -> Backend | None:
    """Build the backend for ``spec`` yourself, or return None to let the
    plugin resolve it (built-in names, factories, ``module:factory``,
    ``cmd:``).  The first non-None result is used."""


@hookspec
def pytest_roteiro_case_dirs(config: pytest.Config) -> list[Path] | None:
    """Return extra folders of case files, as if given with ``--roteiro-cases``."""
