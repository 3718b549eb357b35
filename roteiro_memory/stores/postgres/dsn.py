"""How a PostgreSQL store is written as one string: a libpq DSN (a
``postgresql://`` URI or keyword/value text) that may carry the store's
schema as a ``schema`` parameter.

Kept apart from the store so that recognising a store name
(:func:`roteiro_memory.stores.naming.parse_store_name`) imports neither the
store nor its driver.

A DSN may carry a password, and libpq quotes pieces of a DSN it cannot
parse (``invalid percent-encoded token: "..."``), so every message that
quotes a DSN goes through :func:`redact`, and the driver's words about one
through :func:`driver_words` (both of :mod:`roteiro_memory.redaction`, the
one place a password is found).  A URI whose password libpq would read
otherwise than it was meant -- an unencoded ``/`` or ``@`` in it -- is
refused before anything reads it (:func:`split_schema`).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping

from roteiro_memory.errors import InvalidStoreName, excerpt
from roteiro_memory.redaction import (
    ANY_URI,
    REDACTED,
    WHITE,
    driver_words,
    keyword_pairs,
    query_start,
    redact,
    stray_at,
)

__all__ = [
    "BAD_CONNECTION",
    "CHOICES",
    "REDACTED",
    "URI_PREFIXES",
    "bad_choice",
    "bad_ports",
    "connection_named",
    "driver_words",
    "is_uri",
    "redact",
    "refuse_connection",
    "refused_value",
    "split_schema",
    "with_schema",
]

URI_PREFIXES = ("postgresql://", "postgres://")
"""How a PostgreSQL connection URI begins (libpq accepts both)."""

SCHEMA = "schema"
"""The store's own parameter, naming its schema: taken out before the DSN
reaches libpq, which knows no such parameter."""


def is_uri(name: str | None) -> bool:
    """Whether ``name`` is a PostgreSQL connection URI."""
    return name is not None and name.startswith(URI_PREFIXES)


_PAIR = re.compile(r"(?:^|[ \t\n\r])([A-Za-z_]+)[ \t\n\r]*=")
"""A ``keyword=`` of keyword/value text, as libpq reads a DSN."""
_FIRST_PAIR = re.compile(r"[ \t\n\r]*([A-Za-z_]+)[ \t\n\r]*=")
_PASSWORD_KEY = re.compile(r"(?:^|[ \t\n\r?&;])(?:ssl)?password[ \t\n\r]*=", re.IGNORECASE)
"""A password parameter, in keyword/value text or a URI's query, of any case."""

LIBPQ_KEYWORDS = frozenset(
    {
        "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "service",
        "options", "sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword",
        "connect_timeout", "application_name", "target_session_attrs", "client_encoding",
        "keepalives", "gssencmode", "requiressl", "channel_binding", "load_balance_hosts",
        "schema",
    }
)  # fmt: skip
"""The libpq connection keywords (and the store's ``schema``) that mark
text as a DSN rather than a file's name."""


def connection_named(name: str) -> str | None:
    """What ``name``, given where a store file is named, is if it names a
    connection and not a file: a URI whose scheme is not PostgreSQL's as
    libpq writes it (``POSTGRESQL://``, ``postgresql+psycopg://``,
    ``jdbc:postgresql://``), or one with white space around it; libpq
    keyword/value text (``host=db dbname=team``: it begins with a libpq
    keyword and ``=``, or holds two ``keyword=`` pairs); or text holding a
    password parameter.  None for anything else, a PostgreSQL URI included
    (``./host=db`` names a file).  Taken as a path, any of these would make
    a file of that name and print it, password and all."""
    if is_uri(name):
        return None
    if ANY_URI.match(name.strip()):
        return "a URI, and a store is named by a postgresql:// (or postgres://) one only"
    first = _FIRST_PAIR.match(name)
    if first is not None and (first[1] in LIBPQ_KEYWORDS or len(_PAIR.findall(name)) > 1):
        return "libpq keyword/value text, which names a PostgreSQL database, not a file"
    if _PASSWORD_KEY.search(name):
        return "text holding a password, which names a connection, not a file"
    return None


def refuse_connection(name: str, origin: str) -> None:
    """Refuse ``name``, which ``origin`` (``--db``, a variable) gives where a
    store file is named, when it names a connection (:func:`connection_named`),
    quoting it with its password withheld."""
    what = connection_named(name)
    if what is not None:
        raise InvalidStoreName(
            f"{origin} names {excerpt(redact(name, name))}, {what}: give a store file's path"
            " (./NAME for a file so named) or a postgresql://HOST/DBNAME URI"
        )


BAD_CONNECTION = "connection is bad: "
"""How psycopg begins what libpq said when it made no connection: words
of psycopg's, left out where the driver's words are quoted."""


_REFUSED_VALUE = re.compile(
    r'invalid integer value ".*" for connection option "'
    r'|invalid [a-z_]+ value: "'
    r'|invalid port number: "'
    r"|could not match \d+ port numbers to \d+ hosts"
    r'|could not parse network address "'
)
"""How libpq words a connection parameter whose value it refuses, wherever
in its message (libpq 18 puts the server it was trying first)."""


def refused_value(said: str) -> bool:
    """Whether ``said``, the first line of a failed connection's error, is
    libpq refusing the value of a connection parameter (an unknown
    ``sslmode``, a port out of range, more ports than hosts): the DSN, or
    the ``PG*`` variable that stands in for it, is at fault, not the
    server or the network, and no retry will help."""
    return _REFUSED_VALUE.search(said) is not None


_PORT = re.compile(r"[ \t\n\v\f\r]*([+-]?)0*([0-9]{1,5})[ \t\n\v\f\r]*")
"""A port as libpq reads one (``strtol``): white space around, a sign."""


def bad_ports(ports: str) -> list[str]:
    """The ports of a ``port`` parameter (a comma-separated list, one per
    host; an empty one is the default) that are not a whole number from 1
    to 65535 as libpq reads one, as written.  psycopg resolves each host
    with its port before libpq reads them, and says only that the
    "servname" is not supported."""
    bad = []
    for port in ports.split(","):
        match = _PORT.fullmatch(port)
        if port and not (match and 1 <= int(match[1] + match[2]) <= 65535):
            bad.append(port)
    return bad


CHOICES: dict[str, tuple[str, tuple[str, ...]]] = {
    "sslmode": (
        "PGSSLMODE",
        ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    ),
    "gssencmode": ("PGGSSENCMODE", ("disable", "prefer", "require")),
    "channel_binding": ("PGCHANNELBINDING", ("disable", "prefer", "require")),
    "target_session_attrs": (
        "PGTARGETSESSIONATTRS",
        ("any", "read-write", "read-only", "primary", "standby", "prefer-standby"),
    ),
    "load_balance_hosts": ("PGLOADBALANCEHOSTS", ("disable", "random")),
    "sslnegotiation": ("PGSSLNEGOTIATION", ("postgres", "direct")),
    "sslcertmode": ("PGSSLCERTMODE", ("disable", "allow", "require")),
}
"""The connection parameters libpq takes one of a few words for (as it
spells them, case and all), each with the ``PG*`` variable that stands in
for it when the DSN does not set it."""


def bad_choice(parameters: Mapping[str, object], environ: Mapping[str, str]) -> str | None:
    """What is wrong with the first of :data:`CHOICES` that ``parameters``
    (the DSN's, as the driver reads them) or ``environ`` standing in for it
    sets to a word libpq refuses, in libpq's words and the ones it takes;
    None when there is none.  Checked before connecting: the driver
    resolves the host names first, and a host that does not resolve would
    hide the DSN's fault behind a failure worth retrying."""
    for name, (variable, words) in CHOICES.items():
        origin = ""
        value = parameters.get(name)
        if value is None:
            value, origin = environ.get(variable), f" (from {variable})"
        if value is not None and value not in words:
            return (
                f"invalid {name} value: {excerpt(str(value))}{origin}; expected one of "
                f"{', '.join(words)}"
            )
    return None


STRAY_AT = (
    "the PostgreSQL DSN is ambiguous: it holds an '@' libpq would not read as the end of a"
    " user and password, and libpq would read a password holding a raw '@' or '/' as the"
    " host, port or database, so whether that '@' is a password's cannot be told;"
    " percent-encode '@' as %40 and '/' as %2F in the password and in query values or the"
    " database name (application_name=me%40laptop), which libpq decodes; expected"
    " postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DBNAME[?schema=NAME]"
)
"""Why a URI with a stray ``@`` is refused: in words that quote none of it.
An ``@`` that ends no user and password may be a password's (libpq would
read what follows it, or the password before a ``/``, as the host, port or
database, and show it as one) or a query value's or the database name's;
written percent-encoded, libpq reads it as the same ``@``."""


def split_schema(dsn: str) -> tuple[str, str | None]:
    """The DSN without its ``schema`` parameter, and that parameter (or None).

    Accepts both libpq forms: a URI with ``?schema=NAME`` and keyword/value
    text with ``schema=NAME``, each read as libpq reads it (a URI's query
    after its user and password, its parameter names percent-decoded; a
    keyword value quoted or escaped).  Only the parameter is taken out, with
    one separator beside it: every other byte of the DSN is left as given,
    for libpq to read as it would have.  Raises InvalidStoreName, in one
    line that does not quote the DSN, when a URI holds an ``@`` libpq would
    not read as the end of its user and password
    (:func:`~roteiro_memory.redaction.stray_at`: a password's unencoded
    ``/`` or ``@`` would be read as the host, the port or the database, and
    shown as one), and when the schema is named twice (as ``--db`` given
    twice is refused, rather than one of the two silently chosen).
    """
    if is_uri(dsn):
        return _split_uri(dsn)
    pairs = [pair for pair in keyword_pairs(dsn) if pair.key == SCHEMA]
    _once([pair.value for pair in pairs])
    if not pairs:
        return dsn, None
    start, end = pairs[0].start, pairs[0].end
    before = len(dsn[:start].rstrip(WHITE))
    if before:
        start = before  # the white space before it goes with it
    else:
        end = len(dsn) - len(dsn[end:].lstrip(WHITE))  # first: the white space after
    return dsn[:start] + dsn[end:], pairs[0].value


def _split_uri(dsn: str) -> tuple[str, str | None]:
    """:func:`split_schema` of a URI."""
    base = dsn.index("://") + 3
    if stray_at(dsn[base:]):
        raise InvalidStoreName(STRAY_AT)
    query = query_start(dsn[base:])
    if query is None:
        return dsn, None
    query += base
    found = []  # (start, end, value) of each schema parameter
    at = query
    for pair in dsn[query:].split("&"):
        name, _, value = pair.partition("=")
        if urllib.parse.unquote(name) == SCHEMA:  # libpq decodes a parameter's name too
            found.append((at, at + len(pair), urllib.parse.unquote(value)))
        at += len(pair) + 1
    _once([value for _, _, value in found])
    if not found:
        return dsn, None
    start, end, schema = found[0]
    if end < len(dsn):
        end += 1  # the "&" after it
    else:
        start -= 1  # as it was the last: the "&" before it, or the "?" of a query of it alone
    return dsn[:start] + dsn[end:], schema


def with_schema(dsn: str, schema: str) -> str:
    """``dsn`` (naming no schema) with ``schema`` as its ``schema`` parameter,
    in the DSN's own form (a URI's query found as libpq finds it)."""
    if is_uri(dsn):
        if query_start(dsn.split("://", 1)[1]) is None:
            return f"{dsn}?{SCHEMA}={schema}"
        return f"{dsn}{'' if dsn.endswith(('?', '&')) else '&'}{SCHEMA}={schema}"
    return f"{dsn} {SCHEMA}={schema}"


def _once(schemas: list[str]) -> None:
    if len(schemas) > 1:
        named = ", ".join(f"schema={excerpt(schema, 70)}" for schema in schemas)
        raise InvalidStoreName(
            f"the PostgreSQL DSN names its schema {len(schemas)} times ({named}); name it once"
        )
