"""Opening a store by name: ``sqlite`` (the embedded default), ``memory``, or
``postgres`` (a schema of a PostgreSQL database, named by its DSN).

A PostgreSQL store is chosen by any of: backend ``postgres`` with the DSN as
``db``; backend ``postgres:DSN``; or a ``postgresql://`` (or ``postgres://``)
URI wherever a store file would be named.  The DSN may carry the schema as a
``schema`` parameter (default ``roteiro``); see :mod:`roteiro_memory.stores.postgres.store`.
"""

from __future__ import annotations

import os

from roteiro_memory.errors import StoreUnavailable, excerpt
from roteiro_memory.store import Store
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.sqlite.store import SQLiteStore

__all__ = ["BACKENDS", "open_store"]

BACKENDS = ("sqlite", "memory", "postgres")
"""The backends this package ships."""


def open_store(backend: str = "sqlite", db: str | os.PathLike[str] | None = None) -> Store:
    """Open the store ``backend`` names.

    ``sqlite`` opens ``db``, creating it if absent -- or, when ``db`` is None, a
    fresh file in a new temporary folder that closing the store removes.
    ``memory`` is the in-memory model and takes no ``db``.  ``postgres`` (or
    ``postgres:DSN``) opens the schema the DSN names, creating it if absent; a
    ``postgresql://`` URI as ``db`` (or as ``backend``) selects it too.
    """
    dsn = _postgres_dsn(backend, db)
    if dsn is not None:
        from roteiro_memory.stores.postgres.store import PostgresStore

        return PostgresStore(dsn)
    if backend == "memory":
        if db is not None:
            raise StoreUnavailable("the memory backend keeps nothing on disk and takes no --db")
        return ModelStore()
    if backend == "sqlite":
        return SQLiteStore.temporary() if db is None else SQLiteStore(db)
    raise StoreUnavailable(
        f"unknown backend {excerpt(backend)}: expected one of {', '.join(BACKENDS)}, "
        "postgres:DSN, or a postgresql:// URI"
    )


def _postgres_dsn(backend: str, db: str | os.PathLike[str] | None) -> str | None:
    """The DSN when ``backend`` and ``db`` name a PostgreSQL store, else None."""
    from roteiro_memory.stores.postgres.store import is_dsn

    named = os.fspath(db) if db is not None else None
    if backend.startswith("postgres:") and not is_dsn(backend):
        if named is not None:
            raise StoreUnavailable(
                f"backend {excerpt(backend)} already names the database; drop --db {excerpt(named)}"
            )
        dsn = backend[len("postgres:") :]
    elif is_dsn(backend):
        dsn = backend
    elif backend == "postgres" or (backend == "sqlite" and is_dsn(named)):
        if named is None:
            raise StoreUnavailable(
                "the postgres backend needs a DSN: --db postgresql://HOST/DBNAME "
                "(add ?schema=NAME to choose the schema), or --backend postgres:DSN"
            )
        dsn = named
    else:
        return None
    if not dsn.strip():
        raise StoreUnavailable("postgres: the DSN is empty: expected postgresql://HOST/DBNAME")
    return dsn
