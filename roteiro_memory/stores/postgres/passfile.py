"""Whether libpq would pass over the password file with a warning of its own.

When no password is given, libpq looks for one in a password file: the
``passfile`` connection parameter's, else ``PGPASSFILE``'s, else
``~/.pgpass`` (since libpq 15 ``$HOME``, or the account's home when ``HOME``
is unset or empty; before, the account's home only).  On POSIX it ignores a
file that is not a plain file, or that the group or others may use at all
(its mode must be 0600 or less), and says so on stderr from C
(``WARNING: password file ... has group or world access``), once for every
host it tries, before the program can say anything: a second message
beside the command line's one line, and text on stderr under ``--json``.

:func:`unread` works the decision out before connecting, and the store then
names :data:`NOWHERE` as the password file: libpq cannot open it, so reads
nothing and says nothing, which is what it would have done with the file
anyway, bar the warning.  A file libpq would read is left to it.  A
connection service (``service=``, ``PGSERVICE``) may name a password file
or a password of its own, which only libpq reads: there the file is left to
libpq too, unless the DSN names the password file itself, which a service
does not override.  On Windows libpq checks no mode and warns of nothing.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["NOWHERE", "Unread", "password_file", "unread"]

NOWHERE = os.path.join(os.devnull, "roteiro-memory-reads-no-password-file")
"""A password file that cannot exist (a path under a device, not a
folder): libpq, failing to open it, reads no password file and is silent."""


@dataclass(frozen=True)
class Unread:
    """A password file libpq would ignore, and why."""

    path: str
    why: str

    def note(self) -> str:
        """What a failed connection adds: a password may have been in it."""
        return (
            f"the password file {self.path!r} was not read: it {self.why}, and libpq reads "
            "only a plain file with mode 0600 or less"
        )


def _given(name: str, parameters: Mapping[str, object], environ: Mapping[str, str]) -> str:
    """A parameter as libpq takes it: the DSN's when the DSN sets it (even
    to nothing), else its ``PG*`` variable's; empty when neither."""
    if name in parameters:
        return str(parameters[name])
    return environ.get(f"PG{name.upper()}", "")


HOME_FROM_15 = 150000
"""The first libpq (as :func:`psycopg.pq.version` numbers it) to take the
home folder from ``HOME``."""


def _home(environ: Mapping[str, str], libpq: int) -> str | None:
    """The home folder as ``libpq`` (its version) finds it."""
    home = environ.get("HOME") if libpq >= HOME_FROM_15 else None
    if home:
        return home
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_dir
    except KeyError:
        return None


def password_file(
    parameters: Mapping[str, object], environ: Mapping[str, str], *, libpq: int
) -> str | None:
    """The password file ``libpq`` (its version) would look in for a
    connection with ``parameters`` (the DSN's, as the driver reads them)
    under ``environ``; None when it would look in none -- a password is
    given -- or when a connection service may name it (see the module's
    docstring)."""
    if _given("password", parameters, environ):
        return None
    named = _given("passfile", parameters, environ)
    service = "passfile" not in parameters and _given("service", parameters, environ)
    if service:
        return None
    if named:
        return named
    home = _home(environ, libpq)
    return None if home is None else f"{home}/.pgpass"


def unread(
    parameters: Mapping[str, object], environ: Mapping[str, str], *, libpq: int
) -> Unread | None:
    """The password file libpq would ignore with a warning on stderr, and
    why; None when it would read the one it looks in, or look in none, or
    find none there (it is silent then), and on Windows."""
    if os.name != "posix":
        return None
    path = password_file(parameters, environ, libpq=libpq)
    if path is None:
        return None
    try:
        mode = os.stat(path).st_mode  # follows a symbolic link, as libpq does
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(mode):
        return Unread(path, "is not a plain file")
    if mode & 0o077:
        return Unread(path, f"has group or world access (mode {stat.S_IMODE(mode):04o})")
    return None
