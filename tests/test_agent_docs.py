"""The README's "Use it from your coding agent" section works as written: the
server starts with exactly the command each client's snippet gives, the hook
runs, and the instructions name the tools that exist."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from agent_repo import GitRepo, mcp_session

from roteiro_memory.agents.tools import TOOLS

if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing SDK fails
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

README = Path(__file__).resolve().parent.parent / "README.md"
HEADING = "## Use it from your coding agent\n"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def section() -> str:
    """The section's text, up to the next heading of its level outside a fence
    (the CLAUDE.md snippet holds a heading of its own)."""
    text = README.read_text(encoding="utf-8")
    lines = text[text.index(HEADING) + len(HEADING) :].splitlines(keepends=True)
    kept, fenced = [], False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        elif line.startswith("## ") and not fenced:
            break
        kept.append(line)
    return "".join(kept)


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(section()) if lang == language]


def claude_command() -> list[str]:
    line = next(b for b in blocks("sh") if b.startswith("claude mcp add"))
    words = shlex.split(line)
    assert words[:4] == ["claude", "mcp", "add", "roteiro-memory"]
    return words[words.index("--") + 1 :]


def codex_command() -> list[str]:
    config = tomllib.loads(blocks("toml")[0])
    server = config["mcp_servers"]["roteiro-memory"]
    return [server["command"], *server["args"]]


def cursor_command() -> list[str]:
    config = next(json.loads(b) for b in blocks("json") if "mcpServers" in b)
    server = config["mcpServers"]["roteiro-memory"]
    return [server["command"], *server["args"]]


def hook_command() -> str:
    settings = next(json.loads(b) for b in blocks("json") if "SessionStart" in b)
    (group,) = settings["hooks"]["SessionStart"]
    (hook,) = group["hooks"]
    assert hook["type"] == "command"
    return str(hook["command"])


def executable(name: str) -> str:
    """The console script as the client would find it on PATH."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    assert found is not None, f"{name} is not installed"
    return found


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def test_every_client_snippet_gives_the_same_command() -> None:
    assert claude_command() == codex_command() == cursor_command() == ["roteiro-memory", "mcp"]


def test_the_snippets_command_serves_every_tool(repo: GitRepo) -> None:
    command, *args = cursor_command()

    async def main() -> tuple[list[str], Any]:
        async with mcp_session(repo, args, command=executable(command)) as session:
            names = [tool.name for tool in (await session.list_tools()).tools]
            failed = await session.call_tool("forget", {"id": 42})
            return names, failed

    names, failed = anyio.run(main)
    assert names == [tool.name for tool in TOOLS]
    quoted = re.search(r"e\.g\. `(NotFound: .*?)`", section().replace("\n", " "))
    assert quoted is not None, "the section quotes a tool error"
    assert failed.is_error
    assert failed.content[0].text == quoted.group(1)


def test_the_session_start_hook_prints_the_digest(repo: GitRepo) -> None:
    words = shlex.split(hook_command())
    assert words[:2] == ["roteiro-memory", "pack"]
    argv = [executable(words[0]), *words[1:]]
    empty = subprocess.run(argv, cwd=repo.root, env=repo.env, capture_output=True, text=True)
    assert empty.returncode == 0, empty.stderr
    assert empty.stdout.startswith("# Memory for this repository\n")
    added = repo.cli("add", "retry only OSError", "--anchor", "src/app/retry.py::Retry.run")
    assert added.returncode == 0, added.stderr
    full = subprocess.run(argv, cwd=repo.root, env=repo.env, capture_output=True, text=True)
    assert full.returncode == 0, full.stderr
    assert "- #1 lesson valid 0.50 @ src/app/retry.py::Retry.run: retry only OSError" in full.stdout


def test_the_agent_instructions_name_real_tools_and_every_kind_they_teach() -> None:
    (snippet,) = blocks("markdown")
    tools = {tool.name for tool in TOOLS}
    named = set(re.findall(r"`(\w+)`", snippet))
    assert {"search", "touched", "remember", "forget"} <= named
    schema = next(t for t in TOOLS if t.name == "remember").input_schema["properties"]
    for word in named - tools:
        assert word in schema or word in schema["kind"]["enum"] or word == "drifted", word
    for kind in ("lesson", "attempt", "decision"):
        assert f"kind `{kind}`" in snippet
    assert "`supersedes`" in snippet


def test_the_tool_table_lists_every_tool_with_its_annotations() -> None:
    rows = {
        cells[0]: cells[2]
        for line in section().splitlines()
        if line.startswith("| `")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    listed = {name for key in rows for name in re.findall(r"`(\w+)`", key)}
    assert listed == {tool.name for tool in TOOLS}
    for key, hints in rows.items():
        for name in re.findall(r"`(\w+)`", key):
            tool = next(t for t in TOOLS if t.name == name)
            assert ("readOnlyHint" in hints) == tool.read_only, name
            assert ("destructiveHint" in hints) == tool.destructive, name
