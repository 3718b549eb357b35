"""The store the conformance suite names: ``ROTEIRO_CONFORMANCE_STORE``.

To check the ``shared`` and ``crash`` capabilities the suite starts several
instances of a wire server (and restarts killed ones), and tells each which
store to open by this environment variable: every instance given the same value
opens the same durable store (PROTOCOL "Several instances on one store, and
crashes").  ``roteiro-memory protocol`` without ``--db`` honours it:

* ``sqlite``: the value is the path of the SQLite file;
* ``postgres:DSN``: the value names a schema of that database, derived from it
  (:func:`schema_for`), so one DSN serves any number of suite runs;
* ``memory`` keeps nothing on disk and cannot share: the variable is ignored,
  and the server does not declare the capabilities.

A server whose store was named this way declares :data:`SERVER_CAPABILITIES`
beside its store's own; one given ``--db``, or no store at all, does not.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.store import SERVER_CAPABILITIES, Store

__all__ = [
    "SERVER_CAPABILITIES",
    "STORE_ENV",
    "can_share",
    "named_value",
    "open_named",
    "schema_for",
]

STORE_ENV = "ROTEIRO_CONFORMANCE_STORE"
"""The variable the suite sets in each instance's environment."""

DEFAULT_SCHEMA = "roteiro"


def named_value(environ: Mapping[str, str] | None = None) -> str | None:
    """The store the environment names, or None when the variable is unset or empty."""
    value = (os.environ if environ is None else environ).get(STORE_ENV, "")
    return value or None


def can_share(backend: str) -> bool:
    """Whether ``backend`` (a ``protocol --backend`` value) has a store to share."""
    from roteiro_memory.stores.postgres.store import is_dsn

    return backend == "sqlite" or backend.startswith("postgres:") or is_dsn(backend)


def schema_for(value: str, base: str | None = None) -> str:
    """The PostgreSQL schema a suite value names: ``BASE_`` and a digest of it
    (the value is a path, which a schema name cannot hold)."""
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{base or DEFAULT_SCHEMA}_{digest}"


def open_named(backend: str, value: str) -> Store:
    """Open the store ``value`` names for ``backend`` (see the module docstring)."""
    from roteiro_memory.stores.postgres.store import is_dsn, split_schema

    if backend == "sqlite":
        from roteiro_memory.stores.sqlite.store import SQLiteStore

        return SQLiteStore(value)
    dsn = backend[len("postgres:") :] if backend.startswith("postgres:") else backend
    if is_dsn(dsn) or backend.startswith("postgres:"):
        from roteiro_memory.stores.postgres.store import PostgresStore

        rest, base = split_schema(dsn)
        schema = schema_for(value, base)
        if is_dsn(rest):
            joiner = "&" if "?" in rest else "?"
            return PostgresStore(f"{rest}{joiner}schema={schema}")
        return PostgresStore(f"{rest} schema={schema}")
    raise StoreUnavailable(
        f"{STORE_ENV}={value!r} names a store to share, but backend {backend!r} cannot "
        "share one: use --backend sqlite or --backend postgres:DSN, or unset the variable"
    )
