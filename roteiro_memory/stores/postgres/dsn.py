"""How a PostgreSQL store is written as one string: a libpq DSN (a
``postgresql://`` URI or keyword/value text) that may carry the store's
schema as a ``schema`` parameter.

Kept apart from the store so that recognising a store name
(:func:`roteiro_memory.stores.naming.parse_store_name`) imports neither the
store nor its driver.
"""

from __future__ import annotations

import re
import urllib.parse

from roteiro_memory.errors import InvalidStoreName

__all__ = ["URI_PREFIXES", "is_uri", "split_schema", "with_schema"]

URI_PREFIXES = ("postgresql://", "postgres://")
"""How a PostgreSQL connection URI begins (libpq accepts both)."""

_KEYWORD_SCHEMA = re.compile(r"(?:^|\s)schema\s*=\s*(\S*)(?=\s|$)")


def is_uri(name: str | None) -> bool:
    """Whether ``name`` is a PostgreSQL connection URI."""
    return name is not None and name.startswith(URI_PREFIXES)


def split_schema(dsn: str) -> tuple[str, str | None]:
    """The DSN without its ``schema`` parameter, and that parameter (or None).

    Accepts both libpq forms: a URI with ``?schema=NAME`` and keyword/value
    text with ``schema=NAME``.  Raises StoreUnavailable, in one line that
    does not quote the DSN, when a URI cannot be parsed.
    """
    if is_uri(dsn):
        try:
            parts = urllib.parse.urlsplit(dsn)
        except ValueError as error:
            # Not quoted: a DSN may carry a password.
            raise InvalidStoreName(
                f"the PostgreSQL DSN is malformed ({error}); expected "
                "postgresql://[USER@]HOST[:PORT]/DBNAME[?schema=NAME]"
            ) from None
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        schemas = [value for name, value in query if name == "schema"]
        if not schemas:
            return dsn, None
        rest = urllib.parse.urlencode([(n, v) for n, v in query if n != "schema"])
        return urllib.parse.urlunsplit(parts._replace(query=rest)), schemas[-1]
    match = _KEYWORD_SCHEMA.search(dsn)
    if match is None:
        return dsn, None
    return (dsn[: match.start()] + dsn[match.end() :]).strip(), match.group(1)


def with_schema(dsn: str, schema: str) -> str:
    """``dsn`` (naming no schema) with ``schema`` as its ``schema`` parameter,
    in the DSN's own form."""
    if is_uri(dsn):
        return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"
    return f"{dsn} schema={schema}"
