"""What a failure no operation reports itself is reported as: the last
resort of the protocol server and the command line, so that every request is
answered and no command ends in a traceback.

A database error is mapped by its store family, in one place each
(:mod:`.sqlite.failures`, :mod:`.postgres.failures`); anything else is
:class:`~roteiro_memory.errors.Corrupt`, naming it.
"""

from __future__ import annotations

from roteiro_memory.errors import Corrupt, RoteiroError, excerpt

__all__ = ["unexpected"]


def unexpected(error: Exception) -> RoteiroError:
    """What a failure no operation reports itself becomes on the wire: a
    database error is mapped by its store family (unavailable or
    :class:`Corrupt`); anything else is :class:`Corrupt`, naming it."""
    import sqlite3

    from roteiro_memory.stores.postgres.failures import from_psycopg, is_psycopg_error

    if isinstance(error, sqlite3.Error):
        from roteiro_memory.stores.sqlite.failures import from_sqlite

        return from_sqlite(error)
    if is_psycopg_error(error):
        return from_psycopg(error)
    return Corrupt(
        f"unexpected failure: {type(error).__name__}: {excerpt(str(error), 200)}; "
        "nothing reports this on purpose, so please report it as a bug"
    )
