"""``roteiro-memory mcp`` driven end to end by the MCP SDK's own stdio client:
a real server process per session, in a real git repository."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import jsonschema
import pytest
from agent_repo import RETRY, GitRepo, mcp_session

from roteiro_memory.agents.tools import TOOLS

if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing SDK fails
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

TOOL_NAMES = ["remember", "search", "touched", "get", "list", "reanchor", "confirm", "forget"]


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def serve_args(db: Path) -> list[str]:
    return ["-m", "roteiro_memory", "mcp", "--db", str(db)]


def run(main: Any) -> Any:
    return anyio.run(main)


OUTPUT_SCHEMAS = {tool.name: tool.output_schema for tool in TOOLS}


async def call(session: Any, name: str, arguments: dict[str, Any]) -> Any:
    """The structured result of a call that must succeed: its PROTOCOL shape
    (checked against the tool's schema), and a text that does not repeat it."""
    result = await session.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    jsonschema.validate(result.structured_content, OUTPUT_SCHEMAS[name])
    (text,) = [block.text for block in result.content]
    assert '"anchor_state"' not in text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)  # lines for a model, not the structure again
    return result.structured_content


async def fail(session: Any, name: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """The error kind and text of a call that must fail as a tool error."""
    result = await session.call_tool(name, arguments)
    assert result.is_error, result.structured_content
    error = result.structured_content["error"]
    assert result.content[0].text.startswith(f"{error['kind']}: ")
    assert "What to do: " in result.content[0].text
    return error["kind"], result.content[0].text


def test_tools_list_names_schemas_and_annotations(repo: GitRepo, tmp_path: Path) -> None:
    async def main() -> Any:
        async with mcp_session(repo, serve_args(tmp_path / "m.db")) as session:
            return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in run(main)}
    assert list(tools) == TOOL_NAMES
    assert "reset" not in tools
    for tool in tools.values():
        assert len(tool.description) > 40, tool.name
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema is None  # kept out of tools/list: the text is what is read
        assert tool.annotations.open_world_hint is False
    for name in ("search", "touched", "get", "list"):
        assert tools[name].annotations.read_only_hint is True, name
        assert tools[name].annotations.destructive_hint is False, name
    assert tools["remember"].annotations.read_only_hint is False
    assert tools["remember"].annotations.destructive_hint is False
    assert tools["forget"].annotations.read_only_hint is False
    assert tools["forget"].annotations.destructive_hint is True
    # Truthful: a second forget of the same id is refused, and remember may
    # be told to write a duplicate.
    assert tools["forget"].annotations.idempotent_hint is False
    assert tools["remember"].annotations.idempotent_hint is False
    assert tools["remember"].input_schema["required"] == ["kind", "body"]
    assert set(tools["remember"].input_schema["properties"]) == {
        "kind",
        "body",
        "anchor",
        "confidence",
        "supersedes",
        "scope",
        "allow_duplicate",
    }
    assert tools["get"].input_schema["required"] == ["id"]
    assert tools["forget"].input_schema["required"] == ["id"]
    assert {"query", "kind", "anchor", "applicable_only", "limit"} <= set(
        tools["search"].input_schema["properties"]
    )


def test_every_tool_returns_its_protocol_shape(repo: GitRepo, tmp_path: Path) -> None:
    """The client checks each structured result against the tool's output schema."""

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with mcp_session(repo, serve_args(tmp_path / "m.db")) as session:
            out["remember"] = await call(
                session,
                "remember",
                {
                    "kind": "lesson",
                    "body": "Retry.run must cap its backoff",
                    "anchor": "src/app/retry.py::Retry.run",
                    "confidence": 0.8,
                },
            )
            out["decision"] = await call(
                session, "remember", {"kind": "decision", "body": "use jitter everywhere"}
            )
            out["newer"] = await call(
                session,
                "remember",
                {
                    "kind": "lesson",
                    "body": "Retry.run caps backoff at 30 s",
                    "anchor": "src/app/retry.py::Retry.run",
                    "supersedes": out["remember"]["id"],
                },
            )
            out["search"] = await call(session, "search", {"query": "backoff"})
            out["touched"] = await call(session, "touched", {})
            out["get"] = await call(session, "get", {"id": out["remember"]["id"]})
            out["list"] = await call(session, "list", {"include_superseded": True})
            out["list_file"] = await call(session, "list", {"anchor": "src/app/retry.py"})
            out["forget"] = await call(session, "forget", {"id": out["newer"]["id"]})
            out["after"] = await call(session, "search", {})
        return out

    out = run(main)
    first = out["remember"]["record"]
    assert out["remember"]["id"] == first["id"] == 1
    assert first["anchor"]["key"] == "py:src/app/retry.py::Retry.run"
    assert first["anchor_state"] == "valid"
    assert first["applies"] is True
    assert out["newer"]["id"] == 3
    assert [r["record"]["id"] for r in out["search"]["results"]] == [3]
    assert out["search"]["schema"] == "roteiro.search/v1"  # a query: the ranking arm
    assert out["touched"]["results"] == []  # nothing changed since HEAD
    assert out["get"]["superseded_by"] == 3
    assert [r["id"] for r in out["list"]["records"]] == [3, 2, 1]
    assert [r["id"] for r in out["list_file"]["records"]] == [3]
    assert out["forget"] == {"id": 3, "restored": [1]}
    assert [r["record"]["id"] for r in out["after"]["results"]] == [1, 2]


def test_a_lesson_comes_back_drifted_after_its_function_is_edited(
    repo: GitRepo, tmp_path: Path
) -> None:
    async def main() -> tuple[str, str, str, str]:
        async with mcp_session(repo, serve_args(tmp_path / "m.db")) as session:
            made = await call(
                session,
                "remember",
                {
                    "kind": "lesson",
                    "body": "jitter must stay below 1.2",
                    "anchor": "src/app/retry.py::jitter",
                },
            )
            before = made["record"]["anchor_state"]
            repo.write("src/app/retry.py", RETRY.replace("value * 1.1", "value * 1.3"))
            edited = (await call(session, "search", {"query": "jitter"}))["results"][0]
            touched = (await call(session, "touched", {}))["results"]
            repo.commit("faster jitter")
            committed = (await call(session, "get", {"id": made["id"]}))["anchor_state"]
            applicable = await call(session, "search", {"applicable_only": True})
        assert [r["record"]["id"] for r in touched] == [made["id"]]
        assert applicable["results"] == []
        return before, edited["record"]["anchor_state"], str(edited["anchor_penalty"]), committed

    assert run(main) == ("valid", "drifted", "0.25", "drifted")


def test_touched_keeps_only_records_about_what_changed(repo: GitRepo, tmp_path: Path) -> None:
    async def main() -> list[int]:
        async with mcp_session(repo, serve_args(tmp_path / "m.db")) as session:
            for qualname in ("Retry.run", "jitter", "Retry.__init__"):
                await call(
                    session,
                    "remember",
                    {
                        "kind": "attempt",
                        "body": f"tried to inline {qualname}",
                        "anchor": f"src/app/retry.py::{qualname}",
                    },
                )
            repo.write("src/app/retry.py", RETRY.replace("gave up", "gave up retrying"))
            found = await call(session, "touched", {"rev": "HEAD", "kind": "attempt"})
        return [r["record"]["id"] for r in found["results"]]

    assert run(main) == [1]  # Retry.run changed; jitter and __init__ did not


def test_errors_are_tool_errors_naming_the_kind_and_change_nothing(
    repo: GitRepo, tmp_path: Path
) -> None:
    async def main() -> tuple[list[tuple[str, str]], Any, Any]:
        async with mcp_session(repo, serve_args(tmp_path / "m.db")) as session:
            await call(session, "remember", {"kind": "lesson", "body": "kept"})
            before = await call(session, "list", {"include_superseded": True})
            errors = [
                await fail(session, "remember", {"kind": "rumour", "body": "x"}),
                await fail(session, "remember", {"kind": "lesson", "body": "   "}),
                await fail(session, "remember", {"kind": "lesson", "body": "x", "confidence": 2}),
                await fail(session, "remember", {"kind": "lesson", "body": "x", "supersedes": 9}),
                await fail(session, "remember", {"kind": "lesson", "body": "x", "colour": "red"}),
                await fail(
                    session,
                    "remember",
                    {"kind": "lesson", "body": "x", "anchor": "src/app/retry.py::nothing"},
                ),
                await fail(session, "remember", {"kind": "lesson"}),
                await fail(session, "search", {"limit": -1}),
                await fail(session, "search", {"decay": "fast"}),
                await fail(session, "touched", {"rev": "no-such-rev"}),
                await fail(session, "get", {"id": 42}),
                await fail(session, "forget", {"id": 42}),
                await fail(session, "forget", {"id": "one"}),
            ]
            after = await call(session, "list", {"include_superseded": True})
        return errors, before, after

    errors, before, after = run(main)
    kinds = [kind for kind, _ in errors]
    assert kinds == [
        "InvalidKind",
        "InvalidBody",
        "InvalidConfidence",
        "NotFound",
        "BadRequest",
        "BadRequest",
        "BadRequest",
        "BadRequest",
        "InvalidDecay",
        "BadRequest",
        "NotFound",
        "NotFound",
        "BadRequest",
    ]
    texts = [text for _, text in errors]
    assert "'rumour'" in texts[0]
    assert "lesson" in texts[0]
    assert "'colour'" in texts[4]
    assert "'nothing'" in texts[5]
    assert "'body' is required" in texts[6]
    assert "argument 'limit' -1" in texts[7]
    assert "42" in texts[11]
    assert "call list or search" in texts[11]
    assert "'one'" in texts[12]
    assert after == before


def test_a_call_naming_no_tool_is_a_protocol_error(repo: GitRepo, tmp_path: Path) -> None:
    """MCP answers a call of an unknown tool as JSON-RPC's invalid params,
    not as a failed call: there is no tool to have failed."""

    from mcp.shared.exceptions import MCPError

    async def main() -> MCPError:
        async with mcp_session(repo, serve_args(tmp_path / "m.db")) as session:
            with pytest.raises(MCPError) as raised:
                await session.call_tool("reset", {})
            return raised.value

    error = run(main)
    assert error.code == -32602
    assert error.message.startswith("no tool 'reset'; expected one of remember, ")


def test_four_servers_writing_at_once_lose_nothing(repo: GitRepo, tmp_path: Path) -> None:
    """Every acknowledged write is stored, under an id no other write got."""
    db = tmp_path / "shared.db"
    per_server = 15
    acknowledged: list[tuple[int, int, int]] = []

    async def writer(server: int) -> None:
        async with mcp_session(repo, serve_args(db)) as session:
            for n in range(per_server):
                made = await call(
                    session,
                    "remember",
                    {
                        "kind": "outcome",
                        "body": f"server {server} write {n}",
                        "anchor": "src/app/retry.py::jitter",
                    },
                )
                acknowledged.append((made["id"], server, n))

    async def main() -> Any:
        async with anyio.create_task_group() as group:
            for server in range(4):
                group.start_soon(writer, server)
        async with mcp_session(repo, serve_args(db)) as session:
            return await call(session, "list", {"limit": 0})

    listing = run(main)
    assert len(acknowledged) == 4 * per_server
    ids = [record_id for record_id, _, _ in acknowledged]
    assert len(set(ids)) == len(ids)
    stored = {r["id"]: r["body"] for r in listing["records"]}
    assert stored == {i: f"server {s} write {n}" for i, s, n in acknowledged}


def test_server_opens_the_clone_store_by_default(repo: GitRepo) -> None:
    """No --db: the store under the git common directory, as the CLI uses."""
    done = repo.cli("add", "from the command line", "--anchor", "src/app/retry.py")
    assert done.returncode == 0, done.stderr

    async def main() -> Any:
        async with mcp_session(repo, ["-m", "roteiro_memory", "mcp"]) as session:
            return await call(session, "search", {"query": "command line"})

    found = run(main)
    assert [r["record"]["body"] for r in found["results"]] == ["from the command line"]
    assert (repo.root / ".git" / "roteiro" / "memory.db").exists()


def test_the_cli_does_not_import_the_sdk(repo: GitRepo, tmp_path: Path) -> None:
    probe = (
        "import sys; from roteiro_memory.cli import main; "
        "main(['pack', '--db', sys.argv[1]]); "
        "sys.stderr.write(str(sorted(m for m in sys.modules if m.split('.')[0] == 'mcp')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "m.db")],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "[]"


def test_a_store_removed_under_the_server_takes_no_acknowledged_write(
    repo: GitRepo, tmp_path: Path
) -> None:
    """Issue 22, item 1: the store's file removed and a folder put in its place
    while the server runs: ``remember`` is refused (Unavailable), never
    acknowledged into the removed file, which vanishes when the server exits."""
    db = tmp_path / "m.db"
    assert repo.cli("add", "seeded", "--db", str(db)).returncode == 0

    async def main() -> tuple[str, str]:
        async with mcp_session(repo, serve_args(db)) as session:
            await call(session, "search", {})
            for suffix in ("", "-wal", "-shm"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            db.mkdir()
            return await fail(session, "remember", {"kind": "lesson", "body": "would vanish"})

    kind, text = run(main)
    assert kind == "Unavailable"
    assert "nothing was written" in text
    assert list(db.iterdir()) == []


def test_reanchor_and_confirm_follow_the_code_through_the_tools(
    repo: GitRepo, tmp_path: Path
) -> None:
    """The tools that settle stale records: ``reanchor`` lists (changing
    nothing) and applies, ``confirm`` re-confirms a drifted one; neither is
    read-only, neither destructive (they supersede, never delete)."""
    repo.write("src/app/util.py", "def pad(text):\n    return text + ' '\n")
    repo.commit("util")

    async def main() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with mcp_session(repo, serve_args(tmp_path / "m.db")) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            out["annotations"] = {
                name: (
                    tools[name].annotations.read_only_hint,
                    tools[name].annotations.destructive_hint,
                    tools[name].annotations.idempotent_hint,
                )
                for name in ("reanchor", "confirm")
            }
            for body, anchor in (
                ("jitter scales, never adds", "src/app/retry.py::jitter"),
                ("pad adds one space", "src/app/util.py::pad"),
            ):
                await call(session, "remember", {"kind": "lesson", "body": body, "anchor": anchor})
            repo.git("mv", "src/app/retry.py", "src/app/backoff.py")
            repo.write("src/app/util.py", "def pad(text):\n    return text + '  '\n")
            repo.commit("move and change")
            out["listed"] = await call(session, "reanchor", {})
            out["still"] = await call(session, "list", {"limit": 0})
            out["moved"] = await call(session, "reanchor", {"ids": [1], "apply": True})
            out["confirmed"] = await call(session, "confirm", {"ids": [2]})
            out["again"] = await session.call_tool("confirm", {"ids": [2]})
        return out

    out = run(main)
    assert out["annotations"] == {
        "reanchor": (False, False, False),
        "confirm": (False, False, False),
    }
    listed = {p["record"]["id"]: p for p in out["listed"]["proposals"]}
    assert (listed[1]["action"], listed[1]["certainty"], listed[1]["to"]) == (
        "move",
        "certain",
        "py:src/app/backoff.py::jitter",
    )
    assert listed[2]["action"] == "confirm"
    assert out["still"]["live"] == 2  # listing wrote nothing
    (moved,) = out["moved"]["written"]
    assert (moved["supersedes"], moved["record"]["anchor_state"]) == (1, "valid")
    assert moved["record"]["anchor"]["key"] == "py:src/app/backoff.py::jitter"
    (confirmed,) = out["confirmed"]["written"]
    assert (confirmed["supersedes"], confirmed["record"]["anchor_state"]) == (2, "valid")
    assert out["again"].is_error  # 2 is superseded now
    assert "already superseded" in out["again"].content[0].text
