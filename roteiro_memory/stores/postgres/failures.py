"""What a ``psycopg.Error`` the store did not expect is reported as.

The one place PostgreSQL's failures become this package's errors: a server
that cannot serve right now (connection exceptions, class 08; insufficient
resources, 53; operator intervention, 57; a lock or statement timeout) is
:class:`StoreUnavailable`; anything else is :class:`Corrupt`.  The driver is
not imported here, so the server can report an error without loading it.
"""

from __future__ import annotations

from roteiro_memory.errors import Corrupt, RoteiroError, StoreUnavailable, excerpt

__all__ = ["from_psycopg", "is_psycopg_error"]

_UNAVAILABLE_CLASSES = ("08", "53", "57")
_UNAVAILABLE_STATES = ("55P03", "40001", "40P01")
"""SQLSTATE classes and codes of a sound store that cannot serve at the
moment: lock not available, serialization failure, deadlock."""


def is_psycopg_error(error: BaseException) -> bool:
    """Whether ``error`` is one of psycopg's (``psycopg.Error``)."""
    return any(
        cls.__module__.startswith("psycopg") and cls.__name__ == "Error"
        for cls in type(error).__mro__
    )


def from_psycopg(error: BaseException) -> RoteiroError:
    """The error ``error`` (a ``psycopg.Error``) is reported as."""
    state = getattr(error, "sqlstate", None)
    said = excerpt(" ".join(str(error).split()), 200)  # the server's DETAIL lines too
    where = f"SQLSTATE {state}" if state else type(error).__name__
    if state is None:
        unavailable = type(error).__name__ == "OperationalError"
    else:
        unavailable = state[:2] in _UNAVAILABLE_CLASSES or state in _UNAVAILABLE_STATES
    if unavailable:
        return StoreUnavailable(
            f"the PostgreSQL store is unavailable: {said} ({where}); nothing was changed, "
            "try again once the server can serve"
        )
    return Corrupt(
        f"the PostgreSQL store failed: {said} ({where}); nothing was changed; "
        "run `roteiro-memory check` on the store"
    )
