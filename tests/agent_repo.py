"""A temporary git repository, and the MCP server started in it through the
SDK's own stdio client, for the agent-facing tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from test_cli import GIT_ENV, RETRY

SERVER_TIMEOUT = 60.0
"""Seconds one exchange with a server may take before the test fails."""


class GitRepo:
    """A git repository in a temporary folder, with ``src/app/retry.py`` committed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
        self.env.update(GIT_ENV)
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.write("src/app/retry.py", RETRY)
        self.commit("initial")

    def git(self, *args: str) -> str:
        done = subprocess.run(
            ["git", *args], cwd=self.root, env=self.env, capture_output=True, text=True, check=True
        )
        return done.stdout

    def write(self, path: str, text: str) -> None:
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)

    def commit(self, message: str = "change") -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "roteiro_memory", *args],
            cwd=self.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )


def run_hook(
    repo: GitRepo,
    event: object,
    argv: Sequence[str] | None = None,
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """A hook command (``roteiro-memory hook`` by default) as a host runs it:
    the event's JSON (or text as given) on stdin, in the session's folder;
    it fails the test when it takes more than ``timeout`` seconds."""
    import json

    command = list(argv) if argv is not None else [sys.executable, "-m", "roteiro_memory", "hook"]
    return subprocess.run(
        command,
        input=event if isinstance(event, str) else json.dumps(event),
        capture_output=True,
        text=True,
        cwd=cwd or repo.root,
        env=repo.env,
        timeout=timeout,
        check=False,
    )


def server_env() -> dict[str, str]:
    """What the server is started with, over the SDK's default environment
    (which carries no ``ROTEIRO_*`` variable of the test run): and the run's
    ``PYTHONPATH``, if it has one, so the server runs the code under test,
    not another copy installed in the environment."""
    path = os.environ.get("PYTHONPATH")
    return {**GIT_ENV, **({"PYTHONPATH": path} if path else {})}


@asynccontextmanager
async def mcp_session(
    repo: GitRepo,
    args: Sequence[str],
    *,
    command: str = sys.executable,
    env: dict[str, str] | None = None,
    errlog: str = os.devnull,
) -> AsyncIterator[Any]:
    """An initialized ``ClientSession`` talking to a server started as
    ``command args`` in ``repo``, over the SDK's real stdio transport; the
    server's stderr goes to the file ``errlog``."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=command, args=list(args), cwd=repo.root, env=server_env() if env is None else env
    )
    with open(errlog, "w") as said:
        async with (
            stdio_client(params, errlog=said) as (read, write),
            ClientSession(read, write, read_timeout_seconds=SERVER_TIMEOUT) as session,
        ):
            await session.initialize()
            yield session
