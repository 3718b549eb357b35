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

import sqlite3

from roteiro_memory.errors import StoreBusy

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import TracebackType

__all__ = [
    "BUSY_TIMEOUT_ENV",
    "BUSY_TIMEOUT_MS",
    "Transaction",
    "atomic",
    "busy",
    "enter_wal",
    "lock_wait_ms",
    "reading",
]

BUSY_TIMEOUT_ENV = "ROTEIRO_MEMORY_BUSY_TIMEOUT_MS"
"""How long, in milliseconds, to wait for another process's write lock."""

BUSY_TIMEOUT_MS = 60_000
"""How long a writer waits for another process's write to finish, unless
:data:`BUSY_TIMEOUT_ENV` or ``busy_timeout_ms`` says otherwise."""


def lock_wait_ms(default: int = BUSY_TIMEOUT_MS) -> int:
    """How long to wait for another process's lock, in milliseconds:
    :data:`BUSY_TIMEOUT_ENV` when set, else ``default``.  An SQLite store's
    busy timeout by default, and the wait the command line gives a
    PostgreSQL store's ``lock_timeout``; UsageError for a value that is no
    whole number of milliseconds."""
    import os

    from roteiro_memory import semantics as sem
    from roteiro_memory.errors import UsageError, excerpt

    text = os.environ.get(BUSY_TIMEOUT_ENV)
    if text is None:
        return default
    value = sem.parse_whole_number(text)
    if value is None or value >= 2**31:
        raise UsageError(
            f"{BUSY_TIMEOUT_ENV} is {excerpt(text)}: expected a whole number of milliseconds "
            f"(ASCII digits, below 2**31); unset it for the default {BUSY_TIMEOUT_MS}"
        )
    return value


_SQLITE_BUSY = 5
_WAL_RETRY_S = 0.002
"""How long a switch to WAL that lost a race waits before looking again."""


def atomic(
    conn: sqlite3.Connection,
    guard: Callable[[], None] | None = None,
    committed: Callable[[int], None] | None = None,
) -> Transaction:
    """One write transaction, holding the write lock from its start:
    committed if the body returns, rolled back if it (or the commit) raises.
    ``guard``, when given, runs just before the commit, and what it raises
    rolls the transaction back; ``committed`` is told, once the commit is
    done, how many rows it changed."""
    return Transaction(conn, "BEGIN IMMEDIATE", guard, committed)


def reading(conn: sqlite3.Connection) -> Transaction:
    """One read transaction, so a read's several queries see one state."""
    return Transaction(conn, "BEGIN")


class Transaction:
    """A transaction as a ``with`` block: begun on entry, committed when the
    body returns, rolled back when it (or the commit) raises.  A class rather
    than :func:`contextlib.contextmanager`: every command opens one, and
    :mod:`contextlib` would cost start-up more than this does."""

    __slots__ = ("begin", "committed", "conn", "guard", "start")

    def __init__(
        self,
        conn: sqlite3.Connection,
        begin: str,
        guard: Callable[[], None] | None = None,
        committed: Callable[[int], None] | None = None,
    ) -> None:
        self.conn = conn
        self.begin = begin
        self.committed = committed
        self.guard = guard
        self.start = 0

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.conn.execute(self.begin)
        except sqlite3.OperationalError as error:
            raise busy(self.conn, error) or error from None
        self.start = self.conn.total_changes
        return self.conn

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if error is not None:
            rollback(self.conn, error)
            return  # the body's error goes on
        try:
            if self.guard is not None:
                self.guard()
            self.conn.execute("COMMIT")
        except BaseException as failed:
            rollback(self.conn, failed)
            raise
        if self.committed is not None:
            self.committed(self.conn.total_changes - self.start)


def rollback(conn: sqlite3.Connection, cause: BaseException) -> None:
    """Roll back the open transaction, if SQLite has not already ended it,
    without letting a failed rollback hide ``cause``."""
    if not conn.in_transaction:
        return
    try:
        conn.execute("ROLLBACK")
    except sqlite3.Error as failed:
        cause.add_note(f"(and the rollback that followed failed too: {failed})")


def busy(conn: sqlite3.Connection, error: sqlite3.Error) -> StoreBusy | None:
    """The error to raise for ``error`` when it is a lock wait that timed out
    (another process's write), never to be mistaken for a damaged store;
    None for any other error."""
    if getattr(error, "sqlite_errorcode", 0) & 0xFF != _SQLITE_BUSY:
        return None
    rows = conn.execute("PRAGMA database_list").fetchall()
    path = next((row[2] for row in rows if row[1] == "main"), "the store")
    waited = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    cause = f"{path}: busy: another process holds the store's write lock (waited {waited} ms)"
    refusal = StoreBusy(
        f"{cause}; retry when it has finished, or set {BUSY_TIMEOUT_ENV} to wait longer"
    )
    refusal.waited = waited
    refusal.cause = cause
    return refusal


def enter_wal(conn: sqlite3.Connection, wait_ms: int) -> None:
    """Put the database in WAL mode, which it keeps from then on.

    The switch needs every other connection's lock gone.  When two processes
    switch a new file at once, each holds the shared lock the other's switch
    waits for, and SQLite answers one of them busy at once, without waiting
    (it would be a deadlock).  So a switch answered busy looks again: the
    other process has usually switched the file itself by then; else it
    tries once more, until ``wait_ms`` have passed, as for any lock."""
    import time

    deadline = time.monotonic() + wait_ms / 1000
    while conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        try:
            conn.execute("PRAGMA journal_mode = WAL")
        except sqlite3.OperationalError as error:
            lost = getattr(error, "sqlite_errorcode", 0) & 0xFF == _SQLITE_BUSY
            if not lost or time.monotonic() >= deadline:
                raise
            time.sleep(_WAL_RETRY_S)
        else:
            return  # a file that cannot be WAL (no shared memory) keeps its mode
