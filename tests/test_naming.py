"""Opening a store by name (``stores/naming.py``): one parser of store
names, the spellings each place accepts and the ones it refuses, in one
table; and ``ROTEIRO_CONFORMANCE_STORE``, by which ``roteiro-memory protocol``
opens, shares and declares the store the suite names, every other
invocation's ``hello`` as before."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path

import pg_server
import pytest
from wire import server_argv

from roteiro_memory.errors import InvalidStoreName
from roteiro_memory.store import SERVER_CAPABILITIES, STORE_CAPABILITIES
from roteiro_memory.stores.naming import (
    STORE_ENV,
    StoreName,
    can_share,
    named_value,
    parse_store_name,
    schema_for,
)
from roteiro_memory.suite import durability
from roteiro_memory.suite.drivers import SubprocessBackend

URI = "postgresql://h/db?schema=s"

ACCEPTED = [
    # (backend, db) -> what they name
    (("sqlite", None), StoreName("sqlite")),
    (("sqlite", "memory.db"), StoreName("sqlite", "memory.db")),
    (("sqlite", "postgres:host=x"), StoreName("sqlite", "postgres:host=x")),  # a file name
    (("sqlite", "dir/postgresql:x"), StoreName("sqlite", "dir/postgresql:x")),
    (("memory", None), StoreName("memory")),
    (("postgres", URI), StoreName("postgres", URI)),
    (("postgres", "host=/tmp dbname=x"), StoreName("postgres", "host=/tmp dbname=x")),
    (("sqlite", URI), StoreName("postgres", URI)),
    (("sqlite", "postgres://h/db"), StoreName("postgres", "postgres://h/db")),
    ((URI, None), StoreName("postgres", URI)),
    ((URI, "ignored.db"), StoreName("postgres", URI)),
    (("postgres://h/db", None), StoreName("postgres", "postgres://h/db")),
    (("postgres:" + URI, None), StoreName("postgres", URI)),
    (("postgres:host=/tmp dbname=x", None), StoreName("postgres", "host=/tmp dbname=x")),
]

REFUSED = [
    (("postgres", None), "needs a DSN"),
    (("postgres:", None), "DSN is empty"),
    (("postgres:  ", None), "DSN is empty"),
    (("postgres:host=x", "other.db"), "already names the database"),
    (("memory", "memory.db"), "takes no --db"),
]

NOT_OURS = ["mypkg.store:open_store", "postgresql:host=x", "cmd:roteiro-memory protocol", "pg"]


@pytest.mark.parametrize(("given", "expected"), ACCEPTED, ids=[repr(g) for g, _ in ACCEPTED])
def test_naming_accepts(given: tuple[str, str | None], expected: StoreName) -> None:
    assert parse_store_name(*given) == expected


@pytest.mark.parametrize(("given", "problem"), REFUSED, ids=[repr(g) for g, _ in REFUSED])
def test_naming_refuses_naming_the_fix(given: tuple[str, str | None], problem: str) -> None:
    with pytest.raises(InvalidStoreName, match=problem):
        parse_store_name(*given)


@pytest.mark.parametrize("backend", NOT_OURS)
def test_naming_leaves_other_backends_to_their_owners(backend: str) -> None:
    assert parse_store_name(backend) is None


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ((None, None), "invalid backend None: expected a backend name"),
        ((5, None), "invalid backend 5"),
        (("sqlite", 5), "invalid db 5"),
        (("sqlite", ""), "the store path is empty"),
        (("sqlite", "/tmp/a\x00b.db"), "holds a NUL character"),
    ],
    ids=repr,
)
def test_a_store_name_that_names_no_file_is_an_invalid_store_name(
    tmp_path: Path, given: tuple[object, object], problem: str
) -> None:
    """``open_store(None)`` raised AttributeError, a NUL in the path leaked
    ValueError, and an empty path was "StoreUnavailable: : cannot be opened"."""
    from roteiro_memory.stores.naming import open_store

    with pytest.raises(InvalidStoreName, match=problem):
        open_store(*given)  # type: ignore[arg-type]


@pytest.mark.parametrize("timeout", [-1, 2**31, math.nan, 1.5, True, "x"], ids=repr)
def test_a_busy_timeout_that_is_no_millisecond_count_is_refused(
    tmp_path: Path, timeout: object
) -> None:
    from roteiro_memory.errors import BadRequest
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    with pytest.raises(BadRequest, match="invalid busy_timeout_ms"):
        SQLiteStore(tmp_path / "m.db", busy_timeout_ms=timeout)  # type: ignore[arg-type]
    assert not (tmp_path / "m.db").exists()


class _BytesPath(os.PathLike[bytes]):
    def __fspath__(self) -> bytes:
        return b"/tmp/m.db"


@pytest.mark.parametrize(
    ("db", "problem"),
    [
        (_BytesPath(), "expected the path of a store file \\(a str or os.PathLike of str\\)"),
        ("", "the store path is empty"),
        ("/tmp/a\x00b.db", "holds a NUL character"),
    ],
    ids=["a path object of bytes", "empty", "a NUL"],
)
def test_naming_and_opening_refuse_a_store_path_by_one_rule(db: object, problem: str) -> None:
    """Parsing a name refuses what opening it would: a path object of bytes
    was let through by the parser, to a TypeError further on."""
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    with pytest.raises(InvalidStoreName, match=problem):
        parse_store_name("sqlite", db)  # type: ignore[arg-type]
    with pytest.raises(InvalidStoreName, match=problem):
        SQLiteStore(db)  # type: ignore[arg-type]


def test_naming_takes_a_path_object(tmp_path: Path) -> None:
    assert parse_store_name("sqlite", tmp_path / "m.db") == StoreName(
        "sqlite", str(tmp_path / "m.db")
    )


def test_naming_the_cli_and_the_suite_use_the_one_parser() -> None:
    """No other module spells out how a PostgreSQL name begins."""
    root = Path(__file__).resolve().parents[1] / "roteiro_memory"
    allowed = {root / "stores" / "postgres" / "dsn.py"}
    spelled = [
        path
        for path in root.rglob("*.py")
        if path not in allowed
        and any(
            f'"{prefix}' in line and "startswith" in line
            for line in path.read_text(encoding="utf-8").splitlines()
            for prefix in ("postgres:", "postgresql:", "postgres://", "postgresql://")
        )
    ]
    assert spelled == [], spelled


# --- the store the suite names ------------------------------------------------


@pytest.fixture
def started() -> Iterator[list[SubprocessBackend]]:
    """Servers a test starts; closed after it."""
    opened: list[SubprocessBackend] = []
    yield opened
    for backend in opened:
        backend.close()


def _server(
    started: list[SubprocessBackend], argv: list[str], store: Path | None
) -> SubprocessBackend:
    backend = SubprocessBackend(argv, env={STORE_ENV: str(store)} if store else None)
    started.append(backend)
    return backend


def test_named_store_env_is_the_suites() -> None:
    assert STORE_ENV == durability.STORE_ENV


def test_named_store_sqlite_declares_shared_and_crash(
    started: list[SubprocessBackend], tmp_path: Path
) -> None:
    server = _server(started, server_argv("sqlite"), tmp_path / "store")
    assert server.capabilities() == {*STORE_CAPABILITIES, *SERVER_CAPABILITIES}


def test_named_store_instances_on_one_value_share_the_store(
    started: list[SubprocessBackend], tmp_path: Path
) -> None:
    one = _server(started, server_argv("sqlite"), tmp_path / "store")
    two = _server(started, server_argv("sqlite"), tmp_path / "store")
    one.call("reset", {})
    written = one.call("memory.record", {"kind": "lesson", "body": "from one"})
    assert two.call("memory.get", {"id": written["id"]})["body"] == "from one"
    other = _server(started, server_argv("sqlite"), tmp_path / "other")
    assert other.call("memory.get", {"id": written["id"]}) is None


@pytest.mark.parametrize("argv", [["sqlite"], ["sqlite", "db"], ["memory"]])
def test_named_store_other_invocations_keep_their_hello(
    started: list[SubprocessBackend], tmp_path: Path, argv: list[str]
) -> None:
    """Without the variable, with --db, or over the memory store: no shared, no crash."""
    db = tmp_path / "memory.db" if "db" in argv else None
    named = tmp_path / "store" if argv != ["sqlite"] else None
    server = _server(started, server_argv(argv[0], db), named)
    assert server.capabilities() == set(STORE_CAPABILITIES)
    assert not (tmp_path / "store").exists()


def test_named_store_empty_value_is_unset() -> None:
    assert named_value({STORE_ENV: ""}) is None
    assert named_value({STORE_ENV: "/x"}) == "/x"


def test_named_store_backends_that_can_share() -> None:
    assert can_share("sqlite")
    assert can_share("postgres:postgresql://h/db")
    assert not can_share("memory")


def test_named_store_schema_is_a_digest_of_the_value() -> None:
    first, second = schema_for("/tmp/a/store"), schema_for("/tmp/b/store")
    assert first != second
    assert first.startswith("roteiro_")
    assert schema_for("/tmp/a/store", "t1") == "t1_" + first.removeprefix("roteiro_")


def test_named_store_postgres_instances_share_a_derived_schema(
    started: list[SubprocessBackend], tmp_path: Path
) -> None:
    dsn = pg_server.fresh_store_dsn()
    try:
        argv = server_argv(f"postgres:{dsn}")
        one = _server(started, argv, tmp_path / "store")
        two = _server(started, argv, tmp_path / "store")
        assert one.capabilities() >= set(SERVER_CAPABILITIES)
        one.call("reset", {})
        written = one.call("memory.record", {"kind": "lesson", "body": "shared"})
        assert two.call("memory.get", {"id": written["id"]})["body"] == "shared"
        for backend in started:
            backend.close()
    finally:
        pg_server.drop_named_schemas(dsn)
        pg_server.drop_schema(dsn)
