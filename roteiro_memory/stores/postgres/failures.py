"""What a ``psycopg.Error`` the store did not expect is reported as.

The one place PostgreSQL's failures become this package's errors: a server
that cannot serve right now (connection exceptions, class 08; insufficient
resources, 53; operator intervention, 57; a lock or statement timeout), or
not this session (a role without the rights, a read-only session), is
:class:`StoreUnavailable`; anything else is :class:`Corrupt`.  The driver is
not imported here, so the server can report an error without loading it.
"""

from __future__ import annotations

from roteiro_memory.errors import Corrupt, RoteiroError, StoreUnavailable, excerpt

__all__ = ["from_psycopg", "is_psycopg_error"]

_UNAVAILABLE_CLASSES = ("08", "53", "57")
_UNAVAILABLE_STATES = ("55P03", "40001", "40P01", "25P03", "42501", "25006")
"""SQLSTATE classes and codes of a sound store that cannot serve at the
moment, or not this session: lock not available, serialization failure,
deadlock, a session ended for idling in a transaction; a role without the
rights a request needs, a read-only session."""

_ADVICE = {
    "55P03": "try again once the session holding the lock is done",
    "42501": "grant the role the rights it needs, or connect as one that has them",
    "25006": "connect to a server and session that take writes (not a standby, "
    "nor default_transaction_read_only)",
}
"""What to do where waiting for the server would not help."""


def is_psycopg_error(error: BaseException) -> bool:
    """Whether ``error`` is one of psycopg's (``psycopg.Error``)."""
    return any(
        cls.__module__.startswith("psycopg") and cls.__name__ == "Error"
        for cls in type(error).__mro__
    )


def from_psycopg(error: BaseException) -> RoteiroError:
    """The error ``error`` (a ``psycopg.Error``) is reported as."""
    state = getattr(error, "sqlstate", None)
    said = excerpt(_words(error), 200)
    where = f"SQLSTATE {state}" if state else type(error).__name__
    if state is None:
        unavailable = type(error).__name__ == "OperationalError"
    else:
        unavailable = state[:2] in _UNAVAILABLE_CLASSES or state in _UNAVAILABLE_STATES
    cause = f"{said} ({where})"
    if unavailable:
        advice = _ADVICE.get(state or "", "try again once the server can serve")
        failure: RoteiroError = StoreUnavailable(
            f"the PostgreSQL store is unavailable: {cause}; nothing was changed, {advice}"
        )
    else:
        failure = Corrupt(
            f"the PostgreSQL store failed: {cause}; nothing was changed; "
            "run `roteiro-memory check` on the store"
        )
    failure.cause = f"the PostgreSQL store failed: {cause}"
    return failure


def _words(error: BaseException) -> str:
    """What the server said of ``error``: its message and DETAIL, on one
    line, without the statement it quotes (``LINE 1: SELECT ...``), which
    says how the store is built, not what went wrong."""
    diag = getattr(error, "diag", None)
    primary = getattr(diag, "message_primary", None)
    if not primary:
        return " ".join(str(error).split())
    detail = getattr(diag, "message_detail", None)
    return " ".join(f"{primary} DETAIL: {detail}".split() if detail else primary.split())
