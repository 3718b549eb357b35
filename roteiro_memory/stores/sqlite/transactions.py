"""The SQLite store's two transaction helpers: every write and every
multi-query read of the store goes through one of them.

A failed statement may end the transaction itself (SQLite rolls back on a
full disk, an I/O error or ``RAISE(ROLLBACK)``); issuing ``ROLLBACK`` then
fails with "no transaction is active" and would replace the error that
caused it.  So the rollback runs only while a transaction is open, and a
rollback that fails anyway is noted on the original error, which is the one
raised.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

__all__ = ["atomic", "reading"]


@contextlib.contextmanager
def atomic(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, holding the write lock from its start:
    committed if the body returns, rolled back if it (or the commit) raises."""
    with _transaction(conn, "BEGIN IMMEDIATE"):
        yield conn


@contextlib.contextmanager
def reading(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One read transaction, so a read's several queries see one state."""
    with _transaction(conn, "BEGIN"):
        yield conn


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection, begin: str) -> Iterator[None]:
    conn.execute(begin)
    try:
        yield
        conn.execute("COMMIT")
    except BaseException as error:
        rollback(conn, error)
        raise


def rollback(conn: sqlite3.Connection, cause: BaseException) -> None:
    """Roll back the open transaction, if SQLite has not already ended it,
    without letting a failed rollback hide ``cause``."""
    if not conn.in_transaction:
        return
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error as failed:
        cause.add_note(f"(and the rollback that followed failed too: {failed})")
