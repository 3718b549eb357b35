"""A throwaway PostgreSQL server for the tests, started and stopped by them.

``initdb`` makes a cluster in a new temporary folder and ``pg_ctl`` starts it
listening on a Unix socket in that folder only (no TCP port, so parallel runs
never collide), with trust authentication and durability off: nothing here
outlives the run.  The cluster is deleted when the server stops.

As root, the server runs as the ``postgres`` user, because PostgreSQL refuses
to run as root.

``ROTEIRO_TEST_POSTGRES_DSN`` names an existing server to use instead; its
tests then work in schemas of their own and drop them after.

Without the server binaries the PostgreSQL tests are skipped with the reason,
except when ``CI`` is set: there a missing server is a failure, never a skip.
"""

from __future__ import annotations

import atexit
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from roteiro_memory.stores.postgres.store import PostgresStore

__all__ = [
    "DSN_ENV",
    "PostgresServer",
    "ThrowawayStore",
    "drop_named_schemas",
    "drop_schema",
    "fresh_schema",
    "fresh_store_dsn",
    "require_server",
    "server_available",
    "shared_server_dsn",
    "throwaway_store",
]

DSN_ENV = "ROTEIRO_TEST_POSTGRES_DSN"
BINARIES = ("initdb", "pg_ctl", "postgres")
_STARTUP_SECONDS = 60


def _run_as() -> dict[str, Any]:
    """How to run the server's commands: as ``postgres`` when we are root."""
    if os.geteuid() != 0:
        return {}
    try:
        account = pwd.getpwnam("postgres")
    except KeyError:
        raise RuntimeError(
            "running as root, and PostgreSQL refuses to: create a 'postgres' user "
            "(useradd --system postgres) or run the tests as an ordinary user"
        ) from None
    return {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}


class PostgresServer:
    """One PostgreSQL cluster in a temporary folder, on a Unix socket there.

    Given ``root``, the cluster lives in that folder instead and is kept when
    the server stops: a later server on the same ``root`` starts on it again
    (``initdb`` only when it holds no cluster yet), with everything stored in
    it.  The folder's path must be short enough for a socket path (about 100
    bytes)."""

    def __init__(self, root: Path | None = None) -> None:
        self.kept = root is not None
        if root is None:
            # A Unix socket's path is limited to about 100 bytes: a long TMPDIR
            # would not fit, so fall back to /tmp then.
            base = None if len(tempfile.gettempdir()) <= 60 else "/tmp"
            root = Path(tempfile.mkdtemp(prefix="rmpg-", dir=base))
        else:
            root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as = _run_as()
        self.running = False

    @property
    def socket_dir(self) -> Path:
        return self.root

    def dsn(self, dbname: str = "postgres") -> str:
        """A connection URI for database ``dbname`` over the socket."""
        host = str(self.socket_dir).replace("/", "%2F")
        return f"postgresql://postgres@{host}/{dbname}"

    def _run(self, *argv: str) -> None:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=_STARTUP_SECONDS,
            check=False,
            **self._as,
        )
        if done.returncode != 0:
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            raise RuntimeError(
                f"{' '.join(argv)} failed with status {done.returncode}:\n"
                f"{done.stdout}{done.stderr}{log}"
            )

    def start(self) -> PostgresServer:
        if self._as:
            os.chown(self.root, self._as["user"], self._as["group"])
        if self.kept and (self.data / "PG_VERSION").exists():
            self._start()
            return self
        self._run(
            "initdb",
            "--pgdata",
            str(self.data),
            "--auth",
            "trust",
            "--username",
            "postgres",
            "--encoding",
            "UTF8",
            "--locale",
            "C",
            "--no-sync",
        )
        self._start()
        return self

    def _start(self) -> None:
        options = (
            f"-k {self.socket_dir} -c listen_addresses='' -c fsync=off"
            " -c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
        )
        self._run(
            "pg_ctl",
            "--pgdata",
            str(self.data),
            "--log",
            str(self.log),
            "--wait",
            "--timeout",
            str(_STARTUP_SECONDS),
            "--options",
            options,
            "start",
        )
        self.running = True

    def stop(self) -> None:
        """Stop the server (fast shutdown) and delete the cluster, unless it
        is kept."""
        try:
            if self.running:
                self._run("pg_ctl", "--pgdata", str(self.data), "--mode", "fast", "--wait", "stop")
                self.running = False
        finally:
            # A server that would not stop keeps its folder, for its log.
            if not self.running and not self.kept:
                shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def server_available() -> str | None:
    """None when a server can be had, else why not."""
    if os.environ.get(DSN_ENV):
        return None
    missing = [name for name in BINARIES if shutil.which(name) is None]
    if missing:
        return f"PostgreSQL server binaries not on PATH: {', '.join(missing)}"
    try:
        import psycopg  # noqa: F401  (only whether it imports)
    except ImportError:
        return "psycopg is not installed: pip install 'roteiro-memory[postgres]'"
    return None


def require_server() -> None:
    """Skip the calling test when no server can be had -- or fail, under CI."""
    reason = server_available()
    if reason is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so PostgreSQL tests must run, but: {reason}")
    pytest.skip(reason)


_lock = threading.Lock()
_shared: PostgresServer | None = None
_counter = itertools.count(1)


def shared_server_dsn() -> str:
    """The DSN of this process's server: the one named by the environment, or
    one started on first use and stopped when the process exits."""
    global _shared
    require_server()
    external = os.environ.get(DSN_ENV)
    if external:
        return external
    with _lock:
        if _shared is None:
            server = PostgresServer()
            try:
                server.start()
            except BaseException:
                server.stop()
                raise
            atexit.register(server.stop)
            _shared = server
        return _shared.dsn()


def fresh_schema() -> str:
    """A schema name no other store of this run (or a parallel one) uses."""
    return f"t{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:8]}"


def fresh_store_dsn() -> str:
    """A DSN naming a fresh schema on the shared server."""
    dsn = shared_server_dsn()
    if not dsn.startswith(("postgresql://", "postgres://")):
        return f"{dsn} schema={fresh_schema()}"
    joiner = "&" if "?" in dsn else "?"
    return f"{dsn}{joiner}schema={fresh_schema()}"


def drop_schema(dsn: str) -> None:
    """Drop the schema a DSN from :func:`fresh_store_dsn` names, if it exists."""
    import psycopg

    from roteiro_memory.stores.postgres.store import split_schema

    rest, schema = split_schema(dsn)
    assert schema is not None, f"{dsn!r} names no schema"
    with psycopg.connect(rest, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def drop_named_schemas(dsn: str) -> None:
    """Drop the schemas ``protocol --backend postgres:DSN`` made for the stores
    the suite named (``SCHEMA_<digest>``, :mod:`roteiro_memory.stores.naming`)."""
    import psycopg

    from roteiro_memory.stores.postgres.store import split_schema

    rest, schema = split_schema(dsn)
    assert schema is not None, f"{dsn!r} names no schema"
    with psycopg.connect(rest, autocommit=True) as conn:
        found = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s",
            (schema.replace("_", "\\_") + "\\_%",),
        ).fetchall()
        for (name,) in found:
            conn.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


class ThrowawayStore(PostgresStore):
    """A store in a fresh schema that drops the schema when closed, as
    :meth:`PostgresStore.throwaway` does (under this run's naming)."""

    def __init__(self) -> None:
        super().__init__(fresh_store_dsn())
        self._throwaway = True


def throwaway_store(_tmp: Path | None = None) -> PostgresStore:
    """A fresh, empty PostgreSQL store (the factory the shared fixture uses)."""
    return ThrowawayStore()
