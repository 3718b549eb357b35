"""The PostgreSQL store's transaction helpers: a lost connection inside a
transaction -- a write, an export, an import, a check -- is the store's
StoreUnavailable with the driver's error as its cause, never a traceback
from the rollback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pg_server
import pytest

from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.stores.postgres.store import PostgresStore
from roteiro_memory.transfer import read_export


@pytest.fixture
def pg() -> Iterator[PostgresStore]:
    store = pg_server.throwaway_store()
    try:
        yield store
    finally:
        store.close()


class _LostOn:
    """A connection that loses itself on the first query naming ``table``."""

    def __init__(self, conn: Any, table: str) -> None:
        self._conn = conn
        self._table = table

    def execute(self, sql: Any, *args: Any, **kwargs: Any) -> Any:
        if f"FROM {self._table}" in str(sql):
            self._conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        return self._conn.execute(sql, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@pytest.mark.parametrize("operation", ["export", "check", "import", "record"])
def test_rollback_never_hides_the_error_of_a_lost_connection(
    pg: PostgresStore, operation: str
) -> None:
    import psycopg

    lines = list(pg.export_lines())
    pg.record("lesson", "kept")
    real = pg.connection
    pg._link = _LostOn(real, "agent_memory")  # type: ignore[assignment]
    run = {
        "export": lambda: list(pg.export_lines()),
        "check": pg.check,
        "import": lambda: pg.import_export(read_export(lines)),
        "record": lambda: pg.record("lesson", "lost", supersedes=1),
    }[operation]
    with pytest.raises(StoreUnavailable, match="connection") as raised:
        run()
    assert isinstance(raised.value.__cause__, psycopg.OperationalError)
    pg._link = real
    pg.reopen()
    assert [r.body for r in pg.list().records] == ["kept"]


def test_a_failed_statement_rolls_back_and_is_the_error_raised(pg: PostgresStore) -> None:
    import psycopg

    pg.record("lesson", "kept")

    def fail_midway() -> None:
        with pg._atomic() as conn:
            conn.execute("UPDATE agent_memory_ids SET last_id = 99")
            conn.execute("SELECT * FROM no_such_table")

    with pytest.raises(psycopg.errors.UndefinedTable):
        fail_midway()
    assert pg.connection.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert [r.body for r in pg.list().records] == ["kept"]
    assert pg.record("lesson", "next") == 2
