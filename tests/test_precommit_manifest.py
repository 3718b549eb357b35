"""The hooks as offered: manifest, console scripts and modules agree, and a
hook imports nothing heavy before it has something to check."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from importlib import import_module
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
HOOK_MODULES = ("check_store", "forbid_store", "lint_cases", "conformance")


def _manifest() -> list[dict[str, object]]:
    hooks: list[dict[str, object]] = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return hooks


def _scripts() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    scripts: dict[str, str] = project["scripts"]
    return scripts


def test_manifest_offers_one_hook_per_module_each_a_console_script() -> None:
    hooks = _manifest()
    scripts = _scripts()
    assert [hook["id"] for hook in hooks] == [
        f"roteiro-{module.replace('_', '-')}" for module in HOOK_MODULES
    ]
    for hook, module in zip(hooks, HOOK_MODULES, strict=True):
        assert hook["language"] == "python"
        assert str(hook["entry"]).split()[0] == hook["id"]
        assert scripts[str(hook["id"])] == f"roteiro_memory.precommit.{module}:main"
        assert callable(import_module(f"roteiro_memory.precommit.{module}").main)


def test_manifest_leaves_additional_dependencies_to_the_user() -> None:
    """A user's ``additional_dependencies`` (their backend) replace the
    manifest's, so no hook relies on them: the hooks that need the suite
    install its requirements themselves."""
    for hook in _manifest():
        assert "additional_dependencies" not in hook, hook["id"]
    entries = {str(h["id"]): str(h["entry"]) for h in _manifest()}
    assert entries["roteiro-lint-cases"].endswith(" --install-requirements")
    assert entries["roteiro-conformance"].endswith(" --install-requirements")
    assert entries["roteiro-forbid-store"] == "roteiro-forbid-store"


def test_hooks_that_judge_files_together_or_install_run_in_one_process() -> None:
    """pre-commit splits the files among parallel processes unless a hook
    asks otherwise: a case id used in two files would go unseen when the
    files land in different processes, and two processes would install the
    suite's requirements at once."""
    serial = {str(h["id"]) for h in _manifest() if h.get("require_serial") is True}
    assert serial == {"roteiro-lint-cases", "roteiro-conformance"}


def test_manifest_sets_stages_and_minimum_version_as_pre_commit_hooks_does() -> None:
    for hook in _manifest():
        assert hook["stages"] == ["pre-commit", "pre-push", "manual"], hook["id"]
        assert hook["minimum_pre_commit_version"] == "3.2.0", hook["id"]


def test_a_hook_installs_the_suite_requirements_it_misses(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--install-requirements`` runs pip for the suite's requirements once,
    in this Python's environment, then checks again."""
    from roteiro_memory.suite import extras

    ran: list[list[str]] = []
    missing = {"jsonschema"}

    def pip(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        missing.clear()
        return subprocess.CompletedProcess(argv, 0, "", "")

    def importer(name: str) -> object:
        if name in missing:
            raise ImportError(f"No module named {name!r}")
        return object()

    monkeypatch.setattr(extras.subprocess, "run", pip)
    monkeypatch.setattr(extras.importlib, "import_module", importer)
    assert extras.ensure_suite("hook", ("yaml", "jsonschema"), install=False) is not None
    assert ran == []
    assert extras.ensure_suite("hook", ("yaml", "jsonschema"), install=True) is None
    assert ran == [[sys.executable, "-m", "pip", "install", "-q", *extras.suite_requirements()]]
    assert "installing the suite's requirements" in capsys.readouterr().err


def test_dogfood_config_runs_the_linters_and_lint_cases_on_conformance() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert {"ruff", "ruff-format", "mypy", "roteiro-lint-cases"} <= set(hooks)
    assert hooks["roteiro-lint-cases"]["files"].startswith("^conformance/")


def _imported_after(module: str, *files: Path) -> set[str]:
    heavy = ("yaml", "jsonschema", "sqlite3", "pytest", "pytest_roteiro", "roteiro_memory.check")
    code = (
        "import json, sys\n"
        f"from roteiro_memory.precommit.{module} import main\n"
        f"status = main({[str(f) for f in files]!r})\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.startswith({heavy!r}))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_startup_imports_nothing_heavy_when_no_store_is_passed(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("an ordinary file\n")
    assert _imported_after("forbid_store", text) == set()
    assert _imported_after("check_store", text) == set()
    assert _imported_after("lint_cases") == set()
