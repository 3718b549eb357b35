"""The installed version, read from the package metadata (``pyproject.toml``
is its one source) on first use, so start-up does not pay for it."""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "version"]

DISTRIBUTION = "roteiro-memory"
"""The name this package is installed under, whose metadata holds the version."""

_READ: list[str] = []  # the version once read (no functools.cache at start-up)


def version() -> str:
    """The installed version; ``0+unknown`` in a checkout never installed."""
    if not _READ:
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as installed

        try:
            _READ.append(installed(DISTRIBUTION))
        except PackageNotFoundError:
            _READ.append("0+unknown")
    return _READ[0]
