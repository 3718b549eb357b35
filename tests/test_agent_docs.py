"""The README's "Use it from your coding agent" section works as written:
the install lines install from this checkout, the host files it shows are
what ``setup`` writes, the server and the hooks run with exactly those
entries, the hook example answers as shown, and the instructions name the
tools that exist."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import anyio
import pytest
from agent_repo import GitRepo, mcp_session, run_hook

from roteiro_memory.agents.tools import TOOLS
from roteiro_memory.app.hostconfig import HOOK_EVENTS
from roteiro_memory.cli.commands.setup import installed_command

README = Path(__file__).resolve().parent.parent / "README.md"
HEADING = "## Use it from your coding agent\n"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
PLACEHOLDER = "/path/to/roteiro-memory"
EXAMPLE_ROOT = "/work/app"


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


def json_blocks() -> list[Any]:
    return [json.loads(b) for b in blocks("json")]


def real(value: Any, command: str) -> Any:
    """A README value with the placeholder path replaced by ``command``."""
    return json.loads(json.dumps(value).replace(PLACEHOLDER, command))


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


# --- Installing -------------------------------------------------------------------


def install_lines() -> list[list[str]]:
    (block,) = [b for b in blocks("sh") if "install" in b]
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


def test_the_install_lines_install_this_checkout_with_an_extra_that_exists() -> None:
    extras = tomllib.loads((README.parent / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    lines = install_lines()
    assert [line[:2] for line in lines] == [["pipx", "install"], ["python3", "-m"]]
    for line in lines:
        target = line[-1]
        assert target.startswith(".["), target  # this checkout, not a release that is not published
        assert target[2:-1] in extras, target
    assert not re.search(r"pip install '?roteiro-memory\[", README.read_text())


def test_the_pip_install_line_resolves_from_the_checkout() -> None:
    pip_line = next(line for line in install_lines() if line[0] == "python3")
    argv = [sys.executable, *pip_line[1:4], "--dry-run", "--no-deps", "-q", *pip_line[4:]]
    done = subprocess.run(argv, cwd=README.parent, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


# --- What setup writes --------------------------------------------------------------


def shown_for(host: str) -> dict[str, Any]:
    """The README's block for each of ``host``'s files, placeholder replaced."""
    command = installed_command()
    found = json_blocks()
    servers = [b for b in found if "mcpServers" in b]
    files: dict[str, Any] = {
        "claude-code": {
            ".mcp.json": next(b for b in servers if "type" in b["mcpServers"]["roteiro-memory"]),
            ".claude/settings.json": next(b for b in found if "hooks" in b),
        },
        "cursor": {
            ".cursor/mcp.json": next(
                b for b in servers if "type" not in b["mcpServers"]["roteiro-memory"]
            )
        },
        "codex": {".codex/config.toml": tomllib.loads(blocks("toml")[0])},
    }[host]
    return {name: real(value, command) for name, value in files.items()}


@pytest.mark.parametrize("host", ["claude-code", "cursor", "codex"])
def test_the_host_files_shown_are_what_setup_writes(repo: GitRepo, host: str) -> None:
    done = repo.cli("setup", host, "--print", "--json")
    assert done.returncode == 0, done.stderr
    written = {
        entry["path"]: (
            tomllib.loads(entry["text"])
            if entry["path"].endswith(".toml")
            else json.loads(entry["text"])
        )
        for entry in json.loads(done.stdout)["result"]["files"]
    }
    assert written == shown_for(host)


def test_the_hooks_shown_run_one_command_for_every_event_it_answers() -> None:
    settings = next(b for b in json_blocks() if "hooks" in b)
    assert list(settings["hooks"]) == [event for event, _ in HOOK_EVENTS]
    for groups in settings["hooks"].values():
        (group,) = groups
        assert group["hooks"] == [{"type": "command", "command": f"{PLACEHOLDER} hook"}]


def test_the_server_entry_shown_serves_every_tool(repo: GitRepo) -> None:
    entry = shown_for("claude-code")[".mcp.json"]["mcpServers"]["roteiro-memory"]

    async def main() -> tuple[list[str], Any]:
        async with mcp_session(repo, entry["args"], command=entry["command"]) as session:
            names = [tool.name for tool in (await session.list_tools()).tools]
            failed = await session.call_tool("forget", {"id": 42})
            return names, failed

    names, failed = anyio.run(main)
    assert names == [tool.name for tool in TOOLS]
    quoted = re.search(r"e\.g\. `(NotFound: .*?)`", section().replace("\n", " "))
    assert quoted is not None, "the section quotes a tool error"
    assert failed.is_error
    assert failed.content[0].text == quoted.group(1)


# --- What the agent is told ---------------------------------------------------------


def readme_module() -> str:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"^```python file=src/app/retry\.py\n(.*?)^```$", text, re.M | re.S)
    assert found is not None, "the README shows the module its session works on"
    return found.group(1)


def hook(repo: GitRepo, event: Any) -> subprocess.CompletedProcess[str]:
    return run_hook(repo, event, [installed_command(), "hook"])


def at(repo: GitRepo, value: Any) -> Any:
    """A README value with the example's repository made this one."""
    return json.loads(json.dumps(value).replace(EXAMPLE_ROOT, str(repo.root)))


def test_the_hook_example_answers_as_shown(repo: GitRepo) -> None:
    repo.write("src/app/retry.py", readme_module())
    repo.commit("the README's module")
    (transcript,) = [b for b in blocks("console") if "roteiro-memory add" in b]
    command, expected = transcript.splitlines()
    done = repo.cli(*shlex.split(command.removeprefix("$ roteiro-memory ")))
    assert (done.returncode, done.stdout) == (0, expected + "\n"), done.stderr
    event, before, after = [
        b for b in json_blocks() if "hook_event_name" in b or "hookSpecificOutput" in b
    ]
    event = at(repo, event)
    first = hook(repo, event)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == before
    edit = event["tool_input"]
    source = (repo.root / "src/app/retry.py").read_text()
    repo.write("src/app/retry.py", source.replace(edit["old_string"], edit["new_string"]))
    second = hook(repo, event)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout) == after
    repo.write("NOTES.md", "nothing is recorded about this\n")
    nothing = hook(repo, {**event, "tool_input": {"file_path": str(repo.root / "NOTES.md")}})
    assert (nothing.returncode, nothing.stdout, nothing.stderr) == (0, "", "")


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
            assert ("idempotentHint" in hints) == tool.idempotent, name
