"""What a ``psycopg.Error`` the store did not expect is reported as.

The one place PostgreSQL's failures become this package's errors: a server
that cannot serve right now (connection exceptions, class 08; insufficient
resources, 53; operator intervention, 57; a lock or statement timeout), or
not this session (a role without the rights, a read-only session), is
:class:`StoreUnavailable`; anything else is :class:`Corrupt`.  A connection
the server would not let in (:func:`login_refused`: a wrong password, a role
or database that does not exist) is the store's
:class:`~roteiro_memory.errors.LoginRefused`, since waiting never mends it.
The driver is not imported here, so the server can report an error without
loading it.
"""

from __future__ import annotations

import re

from roteiro_memory.errors import Corrupt, RoteiroError, StoreUnavailable, excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeAlias

    Refusal: TypeAlias = Callable[[str, Callable[[str], str]], str]

__all__ = ["from_psycopg", "is_psycopg_error", "login_refused"]

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


_LOGIN_REFUSALS = (
    (r"no password supplied", "no password was given, and the server asks for one",
     "give it in the DSN, PGPASSWORD or a password file"),
    (r"password authentication failed", "the password is wrong",
     "correct it in the DSN, PGPASSWORD or the password file"),
    (r"authentication failed for user", "the server's authentication method refused the user",
     "connect as a user that method admits"),
    (r"no pg_hba\.conf entry", "no rule of the server's pg_hba.conf admits this login",
     "connect as a user, to a database, that a rule admits, or have one added"),
    (r"pg_hba\.conf rejects", "a rule of the server's pg_hba.conf rejects this login",
     "connect as a user, to a database, that a rule admits"),
    (r'role ".*" is not permitted to log in', "the role may not log in",
     "connect as a role with LOGIN"),
    (r'role ".*" does not exist', "the role does not exist",
     "connect as a role that exists, or create it"),
    (r'database ".*" does not exist', "the database does not exist",
     "name a database that exists, or create it (createdb)"),
)  # fmt: skip
"""How a server's refusal of a login reads, with what it means and what to
fix: libpq gives no SQLSTATE for a connection it could not make, so its
words are what there is (SQLSTATE 28P01, 28000 and 3D000, and libpq's own
``fe_sendauth``).  The first that matches is taken."""


_SERVER_SAID = re.compile(r"^(?:connection failed: )?connection to server .*? failed: (?:FATAL: )?")
"""How libpq begins what a server it reached said (``connection to server
on socket "..." failed: FATAL:``): words the refusal's own naming of the
host replaces."""


def login_refused(error: BaseException, said: str) -> Refusal | None:
    """Whether the server refused to let a connection in, for ``error`` (a
    failed ``psycopg.connect``) whose first line is ``said``: None when it
    did not (a server that is down, busy, starting), which trying again can
    mend, else what says so on one line -- who was refused where, what was
    wrong and what to fix -- given ``said`` as it may be shown and how a
    value the DSN set may be (passwords withheld from both)."""
    found = [(wrong, fix) for pattern, wrong, fix in _LOGIN_REFUSALS if re.search(pattern, said)]
    if not found:
        return None
    wrong, fix = found[0]
    conn = getattr(error, "pgconn", None)
    named = [
        (label, value.decode("utf-8", "replace"))
        for label, value in (
            ("user", getattr(conn, "user", None)),
            ("database", getattr(conn, "db", None)),
            ("host", getattr(conn, "host", None)),
            ("port", getattr(conn, "port", None)),
        )
        if isinstance(value, bytes) and value
    ]

    def told(words: str, shown: Callable[[str], str]) -> str:
        who = ", ".join(f"{label} {shown(excerpt(value))}" for label, value in named)
        words = _SERVER_SAID.sub("", " ".join(words.split()))
        return (
            f"the PostgreSQL server refused the login{f' of {who}' if who else ''}: "
            f"{wrong} ({words}); {fix}; trying again will not help until then"
        )

    return told


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
