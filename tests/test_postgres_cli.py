"""The command line on a PostgreSQL store: named by ``--db`` or
``ROTEIRO_MEMORY_DB``, and ``export``/``import`` between it and SQLite."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pg_server
import pytest

TIMEOUT = 120


def _run(
    *argv: str, cwd: Path, input: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "roteiro_memory", *argv],
        input=input,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def _cli(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = _run(*argv, cwd=cwd, env=env)
    assert done.returncode == 0, f"{argv}: {done.stderr}"
    return done.stdout


@pytest.fixture
def dsn() -> Iterator[str]:
    named = pg_server.fresh_store_dsn()
    try:
        yield named
    finally:
        pg_server.drop_schema(named)


def test_cli_writes_and_reads_a_store_named_by_the_environment(tmp_path: Path, dsn: str) -> None:
    env = {"ROTEIRO_MEMORY_DB": dsn}
    _cli("add", "--no-sync", "--kind", "decision", "shared across machines", cwd=tmp_path, env=env)
    listed = _cli("list", "--no-sync", "--json", cwd=tmp_path, env=env)
    assert "shared across machines" in listed
    assert _cli("check", cwd=tmp_path, env=env).strip().endswith(": ok")
    assert not any(tmp_path.iterdir()), "a DSN must not be taken for a file name"


def test_cli_export_from_sqlite_import_into_postgres_and_back(tmp_path: Path, dsn: str) -> None:
    source, back = tmp_path / "source.db", tmp_path / "back.db"
    _cli("add", "--no-sync", "--db", str(source), "first lesson", cwd=tmp_path)
    _cli("add", "--no-sync", "--db", str(source), "--supersedes", "1", "second", cwd=tmp_path)
    _cli("add", "--no-sync", "--db", str(source), "--confidence", "0.3", "third", cwd=tmp_path)
    _cli("cache", "put", "--db", str(source), "k", "fp", "{}", cwd=tmp_path)
    exported = _cli("export", "--db", str(source), cwd=tmp_path)
    (tmp_path / "a.jsonl").write_text(exported)
    _cli("import", "--db", dsn, str(tmp_path / "a.jsonl"), cwd=tmp_path)
    from_postgres = _cli("export", "--db", dsn, cwd=tmp_path)
    assert from_postgres == exported
    (tmp_path / "b.jsonl").write_text(from_postgres)
    _cli("import", "--db", str(back), str(tmp_path / "b.jsonl"), cwd=tmp_path)
    assert _cli("export", "--db", str(back), cwd=tmp_path) == exported


def test_a_command_migrating_an_older_postgres_store_says_so_once(tmp_path: Path, dsn: str) -> None:
    """As of an older SQLite store: any command migrates it, and after it an
    earlier version cannot open it, so a server still running on it must be
    restarted -- said on stderr by the command that migrated it, not after."""
    from older_stores import postgres_back_to

    from roteiro_memory.stores.postgres.migrations import SCHEMA_VERSION
    from roteiro_memory.stores.postgres.store import PostgresStore

    store = PostgresStore(dsn)
    try:
        store.record("lesson", "from an earlier version")
        postgres_back_to(store.connection, 10)
    finally:
        store.close()
    said = []
    for _ in range(2):
        done = _run("list", "--no-sync", "--db", dsn, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "from an earlier version" in done.stdout
        said.append(done.stderr)
    assert f"migrated the store from schema version 10 to {SCHEMA_VERSION}" in said[0], said
    assert "restart any still running on it" in said[0]
    assert said[1] == ""


def _server(dsn: str) -> tuple[str, str]:
    """The DSN without its schema, and the schema."""
    from roteiro_memory.stores.postgres.store import split_schema

    rest, schema = split_schema(dsn)
    assert schema is not None
    return rest, schema


@pytest.mark.parametrize("command", ["check", "export"])
def test_check_and_export_of_a_schema_holding_no_store_make_none(
    tmp_path: Path, dsn: str, command: str
) -> None:
    """As for a missing SQLite file: a check that made the store it was
    asked about would find it sound, and hide that it is gone."""
    import psycopg

    done = _run(command, "--db", dsn, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("roteiro-memory: error: no store in PostgreSQL ")
    assert done.stderr.endswith(": nothing has been recorded there yet\n")
    rest, schema = _server(dsn)
    with psycopg.connect(rest) as conn:
        made = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        assert made.fetchone() is None


@pytest.fixture
def role(dsn: str) -> Iterator[str]:
    """A role that may log in and do nothing else, dropped after."""
    import psycopg

    name = f"r_{pg_server.fresh_schema()}"
    rest, _ = _server(dsn)
    with psycopg.connect(rest, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{name}" LOGIN')
    try:
        yield name
    finally:
        with psycopg.connect(rest, autocommit=True) as conn:
            conn.execute(f'DROP OWNED BY "{name}"')
            conn.execute(f'DROP ROLE "{name}"')


def test_a_role_without_rights_is_told_so_never_that_the_store_is_damaged(
    tmp_path: Path, dsn: str, role: str
) -> None:
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    _cli("add", "--no-sync", "a lesson", "--db", dsn, cwd=tmp_path)
    rest, schema = _server(dsn)
    parts = urlsplit(dsn)
    as_role = urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rpartition('@')[2]}"))
    unused = _run("list", "--no-sync", "--db", as_role, cwd=tmp_path)
    assert unused.returncode == 3
    assert "the role may not use the schema; nothing was changed, grant it USAGE" in unused.stderr
    with psycopg.connect(rest, autocommit=True) as conn:
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    assert "a lesson" in _cli("list", "--no-sync", "--db", as_role, cwd=tmp_path)
    refused = _run("add", "--no-sync", "another", "--db", as_role, cwd=tmp_path)
    assert refused.returncode == 3
    assert "permission denied" in refused.stderr
    assert "grant the role the rights it needs" in refused.stderr
    for said in (unused.stderr, refused.stderr):
        assert "roteiro-memory check" not in said
        assert "Traceback" not in said
    assert _cli("check", "--db", dsn, cwd=tmp_path).strip().endswith(": ok")


def _session_start_locked_out(tmp_path: Path, dsn: str, lock: str) -> dict[str, Any]:
    """The hook's answer to SessionStart while another session holds
    ``lock`` (a ``LOCK TABLE`` clause) on the store's tables."""
    import json

    import psycopg

    rest, schema = _server(dsn)
    event = {"session_id": "s", "cwd": str(tmp_path), "hook_event_name": "SessionStart"}
    with psycopg.connect(rest) as holder:
        holder.execute(f'LOCK TABLE "{schema}".{lock}')
        done = _run(
            "hook", "--db", dsn, cwd=tmp_path, input=json.dumps({**event, "source": "startup"})
        )
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout)
    return answer


def test_the_hook_waits_for_a_lock_as_long_as_on_sqlite_then_answers(
    tmp_path: Path, dsn: str
) -> None:
    """A lock another session holds on the store: the hook gives up after
    its wait and answers, exit 0, rather than hang until the host kills it."""
    _cli("add", "--no-sync", "a lesson", "--db", dsn, cwd=tmp_path)
    answer = _session_start_locked_out(tmp_path, dsn, "agent_memory IN ACCESS EXCLUSIVE MODE")
    said = answer["systemMessage"]
    assert "busy: another session held a lock past 1000 ms; nothing was changed" in said
    assert "SELECT" not in said  # the statement is the store's business, not the reader's


def test_a_hook_locked_out_of_the_graph_answers_from_the_tree_as_on_sqlite(
    tmp_path: Path, dsn: str
) -> None:
    """Another session writing the graph (a sync elsewhere) holds the
    nodes' lock: the hook's own sync gives up after its wait, as on SQLite,
    and the digest is built against the working tree in memory."""
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    subprocess.run([*git, "-C", str(tmp_path), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(tmp_path), "commit", "-qm", "c"], check=True)
    _cli("add", "f returns one", "--anchor", "a.py::f", "--db", dsn, cwd=tmp_path)
    (tmp_path / "a.py").write_text("def f():\n    return 2\n")
    answer = _session_start_locked_out(tmp_path, dsn, "nodes IN SHARE ROW EXCLUSIVE MODE")
    assert "f returns one" in answer["hookSpecificOutput"]["additionalContext"]


def _dump(dsn: str) -> dict[str, Any]:
    """Everything the store's schema holds, as the catalogs and rows say:
    its tables, indexes, constraints and functions with their definitions,
    and a digest of each table's rows."""
    import psycopg

    rest, schema = _server(dsn)
    catalog = {
        "indexes": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %(s)s",
        "constraints": "SELECT c.conname, pg_get_constraintdef(c.oid) FROM pg_constraint c"
        " JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = %(s)s",
        "functions": "SELECT p.proname, p.prosrc FROM pg_proc p"
        " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %(s)s",
    }
    with psycopg.connect(rest) as conn:
        out: dict[str, Any] = {
            name: sorted(conn.execute(sql, {"s": schema}).fetchall())
            for name, sql in catalog.items()
        }
        listed = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,))
        tables = sorted(row[0] for row in listed)
        out["tables"] = tables
        for table in tables:
            rows = conn.execute(
                "SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), ''))"
                f' FROM "{schema}"."{table}" t'
            )
            out[f"rows of {table}"] = rows.fetchone()
    return out


def _older_store(dsn: str, version: int) -> None:
    """A store with records, a supersession and a cache entry, put back at
    schema ``version``."""
    from older_stores import postgres_back_to

    from roteiro_memory.stores.postgres.store import PostgresStore

    store = PostgresStore(dsn)
    try:
        first = store.record("lesson", "retry must cap backoff", confidence=0.8)
        store.record("decision", "use one pool", supersedes=first)
        store.record("attempt", "tried caching: failed")
        store.cache_put("k1", "fp1", '{"a": 1}')
        postgres_back_to(store.connection, version)
    finally:
        store.close()


def _hook(dsn: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``roteiro-check-store`` with no files, on the store ``dsn`` names."""
    import shutil

    script = shutil.which("roteiro-check-store")
    assert script is not None, "the hook's console script is not installed"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    return subprocess.run(
        [script],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=cwd,
        env={**env, "ROTEIRO_MEMORY_DB": dsn},
    )


@pytest.mark.parametrize("version", [5, 10])
def test_check_judges_an_older_postgres_store_as_migrated_and_writes_nothing(
    tmp_path: Path, dsn: str, version: int
) -> None:
    """``check`` judges an older store as the next command to open it finds
    it -- the migrations it lacks never reported as missing, a fault it
    holds reported -- and leaves it exactly as it was: its schema, its
    recorded migrations and its rows."""
    import json

    import psycopg

    from roteiro_memory.stores.postgres.migrations import SCHEMA_VERSION

    _older_store(dsn, version)
    before = _dump(dsn)
    done = _run("--json", "check", "--db", dsn, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", "no migration to announce: nothing was migrated"
    result = json.loads(done.stdout)["result"]
    assert (result["findings"], result["migrates"]) == ([], {"from": version, "to": SCHEMA_VERSION})
    said = _cli("check", "--db", dsn, cwd=tmp_path).splitlines()
    assert said[0].endswith(
        f"schema {version}, an earlier version's; the next command that opens it migrates it "
        f"to schema {SCHEMA_VERSION} (checked here as migrated, in a transaction rolled back)"
    )
    assert said[1].endswith(": ok")
    assert _dump(dsn) == before

    rest, schema = _server(dsn)
    with psycopg.connect(rest, autocommit=True) as conn:
        conn.execute(f'UPDATE "{schema}".agent_memory_ids SET last_id = 1')
    damaged = _dump(dsn)
    done = _run("--json", "check", "--db", dsn, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)["result"]
    assert [f["problem"] for f in result["findings"]] == [
        "id counter 1 is behind the largest id 3: ids would be reused"
    ]
    assert result["migrates"] == {"from": version, "to": SCHEMA_VERSION}
    assert _dump(dsn) == damaged


def test_the_store_hook_judges_an_older_postgres_store_as_migrated_and_writes_nothing(
    tmp_path: Path, dsn: str
) -> None:
    """``roteiro-check-store`` on a PostgreSQL store an earlier version
    wrote: it passes a sound one and names a fault in a damaged one, as
    migrated, and the store is exactly as it was after each."""
    import psycopg

    _older_store(dsn, 10)
    before = _dump(dsn)
    done = _hook(dsn, tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert _dump(dsn) == before
    rest, schema = _server(dsn)
    with psycopg.connect(rest, autocommit=True) as conn:
        conn.execute(f'UPDATE "{schema}".agent_memory_ids SET last_id = 1')
    damaged = _dump(dsn)
    done = _hook(dsn, tmp_path)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].endswith("id counter 1 is behind the largest id 3: ids would be reused")
    assert _dump(dsn) == damaged


def test_a_role_that_may_not_migrate_is_told_so_when_checking_an_older_store(
    tmp_path: Path, dsn: str, role: str
) -> None:
    """Judging an older store as migrated means migrating it, rolled back:
    a role that may only read is told in one line that it lacks the right,
    by the command and the hook alike, and the store is left as it was."""
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    _older_store(dsn, 10)
    rest, schema = _server(dsn)
    with psycopg.connect(rest, autocommit=True) as conn:
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
        conn.execute(f'GRANT SELECT ON ALL TABLES IN SCHEMA "{schema}" TO "{role}"')
    parts = urlsplit(dsn)
    as_role = urlunsplit(parts._replace(netloc=f"{role}@{parts.netloc.rpartition('@')[2]}"))
    before = _dump(dsn)
    done = _run("check", "--db", as_role, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "grant the role the rights it needs" in done.stderr
    assert "Traceback" not in done.stderr
    hooked = _hook(as_role, tmp_path)
    assert hooked.returncode == 1, hooked.stderr
    assert hooked.stderr == ""
    lines = hooked.stdout.splitlines()
    assert len(lines) == 1, lines
    assert "grant the role the rights it needs" in lines[0]
    assert lines[0].endswith("nothing was checked"), lines[0]
    assert _dump(dsn) == before


def test_a_session_that_takes_no_writes_is_told_so_when_checking_an_older_store(
    tmp_path: Path, dsn: str
) -> None:
    """A standby, or a session read-only by default, cannot run the
    migration an older store is judged after: the check says the session
    takes no writes, in one line, and never that the store is damaged."""
    from urllib.parse import quote

    _older_store(dsn, 10)
    before = _dump(dsn)
    sep = "&" if "?" in dsn else "?"
    read_only = f"{dsn}{sep}options={quote('-c default_transaction_read_only=on')}"
    done = _run("check", "--db", read_only, cwd=tmp_path)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "a server and session that take writes" in done.stderr
    assert "migrat" not in done.stderr.partition(": error: ")[2].split("(")[0]
    hooked = _hook(read_only, tmp_path)
    (line,) = hooked.stdout.splitlines()
    assert "a server and session that take writes" in line
    assert "schema_migrations" not in line
    assert _dump(dsn) == before


def test_the_store_hook_tells_a_server_failure_in_one_finding(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure of the server's own (a full disk, a shutdown) while the
    hook checks is one finding saying nothing was checked, not a traceback."""
    import psycopg

    from roteiro_memory.precommit import check_store
    from roteiro_memory.stores.postgres.store import PostgresStore

    PostgresStore(dsn).close()

    def full(self: PostgresStore) -> None:
        raise psycopg.errors.DiskFull("could not extend file: No space left on device")

    monkeypatch.setattr(PostgresStore, "report", full)
    (finding,) = check_store.check_server(dsn)
    assert finding.file == "roteiro-check-store"
    assert "No space left on device" in finding.problem
    assert finding.problem.endswith("; nothing was checked")
