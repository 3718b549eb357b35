"""The cases travel inside the wheel.

Builds the wheel from a copy of the sources, installs it with its ``suite``
extra into a fresh virtual environment, and runs ``pytest
--roteiro-conformance`` from an empty folder with that environment's Python:
every shipped case and property must be collected from the installed package
and pass.  Takes a minute or two (building, installing from the package
index), and runs in CI like every other test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from roteiro_memory.suite.cases import builtin_dir, load_cases, load_registry
from roteiro_memory.suite.durability import ENTRIES
from roteiro_memory.suite.properties import load_properties

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("pyproject.toml", "README.md", "roteiro_memory", "pytest_roteiro", "conformance")


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{argv}\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


def clean_env() -> dict[str, str]:
    """This process's environment without what would point at the checkout."""
    drop = {"PYTHONPATH", "VIRTUAL_ENV", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONHOME"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_wheel_installed_in_a_fresh_venv_runs_every_case_from_an_empty_folder(
    tmp_path: Path,
) -> None:
    source = tmp_path / "src"
    for name in SOURCES:
        origin = ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            source.mkdir(exist_ok=True)
            shutil.copy2(origin, source / name)
    env = clean_env()
    dist = tmp_path / "dist"
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(source)], source, env)
    (wheel,) = dist.glob("roteiro_memory-*.whl")

    environment = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, clear=True).create(environment)
    python = environment / ("Scripts" if os.name == "nt" else "bin") / "python"
    run([str(python), "-m", "pip", "install", "-q", f"{wheel}[suite]"], tmp_path, env)

    empty = tmp_path / "empty"
    empty.mkdir()
    where = run(
        [str(python), "-c", "import roteiro_memory.suite.cases as c; print(c.builtin_dir())"],
        empty,
        env,
    )
    shipped = Path(where.stdout.strip())
    assert shipped.is_relative_to(environment), f"cases loaded from {shipped}, not the wheel"
    assert (shipped / "properties.yaml").is_file()

    suite = subprocess.run(
        [str(python), "-m", "pytest", "--roteiro-conformance", "-q", "-p", "no:cacheprovider"],
        cwd=empty,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert suite.returncode == 0, suite.stdout[-6000:] + suite.stderr[-3000:]
    cases = load_cases()
    skipped = sum(1 for case in cases if case.without)  # Unsupported checks: all declared
    expected = (
        len(cases)
        - skipped
        + len(load_properties(builtin_dir() / "properties.yaml", load_registry()))
    )
    summary = suite.stdout.strip().splitlines()[-1]
    # The durability entries need a cmd: backend, so against sqlite they are skipped.
    skipped += len(ENTRIES)
    pattern = rf"{expected} passed, {skipped} skipped in [0-9.]+s( \(.*\))?"
    assert re.fullmatch(pattern, summary), summary
    assert list(empty.iterdir()) == [], "the run left files in the user's folder"
