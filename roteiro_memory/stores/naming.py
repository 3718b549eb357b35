"""Opening a store by name: ``sqlite`` (the embedded default), ``memory``, or
``postgres`` (a schema of a PostgreSQL database, named by its DSN).

A PostgreSQL store is chosen by any of: backend ``postgres`` with the DSN as
``db``; backend ``postgres:DSN``; or a ``postgresql://`` (or ``postgres://``)
URI wherever a store file would be named.  The DSN may carry the schema as a
``schema`` parameter (default ``roteiro``); see :mod:`roteiro_memory.stores.postgres.store`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from roteiro_memory.errors import InvalidStoreName, excerpt
from roteiro_memory.store import Store
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.postgres.dsn import is_uri as is_postgres_uri
from roteiro_memory.stores.postgres.dsn import redact
from roteiro_memory.stores.sqlite.store import SQLiteStore

__all__ = ["BACKENDS", "StoreName", "is_postgres_uri", "open_store", "parse_store_name"]

BACKENDS = ("sqlite", "memory", "postgres")
"""The backends this package ships."""

POSTGRES_BACKEND_PREFIX = "postgres:"
"""A backend naming its PostgreSQL DSN: ``postgres:DSN``."""


@dataclass(frozen=True)
class StoreName:
    """What a store name says: the backend, and the file path (``sqlite``)
    or DSN (``postgres``) it names -- None for a fresh temporary SQLite
    file, for the memory backend, and for ``postgres`` given no DSN."""

    kind: Literal["sqlite", "memory", "postgres"]
    target: str | None = None


def parse_store_name(
    backend: str = "sqlite", db: str | os.PathLike[str] | None = None
) -> StoreName | None:
    """The store ``backend`` (and ``db``, where a store file is named) name;
    None when ``backend`` is none of this package's (a plugin's, say).

    ``sqlite`` with ``db`` names that file, or with a ``postgresql://`` (or
    ``postgres://``) URI as ``db`` that PostgreSQL store; ``memory`` names the
    model; ``postgres`` takes its DSN as ``db``; ``postgres:DSN`` and a bare
    URI as ``backend`` name the DSN themselves.  Raises InvalidStoreName when
    the two contradict each other or a DSN is missing or empty.
    """
    named = os.fspath(db) if db is not None else None
    if is_postgres_uri(backend):
        dsn: str = backend
    elif backend.startswith(POSTGRES_BACKEND_PREFIX):
        dsn = backend[len(POSTGRES_BACKEND_PREFIX) :]
        if named is not None:
            raise InvalidStoreName(
                f"backend {excerpt(redact(backend, dsn))} already names the database; "
                f"drop --db {excerpt(redact(named, named))}"
            )
    elif backend == "postgres" or (backend == "sqlite" and is_postgres_uri(named)):
        if named is None:
            raise InvalidStoreName(
                "the postgres backend needs a DSN: --db postgresql://HOST/DBNAME "
                "(add ?schema=NAME to choose the schema), or --backend postgres:DSN"
            )
        dsn = named
    elif backend == "memory":
        if named is not None:
            raise InvalidStoreName("the memory backend keeps nothing on disk and takes no --db")
        return StoreName("memory")
    elif backend == "sqlite":
        return StoreName("sqlite", named)
    else:
        return None
    if not dsn.strip():
        raise InvalidStoreName("postgres: the DSN is empty: expected postgresql://HOST/DBNAME")
    return StoreName("postgres", dsn)


def open_store(backend: str = "sqlite", db: str | os.PathLike[str] | None = None) -> Store:
    """Open the store ``backend`` (and ``db``) name (:func:`parse_store_name`).

    ``sqlite`` opens ``db``, creating it if absent -- or, when ``db`` is None, a
    fresh file in a new temporary folder that closing the store removes.
    ``memory`` is the in-memory model and takes no ``db``.  ``postgres`` (or
    ``postgres:DSN``) opens the schema the DSN names, creating it if absent; a
    ``postgresql://`` URI as ``db`` (or as ``backend``) selects it too.
    """
    name = parse_store_name(backend, db)
    if name is None:
        raise InvalidStoreName(
            f"unknown backend {excerpt(redact(backend, backend))}: expected one of "
            f"{', '.join(BACKENDS)}, postgres:DSN, or a postgresql:// URI"
        )
    if name.kind == "postgres":
        from roteiro_memory.stores.postgres.store import PostgresStore  # the driver is optional

        assert name.target is not None
        return PostgresStore(name.target)
    if name.kind == "memory":
        return ModelStore()
    return SQLiteStore.temporary() if name.target is None else SQLiteStore(name.target)
