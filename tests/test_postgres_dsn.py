"""A PostgreSQL store named by one string: no message ever carries the DSN's
password, whatever libpq says about it (issue 22, item 3), and a schema
named twice is refused rather than one of the two chosen (item 16).  No
server is needed: each DSN here is refused, or fails to connect."""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roteiro_memory.cli.main import main
from roteiro_memory.errors import InvalidStoreName, StoreUnavailable
from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.stores.postgres.dsn import REDACTED, redact, split_schema

if not os.environ.get("CI"):  # CI installs the [postgres] extra: there, a missing one fails
    pytest.importorskip("psycopg", reason="the [postgres] extra is not installed")

SECRET = "s3cret%PW"
"""Not valid percent-encoding: libpq quotes it back in its refusal."""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_dsn_password_is_never_printed_when_libpq_quotes_it(
    capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    dsn = f"postgresql://team:{SECRET}@127.0.0.1:5432/memory"
    status, out, err = _run(capsys, *(["--json"] if as_json else []), "--db", dsn, "list")
    assert status == ExitCode.USAGE  # a DSN libpq cannot parse is a malformed name
    assert "s3cret" not in out + err
    said = json.loads(out)["error"]["message"] if as_json else err
    assert "the driver's words are not shown: they quote the DSN's password" in said
    assert (out if as_json else err).count("\n") == 1


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://team:s3cret@127.0.0.1:1/memory",
        "postgresql://team@127.0.0.1:1/memory?password=s3cret",
        "host=127.0.0.1 port=1 user=team password=s3cret dbname=memory",
        "host=127.0.0.1 port=1 user=team password='s3 cret' dbname=memory",
    ],
)
def test_dsn_password_is_never_printed_when_the_server_cannot_be_reached(dsn: str) -> None:
    from roteiro_memory.stores.postgres.store import PostgresStore

    with pytest.raises(StoreUnavailable, match="cannot connect") as failed:
        PostgresStore(dsn)
    assert "s3" not in str(failed.value)


@pytest.mark.parametrize("password", ["127", "p", "onnect", "0.0"])
def test_dsn_password_found_in_the_drivers_words_is_not_shown_where_it_stands(
    password: str,
) -> None:
    """A password that happens to be part of what libpq says (``127`` of
    ``127.0.0.1``) is not replaced where it stands, which would show it:
    the driver's words are left out of the message."""
    from roteiro_memory.stores.postgres.store import PostgresStore

    with pytest.raises(StoreUnavailable, match="cannot connect") as failed:
        PostgresStore(f"postgresql://u:{password}@127.0.0.1:1/db")
    said = str(failed.value)
    assert REDACTED not in said
    assert said.endswith(
        "cannot connect (the driver's words are not shown: they quote the DSN's password)"
    )


def test_dsn_drivers_words_without_the_password_are_shown() -> None:
    from roteiro_memory.stores.postgres.store import PostgresStore

    with pytest.raises(StoreUnavailable, match="cannot connect") as failed:
        PostgresStore("postgresql://u:s3cret@127.0.0.1:1/db")
    assert "Connection refused" in str(failed.value)


@pytest.mark.parametrize(
    ("text", "dsn"),
    [
        ('token: "s3cret%PW"', f"postgresql://u:{SECRET}@h/db"),
        ("said s3cret here", "postgresql://u@h/db?sslmode=off&password=s3cret"),
        ("said s3 cret", "postgresql://u:s3%20cret@h/db"),
        ("said s3cret", "host=h password=s3cret"),
        ("said it's", r"host=h password='it\'s'"),
        ("p@ss and ss@h", "postgresql://u:p@ss@h/db"),
    ],
)
def test_dsn_redact_finds_the_password_in_every_form(text: str, dsn: str) -> None:
    redacted = redact(text, dsn)
    assert REDACTED in redacted
    assert not any(secret in redacted for secret in ("s3cret", "s3 cret", "it's", "p@ss"))


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://u@127.0.0.1:1/db?password=s3cret&tail7",
        "postgresql://u@127.0.0.1:1/db?password=s3cret&tail7=x",
        "postgresql://u@127.0.0.1:1/db?password=s3cret&%zztail7",
        "postgresql://u@127.0.0.1:1/db?sslmode=disable&password=s3cret&tail7&connect_timeout=2",
        "host=127.0.0.1 port=1 password=s3cret tail7",
        "host=127.0.0.1 port=1 password=s3cret tail7=x dbname=db",
        "host=127.0.0.1 port=1 password='s3cret' tail7",
    ],
)
def test_a_dsn_password_never_appears_in_a_refusal_when_it_holds_an_unquoted_separator(
    dsn: str,
) -> None:
    """A password holding a white space (keyword/value text) or an ``&`` (a
    URI's query) its writer left unquoted is cut there by libpq, which then
    refuses the rest as a parameter and quotes it: that rest is the
    password's too, and is withheld as the whole of it is."""
    from roteiro_memory.stores.postgres.store import PostgresStore

    with pytest.raises(InvalidStoreName) as refused:
        PostgresStore(dsn)
    said = str(refused.value)
    assert "tail7" not in said
    assert "s3cret" not in said
    assert "the driver's words are not shown: they quote the DSN's password" in said
    shown = redact(f"named {dsn}", dsn)
    assert "tail7" not in shown
    assert "s3cret" not in shown


def test_a_parameter_after_a_password_is_shown_as_written() -> None:
    dsn = "host=h password=s3cret dbname=memory connect_timeout=2"
    assert redact(dsn, dsn) == f"host=h password={REDACTED} dbname=memory connect_timeout=2"
    uri = "postgresql://u@h/db?password=s3cret&sslmode=disable&bogus=1"
    assert redact(uri, uri) == f"postgresql://u@h/db?password={REDACTED}&sslmode=disable&bogus=1"


def test_dsn_redact_leaves_a_message_without_the_password_alone() -> None:
    said = 'invalid URI query parameter: "bogus"'
    assert redact(said, "postgresql://u:s3cret@h/db?bogus=1") == said


def test_dsn_a_backend_quoted_back_is_redacted(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run(
        capsys, "protocol", "--backend", "postgres:postgresql://u:s3cret@h/db", "--db", "x.db"
    )
    assert status == ExitCode.USAGE
    assert "s3cret" not in out + err
    assert "already names the database" in err


@pytest.mark.parametrize(
    "db", ["host=h password=s3cret dbname=db", "Postgres://u:s3cret@h/db", "file:///tmp/x.db"]
)
def test_dsn_a_connection_that_is_no_postgresql_uri_names_no_store_file(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    db: str,
) -> None:
    """The library's store names (``open_store``, the protocol server) take
    ``--db`` as a file unless it is a postgresql:// URI; one that names a
    connection otherwise is refused, password withheld, and no file made."""
    monkeypatch.chdir(tmp_path)
    status, out, err = _run(capsys, "protocol", "--backend", "sqlite", "--db", db)
    assert status == ExitCode.USAGE
    assert "s3cret" not in out + err
    assert "--db names" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "dsn", ["postgresql://h/db?schema=a&schema=b", "host=h dbname=db schema=a schema=b"]
)
def test_dsn_schema_named_twice_is_refused(dsn: str) -> None:
    with pytest.raises(InvalidStoreName, match="names its schema 2 times") as refused:
        split_schema(dsn)
    assert "schema='a', schema='b'" in str(refused.value)


def test_dsn_schema_named_twice_is_refused_by_the_cli(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, _, err = _run(capsys, "--db", "postgresql://127.0.0.1:1/db?schema=a&schema=b", "list")
    assert status == ExitCode.USAGE
    assert "names its schema 2 times" in err
    assert "cannot connect" not in err  # refused before any connection


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://%ff@127.0.0.1/db",
        "postgresql://u:%ff@127.0.0.1/db",
        "postgresql://u@127.0.0.1/d%fe",
        "postgresql://u@127.0.0.1/db?application_name=%ff",
    ],
)
def test_dsn_a_percent_escape_that_is_not_utf8_is_a_malformed_name(
    capsys: pytest.CaptureFixture[str], dsn: str
) -> None:
    status, out, err = _run(capsys, "--json", "--db", dsn, "--no-sync", "list")
    assert status == ExitCode.USAGE
    error = json.loads(out)["error"]
    assert error["kind"] == "BadRequest"
    assert error["message"].startswith(
        "the PostgreSQL DSN is malformed (a value in it is not UTF-8"
    )
    assert err == ""


@pytest.mark.parametrize(
    ("dsn", "said"),
    [
        ("postgresql://u@127.0.0.1:abc/db", "port 'abc' is not a whole number from 1 to 65535"),
        ("postgresql://u@127.0.0.1:99999/db", "port '99999' is not a whole number"),
        ("postgresql://u@127.0.0.1:0/db", "port '0' is not a whole number"),
        ("postgresql://u@h1:5432,h2:x/db", "port 'x' is not a whole number"),
        ("postgresql://u@127.0.0.1:1/db?sslmode=bogus", "invalid sslmode value: 'bogus'"),
        (
            "postgresql://u@127.0.0.1:1/db?target_session_attrs=zz",
            "invalid target_session_attrs value: 'zz'",
        ),
        (
            "postgresql://u@127.0.0.1:1/db?keepalives=x",
            'invalid integer value "x" for connection option "keepalives"',
        ),
        ("postgresql://u@h1,h2/db?port=1,2,3", "could not match 3 port numbers to 2 hosts"),
    ],
)
def test_dsn_a_parameter_value_libpq_refuses_is_a_bad_request(
    capsys: pytest.CaptureFixture[str], dsn: str, said: str
) -> None:
    """A value no connection could use is the DSN's fault: a bad request
    (exit 2) naming it, never "cannot connect" (exit 3, worth retrying)."""
    status, out, err = _run(capsys, "--json", "--db", dsn, "--no-sync", "list")
    assert status == ExitCode.USAGE, out
    error = json.loads(out)["error"]
    assert error["kind"] == "BadRequest"
    assert error["message"].startswith("the PostgreSQL connection parameters are refused (")
    assert said in error["message"]
    assert err == ""


def test_dsn_a_port_from_pgport_is_checked_as_the_dsns_would_be(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PGPORT", "abc")
    status, out, _ = _run(capsys, "--json", "--db", "postgresql://u@127.0.0.1/db", "list")
    assert status == ExitCode.USAGE
    assert "port 'abc' (from PGPORT) is not a whole number" in json.loads(out)["error"]["message"]


def test_dsn_ports_libpq_reads_as_ports_pass_and_the_server_is_tried() -> None:
    """libpq reads a port as ``strtol`` does: white space around it, a sign
    and leading zeros are taken, so they are not refused here."""
    from roteiro_memory.stores.postgres.dsn import bad_ports
    from roteiro_memory.stores.postgres.store import PostgresStore

    assert bad_ports("5432,,1,65535,+1,000001, 7 ") == []
    assert bad_ports("65536,-1,\u0661,1_0,0x10," + "1" * 5000) == [
        "65536",
        "-1",
        "\u0661",
        "1_0",
        "0x10",
        "1" * 5000,
    ]
    for port in ("1", "+1", "000001"):
        with pytest.raises(StoreUnavailable, match="cannot connect"):
            PostgresStore(f"postgresql://u@127.0.0.1:{port}/db?sslmode=disable")


@pytest.mark.parametrize("host", ["127.0.0.1:1", "nowhere.invalid"])
def test_dsn_a_word_libpq_refuses_is_a_bad_request_whether_or_not_the_host_resolves(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, host: str
) -> None:
    """The driver resolves host names before libpq reads the parameters: an
    unknown sslmode was "cannot connect" (exit 3) on a host that does not
    resolve, and a bad request (exit 2) on one that does."""
    dsn = f"postgresql://u@{host}/db"
    status, out, _ = _run(capsys, "--json", "--db", f"{dsn}?sslmode=bogus", "--no-sync", "list")
    assert status == ExitCode.USAGE, out
    message = json.loads(out)["error"]["message"]
    assert "invalid sslmode value: 'bogus'; expected one of disable, allow, prefer" in message
    monkeypatch.setenv("PGGSSENCMODE", "never")
    status, out, _ = _run(capsys, "--json", "--db", dsn, "--no-sync", "list")
    assert status == ExitCode.USAGE, out
    said = "invalid gssencmode value: 'never' (from PGGSSENCMODE)"
    assert said in json.loads(out)["error"]["message"]


def test_dsn_the_words_checked_before_connecting_are_the_ones_libpq_takes() -> None:
    """Against the libpq in use: each word of CHOICES it knows gets past its
    check, and a word not among them is refused by libpq too."""
    import psycopg

    from roteiro_memory.stores.postgres.dsn import CHOICES, bad_choice

    known = {option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults()}
    checked = [name for name in CHOICES if name in known]
    assert "sslmode" in checked
    for name in checked:
        variable, words = CHOICES[name]
        for word in (*words, "bogus"):
            dsn = f"postgresql://u@127.0.0.1:1/db?{name}={word}"
            with pytest.raises(psycopg.Error) as raised:
                psycopg.connect(dsn, connect_timeout=2).close()
            libpq_refuses = f"invalid {name} value" in str(raised.value)
            assert libpq_refuses == (word == "bogus"), (dsn, str(raised.value))
            assert (bad_choice({name: word}, {}) is not None) == libpq_refuses
        assert bad_choice({}, {variable: "bogus"}) is not None


# --- a password libpq would read as something else -------------------------------

MARK = "XsecretQ9"
"""The part of each password below that libpq would read as a host, a port
or a database if it were let through."""


@pytest.mark.parametrize(
    "dsn",
    [
        f"postgresql://alice:/{MARK}@nohost.invalid/postgres",
        f"postgresql://alice:Ab3/{MARK}@nohost.invalid:5432/postgres",
        f"postgresql://alice:p@{MARK}@nohost.invalid/postgres",
        f"postgresql://alice:p@{MARK}@nohost.invalid/postgres?schema=s",
    ],
    ids=["leading-slash", "slash", "at", "at-with-schema"],
)
def test_a_password_holding_a_raw_slash_or_at_is_refused_unquoted(
    capsys: pytest.CaptureFixture[str], dsn: str
) -> None:
    """libpq reads a URI's user and password up to the first ``@`` (none when a
    ``/`` comes first): an unencoded ``/`` or ``@`` in a password made it the
    host, the port or the database, which messages show.  Refused, before
    anything reads it, in words that quote none of it."""
    for argv in (["--json", "--db", dsn, "list"], ["protocol", "--backend", f"postgres:{dsn}"]):
        status, out, err = _run(capsys, *argv)
        assert status == ExitCode.USAGE, out + err
        assert MARK not in out + err
        assert "Ab3" not in out + err
        assert "the PostgreSQL DSN is ambiguous" in out + err
        assert "percent-encode '@' as %40 and '/' as %2F in the password and in query" in out + err


def test_an_at_in_a_query_value_is_refused_as_ambiguous_saying_how_to_write_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """libpq reads ``application_name=me@laptop`` as written, but an ``@``
    after the user info may as well be a password's: the DSN is called
    ambiguous, not malformed, and the message says how to write it, a form
    libpq reads as the same value."""
    from psycopg.conninfo import conninfo_to_dict

    dsn = "postgresql://nohost.invalid/postgres?application_name=me@laptop"
    status, out, err = _run(capsys, "--json", "--db", dsn, "list")
    assert status == ExitCode.USAGE, out + err
    said = json.loads(out)["error"]["message"]
    assert said.startswith("the PostgreSQL DSN is ambiguous: ")
    assert "malformed" not in said
    assert "(application_name=me%40laptop)" in said
    written = dsn.replace("me@laptop", "me%40laptop")
    assert conninfo_to_dict(written) == conninfo_to_dict(dsn)


def test_a_password_percent_encoding_its_slash_and_at_is_read_whole() -> None:
    from roteiro_memory.stores.postgres.store import PostgresStore

    with pytest.raises(StoreUnavailable, match="cannot connect") as failed:
        PostgresStore(f"postgresql://alice:Ab3%2F{MARK}%40x@127.0.0.1:1/postgres")
    said = str(failed.value)
    assert MARK not in said
    assert "Ab3" not in said
    assert "host=127.0.0.1 port=1 dbname=postgres user=alice" in said


@pytest.mark.parametrize(
    "dsn",
    [
        r"host=127.0.0.1 password=Xsec\ retQ9 dbname=postgres",
        r"host=127.0.0.1 password='Xsec\' retQ9' dbname=postgres",
        "host=127.0.0.1 password = 'Xsec retQ9' dbname=postgres",
    ],
)
def test_a_keyword_password_is_withheld_as_libpq_reads_it(
    capsys: pytest.CaptureFixture[str], dsn: str
) -> None:
    """libpq reads a backslash in an unquoted value as escaping the next
    character, a space included: the whole value is the password."""
    status, out, err = _run(capsys, "--json", "--db", dsn, "list")
    assert status == ExitCode.USAGE
    assert "retQ9" not in out + err
    assert f"{REDACTED} dbname=postgres" in json.loads(out)["error"]["message"]


def test_the_stores_description_never_shows_the_password() -> None:
    """A password that is also the user's (or the database's) name is not
    shown as that either."""
    from roteiro_memory.stores.postgres.store import PostgresStore

    with pytest.raises(StoreUnavailable, match="cannot connect") as failed:
        PostgresStore(f"postgresql://{MARK}:{MARK}@127.0.0.1:1/{MARK}")
    assert MARK not in str(failed.value)
    assert f"dbname={REDACTED} user={REDACTED}" in str(failed.value)


@pytest.mark.parametrize(
    ("dsn", "shown"),
    [
        ("postgres:postgresql://alice:p@h/db", f"postgres:postgresql://alice:{REDACTED}@h/db"),
        (
            "postgresql://u:s@h/db?sslmode=disable",
            f"postgresql://u:{REDACTED}@h/db?sslmode=disable",
        ),
        ("host=h password=o dbname=postgres", f"host=h password={REDACTED} dbname=postgres"),
        (f"postgresql://alice:p@{MARK}@h/db", f"postgresql://alice:{REDACTED}@h/db"),
        (f"postgresql://alice:Ab3/{MARK}@h/db", f"postgresql://alice:{REDACTED}@h/db"),
        (
            "postgresql://u@h/db?a=1&pass%77ord=s3cret",
            f"postgresql://u@h/db?a=1&pass%77ord={REDACTED}",
        ),
        ("postgresql://u:a?b#c@h/db", f"postgresql://u:{REDACTED}@h/db"),
    ],
)
def test_a_dsn_is_shown_with_its_password_withheld_where_it_stands(dsn: str, shown: str) -> None:
    """Only the password is replaced: a short one is not looked for in the
    rest of the DSN (``p`` of ``postgres``), where its replacement would
    show it, and a password libpq would misread is withheld whole."""
    assert redact(dsn, dsn) == shown
    assert redact(f"backend {dsn!s}: said", dsn) == f"backend {shown}: said"


_VALUE_CHARS = st.text(alphabet="ab1 '\\=@/?#:&%\t", min_size=1, max_size=8)


def _keyword_value(value: str, quoted: bool) -> str:
    """``value`` written as libpq reads it back: in quotes, or escaped."""
    if quoted:
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return re.sub(r"([\\' \t])", r"\\\1", value)


@settings(max_examples=300, deadline=None)
@given(
    password=_VALUE_CHARS,
    others=st.lists(st.tuples(st.sampled_from(["user", "dbname", "options"]), _VALUE_CHARS)),
    quoting=st.lists(st.booleans(), min_size=5, max_size=5),
)
def test_a_keyword_dsn_is_shown_as_libpq_reads_it_but_its_password(
    password: str, others: list[tuple[str, str]], quoting: list[bool]
) -> None:
    from psycopg.conninfo import conninfo_to_dict

    pairs = [("host", "h"), *others[:3], ("password", password)]
    dsn = " ".join(
        f"{key}={_keyword_value(value, quoted)}"
        for (key, value), quoted in zip(pairs, quoting, strict=False)
    )
    read = conninfo_to_dict(dsn)
    assert read["password"] == password
    assert conninfo_to_dict(redact(dsn, dsn)) == {**read, "password": REDACTED}


@settings(max_examples=300, deadline=None)
@given(
    user=st.text(alphabet="ab1%:", min_size=1, max_size=6),
    password=st.text(alphabet="ab1?#:&=[]", min_size=1, max_size=8)
    | st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=8).map(
        lambda text: urllib.parse.quote(text, safe="")
    ),
    query=st.sampled_from(["", "?sslmode=disable", "?application_name=x%20y&port=5"]),
)
def test_a_uri_dsn_is_shown_as_libpq_reads_it_but_its_password(
    user: str, password: str, query: str
) -> None:
    from psycopg.conninfo import conninfo_to_dict

    dsn = f"postgresql://{urllib.parse.quote(user, safe='')}:{password}@h:1/db{query}"
    read = conninfo_to_dict(dsn)
    assert conninfo_to_dict(redact(dsn, dsn)) == {**read, "password": REDACTED}


# --- taking the schema out --------------------------------------------------------


@pytest.mark.parametrize(
    ("dsn", "rest", "schema"),
    [
        ("postgresql:///postgres?schema=rt3", "postgresql:///postgres", "rt3"),
        (
            "postgresql://h/db?options=-c%20statement_timeout%3D5000&schema=rt3",
            "postgresql://h/db?options=-c%20statement_timeout%3D5000",
            "rt3",
        ),
        (
            "postgresql://h/db?schema=rt3&application_name=a+b&sslmode=disable",
            "postgresql://h/db?application_name=a+b&sslmode=disable",
            "rt3",
        ),
        ("postgresql://h/db?a=1&schema=rt3&b=%41", "postgresql://h/db?a=1&b=%41", "rt3"),
        ("postgresql://h/db?sch%65ma=r%74", "postgresql://h/db", "rt"),
        ("postgresql://u:p?w#d@h/db?schema=rt3", "postgresql://u:p?w#d@h/db", "rt3"),
        ("postgresql://u:p?schema=x@h/db", "postgresql://u:p?schema=x@h/db", None),
        ("options='-c schema=x' schema = 'rt3' dbname=d", "options='-c schema=x' dbname=d", "rt3"),
        (r"schema=rt\3 host=/tmp", "host=/tmp", "rt3"),
    ],
)
def test_a_dsn_keeps_every_byte_but_its_schema_parameter(
    dsn: str, rest: str, schema: str | None
) -> None:
    """The schema parameter is taken out as libpq would find it (a URI's
    query after its password, a parameter's name percent-decoded, a keyword
    value quoted or escaped), and nothing else changes: an empty host stays
    empty, a percent-encoded space stays encoded."""
    assert split_schema(dsn) == (rest, schema)


_QUERY_VALUE = st.text(alphabet="ab+=/:", max_size=4) | st.sampled_from(["%20", "%2B", "%41", ""])


@settings(max_examples=300, deadline=None)
@given(
    head=st.sampled_from(
        ["postgresql:///db", "postgresql://u@h/db", "postgresql://u:a?b#c@h:1/db", "postgres://h"]
    ),
    pairs=st.lists(
        st.tuples(st.sampled_from(["sslmode", "options", "application_name"]), _QUERY_VALUE),
        max_size=3,
    ),
    place=st.integers(min_value=0, max_value=3),
)
def test_taking_the_schema_out_leaves_the_rest_of_the_dsn_as_written(
    head: str, pairs: list[tuple[str, str]], place: int
) -> None:
    from roteiro_memory.stores.postgres.dsn import with_schema

    written = [f"{name}={value}" for name, value in pairs]
    rest = head + ("?" + "&".join(written) if written else "")
    written.insert(min(place, len(written)), "schema=s_1")
    assert split_schema(f"{head}?{'&'.join(written)}") == (rest, "s_1")
    assert split_schema(with_schema(rest, "s_2")) == (rest, "s_2")


@pytest.mark.parametrize("wait", [0, -5, 2**31, True, 1.5, "100"], ids=repr)
def test_a_lock_timeout_is_a_whole_number_of_milliseconds_from_one(wait: object) -> None:
    """PostgreSQL reads a lock_timeout of 0 as no timeout at all, and a
    negative one failed with the driver's own error; refused before any
    connection is tried."""
    from roteiro_memory.errors import BadRequest
    from roteiro_memory.stores.postgres.store import PostgresStore

    with pytest.raises(BadRequest, match=r"^invalid lock_timeout_ms "):
        PostgresStore("postgresql://nobody@/nowhere", lock_timeout_ms=wait)  # type: ignore[arg-type]
