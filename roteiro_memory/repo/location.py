"""Where a repository's store lives, and making it private.

By default the store is ``roteiro/memory.db`` inside the repository's git
*common* directory: one per clone, shared by all its worktrees, and never
committed or pushed because git does not track its own directory.  Memory is
unredacted prose, so the folder is created 0700 and the file 0600.
``--db PATH`` or :data:`DB_ENV` choose another file.

Paths are strings here, as given: every command that opens a store comes
through this module, and :mod:`pathlib` would cost a ``recall`` more start-up
than its query.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from roteiro_memory.errors import InvalidStoreName, StoreUnavailable
from roteiro_memory.valueclass import valueclass

__all__ = [
    "DB_ENV",
    "FOLDER_MODE",
    "STORE_DIR",
    "STORE_FILE",
    "Location",
    "locate",
    "prepare",
    "private_folder",
]

DB_ENV = "ROTEIRO_MEMORY_DB"
"""Environment variable naming the store file, when ``--db`` does not."""

STORE_DIR = "roteiro"
STORE_FILE = "memory.db"

FOLDER_MODE = 0o700
"""The mode of the store's folder, and of every folder beside it under the
git directory (the stat cache's, the hooks' session state): its owner's."""


@valueclass
class Location:
    """A store file and how it was chosen."""

    path: str
    origin: str
    """``--db``, the environment variable's name, or ``repository``."""


def locate(
    db: str | None,
    environ: Mapping[str, str],
    common_dir: str | os.PathLike[str] | None,
    why: str | None = None,
) -> Location:
    """The store to open: ``db``, else :data:`DB_ENV`, else the repository's.

    ``common_dir`` is the git common directory, or None where none was
    found: outside a repository, or -- ``why`` says -- where git could not
    tell (it is missing, or fails), which is no reason to run elsewhere.
    """
    if db is not None:
        if not db.strip():
            raise InvalidStoreName("--db is empty: expected the path of a store file")
        return _named(db, "--db")
    from_env = environ.get(DB_ENV)
    if from_env is not None:
        if not from_env.strip():
            raise InvalidStoreName(
                f"{DB_ENV} is set but empty: expected the path of a store file, or unset it"
            )
        return _named(from_env, DB_ENV)
    if common_dir is None and why is not None:
        raise StoreUnavailable(
            f"cannot tell which git repository this is: {why}; or choose a store with --db "
            f"PATH or {DB_ENV}"
        )
    if common_dir is None:
        raise StoreUnavailable(
            f"not inside a git repository: run in one, or choose a store with --db PATH or {DB_ENV}"
        )
    return Location(os.path.join(common_dir, STORE_DIR, STORE_FILE), "repository")


def _named(path: str, origin: str) -> Location:
    """The store file ``origin`` names, which must be a file: SQLite's name
    for a database in memory would keep nothing once the process ends, and
    share nothing with another (the MCP server's included); a connection's
    name other than a PostgreSQL URI would make a file of that name
    (:func:`~roteiro_memory.stores.postgres.dsn.refuse_connection`)."""
    from roteiro_memory.stores.sqlite import IN_MEMORY

    if "=" in path or "://" in path:  # the DSN reader costs start-up: only for what may be one
        from roteiro_memory.stores.postgres.dsn import refuse_connection

        refuse_connection(path, origin)
    if path == IN_MEMORY:
        raise InvalidStoreName(
            f"{origin} names {IN_MEMORY!r}, a database in memory, which keeps nothing once "
            "the process ends and shares nothing with another; choose the path of a store file"
        )
    return Location(path, origin)


def prepare(location: Location) -> str | None:
    """Create the store's file, private, if it does not exist yet; the
    store folder it made for it, if it made one.

    The repository's folder is kept 0700 and its file 0600 (SQLite gives its
    WAL and shared-memory files the database file's mode): made so when they
    are not, and left untouched when they are, so a read changes nothing on
    disk.  A file chosen with ``--db`` or the environment is created 0600 but
    an existing one, and its folder, are left as their owner set them.
    """
    path = location.path
    made = None
    if location.origin == "repository":
        parent = os.path.dirname(path)
        try:
            if private_folder(parent):
                made = parent
        except OSError as error:
            raise StoreUnavailable(
                f"{parent}: cannot create the store folder ({error.strerror})"
            ) from None
    if os.path.exists(path):  # through a symlink: a dangling one is created below
        if location.origin == "repository":
            _keep_mode(path, 0o600)  # privatefile.MODE, without loading it on every command
        return made
    from roteiro_memory import privatefile

    try:
        privatefile.create(path)
    except OSError as error:
        raise StoreUnavailable(
            f"{path}: cannot create the store ({error.strerror}); "
            f"choose another with --db PATH or {DB_ENV}"
        ) from None
    return made


def private_folder(path: str) -> bool:
    """Make ``path`` a folder only its owner may use (:data:`FOLDER_MODE`,
    whatever the umask), or give the folder there that mode unless it has
    it already; True when it made the folder.  Its parent must exist.
    :class:`OSError` when it cannot, or something else is at ``path``."""
    made = False
    try:
        os.mkdir(path, FOLDER_MODE)
        made = True
    except FileExistsError:
        if not os.path.isdir(path):
            raise
    _keep_mode(path, FOLDER_MODE)
    return made


def _keep_mode(path: str, mode: int) -> None:
    """Give ``path`` (through a link, its target, as chmod does) ``mode``
    unless it has it already."""
    if os.stat(path).st_mode & 0o7777 != mode:
        os.chmod(path, mode)
