"""Where the suite's shipped files are: the cases, their schemas, the
invariant registry and ``PROTOCOL.md``, as one folder."""

from __future__ import annotations

from importlib import metadata, resources
from pathlib import Path

__all__ = ["builtin_dir", "suite_version"]


def builtin_dir() -> Path:
    """The folder of the cases that ship with this package."""
    try:
        root = resources.files("roteiro_memory.conformance")
    except ModuleNotFoundError:  # a source checkout that was never installed
        return Path(__file__).resolve().parents[2] / "conformance"
    return Path(str(root))


def suite_version() -> str:
    """The version of the distribution that ships the suite (read from its
    metadata, as the library's ``__version__`` is; the suite imports none of
    the library)."""
    try:
        return metadata.version("roteiro-memory")
    except metadata.PackageNotFoundError:  # a source checkout that was never installed
        return "0+unknown"
