"""A PostgreSQL store outlives its connection (issue 22, items 6 and 7).

Each test runs its own server (:class:`pg_server.PostgresServer`), kept in a
folder so it can be stopped and started again with everything it stored.
A restart is carried out by the next call, which connects again; a call the
loss interrupts fails in one line saying whether anything was stored; an
import the server's stop interrupts is one line too, and stores nothing.
"""

from __future__ import annotations

import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg_server
import pytest

from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.stores.postgres.store import PostgresStore


@pytest.fixture
def server() -> Iterator[pg_server.PostgresServer]:
    pg_server.require_server()
    if pg_server.os.environ.get(pg_server.DSN_ENV):
        pytest.skip("stopping a server needs one of our own, not the one named")
    root = Path(tempfile.mkdtemp(prefix="rmpgl-", dir="/tmp"))  # a socket path is short
    started = pg_server.PostgresServer(root).start()
    try:
        yield started
    finally:
        try:
            started.stop()
        finally:
            shutil.rmtree(root, ignore_errors=True)


def _restart(server: pg_server.PostgresServer) -> None:
    server.stop()
    server.start()


def test_link_every_call_after_a_restart_is_served(server: pg_server.PostgresServer) -> None:
    with PostgresStore(server.dsn() + "?schema=kept") as store:
        store.record("lesson", "before")
        _restart(server)
        assert store.record("lesson", "after") == 2
        _restart(server)
        assert [r.body for r in store.list().records] == ["after", "before"]
        _restart(server)
        assert store.get(1) is not None


def test_link_a_call_while_the_server_is_down_fails_and_the_next_one_recovers(
    server: pg_server.PostgresServer,
) -> None:
    with PostgresStore(server.dsn() + "?schema=kept") as store:
        store.record("lesson", "before")
        server.stop()
        with pytest.raises(StoreUnavailable, match="cannot connect") as down:
            store.record("lesson", "refused")
        assert "\n" not in str(down.value)
        server.start()
        assert store.record("lesson", "after") == 2
        assert [r.body for r in store.list().records] == ["after", "before"]


class _LostAtCommit:
    """A connection whose backend is ended as the commit is sent."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def execute(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        if sql == "COMMIT":
            self._conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return self._conn.execute(sql, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def test_link_a_write_whose_commit_is_lost_says_it_may_not_be_stored(
    server: pg_server.PostgresServer,
) -> None:
    with PostgresStore(server.dsn() + "?schema=kept") as store:
        store.record("lesson", "before")
        real = store.connection
        store._link = _LostAtCommit(real)  # type: ignore[assignment]
        with pytest.raises(StoreUnavailable, match="may or may not have been stored") as lost:
            store.record("lesson", "unknown")
        assert "\n" not in str(lost.value)
        store._link = real
        assert [r.body for r in store.list().records] == ["before"]  # nothing retried


_IMPORT_STOPPED = textwrap.dedent(
    """
    import os, signal, sys, time
    import psycopg

    data, *argv = sys.argv[1:]
    write_row = psycopg.Copy.write_row
    written = [0]

    def stopping(copy, row):
        written[0] += 1
        if written[0] == 50:  # the server stops half-way through the records' COPY
            pid = int(open(os.path.join(data, "postmaster.pid")).readline())
            os.kill(pid, signal.SIGINT)  # a fast shutdown, as pg_ctl -m fast
            while os.path.exists(os.path.join(data, "postmaster.pid")):
                time.sleep(0.01)
        return write_row(copy, row)

    psycopg.Copy.write_row = stopping
    from roteiro_memory.cli.main import main
    sys.exit(main(argv))
    """
)


def test_link_a_server_stopped_during_import_is_one_line_and_stores_nothing(
    server: pg_server.PostgresServer, tmp_path: Path
) -> None:
    from roteiro_memory.store import MemoryWrite
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    with SQLiteStore(tmp_path / "source.db") as source:
        source.record_many(MemoryWrite("lesson", f"record {n}") for n in range(500))
        export = tmp_path / "export.jsonl"
        export.write_text("".join(line + "\n" for line in source.export_lines()))
    script = tmp_path / "stopping.py"
    script.write_text(_IMPORT_STOPPED)
    dsn = server.dsn() + "?schema=imported"
    done = subprocess.run(
        [sys.executable, str(script), str(server.data), "--db", dsn, "import", str(export)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    server.running = False  # stopped by the script
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "nothing was changed" in done.stderr
    server.start()
    with PostgresStore(dsn) as store:
        assert store.list(limit=1).live == 0


def test_link_the_mcp_server_serves_on_after_the_database_restarts(
    server: pg_server.PostgresServer, tmp_path: Path
) -> None:
    """The finding as reported: every call after a restart failed."""
    import anyio
    from agent_repo import GitRepo, mcp_session

    repo = GitRepo(tmp_path / "repo")
    args = ["-m", "roteiro_memory", "mcp", "--db", server.dsn() + "?schema=served"]

    async def main() -> list[Any]:
        async with mcp_session(repo, args) as session:
            answers = [await session.call_tool("remember", {"kind": "lesson", "body": "one"})]
            _restart(server)
            answers.append(await session.call_tool("remember", {"kind": "lesson", "body": "two"}))
            answers.append(await session.call_tool("list", {}))
            return answers

    first, second, listed = anyio.run(main)
    assert not first.is_error, first.content[0].text
    assert not second.is_error, second.content[0].text
    records = listed.structured_content["records"]
    assert [r["body"] for r in records] == ["two", "one"]


def test_link_an_mcp_server_started_while_the_database_is_down_serves_once_it_is_back(
    server: pg_server.PostgresServer, tmp_path: Path
) -> None:
    """A database down when the host starts the server cost the agent its
    memory for the whole session: the server refused to start.  It starts,
    says so in one line, and each call connects again."""
    import anyio
    from agent_repo import GitRepo, mcp_session

    repo = GitRepo(tmp_path / "repo")
    args = ["-m", "roteiro_memory", "mcp", "--db", server.dsn() + "?schema=late"]
    errlog = tmp_path / "stderr.txt"
    server.stop()

    async def main() -> list[Any]:
        async with mcp_session(repo, args, errlog=str(errlog)) as session:
            answers = [await session.call_tool("list", {})]
            server.start()
            answers.append(await session.call_tool("remember", {"kind": "lesson", "body": "one"}))
            answers.append(await session.call_tool("list", {}))
            return answers

    down, remembered, listed = anyio.run(main)
    assert down.is_error
    assert "cannot connect" in down.content[0].text, down.content[0].text
    assert not remembered.is_error, remembered.content[0].text
    assert [r["body"] for r in listed.structured_content["records"]] == ["one"]
    (said,) = errlog.read_text().splitlines()
    assert "cannot connect" in said
    assert "serving anyway" in said


def test_link_an_mcp_server_still_refuses_to_start_on_a_store_it_could_never_serve(
    server: pg_server.PostgresServer, tmp_path: Path
) -> None:
    """Only a server that cannot be reached is served anyway: a store a newer
    version wrote is still a refusal to start, said as the answer to
    ``initialize``."""
    import json

    from agent_repo import GitRepo, server_env
    from test_mcp_wire import INITIALIZE

    from roteiro_memory.stores.postgres.migrations import SCHEMA_VERSION

    dsn = server.dsn() + "?schema=newer"
    with PostgresStore(dsn) as store:
        store.connection.execute(
            "INSERT INTO schema_migrations (version, name) VALUES (%s, 'from the future')",
            (SCHEMA_VERSION + 1,),
        )
    repo = GitRepo(tmp_path / "repo")
    done = subprocess.run(
        [sys.executable, "-m", "roteiro_memory", "mcp", "--db", dsn],
        input=json.dumps(INITIALIZE).encode() + b"\n",
        cwd=repo.root,
        env=server_env(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    (line,) = done.stderr.decode().splitlines()
    assert "newer roteiro-memory" in line, line
    (answer,) = [json.loads(out) for out in done.stdout.splitlines()]
    assert "newer roteiro-memory" in answer["error"]["message"], answer


def _crash(server: pg_server.PostgresServer) -> None:
    """Stop the server as a crash does: no shutdown checkpoint, and the WAL
    it had not yet written out is gone."""
    server._run("pg_ctl", "--pgdata", str(server.data), "--mode", "immediate", "--wait", "stop")
    server.running = False


def test_an_acknowledged_write_survives_a_server_crash(
    server: pg_server.PostgresServer,
) -> None:
    import psycopg

    # A server that commits asynchronously by default, as an administrator
    # may set it for speed: its WAL writer flushes only every 10 s.
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        admin.execute("ALTER SYSTEM SET synchronous_commit = off")
        admin.execute("ALTER SYSTEM SET wal_writer_delay = '10s'")
        admin.execute("SELECT pg_reload_conf()")
    with PostgresStore(server.dsn() + "?schema=kept") as store:
        acknowledged = [store.record("lesson", f"acknowledged {n}") for n in range(5)]
        _crash(server)
        server.start()
        assert sorted(r.id for r in store.list().records) == acknowledged


def test_a_store_dropped_while_open_is_not_made_anew_by_the_next_connection(
    server: pg_server.PostgresServer,
) -> None:
    """A store's schema dropped (and its session ended) while a long-running
    server holds the store: the next call connects again and finds no store,
    and says so, as an SQLite store whose file was removed does -- it does
    not make an empty one there, whose ids would name other records than
    the ones the agent was told of."""
    import psycopg

    with PostgresStore(server.dsn() + "?schema=kept") as store:
        store.record("lesson", "before")
        with psycopg.connect(server.dsn(), autocommit=True) as admin:
            admin.execute("DROP SCHEMA kept CASCADE")
            admin.execute("SELECT pg_terminate_backend(%s)", (store.connection.info.backend_pid,))
        # The server says why and hangs up once the backend has gone; the
        # terminate returns before that, and a call made sooner is one lost
        # in the middle, which fails as such.
        assert select.select([store.connection.fileno()], [], [], 30)[0]
        for _ in range(2):  # and again on the call after
            with pytest.raises(StoreUnavailable, match="no longer there") as gone:
                store.record("lesson", "after")
            assert "\n" not in str(gone.value)
        with psycopg.connect(server.dsn(), autocommit=True) as admin:
            found = admin.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'kept'")
            assert found.fetchone() is None
