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
