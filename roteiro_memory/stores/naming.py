"""Opening a store by name: ``sqlite`` (the embedded default), ``memory``, or
``postgres`` (a schema of a PostgreSQL database, named by its DSN).

A PostgreSQL store is chosen by any of: backend ``postgres`` with the DSN as
``db``; backend ``postgres:DSN``; or a ``postgresql://`` (or ``postgres://``)
URI wherever a store file would be named.  The DSN may carry the schema as a
``schema`` parameter (default ``roteiro``); see :mod:`roteiro_memory.stores.postgres.store`.

Two other places name a store, and open it here too:

* the conformance suite's backends (the ``roteiro.backends`` entry points of
  this package: :func:`temporary_sqlite`, :func:`model_store` and
  :func:`suite_postgres`), so that the suite's engine names no store;
* the variable :data:`STORE_ENV`, by which the suite names the one durable
  store several instances of a wire server share (:func:`open_named`).

No store is imported until one is opened.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from roteiro_memory.errors import InvalidStoreName, excerpt
from roteiro_memory.store import SERVER_CAPABILITIES, Store
from roteiro_memory.stores.postgres.dsn import is_uri as is_postgres_uri
from roteiro_memory.stores.postgres.dsn import redact, refuse_connection
from roteiro_memory.stores.sqlite.uri import store_file

__all__ = [
    "BACKENDS",
    "SERVER_CAPABILITIES",
    "STORE_ENV",
    "StoreName",
    "can_share",
    "is_postgres_uri",
    "model_store",
    "named_value",
    "open_named",
    "open_store",
    "parse_store_name",
    "schema_for",
    "suite_postgres",
    "temporary_sqlite",
]

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
    the two contradict each other or a DSN is missing or empty, or either is
    not a name at all (``None`` as ``backend``, a number as ``db``).
    """
    if not isinstance(backend, str):
        raise InvalidStoreName(
            f"invalid backend {excerpt(backend)}: expected a backend name (a str): one of "
            f"{', '.join(BACKENDS)}, postgres:DSN, or a postgresql:// URI"
        )
    if db is None or isinstance(db, str):
        named = db
    elif isinstance(db, os.PathLike):
        named = store_file(db)  # a path object names a file, never a DSN
    else:
        raise InvalidStoreName(
            f"invalid db {excerpt(db)}: expected a store file's path or a DSN (a str)"
        )
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
        if named is not None:
            refuse_connection(named, "--db")
            store_file(named)
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
        return model_store()
    if name.target is None:
        return temporary_sqlite()
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    return SQLiteStore(name.target)


# --- the conformance suite's backends -------------------------------------------


def temporary_sqlite() -> Store:
    """The reference SQLite store, in a fresh temporary folder that closing
    it removes (the suite's ``sqlite``)."""
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    return SQLiteStore.temporary()


def model_store() -> Store:
    """The in-memory model store (the suite's ``memory``)."""
    from roteiro_memory.stores.model import ModelStore

    return ModelStore()


def suite_postgres(dsn: str | None = None) -> Store:
    """The PostgreSQL store a suite's ``postgres:DSN`` (or ``postgresql://``
    URI) names, in-process.

    A DSN that names no schema gets a throwaway one, created now and dropped
    when the store closes, so the suite never resets the schema a team's
    ``--db DSN`` uses (``roteiro`` by default); a DSN naming its schema
    (``?schema=NAME``) is used as named."""
    if dsn is None:
        raise InvalidStoreName(
            "the postgres backend needs a DSN: postgres:DSN, or a postgresql:// URI "
            "(add ?schema=NAME to run in that schema rather than a throwaway one)"
        )
    from roteiro_memory.stores.postgres.dsn import split_schema
    from roteiro_memory.stores.postgres.store import PostgresStore

    parse_store_name("postgres", dsn)  # an empty DSN is refused as everywhere else
    if split_schema(dsn)[1] is not None:
        return PostgresStore(dsn)
    return PostgresStore.throwaway(dsn)


# --- the store the suite names by a variable ------------------------------------

STORE_ENV = "ROTEIRO_CONFORMANCE_STORE"
"""The variable the conformance suite sets in each instance's environment.

To check the ``shared`` and ``crash`` capabilities the suite starts several
instances of a wire server (and restarts killed ones), and tells each which
store to open by this variable: every instance given the same value opens the
same durable store (PROTOCOL "Several instances on one store, and crashes").
``roteiro-memory protocol`` without ``--db`` honours it:

* ``sqlite``: the value is the path of the SQLite file;
* ``postgres:DSN``: the value names a schema of that database, derived from it
  (:func:`schema_for`), so one DSN serves any number of suite runs;
* ``memory`` keeps nothing on disk and cannot share: the variable is ignored,
  and the server does not declare the capabilities.

A server whose store was named this way declares :data:`SERVER_CAPABILITIES`
beside its store's own; one given ``--db``, or no store at all, does not."""

DEFAULT_SCHEMA = "roteiro"


def named_value(environ: Mapping[str, str] | None = None) -> str | None:
    """The store the environment names, or None when the variable is unset or empty."""
    value = (os.environ if environ is None else environ).get(STORE_ENV, "")
    return value or None


def can_share(backend: str) -> bool:
    """Whether ``backend`` (a ``protocol --backend`` value) has a store to share."""
    try:
        name = parse_store_name(backend)
    except InvalidStoreName:
        return False
    return name is not None and name.kind in ("sqlite", "postgres")


def schema_for(value: str, base: str | None = None) -> str:
    """The PostgreSQL schema a suite value names: ``BASE_`` and a digest of it
    (the value is a path, which a schema name cannot hold)."""
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{base or DEFAULT_SCHEMA}_{digest}"


def open_named(backend: str, value: str) -> Store:
    """Open the store ``value`` names for ``backend`` (see :data:`STORE_ENV`)."""
    name = parse_store_name(backend) if can_share(backend) else None
    if name is not None and name.kind == "sqlite":
        from roteiro_memory.stores.sqlite.store import SQLiteStore

        return SQLiteStore(value)
    if name is not None and name.target is not None:
        from roteiro_memory.stores.postgres.dsn import split_schema, with_schema
        from roteiro_memory.stores.postgres.store import PostgresStore

        rest, base = split_schema(name.target)
        return PostgresStore(with_schema(rest, schema_for(value, base)))
    raise InvalidStoreName(
        f"{STORE_ENV}={value!r} names a store to share, but backend {backend!r} cannot "
        "share one: use --backend sqlite or --backend postgres:DSN, or unset the variable"
    )
