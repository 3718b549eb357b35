"""The README's command-line session is executable: it runs, in order, in a
fresh repository, and prints exactly what the page shows.  docs/cli.md, the
reference, names every command."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from roteiro_memory.app import moves
from roteiro_memory.cli.commands import cache, names
from roteiro_memory.repo import renames

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cli.md"
README = ROOT / "README.md"
SESSION_HEADING = "## In a repository: the command line\n"
FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _session_text() -> str:
    """The README's session section, up to the next heading of its level."""
    text = README.read_text(encoding="utf-8")
    start = text.index(SESSION_HEADING) + len(SESSION_HEADING)
    end = text.find("\n## ", start)
    return text[start:] if end < 0 else text[start:end]


def _blocks() -> list[tuple[str, str, str]]:
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in FENCE.finditer(_session_text())]


def _session() -> list[tuple[str, str]]:
    """(command, expected output) pairs from every console block, in order."""
    steps: list[tuple[str, list[str]]] = []
    for language, _, body in _blocks():
        if language != "console":
            continue
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
    return [(command, "".join(f"{line}\n" for line in out)) for command, out in steps]


def test_the_documented_session_prints_what_the_page_shows(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    env.update(
        COLUMNS="120",
        GIT_AUTHOR_NAME="A",
        GIT_AUTHOR_EMAIL="a@example.com",
        GIT_COMMITTER_NAME="A",
        GIT_COMMITTER_EMAIL="a@example.com",
        GIT_CONFIG_GLOBAL=os.devnull,
    )
    repo = tmp_path / "shop"
    repo.mkdir()
    files = [(info, body) for language, info, body in _blocks() if info.startswith("file=")]
    assert files, "the README shows the module its session works on"
    for info, body in files:
        target = repo / info.removeprefix("file=")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body)
    for setup in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *setup], cwd=repo, env=env, check=True)
    session = _session()
    assert len(session) >= 8
    assert any("~ drifted" in out for _, out in session)
    for command, expected in session:
        done = subprocess.run(
            ["bash", "-c", command], cwd=repo, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout == expected, command


def test_the_page_names_every_command() -> None:
    text = DOC.read_text()
    for name in names():
        assert f"`{name}" in text, name
    for action, *_ in cache.ACTIONS:
        assert action in text, action


def test_the_page_gives_the_history_reanchor_looks_through() -> None:
    text = " ".join(DOC.read_text().split())
    assert f"the last {renames.HISTORY_LOOKED_AT} commits that changed" in text
    assert moves.HISTORY_READ == 2 * 1024 * 1024
    assert "only the newest versions that fit in 2 MiB are" in text
