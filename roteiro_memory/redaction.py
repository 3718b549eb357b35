"""How a connection string's password is kept out of every message.

A PostgreSQL DSN -- a ``postgresql://`` URI or libpq keyword/value text --
may carry a password, and a DSN is shown in many places: an error naming a
store, a store's description of itself, the conformance suite's backend
spec, its terminal summary and its reports.  Each shows it through
:func:`redact` (every password the DSNs carry shown as :data:`REDACTED`)
or :func:`mask` (one text's own passwords), and quotes what a library said
about one through :func:`driver_words` (left out when it holds a password).

A DSN is read where libpq reads it (:func:`userinfo_end`, :func:`query_start`
and :func:`keyword_pairs` follow libpq's parser, quoting and escapes
included) and, for a URI, as widely as a person may have meant it too: a
password holding an unencoded ``/`` or ``@`` runs to the last ``@``,
whatever libpq makes of it (:func:`stray_at` says when the two differ);
a password parameter's value runs on over the words after it that set no
parameter libpq takes (an unquoted white space or ``&`` in it: libpq cuts
the password there, and quotes the rest as a parameter it refuses).
A word of a command line setting a variable named for a password
(``PGPASSWORD=VALUE``) is read as one too: all of ``VALUE``.

Kept apart from the stores and importing none, so that the conformance
suite, which names no store, shows its backend specs through it too.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ANY_URI",
    "REDACTED",
    "Pair",
    "driver_words",
    "keyword_pairs",
    "mask",
    "query_start",
    "redact",
    "stray_at",
    "userinfo_end",
]

REDACTED = "<password>"
"""What a password is shown as."""

ANY_URI = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)+//")
"""How any URI begins: a scheme (``jdbc:postgresql``, two; ``postgres:`` of
a ``postgres:DSN`` spec before ``postgresql``), then ``//``."""

WHITE = " \t\n\v\f\r"
"""White space as libpq reads a DSN (``isspace`` in the C locale)."""

_PASSWORD_NAMES = ("password", "sslpassword")
_PASSWORD_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?<=PASSWORD)", re.IGNORECASE)
"""An environment variable's name for a password (``PGPASSWORD``, libpq's;
``DB_PASSWORD``): a ``cmd:`` command line may set one (``env
PGPASSWORD=... my-store``), and its value is withheld as a DSN's is."""
_PASSWORD_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*(?<=PASSWORD))=(.*)", re.I | re.S)
"""A word setting such a variable."""
_QUERY_PASSWORD = re.compile(r"[?&;](?:ssl)?password=([^&;\s]*)", re.IGNORECASE)
"""A password parameter of a URI's query, in text that is no URI."""
_PARAMETERS = frozenset(
    {
        "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth",
        "channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
        "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "replication", "sslmode", "sslnegotiation",
        "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode", "sslrootcert",
        "sslcrl", "sslcrldir", "sslsni", "requirepeer", "ssl_min_protocol_version",
        "ssl_max_protocol_version", "min_protocol_version", "max_protocol_version",
        "gssencmode", "krbsrvname", "gsslib", "gssdelegation", "service",
        "target_session_attrs", "load_balance_hosts", "requiressl", "schema",
    }
)  # fmt: skip
"""The connection parameters libpq takes (and the store's ``schema``): a
word after a password that names none of them (``password=abc def``,
``?password=abc&def``) is no parameter of its own, but the rest of a
password holding a white space or an ``&`` its writer did not quote or
percent-encode, which libpq refuses and quotes (``missing "=" after
"def"``)."""
_QUERY_PAIR = re.compile(r"(?=[?&]([^&=]*)=([^&]*))")
"""Every ``?KEY=VALUE`` or ``&KEY=VALUE`` of a URI, wherever it stands: the
parameters of the query libpq reads (:func:`query_start`), and any a
``?`` in a password seems to begin."""


# --- reading a DSN as libpq does ----------------------------------------------


def userinfo_end(rest: str) -> int:
    """Where the user and password of a URI end, in ``rest`` (what follows
    its ``//``), as libpq reads them: just past the first ``@`` when no
    ``/`` comes before it; 0 when the URI names no user."""
    for at, char in enumerate(rest):
        if char == "@":
            return at + 1
        if char == "/":
            return 0
    return 0


def query_start(rest: str) -> int | None:
    """Where the query of a URI begins in ``rest`` (just past its ``?``), as
    libpq reads it: at the first ``?`` after the user and password (one
    in a password is the password's); None when there is no query."""
    at = rest.find("?", userinfo_end(rest))
    return None if at < 0 else at + 1


def stray_at(rest: str) -> bool:
    """Whether ``rest`` (what follows a URI's ``//``) holds an ``@`` that
    does not end its user and password as libpq reads them: a password's
    unencoded ``@`` (libpq reads what follows the first as the host) or
    ``/`` (libpq reads no user at all, and the password as a port or the
    database), or one of the host's, path's or query's."""
    return "@" in rest[userinfo_end(rest) :]


@dataclass(frozen=True)
class Pair:
    """One ``keyword=value`` of keyword/value text, where it stands."""

    key: str
    start: int
    """Where the keyword begins."""
    value_start: int
    """Where the value begins, at its opening quote if it has one."""
    end: int
    """Just past the value (past its closing quote)."""
    value: str
    """The value as libpq reads it: quotes and backslash escapes undone."""


def keyword_pairs(text: str) -> list[Pair]:
    """The pairs of libpq keyword/value ``text``, read as libpq reads them:
    white space around ``=``; a value in single quotes, or else up to white
    space; a backslash taking the next character as it is, in either.
    Where libpq refuses the text this reads on: a word without ``=`` is
    passed over, and a quote never closed runs to the end."""
    pairs = []
    at, size = 0, len(text)
    while at < size:
        if text[at] in WHITE:
            at += 1
            continue
        start = at
        while at < size and text[at] not in WHITE and text[at] != "=":
            at += 1
        key = text[start:at]
        after = at
        while after < size and text[after] in WHITE:
            after += 1
        if after == size or text[after] != "=":
            continue  # a word libpq refuses ("missing "=" after ...")
        at = after + 1
        while at < size and text[at] in WHITE:
            at += 1
        value_start, value = at, []
        quoted = at < size and text[at] == "'"
        at += quoted
        while at < size:
            char = text[at]
            if (char == "'") if quoted else (char in WHITE):
                at += quoted
                break
            if char == "\\":
                at += 1
                if at == size:
                    break
                char = text[at]
            value.append(char)
            at += 1
        pairs.append(Pair(key, start, value_start, at, "".join(value)))
    return pairs


# --- where the passwords are ----------------------------------------------------


@dataclass(frozen=True)
class _Found:
    """A password of a text, where it stands, and how else it may be written."""

    start: int
    end: int
    forms: tuple[str, ...]


def _uri_passwords(text: str, base: int) -> list[_Found]:
    """The passwords of the URI whose ``//`` ends at ``base``: its user
    info's as libpq reads it and as widely as it may be meant (from the
    first ``:`` to the last ``@``: the two differ only where :func:`stray_at`),
    and its ``password`` parameters'."""
    rest = text[base:]
    spans = []
    end = userinfo_end(rest)
    colon = rest.find(":", 0, max(end - 1, 0))
    if end and colon >= 0:
        spans.append((colon + 1, end - 1))
    last_at, colon = rest.rfind("@"), rest.find(":")
    if 0 <= colon < last_at:
        spans.append((colon + 1, last_at))
    found = []
    for match in _QUERY_PAIR.finditer(rest):  # libpq's query's among them
        if _is_password_name(urllib.parse.unquote(match[1])):
            spans.append((match.start(2), match.end(2)))
            found += _query_rest(rest, base, match.end(2))
    for start, stop in spans:
        written = rest[start:stop]
        decoded = urllib.parse.unquote(written)
        forms = (written, decoded, urllib.parse.quote_plus(decoded))
        found.append(_Found(base + start, base + stop, forms))
    return found


def _query_rest(rest: str, base: int, end: int) -> list[_Found]:
    """The rest of a query's password whose value ends at ``end`` in
    ``rest``: the ``&`` pieces after it up to the first that sets a
    parameter libpq takes (:data:`_PARAMETERS`), each a form of it as
    written and percent-decoded, and its key and value too, which libpq
    quotes apart (``invalid URI query parameter: "KEY"``)."""
    stop = end
    while stop < len(rest) and rest[stop] == "&":
        piece_end = rest.find("&", stop + 1)
        piece_end = len(rest) if piece_end < 0 else piece_end
        key = rest[stop + 1 : piece_end].partition("=")[0]
        if "=" in rest[stop + 1 : piece_end] and urllib.parse.unquote(key) in _PARAMETERS:
            break
        stop = piece_end
    return _rest_found(base + end, base + stop, rest[end:stop], "&")


def _rest_found(start: int, stop: int, written: str, separators: str) -> list[_Found]:
    """The rest of a password, ``written`` from ``start`` to ``stop``, split
    into words at ``separators``: each word, its key and value when it
    holds an ``=``, as written and percent-decoded, are forms of it."""
    forms = set()
    for word in re.split(f"[{re.escape(separators)}]+", written):
        for part in (word, *word.partition("=")[::2]):
            forms |= {part, urllib.parse.unquote(part)}
    forms.discard("")
    return [_Found(start, stop, tuple(sorted(forms)))] if forms else []


def _keyword_passwords(text: str) -> list[_Found]:
    """The passwords of keyword/value text (or of text that is neither it nor
    a URI, read as if it were): each ``password`` value, as written and as
    libpq reads it; a value that is a URI (``--db=postgresql://...``), that
    URI's; and any URI query's ``password`` parameter."""
    found = []
    pairs = keyword_pairs(text)
    for index, pair in enumerate(pairs):
        written = text[pair.value_start : pair.end]
        if _is_password_name(pair.key):
            inner = written[1:].removesuffix("'") if written.startswith("'") else written
            found.append(_Found(pair.value_start, pair.end, (written, inner, pair.value)))
            if pair.key in _PASSWORD_NAMES:  # libpq's: not a command line's variable
                found += _keyword_rest(text, pair.end, pairs[index + 1 :])
            continue
        uri = ANY_URI.match(text, pair.value_start + written.startswith("'"), pair.end)
        if uri is not None:
            found += _uri_passwords(text[: pair.end], uri.end())
    for match in _QUERY_PASSWORD.finditer(text):
        written = match[1]
        found.append(_Found(match.start(1), match.end(1), (written, urllib.parse.unquote(written))))
    return found


def _keyword_rest(text: str, end: int, after: list[Pair]) -> list[_Found]:
    """The rest of a keyword/value password whose value ends at ``end``:
    the words after it up to the first pair setting a parameter libpq
    takes (:data:`_PARAMETERS`), read as :func:`_rest_found` reads them."""
    stop = next((pair.start for pair in after if pair.key in _PARAMETERS), len(text))
    written = text[end:stop].rstrip(WHITE)
    return _rest_found(end, end + len(written), written, WHITE)


def _passwords(text: str) -> list[_Found]:
    """Every password ``text`` may carry, as a DSN of either form, or as an
    environment assignment of a command line's (``PGPASSWORD=VALUE``, one
    word: all of ``VALUE``)."""
    assignment = _PASSWORD_ASSIGNMENT.fullmatch(text)
    if assignment is not None and assignment[1].lower() not in _PASSWORD_NAMES:
        return [_Found(assignment.start(2), len(text), (assignment[2],))]
    lead = len(text) - len(text.lstrip(WHITE))
    uri = ANY_URI.match(text, lead)
    return _uri_passwords(text, uri.end()) if uri is not None else _keyword_passwords(text)


def _is_password_name(name: str) -> bool:
    """Whether ``name`` names a password: libpq's keywords, or an environment
    variable's name ending in ``PASSWORD``."""
    bare = name.strip(WHITE)
    return bare.lower() in _PASSWORD_NAMES or _PASSWORD_VARIABLE.fullmatch(bare) is not None


# --- showing a text without them ------------------------------------------------


def mask(text: str) -> str:
    """``text`` (a DSN, a ``postgres:DSN`` spec, a ``--db=DSN`` word) with
    each password it carries shown as :data:`REDACTED` where it stands;
    the rest of it as it is."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted((found.start, found.end) for found in _passwords(text)):
        if start == end:
            continue  # an empty password: nothing to withhold
        if merged and start <= merged[-1][1]:  # two readings of one password
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    shown, at = [], 0
    for start, end in merged:
        shown += [text[at:start], REDACTED]
        at = end
    return "".join([*shown, text[at:]])


def redact(text: str, *dsns: str) -> str:
    """``text`` with every password any of ``dsns`` carries shown as
    :data:`REDACTED`: each of the DSNs, wherever ``text`` holds it, as
    :func:`mask` shows it; and elsewhere (the words a library or the
    store's description made of a DSN) each password -- as written,
    percent-decoded, as a query parameter encodes it, or as libpq reads a
    quoted value -- where it stands as a whole (``user=PASSWORD``), never
    inside a longer word or value: a password ``p`` leaves ``postgres``
    alone, and ``127`` leaves ``127.0.0.1``, which replaced would show it."""
    pieces: list[tuple[str, bool]] = [(text, False)]
    for dsn in sorted({dsn for dsn in dsns if dsn}, key=len, reverse=True):
        shown = mask(dsn)
        if shown == dsn:
            continue  # no password of its own (a command line's: its words have)
        cut: list[tuple[str, bool]] = []
        for piece, done in pieces:
            if done:
                cut.append((piece, done))
                continue
            for index, part in enumerate(piece.split(dsn)):
                if index:
                    cut.append((shown, True))
                cut.append((part, False))
        pieces = cut
    secrets = _secrets(dsns)
    if not secrets:
        return "".join(piece for piece, _ in pieces)
    whole = re.compile("|".join(_standing_alone(secret) for secret in secrets))
    return "".join(piece if done else whole.sub(REDACTED, piece) for piece, done in pieces)


_APART = r"\s'\"`=,;()\[\]<>:@/?&"
"""What may stand next to a password standing as a whole in a text: white
space, a quote, ``=``, punctuation between words, and what separates the
parts of a URI."""


def _standing_alone(secret: str) -> str:
    """A pattern for ``secret`` standing as a whole: at either end of the
    text or next to one of :data:`_APART`, not inside a longer word or
    value (``127`` of ``127.0.0.1``)."""
    return rf"(?<![^{_APART}]){re.escape(secret)}(?![^{_APART}])"


def _secrets(dsns: Iterable[str]) -> list[str]:
    """Every password ``dsns`` carry, in every form, longest first."""
    secrets = {form for dsn in dsns for found in _passwords(dsn) for form in found.forms}
    return sorted(secrets - {""}, key=len, reverse=True)


def driver_words(text: str, *dsns: str) -> str:
    """What a library said about ``dsns`` (libpq, psycopg), to quote in a
    message: ``text`` as it is, or, when it holds any password they carry
    anywhere (libpq quotes the pieces of a DSN it cannot parse), a sentence
    saying it was withheld.  Not :func:`redact`: free text is no DSN, and a
    password replaced where it stands would still show itself (``127`` in
    ``127.0.0.1``)."""
    for secret in _secrets(dsns):
        if secret in text:
            return "the driver's words are not shown: they quote the DSN's password"
    return text
