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

from roteiro_memory.errors import InvalidStoreName
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
    from roteiro_memory.stores.naming import parse_store_name

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
    """Open the store ``value`` names for ``backend`` (see the module docstring)."""
    from roteiro_memory.stores.naming import parse_store_name

    name = parse_store_name(backend) if can_share(backend) else None
    if name is not None and name.kind == "sqlite":
        from roteiro_memory.stores.sqlite.store import SQLiteStore

        return SQLiteStore(value)
    if name is not None and name.target is not None:
        from roteiro_memory.stores.postgres.dsn import is_uri, split_schema
        from roteiro_memory.stores.postgres.store import PostgresStore

        rest, base = split_schema(name.target)
        schema = schema_for(value, base)
        if is_uri(rest):
            joiner = "&" if "?" in rest else "?"
            return PostgresStore(f"{rest}{joiner}schema={schema}")
        return PostgresStore(f"{rest} schema={schema}")
    raise InvalidStoreName(
        f"{STORE_ENV}={value!r} names a store to share, but backend {backend!r} cannot "
        "share one: use --backend sqlite or --backend postgres:DSN, or unset the variable"
    )
