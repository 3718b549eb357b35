"""What the suite needs beyond the library, and the one line saying how to get it.

``pip install roteiro-memory`` gives the library only; the suite (the pytest
plugin, ``roteiro-lint-cases``, ``roteiro-conformance``) needs the ``suite``
extra.  Its requirements are read from the package's own metadata, so
``pyproject.toml`` stays their one home.

This module imports only the standard library.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence

__all__ = [
    "SUITE_MODULES",
    "ensure_suite",
    "missing_suite_dependency",
    "suite_install_command",
    "suite_requirements",
]

SUITE_MODULES = ("yaml", "jsonschema", "hypothesis", "pluggy")
"""The modules the suite imports that the library does not need."""

_EXTRA = re.compile(r"""extra\s*==\s*["']suite["']""")


def suite_requirements() -> list[str]:
    """The ``suite`` extra's requirements as ``pyproject.toml`` lists them."""
    try:
        listed = importlib.metadata.requires("roteiro-memory") or []
    except importlib.metadata.PackageNotFoundError:
        listed = []
    out = [r.partition(";")[0].strip() for r in listed if _EXTRA.search(r.partition(";")[2])]
    return out or ["pytest>=8", "pluggy>=1.5", "PyYAML>=6", "hypothesis>=6.100", "jsonschema>=4.20"]


def suite_install_command() -> str:
    """A command that installs the suite's requirements, working as written
    whether or not a release is on the package index."""
    return "pip install " + " ".join(shlex.quote(r) for r in suite_requirements())


def missing_suite_dependency(tool: str, modules: Sequence[str] = SUITE_MODULES) -> str | None:
    """None when ``modules`` import; else one line for ``tool`` naming the
    missing module and the exact install command."""
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as error:
            return (
                f"{tool} needs roteiro-memory's 'suite' extra ({error}); "
                f"install it with: {suite_install_command()}"
            )
    return None


def ensure_suite(tool: str, modules: Sequence[str], *, install: bool) -> str | None:
    """None when ``modules`` import.  Else, with ``install``, first pip-install
    the suite's requirements into this Python's environment -- what a
    pre-commit hook does, since pre-commit installs only the package (and the
    user's ``additional_dependencies``, which replace any the manifest lists).
    The one line saying what is still missing, or None."""
    missing = missing_suite_dependency(tool, modules)
    if missing is None or not install:
        return missing
    print(f"{tool}: installing the suite's requirements into {sys.prefix}", file=sys.stderr)
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", *suite_requirements()],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        return f"{missing} (installing them failed: {said[-1] if said else done.returncode})"
    importlib.invalidate_caches()
    return missing_suite_dependency(tool, modules)
