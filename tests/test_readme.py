"""The README's examples run, so they cannot rot."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(encoding="utf-8"), re.S)


def test_readme_library_example_runs() -> None:
    blocks = _blocks("python")
    assert blocks, "the README shows a library example"
    for block in blocks:
        exec(compile(block, str(README), "exec"), {"__name__": "readme"})


def test_readme_protocol_example_answers_as_shown() -> None:
    """The console transcript of the protocol server is what the server prints."""
    transcript = next(b for b in _blocks("console") if "printf" in b)
    command, _, expected = transcript.partition("\n{")
    command = command.removeprefix("$ ").replace("\\\n", " ")
    result = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "{" + expected.strip()


def test_readme_precommit_snippet_offers_every_hook() -> None:
    """The snippet a user copies names every hook the repository offers."""
    import yaml

    snippet = next(b for b in _blocks("yaml") if "roteiro-forbid-store" in b)
    manifest = (README.parent / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    offered = {hook["id"] for hook in yaml.safe_load(manifest)}
    shown = {hook["id"] for repo in yaml.safe_load(snippet)["repos"] for hook in repo["hooks"]}
    assert shown == offered


def test_suite_readme_installs_only_what_exists() -> None:
    """No release is on the package index: the implementers' README installs
    from a clone or from the wheel built there, named with this version."""
    import tomllib

    text = (README.parent / "conformance" / "README.md").read_text(encoding="utf-8")
    version = tomllib.loads((README.parent / "pyproject.toml").read_text("utf-8"))["project"][
        "version"
    ]
    installs = re.findall(r"pip install '([^']+)'", text)
    assert installs, "the suite's README shows how to install it"
    assert all(not target.startswith("roteiro-memory") for target in installs), installs
    wheels = [t for t in installs if t.endswith(".whl[suite]")]
    assert wheels
    assert all(f"roteiro_memory-{version}-py3-none-any.whl" in w for w in wheels)


def test_ci_runs_the_test_command_the_readme_gives() -> None:
    """The README's first screen gives the test command; CI runs exactly it."""
    text = README.read_text(encoding="utf-8")
    line = text.split("# Install, then run the project's tests", 1)[1].splitlines()[1]
    command = line.rsplit("&& ", 1)[1].strip()
    assert command.startswith("pytest")
    ci = (README.parent / ".ci" / "run").read_text(encoding="utf-8")
    assert f"\n{command}\n" in ci


def test_readme_precommit_snippet_pins_a_commit_of_this_repository() -> None:
    """A clean clone holds the commit the snippet pins (there is no release
    tag to pin: a tag made here would not be in anyone's clone)."""
    import yaml

    snippet = next(b for b in _blocks("yaml") if "roteiro-forbid-store" in b)
    (entry,) = yaml.safe_load(snippet)["repos"]
    rev = str(entry["rev"])
    assert re.fullmatch(r"[0-9a-f]{40}", rev), rev
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"],
        cwd=README.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert shallow == "false", "run the tests in a full clone: the pinned commit is history"
    found = subprocess.run(
        ["git", "cat-file", "-e", f"{rev}^{{commit}}"], cwd=README.parent, check=False
    )
    assert found.returncode == 0, f"{rev} is not a commit of this repository"
    manifest = subprocess.run(
        ["git", "show", f"{rev}:.pre-commit-hooks.yaml"],
        cwd=README.parent,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    pinned = {hook["id"] for hook in yaml.safe_load(manifest)}
    assert {hook["id"] for hook in entry["hooks"]} <= pinned
