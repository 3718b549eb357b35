"""A PostgreSQL store's connection: set up for the store whatever its session
defaults are (:func:`settle`), and whether it is still good for its next call.

A store outlives its connection: the server restarts, an administrator ends
the session.  The MCP server and the protocol server hold one store for
hours, so the store reconnects on the call after a connection was lost,
rather than failing every call from then on.  A connection the server has
hung up on while it was idle is known without a round trip: PostgreSQL says
why before it closes the socket (``terminating connection due to
administrator command``), so an idle connection whose socket has something
to read is one the server has given up.  A connection lost in the middle of
a call fails that call, which says whether anything was written, and is
replaced at the next.

A write whose commit was sent but not answered may or may not have been
committed; :func:`commit_unknown` says so, and nothing retries it.
"""

from __future__ import annotations

import select
from typing import TYPE_CHECKING, Any

from roteiro_memory.errors import StoreUnavailable

if TYPE_CHECKING:
    import psycopg

__all__ = ["commit_unknown", "lost", "quiet_driver", "settle", "stale"]


def quiet_driver() -> None:
    """Keep psycopg's log records off stderr unless the program asks for
    them.  The driver logs, as a warning, an error it passes over while
    ending a pipeline on a lost connection ("error ignored terminating
    Pipeline"), and raises the error that ended it, which is reported in one
    line; with no logging set up, Python would print the record as a second
    message.  A handler that does nothing keeps it from that last resort
    while records still reach any handler the program sets up."""
    import logging

    logger = logging.getLogger("psycopg")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())


def settle(
    conn: psycopg.Connection[tuple[Any, ...]], schema: str, lock_timeout_ms: int | None
) -> None:
    """Set a new connection up for the store in ``schema`` (quoted), whatever
    the server, role, database or DSN set for its sessions."""
    # A bool is bound as the integer it is, as SQLite binds it, so one SQL
    # text serves both (the store's own arguments are never bools).
    from psycopg.types.numeric import Int8BinaryDumper, Int8Dumper

    conn.adapters.register_dumper(bool, Int8Dumper)
    conn.adapters.register_dumper(bool, Int8BinaryDumper)
    # Each setting is the session's (set_config's ``false``), all made by one
    # statement: a connection is made by every command, and each statement
    # is a round trip to the server.
    settings = [
        "set_config('search_path', %(schema)s, false)",
        # Every statement here reads or writes a few rows through an index,
        # or ranks with one long expression whose estimated cost (each CASE
        # branch's subquery counted for every row) passes the JIT
        # thresholds: compiling it took seconds, running it milliseconds
        # (recall with exponential decay over 100,000 records: 15 s, 80 ms
        # without).
        "set_config('jit', 'off', false)",
        # A commit is answered once it is on disk: a server, role or
        # database set to commit asynchronously (synchronous_commit = off)
        # answers before, and a crash then loses writes the store has said
        # were stored.  Any other setting flushes locally first, and is kept.
        "CASE WHEN current_setting('synchronous_commit') = 'off'"
        " THEN set_config('synchronous_commit', 'on', false) END",
        # A double is read as the text the server writes, rounded to 15
        # digits where the session's extra_float_digits is 0 or less
        # (PostgreSQL 11's default, or a role's setting): 3 writes every one
        # so that it reads back exactly, on every version.
        "set_config('extra_float_digits', '3', false)",
    ]
    values: dict[str, object] = {"schema": schema}
    if lock_timeout_ms is not None:
        settings.append("set_config('lock_timeout', %(lock)s, false)")
        values["lock"] = str(int(lock_timeout_ms))
    conn.execute("SELECT " + ", ".join(settings), values)


def stale(conn: psycopg.Connection[tuple[Any, ...]]) -> bool:
    """Whether ``conn`` must be replaced before its next statement: it was
    lost, or the server hung up on it while it was idle.  A connection its
    owner closed is not stale (it stays closed), nor is one inside a
    transaction (whose statements are answered as they run)."""
    import psycopg.pq

    if conn.broken:
        return True
    if conn.closed or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
        return False
    readable, _, _ = select.select([conn.fileno()], [], [], 0)
    return bool(readable)


def _said(error: BaseException) -> str:
    return " ".join(str(error).split())  # libpq's message spans lines


def lost(error: BaseException) -> StoreUnavailable:
    """A connection lost before a commit: the server rolled back whatever
    the transaction had done."""
    cause = f"the connection to the PostgreSQL server was lost ({_said(error)})"
    failure = StoreUnavailable(f"{cause}; nothing was changed; try again once the server is back")
    failure.cause = cause
    return failure


def commit_unknown(error: BaseException) -> StoreUnavailable:
    """A connection lost while a write's commit was on its way: whether the
    server committed it cannot be known from here."""
    return StoreUnavailable(
        f"the connection to the PostgreSQL server was lost while committing "
        f"({_said(error)}): the write may or may not have been stored; once the server is "
        "back, look (get, list) before writing it again"
    )
