"""``roteiro-memory mcp`` runs tool calls off its event loop: a ping is
answered while a call runs, a cancelled call is not answered, and calls
still run one at a time in the order read.

A call is kept running by holding the store's write lock from here: the
server's write waits for it (its busy timeout) until it is let go."""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from agent_repo import GitRepo
from test_mcp_wire import INITIALIZE, INITIALIZED, remember

if not os.environ.get("CI"):  # CI installs the [mcp] extra: there, a missing SDK fails
    pytest.importorskip("mcp", reason="the [mcp] extra is not installed")

WAIT = 30.0


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


class Client:
    """A server, its answers read as they come."""

    def __init__(self, repo: GitRepo, db: Path) -> None:
        self.server = subprocess.Popen(
            [sys.executable, "-m", "roteiro_memory", "mcp", "--db", str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=repo.root,
            env=repo.env,
        )
        self.answers: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.server.stdout is not None
        for line in self.server.stdout:
            self.answers.put(json.loads(line))

    def send(self, *messages: Any) -> None:
        assert self.server.stdin is not None
        self.server.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
        self.server.stdin.flush()

    def answer(self, timeout: float = WAIT) -> Any:
        return self.answers.get(timeout=timeout)

    def close(self) -> list[Any]:
        """End the input; the answers still to come."""
        assert self.server.stdin is not None
        self.server.stdin.close()
        assert self.server.wait(timeout=120) == 0
        rest = []
        while not self.answers.empty():
            rest.append(self.answers.get())
        return rest


def ping(request: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request, "method": "ping"}


def cancel(request: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request}}


def listed(repo: GitRepo, db: Path) -> list[str]:
    done = repo.cli("list", "--json", "--db", str(db), "--limit", "0")
    return [r["body"] for r in json.loads(done.stdout)["result"]["records"]]


def test_a_ping_is_answered_while_a_call_runs_and_a_cancelled_call_is_not_answered(
    repo: GitRepo, tmp_path: Path
) -> None:
    """Neither ping waits for the call held on the write lock, and no
    cancelled call is answered.  The call queued behind the held one never
    runs.  The held one may have started before its cancel was read (it then
    runs to its end, unheard) or not (it never runs): the scheduler decides
    which, so both are allowed here, and ``test_calls`` pins each."""
    db = tmp_path / "m.db"
    client = Client(repo, db)
    client.send(INITIALIZE, INITIALIZED, remember(1, "first"))
    assert [client.answer()["id"], client.answer()["id"]] == [0, 1]
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # the server's next write waits
    try:
        client.send(remember(2, "running"), remember(3, "queued"), ping(4))
        assert client.answer() == {"jsonrpc": "2.0", "id": 4, "result": {}}
        client.send(cancel(3), cancel(2), ping(5))
        assert client.answer()["id"] == 5
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    client.send(remember(6, "after"))
    assert [a["id"] for a in [client.answer(), *client.close()]] == [6]
    assert sorted(listed(repo, db)) in (["after", "first"], ["after", "first", "running"])


def test_calls_run_one_at_a_time_in_the_order_read(repo: GitRepo, tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    client = Client(repo, db)
    client.send(INITIALIZE, INITIALIZED, *(remember(n, f"lesson {n}") for n in range(1, 13)))
    got = [client.answer() for _ in range(13)]
    client.close()
    assert [a["id"] for a in got] == list(range(13))
    ids = [a["result"]["structuredContent"]["record"]["id"] for a in got[1:]]
    assert ids == sorted(ids)
