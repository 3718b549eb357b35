"""The version string has one source, the package metadata, read lazily."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import roteiro_memory
from roteiro_memory.protocol import Ops

ROOT = Path(__file__).resolve().parents[1]


def test_version_is_the_installed_metadata_and_pyproject() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert roteiro_memory.__version__ == version("roteiro-memory")
    assert roteiro_memory.__version__ == declared["project"]["version"]


def test_version_is_what_hello_and_the_command_line_report() -> None:
    from roteiro_memory.stores.model import ModelStore

    hello = Ops(ModelStore()).hello()
    assert hello["implementation"]["version"] == roteiro_memory.__version__
    done = subprocess.run(
        [sys.executable, "-m", "roteiro_memory", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stdout == f"roteiro-memory {roteiro_memory.__version__}\n"


def test_version_is_not_read_at_import() -> None:
    """Reading the metadata costs start-up time no command but --version needs."""
    code = "import sys, roteiro_memory; print('importlib.metadata' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
