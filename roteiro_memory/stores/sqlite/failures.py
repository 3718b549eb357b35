"""What an ``sqlite3.Error`` the store did not expect is reported as.

The one place SQLite's failures become this package's errors: a store that
cannot be used right now (locked, busy, full, an I/O failure, read-only) is
:class:`StoreUnavailable`; anything else (an undecodable column, a malformed
database, a statement the stored data makes fail) is :class:`Corrupt`.
"""

from __future__ import annotations

import sqlite3

from roteiro_memory.errors import Corrupt, RoteiroError, StoreUnavailable, excerpt

__all__ = ["from_sqlite", "is_unavailable", "unavailable", "undecoded"]

_UNAVAILABLE = (
    "SQLITE_BUSY",
    "SQLITE_LOCKED",
    "SQLITE_FULL",
    "SQLITE_IOERR",
    "SQLITE_CANTOPEN",
    "SQLITE_READONLY",
    "SQLITE_NOMEM",
    "SQLITE_PERM",
    "SQLITE_INTERRUPT",
)
"""Result codes (and their extended forms, which share the prefix) of a
store that is sound but cannot be used at the moment."""


def _name(error: sqlite3.Error) -> str:
    return getattr(error, "sqlite_errorname", None) or type(error).__name__


def is_unavailable(error: sqlite3.Error) -> bool:
    """Whether ``error`` says the store cannot be used now, not that it is damaged."""
    return _name(error).startswith(_UNAVAILABLE)


def from_sqlite(error: sqlite3.Error) -> RoteiroError:
    """The error ``error`` is reported as, its message naming SQLite's."""
    name = _name(error)
    said = excerpt(str(error), 200)
    if is_unavailable(error):
        failure: RoteiroError = StoreUnavailable(
            f"the SQLite store is unavailable: {said} ({name}); nothing was changed, "
            "try again once the cause (another writer, a full disk) is gone"
        )
    else:
        failure = Corrupt(
            f"the SQLite store failed: {said} ({name}); nothing was changed; "
            "run `roteiro-memory check` on the store"
        )
    failure.cause = f"the SQLite store failed: {said} ({name})"
    return failure


def unavailable(where: object, error: sqlite3.Error) -> StoreUnavailable:
    """The store at ``where`` cannot be used now, for ``error`` (one
    :func:`is_unavailable` accepts), as SQLite named it."""
    said = from_sqlite(error)
    failure = StoreUnavailable(f"{where}: {said}")
    failure.cause = f"{where}: {said.cause}"
    return failure


def undecoded(error: UnicodeDecodeError) -> sqlite3.DatabaseError:
    """The SQLite error a :class:`UnicodeDecodeError` raised by a call to
    :mod:`sqlite3` stands for: SQLite quotes a damaged schema's names in its
    messages (``malformed database schema (...)``) and Python decodes a
    message, or a name read with the default text factory, as strict UTF-8.
    Its bytes are shown escaped, so the message names what SQLite said."""
    data = error.object
    said = data.decode("utf-8", "backslashreplace") if isinstance(data, bytes) else ""
    return sqlite3.DatabaseError(said or f"text that is not UTF-8 ({error.reason})")
