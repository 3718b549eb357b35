"""What a failure no operation reports itself is reported as: the last
resort of the command line, and of the SQLite and PostgreSQL stores'
:meth:`~roteiro_memory.store.Store.failure` (the protocol server's), so that
every request is answered and no command ends in a traceback.

A database error is mapped by its store family, in one place each
(:mod:`.sqlite.failures`, :mod:`.postgres.failures`); anything else is
:func:`~roteiro_memory.errors.unexpected_failure`: Corrupt, naming it.
"""

from __future__ import annotations

from roteiro_memory.errors import RoteiroError, unexpected_failure

__all__ = ["from_database", "unexpected"]


def from_database(error: BaseException) -> RoteiroError | None:
    """What a database error (SQLite's or psycopg's) is reported as, by its
    store family: unavailable or :class:`~roteiro_memory.errors.Corrupt`;
    None for any other failure."""
    import sqlite3

    from roteiro_memory.stores.postgres.failures import from_psycopg, is_psycopg_error

    if isinstance(error, sqlite3.Error):
        from roteiro_memory.stores.sqlite.failures import from_sqlite

        return from_sqlite(error)
    if is_psycopg_error(error):
        return from_psycopg(error)
    return None


def unexpected(error: Exception) -> RoteiroError:
    """What a failure no operation reports itself becomes: a database error
    is mapped by its store family (:func:`from_database`); anything else is
    :func:`~roteiro_memory.errors.unexpected_failure`."""
    mapped = from_database(error)
    return mapped if mapped is not None else unexpected_failure(error)
