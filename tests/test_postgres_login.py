"""A login the PostgreSQL server refuses is a bad request, not a server
that is down: a wrong or missing password, a role or a database that does
not exist.  Trying again never helps, so the command line exits 2 (not 3,
"try again"), the one line names who was refused where and what to fix,
never the password, and ``mcp`` refuses to start rather than serving a
store it can never open."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pg_server
import pytest

from roteiro_memory.errors import LoginRefused, ServerUnreachable
from roteiro_memory.stores.postgres.store import PostgresStore

PASSWORD = "Xq7-login-secret"
ROLE = "login_checked"
TIMEOUT = 120


@pytest.fixture(scope="module")
def server() -> Iterator[pg_server.PostgresServer]:
    """A server of its own whose role :data:`ROLE` must give :data:`PASSWORD`
    (SCRAM); other roles are trusted."""
    # A server of our own, whatever ROTEIRO_TEST_POSTGRES_DSN names: its
    # pg_hba.conf is changed.  Under CI a missing server fails, never skips.
    missing = [name for name in pg_server.BINARIES if shutil.which(name) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, but PostgreSQL server binaries are not on PATH: {missing}")
        pytest.skip(f"PostgreSQL server binaries not on PATH: {', '.join(missing)}")
    import psycopg

    started = pg_server.PostgresServer().start()
    try:
        with psycopg.connect(started.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {ROLE} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
            hba = started.data / "pg_hba.conf"
            hba.write_text(f"local all {ROLE} scram-sha-256\n" + hba.read_text())
            conn.execute("SELECT pg_reload_conf()")
        yield started
    finally:
        started.stop()


def _as(server: pg_server.PostgresServer, user: str, dbname: str = "postgres") -> str:
    return server.dsn(dbname).replace("postgres@", f"{user}@", 1) + "?schema=roteiro"


def _run(
    *argv: str, cwd: Path, stdin: bytes | None = None, **env: str
) -> subprocess.CompletedProcess[bytes]:
    """The command line with no password, password file or service the
    test run's environment names, unless ``env`` names one."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if name not in ("PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSERVICEFILE", "PGUSER")
    }
    return subprocess.run(
        [sys.executable, "-m", "roteiro_memory", *argv],
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
        cwd=cwd,
        env={**environ, "HOME": str(cwd), **env},
    )


def _refusals(server: pg_server.PostgresServer) -> dict[str, tuple[str, dict[str, str], str]]:
    """Each refusal: its DSN, environment, and what the line says is wrong."""
    return {
        "wrong password": (
            _as(server, f"{ROLE}:not-{PASSWORD}"),
            {},
            "the password is wrong",
        ),
        "wrong PGPASSWORD": (
            _as(server, ROLE),
            {"PGPASSWORD": f"not-{PASSWORD}"},
            "the password is wrong",
        ),
        "no password": (_as(server, ROLE), {}, "no password was given"),
        "no such role": (_as(server, "nobody_here"), {}, "the role does not exist"),
        "no such database": (
            _as(server, "postgres", "no_such_db"),
            {},
            "the database does not exist",
        ),
    }


REFUSALS = ["wrong password", "wrong PGPASSWORD", "no password", "no such role", "no such database"]


@pytest.mark.parametrize("refusal", REFUSALS)
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_login_a_refused_login_is_a_bad_request_naming_who_and_the_fix(
    server: pg_server.PostgresServer, tmp_path: Path, refusal: str, as_json: bool
) -> None:
    dsn, env, wrong = _refusals(server)[refusal]
    argv = ("list", "--no-sync", "--db", dsn, *(("--json",) if as_json else ()))
    done = _run(*argv, cwd=tmp_path, **env)
    assert done.returncode == 2, done.stderr
    if as_json:
        assert done.stderr == b""
        error = json.loads(done.stdout)["error"]
        assert error["kind"] == "BadRequest"
        said = error["message"]
    else:
        assert done.stdout == b""
        said = done.stderr.decode()
        assert said.count("\n") == 1, said
        assert "Traceback" not in said
    assert "refused the login of user" in said, said
    assert f"host {str(server.socket_dir)!r}" in said, said
    assert wrong in said, said
    assert "trying again will not help" in said, said
    assert "try again once" not in said, said
    assert PASSWORD not in said, said


def test_login_a_refused_login_is_no_server_that_is_down(server: pg_server.PostgresServer) -> None:
    dsn = _as(server, f"{ROLE}:not-{PASSWORD}")
    with pytest.raises(LoginRefused) as refused:
        PostgresStore(dsn, connect_timeout_s=5)
    assert not isinstance(refused.value, ServerUnreachable)
    assert "database 'postgres'" in str(refused.value)
    assert PASSWORD not in str(refused.value)


def test_login_the_right_password_still_connects(
    server: pg_server.PostgresServer, tmp_path: Path
) -> None:
    done = _run("list", "--no-sync", "--db", _as(server, f"{ROLE}:{PASSWORD}"), cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # an empty store: nothing to list


@pytest.mark.parametrize("refusal", ["wrong password", "no such database"])
def test_login_mcp_refuses_to_start_on_a_refused_login(
    server: pg_server.PostgresServer, tmp_path: Path, refusal: str
) -> None:
    """It served anyway, as for a server that is down, and every call failed
    for the whole session."""
    from agent_repo import GitRepo
    from test_mcp_wire import INITIALIZE

    dsn, env, wrong = _refusals(server)[refusal]
    repo = GitRepo(tmp_path / "repo")
    done = _run(
        "mcp", "--db", dsn, cwd=repo.root, stdin=json.dumps(INITIALIZE).encode() + b"\n", **env
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.decode().splitlines()
    assert wrong in line, line
    assert "serving anyway" not in line, line
    (answer,) = [json.loads(out) for out in done.stdout.splitlines()]
    assert wrong in answer["error"]["message"], answer
