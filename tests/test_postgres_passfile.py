"""The password file libpq ignores: it says nothing of it on stderr, and a
connection that then fails says, in its one line, that it was not read.

libpq ignores a password file that is not a plain file or that the group or
others may use, and warns of it on stderr from C; the store names no file
in its place (:mod:`roteiro_memory.stores.postgres.passfile`), so the
command line's one line is the only thing on stderr, and a file libpq reads
is still read."""

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

from roteiro_memory.stores.postgres.passfile import password_file, unread

pytestmark = pytest.mark.skipif(os.name != "posix", reason="libpq checks no mode on Windows")

TIMEOUT = 120
PASSWORD = "s3cret-of-the-test"
LIBPQ = 180000
"""A libpq that takes the home folder from ``HOME``, as every one since 15."""
ROLE = "needs_password"


def _run(*argv: str, cwd: Path, home: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The command line as a user whose home is ``home``, with no password
    or password file named by the environment unless ``env`` names one."""
    environ = {
        name: value
        for name, value in os.environ.items()
        if name not in ("PGPASSWORD", "PGPASSFILE", "PGSERVICE", "PGSERVICEFILE")
    }
    return subprocess.run(
        [sys.executable, "-m", "roteiro_memory", *argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=cwd,
        env={**environ, "HOME": str(home), **env},
    )


def _pgpass(home: Path, mode: int, line: str = "*:*:*:*:unused") -> Path:
    home.mkdir(exist_ok=True)
    path = home / ".pgpass"
    path.write_text(line + "\n")
    path.chmod(mode)
    return path


@pytest.fixture
def dsn() -> Iterator[str]:
    named = pg_server.fresh_store_dsn()
    try:
        yield named
    finally:
        pg_server.drop_schema(named)


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("fault", ["mode 0644", "a folder"])
def test_a_password_file_libpq_ignores_puts_no_warning_on_stderr(
    tmp_path: Path, dsn: str, as_json: bool, fault: str
) -> None:
    home = tmp_path / "home"
    if fault == "a folder":
        (home / ".pgpass").mkdir(parents=True)
    else:
        _pgpass(home, 0o644)
    argv = ("add", "--no-sync", "--db", dsn, *(("--json",) if as_json else ()), "a lesson")
    done = _run(*argv, cwd=tmp_path, home=home)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    if as_json:
        json.loads(done.stdout)


@pytest.fixture(scope="module")
def password_dsn() -> Iterator[str]:
    """A server of its own whose role :data:`ROLE` must give
    :data:`PASSWORD` (SCRAM), as the DSN of its database for that role."""
    missing = [name for name in pg_server.BINARIES if shutil.which(name) is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set, but PostgreSQL server binaries are not on PATH: {missing}")
        pytest.skip(f"PostgreSQL server binaries not on PATH: {', '.join(missing)}")
    import psycopg

    server = pg_server.PostgresServer()
    try:
        server.start()
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {ROLE} LOGIN SUPERUSER PASSWORD '{PASSWORD}'")
            hba = server.data / "pg_hba.conf"
            hba.write_text(f"local all {ROLE} scram-sha-256\n" + hba.read_text())
            conn.execute("SELECT pg_reload_conf()")
        yield server.dsn().replace("postgres@", f"{ROLE}@", 1) + "?schema=roteiro"
    finally:
        server.stop()


def test_the_password_server_refuses_a_connection_without_the_password(
    tmp_path: Path, password_dsn: str
) -> None:
    """What the tests below stand on: without a password file, no connection."""
    done = _run("list", "--no-sync", "--db", password_dsn, cwd=tmp_path, home=tmp_path / "none")
    assert done.returncode != 0
    assert "password" in done.stderr


def test_a_password_file_of_mode_0600_is_still_read(tmp_path: Path, password_dsn: str) -> None:
    home = tmp_path / "home"
    _pgpass(home, 0o600, f"*:*:*:{ROLE}:{PASSWORD}")
    done = _run("add", "--no-sync", "--json", "--db", password_dsn, "x", cwd=tmp_path, home=home)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_a_failed_connection_names_the_password_file_it_did_not_read_and_why(
    tmp_path: Path, password_dsn: str, as_json: bool
) -> None:
    home = tmp_path / "home"
    path = _pgpass(home, 0o640, f"*:*:*:{ROLE}:{PASSWORD}")
    argv = ("list", "--no-sync", "--db", password_dsn, *(("--json",) if as_json else ()))
    done = _run(*argv, cwd=tmp_path, home=home)
    assert done.returncode == 2, done.stderr  # no password: a refused login, not "try again"
    said = json.loads(done.stdout)["error"]["message"] if as_json else done.stderr
    if not as_json:
        assert said.count("\n") == 1, said
        assert said.endswith("\n")
    else:
        assert done.stderr == ""
    assert "WARNING" not in said
    assert (
        f"the password file {str(path)!r} was not read: it has group or world access"
        " (mode 0640), and libpq reads only a plain file with mode 0600 or less"
    ) in said


def test_the_password_file_is_the_dsns_then_pgpassfiles_then_the_homes(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path), "PGPASSFILE": "/from/variable"}
    assert password_file({"passfile": "/from/dsn"}, environ, libpq=LIBPQ) == "/from/dsn"
    assert password_file({}, environ, libpq=LIBPQ) == "/from/variable"
    assert password_file({}, {"HOME": str(tmp_path)}, libpq=LIBPQ) == f"{tmp_path}/.pgpass"
    assert password_file({"passfile": ""}, environ, libpq=LIBPQ) == f"{tmp_path}/.pgpass"


def test_the_home_is_homes_from_libpq_15_else_the_accounts(tmp_path: Path) -> None:
    import pwd

    account = f"{pwd.getpwuid(os.geteuid()).pw_dir}/.pgpass"
    assert password_file({}, {"HOME": str(tmp_path)}, libpq=150000) == f"{tmp_path}/.pgpass"
    assert password_file({}, {"HOME": ""}, libpq=LIBPQ) == account
    assert password_file({}, {}, libpq=LIBPQ) == account
    assert password_file({}, {"HOME": str(tmp_path)}, libpq=140011) == account


def test_no_password_file_is_looked_in_when_a_password_or_service_is_given(
    tmp_path: Path,
) -> None:
    home = {"HOME": str(tmp_path)}
    assert password_file({"password": "x"}, home, libpq=LIBPQ) is None
    assert password_file({}, {**home, "PGPASSWORD": "x"}, libpq=LIBPQ) is None
    assert (
        password_file({"password": ""}, {**home, "PGPASSWORD": "x"}, libpq=LIBPQ)
        == f"{tmp_path}/.pgpass"
    )
    assert password_file({"service": "team"}, home, libpq=LIBPQ) is None
    assert password_file({}, {**home, "PGSERVICE": "team"}, libpq=LIBPQ) is None
    assert password_file({"service": "team", "passfile": "/p"}, home, libpq=LIBPQ) == "/p"


@pytest.mark.parametrize(
    ("mode", "why"),
    [
        (0o600, None),
        (0o400, None),
        (0o604, "has group or world access (mode 0604)"),
        (0o610, "has group or world access (mode 0610)"),
    ],
)
def test_only_a_file_the_group_and_others_may_not_use_is_read(
    tmp_path: Path, mode: int, why: str | None
) -> None:
    path = _pgpass(tmp_path, mode)
    found = unread({}, {"HOME": str(tmp_path)}, libpq=LIBPQ)
    assert (found and (found.path, found.why)) == (why and (str(path), why))


def test_a_missing_password_file_is_left_to_libpq(tmp_path: Path) -> None:
    assert unread({}, {"HOME": str(tmp_path)}, libpq=LIBPQ) is None


def test_a_password_file_that_is_no_plain_file_is_not_read(tmp_path: Path) -> None:
    (tmp_path / ".pgpass").mkdir()
    found = unread({}, {"HOME": str(tmp_path)}, libpq=LIBPQ)
    assert found is not None
    assert found.why == "is not a plain file"
