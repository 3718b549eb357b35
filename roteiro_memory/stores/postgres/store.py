"""The shared store on PostgreSQL: the SQL store (:mod:`roteiro_memory.stores.sql`)
in one schema of a database.

Where one clone's SQLite file is outgrown -- several agents and people sharing
what was learned, across machines -- the store lives in a schema of a
PostgreSQL database.  It needs the optional driver::

    pip install 'roteiro-memory[postgres]'

and psycopg is imported only when a PostgreSQL store is opened.

Naming a store.  ``PostgresStore(dsn, schema="roteiro")`` keeps every table in
the schema ``schema`` (created on first open), so several stores, and parallel
test runs, share one database without meeting.  Where a store is named by one
string (``--db``, ``postgres:DSN``), the schema rides in the DSN as a
``schema`` parameter, which is taken out before the DSN reaches libpq:
``postgresql://host/db?schema=team_a`` or ``host=... dbname=db schema=team_a``.

Concurrency.  Every write is one read-committed transaction (whatever
isolation the session defaults to), whose locks are taken by its first
statements.  Record writes, ``forget`` and ``reset`` take
the row lock of the id counter first, so they run one at a time, check
supersessions against what is committed, and commit ids in increasing order.
A block run :meth:`~PostgresStore.atomically` (a use case's check and the
write it decides) is one such transaction that takes the counter's row lock
before its first read, so no other record write comes between the two, and
readers go on.  Every cache-tier write takes the clock row's lock first, so two accesses never
share a tick and a sweep, which also locks the cache table, sees no entry come
or go while it decides.  Reads run in one read-only repeatable-read
transaction, so their several queries see one state; a read of one statement
runs outside any, since a statement sees one state anyway.

Durability.  A commit is answered once the server has flushed it: a session
whose server, role or database is set to ``synchronous_commit = off`` is set
back to ``on`` when it connects (any other setting is kept), so a crash of the
server never loses a write the store acknowledged.

Text is stored as UTF-8 ``bytea`` (see :mod:`roteiro_memory.stores.postgres.migrations`
for why); the dialect (:data:`~roteiro_memory.stores.sql.dialects.POSTGRES`)
binds and reads it.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from roteiro_memory import arguments
from roteiro_memory import semantics as sem
from roteiro_memory.errors import (
    Absent,
    Corrupt,
    InvalidStoreName,
    LoginRefused,
    ServerUnreachable,
    StoreBusy,
    StoreUnavailable,
    excerpt,
)
from roteiro_memory.standing import standing
from roteiro_memory.stores.postgres import failures, link, passfile
from roteiro_memory.stores.postgres.dsn import (
    BAD_CONNECTION,
    bad_choice,
    bad_ports,
    driver_words,
    redact,
    refused_value,
    split_schema,
)
from roteiro_memory.stores.postgres.migrations import BUILDS, MIGRATIONS, SCHEMA_VERSION, STEPS
from roteiro_memory.stores.sql.dialects import POSTGRES
from roteiro_memory.stores.sql.store import SQLStore

if TYPE_CHECKING:
    from typing import TypeAlias

    import psycopg

    from roteiro_memory.check import Finding, Report
    from roteiro_memory.standing import Standing
    from roteiro_memory.transfer import Export

    Connection: TypeAlias = psycopg.Connection[tuple[Any, ...]]

__all__ = ["DEFAULT_SCHEMA", "INSTALL_HINT", "PostgresStore", "split_schema"]


DEFAULT_SCHEMA = "roteiro"
"""The schema a store lives in when its name carries none."""

INSTALL_HINT = "pip install 'roteiro-memory[postgres]'"

_SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_LOCK_NAMESPACE = "roteiro-memory:"
THROWAWAY_PREFIX = "roteiro_conformance_"
"""How the name of a schema made by :meth:`PostgresStore.throwaway` begins."""


def _check_schema_name(schema: str) -> str:
    if not _SCHEMA_NAME.fullmatch(schema):
        raise InvalidStoreName(
            f"invalid PostgreSQL schema name {excerpt(schema)}: expected a letter or underscore "
            "followed by letters, digits or underscores, at most 63 characters"
        )
    return schema


class PostgresStore(SQLStore):
    """The two-tier store in one schema of a PostgreSQL database."""

    name = "postgres"
    dialect = POSTGRES
    ID_TABLE = ("agent_memory_ids", "id, last_id", "id")

    def __init__(
        self,
        dsn: str,
        schema: str | None = None,
        *,
        create: bool = True,
        lock_timeout_ms: int | None = None,
        migrate: bool = True,
        connect_timeout_s: int | None = None,
    ) -> None:
        """The store in ``schema`` (else the DSN's ``?schema=``, else
        :data:`DEFAULT_SCHEMA`), made there when there is none unless
        ``create`` is false: :class:`~roteiro_memory.errors.Absent` then.
        Not ``migrate``: connected to only, neither made nor migrated, for
        :meth:`report`, which writes nothing.
        ``lock_timeout_ms``: how long, from 1 ms, a statement waits for a
        lock another session holds before it fails,
        :class:`~roteiro_memory.errors.StoreBusy` (else as the server is
        set, by default for ever).  ``connect_timeout_s``: how long, in
        seconds, connecting may take where neither the DSN nor
        ``PGCONNECT_TIMEOUT`` says (else libpq's default, for ever)."""
        stripped, named = split_schema(dsn)
        if schema is not None and named is not None and schema != named:
            raise InvalidStoreName(
                f"the DSN names schema {named!r} but schema {schema!r} was also given; name it once"
            )
        self.dsn = stripped
        chosen = schema if schema is not None else named
        if chosen == "":
            raise InvalidStoreName(
                "the PostgreSQL schema parameter is empty (schema=): name a schema, e.g. "
                f"?schema={DEFAULT_SCHEMA}, or leave the parameter out for {DEFAULT_SCHEMA!r}"
            )
        self.schema = _check_schema_name(chosen or DEFAULT_SCHEMA)
        self._throwaway = False
        self._given = dsn  # what messages are redacted against, with self.dsn
        self._commits = 0
        self.migrated: tuple[int, int, list[str]] | None = None
        """Set when opening migrated an existing store: the schema version it
        was at, the one it is at now, and the names of the migrations applied."""
        self._create = create and migrate
        self._migrates = migrate
        self._lock_timeout_ms = (
            None
            if lock_timeout_ms is None
            else arguments.wait_ms(lock_timeout_ms, "lock_timeout_ms", minimum=1)
        )
        self._connect_timeout_s = connect_timeout_s
        self._link = self._open()

    @classmethod
    def throwaway(cls, dsn: str) -> PostgresStore:
        """A store in a schema made for it, which :meth:`close` drops: what a
        run of the conformance suite on a DSN naming no schema works in, so
        it never resets the schema a team's ``--db DSN`` uses."""
        import os
        import secrets

        store = cls(dsn, schema=f"{THROWAWAY_PREFIX}{os.getpid()}_{secrets.token_hex(4)}")
        store._throwaway = True
        return store

    # --- connection and schema -------------------------------------------

    def describe(self) -> str:
        """Where the store lives, as libpq reads the DSN, without any password:
        what it shows goes through :func:`~roteiro_memory.redaction.redact`."""
        import psycopg.conninfo

        try:
            info = psycopg.conninfo.conninfo_to_dict(self.dsn)
        except (psycopg.ProgrammingError, UnicodeDecodeError):
            return f"PostgreSQL schema {self.schema!r}"
        where = " ".join(
            f"{name}={info[name]}" for name in ("host", "port", "dbname", "user") if name in info
        )
        return self._shown(f"PostgreSQL {where or 'default connection'} schema {self.schema!r}")

    def _shown(self, text: str) -> str:
        """``text``, about this store's DSN, with its passwords withheld."""
        return redact(text, self.dsn, self._given)

    @property
    def _conn(self) -> Connection:
        """The connection, replaced first when it was lost (:mod:`.link`);
        while the server is down that fails, and the next call tries again.
        The store must still be there: one dropped meanwhile is not made
        anew (:meth:`_absent`)."""
        if link.stale(self._link):
            fresh = self._open(again=True)
            self._link.close()
            self._link = fresh
        return self._link

    def _open(self, *, again: bool = False) -> Connection:
        try:
            import psycopg
        except ImportError:
            raise StoreUnavailable(
                "the PostgreSQL backend needs the psycopg driver, which is not installed; "
                f"install it with: {INSTALL_HINT}"
            ) from None
        link.quiet_driver()
        parameters = self._check_values()
        unread = None
        if parameters is not None:
            unread = passfile.unread(parameters, os.environ, libpq=psycopg.pq.version())
        instead = None if unread is None else passfile.NOWHERE  # None: as the DSN says
        wait = self._connect_wait(parameters)
        try:
            # UTF-8 whatever the DSN, PGCLIENTENCODING or the database's encoding
            # say: under SQL_ASCII the driver reads text as bytes, and names
            # read so matched none (a store taken for a schema of strangers).
            conn = psycopg.connect(
                self.dsn, autocommit=True, passfile=instead, client_encoding="UTF8", **wait
            )
        except UnicodeDecodeError:  # the driver reads each value as UTF-8
            raise _malformed(
                "a value in it is not UTF-8 once its percent-escapes are decoded"
            ) from None
        except psycopg.Error as error:
            said = _first_line(error)
            said = said.removeprefix(BAD_CONNECTION)
            refused, login = refused_value(said), failures.login_refused(error, said)
            said = driver_words(said, self.dsn, self._given)
            if refused:
                raise _refused(said) from None
            if isinstance(error, psycopg.ProgrammingError):  # libpq cannot parse the DSN
                raise _malformed(said) from None
            note = "" if unread is None else f"; {unread.note()}"
            if login is not None:
                raise LoginRefused(login(said, self._shown) + note) from None
            raise ServerUnreachable(f"{self.describe()}: cannot connect ({said}){note}") from None
        try:
            link.settle(conn, self._ident(), self._lock_timeout_ms)
            if self._migrates:
                self._migrate(conn, again=again)
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect_wait(self, parameters: dict[str, Any] | None) -> dict[str, Any]:
        """The ``connect_timeout`` to connect with: this store's, unless the
        DSN (``parameters``, None when unparsed) or the environment names one."""
        given = self._connect_timeout_s
        if given is None or parameters is None or "connect_timeout" in parameters:
            return {}
        return {} if os.environ.get("PGCONNECT_TIMEOUT") else {"connect_timeout": given}

    def _check_values(self) -> dict[str, Any] | None:
        """The DSN's parameters, as the driver reads them, having refused,
        before connecting, a port that is no port and a word libpq does not
        take (``sslmode=bogus``): the DSN's, or the ``PG*`` variable's
        standing in for it (see
        :func:`~roteiro_memory.stores.postgres.dsn.bad_ports` and
        :func:`~roteiro_memory.stores.postgres.dsn.bad_choice`), so that the
        DSN's fault is a bad request whether or not its host resolves.  A
        DSN the driver cannot parse is left for the connection to refuse
        (None).  Where libpq would ignore the password file with a warning
        on stderr, :meth:`_open` names none (:mod:`.passfile`)."""
        import psycopg.conninfo

        try:
            parameters = psycopg.conninfo.conninfo_to_dict(self.dsn)
        except (psycopg.ProgrammingError, UnicodeDecodeError):
            return None
        wrong = bad_choice(parameters, os.environ)
        if wrong is not None:
            raise _refused(driver_words(wrong, self.dsn, self._given))
        ports = parameters.get("port")
        origin = ""
        if ports is None:
            ports, origin = os.environ.get("PGPORT"), " (from PGPORT)"
        bad = bad_ports(str(ports)) if ports is not None else []
        if bad:
            said = f"port {excerpt(bad[0])}{origin} is not a whole number from 1 to 65535"
            raise _refused(self._shown(said))
        return parameters

    def _ident(self) -> str:
        # The name matched _SCHEMA_NAME; quoting keeps its case as written.
        return '"' + self.schema + '"'

    def _migrate(self, conn: Connection, *, again: bool = False) -> None:
        """Create or upgrade the schema, one opener at a time.

        The advisory lock is per schema name, so concurrent first opens of one
        store wait for each other and opens of different stores do not.  Only
        what is missing is created, so opening an up-to-date store needs no
        right to create anything: a shared server's users can be given just
        the use of the schema and its tables.
        """
        with _transaction(conn):
            conn.execute(
                "SELECT pg_advisory_xact_lock(hashtext(%s))", (_LOCK_NAMESPACE + self.schema,)
            )
            schema, found = self._standing(conn)
            if found is None:
                self._absent(again=again)
                if not schema:
                    conn.execute(f"CREATE SCHEMA {self._ident()}")
                conn.execute(
                    "CREATE TABLE schema_migrations ("
                    " version integer PRIMARY KEY, name text NOT NULL,"
                    " applied_at timestamptz NOT NULL DEFAULT now())"
                )
                found = standing([], MIGRATIONS)
            if found.damage is not None:
                raise Corrupt(
                    f"{self.describe()}: not a usable roteiro-memory store (schema_migrations "
                    f"{found.damage}); run `roteiro-memory check` on it"
                )
            if found.newer:
                self._refuse_newer(found.newer[-1], SCHEMA_VERSION)
            self._apply(conn, found.pending, BUILDS, STEPS)
        if found.version and found.pending:
            self.migrated = (
                found.version,
                SCHEMA_VERSION,
                [name for _, name, _ in found.pending],
            )

    def _standing(self, conn: Connection) -> tuple[bool, Standing | None]:
        """Whether the schema is there, and where the store in it stands
        (None when it holds none yet); refused when the role may not use the
        schema, or when it holds tables but no store."""
        exists = conn.execute(
            "SELECT has_schema_privilege(oid, 'USAGE') FROM pg_namespace WHERE nspname = %s",
            (self.schema,),
        ).fetchone()
        if exists is None:
            return False, None
        if not exists[0]:
            raise StoreUnavailable(
                f"{self.describe()}: the role may not use the schema; nothing was changed, "
                "grant it USAGE on the schema (and rights on its tables), or connect as "
                "one that has them"
            )
        # Every table, whatever the role may do with it (information_schema
        # shows only those it has rights on).
        tables = {
            row[0]
            for row in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (self.schema,)
            )
        }
        if tables and "schema_migrations" not in tables:
            raise Corrupt(
                f"{self.describe()}: the schema holds tables but is not a roteiro-memory "
                "store (it has no schema_migrations table); refusing to change it"
            )
        if "schema_migrations" not in tables:
            return True, None
        rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version")
        return True, standing(rows.fetchall(), MIGRATIONS)

    def _absent(self, *, again: bool = False) -> None:
        """Refuse to make the store, when it was opened only if it is there,
        or ``again``: connecting again to the store this one opened, which
        was dropped since -- an empty one made there would give ids the agent
        was told of to other records."""
        if again:
            raise StoreUnavailable(
                f"{self.describe()}: the store this process opened is no longer there (its "
                "schema was dropped, or emptied of it); nothing was written; restart this "
                "command (or server) to make a new one there"
            )
        if not self._create:
            raise Absent(f"no store in {self.describe()}")

    # --- transactions, locks and ids ---------------------------------------

    @contextlib.contextmanager
    def _waited(self) -> Iterator[None]:
        """A lock another session held past the lock timeout: the store is
        busy (:class:`StoreBusy`), as an SQLite store past its busy timeout,
        so a caller that can do without the write (a hook's sync) does."""
        import psycopg.errors

        try:
            yield
        except psycopg.errors.LockNotAvailable as error:
            waited = self._lock_timeout_ms
            how_long = f"{waited} ms" if waited is not None else "the server's lock_timeout"
            cause = f"{self.describe()}: busy: another session held a lock past {how_long}"
            busy = StoreBusy(f"{cause}; nothing was changed, try again once it is done")
            busy.waited = waited or 0
            busy.cause = cause
            raise busy from error

    @contextlib.contextmanager
    def _write_transaction(self) -> Iterator[Connection]:
        """One read-committed write transaction; its locks are taken by the
        operation's first statement, so it sees what committed before."""
        conn = self._conn
        with self._waited(), _transaction(conn):
            yield conn
        if not self._only_read():
            self._commits += 1

    @property
    def changes(self) -> int:
        return self._commits

    @contextlib.contextmanager
    def _read_transaction(self) -> Iterator[Connection]:
        """One read-only transaction on one snapshot."""
        conn = self._conn
        with (
            self._waited(),
            _transaction(conn, _SNAPSHOT, writes=False),
        ):
            yield conn

    @contextlib.contextmanager
    def _one_statement(self) -> Iterator[Connection]:
        # One statement outside a transaction block sees one state.
        conn = self._conn
        with self._waited(), _guarded(conn):
            yield conn

    def _reserve_ids(self, conn: Connection, count: int) -> int:
        # Reserving the ids takes the counter's row lock, which orders record
        # writers: the next one waits here until this one commits, so ids
        # commit in increasing order.  A refusal later rolls the reservation
        # back with everything else.
        row = conn.execute(
            "UPDATE agent_memory_ids SET last_id = last_id + %(n)s"
            " WHERE id = 0 AND last_id <= %(room)s RETURNING last_id - %(n)s",
            {"n": count, "room": sem.INT64_MAX - count},
        ).fetchone()
        if row is not None:
            return int(row[0])
        counter = conn.execute("SELECT last_id FROM agent_memory_ids WHERE id = 0").fetchone()
        if counter is None:
            raise Corrupt(f"{self.describe()}: the id counter row is missing")
        raise Corrupt(
            f"{self.describe()}: agent_memory: the id counter is at {counter[0]}, so "
            f"{count} more ids would pass the largest 64-bit id {sem.INT64_MAX}; "
            "this store can take no more records: record into a new store"
        )

    def _reset_ids(self, conn: Connection) -> None:
        conn.execute("UPDATE agent_memory_ids SET last_id = 0")

    def _lock_records(self, conn: Connection) -> None:
        # Taken like a record write, so a supersession never interleaves.
        conn.execute("SELECT last_id FROM agent_memory_ids WHERE id = 0 FOR UPDATE")

    def _lock_clock(self, conn: Connection) -> None:
        conn.execute("SELECT generation FROM agent_cache_clock WHERE id = 0 FOR UPDATE")

    def _lock_cache(self, conn: Connection) -> None:
        # The clock row first, as every cache write takes it, then the table,
        # so no put or get can slip in while the sweep decides.
        self._lock_clock(conn)
        conn.execute("LOCK TABLE agent_cache IN SHARE ROW EXCLUSIVE MODE")

    # --- integrity and transfer ------------------------------------------

    def _check(self, conn: Connection) -> builtins.list[Finding]:
        from roteiro_memory.stores.postgres import check

        return check.check_connection(conn)

    def report(self) -> Report:
        """What a check of the store finds, writing nothing (it is opened
        without ``migrate``): a store at this version's schema is checked in
        one read-only snapshot.  One an earlier version wrote is judged as
        the next command to open it finds it, as SQLite's check judges a
        migrated copy: PostgreSQL's DDL is transactional, so it is migrated
        in a transaction that is always rolled back, holding the lock
        openers migrate under, and checked there; a migration that fails is
        one finding.  :class:`~roteiro_memory.errors.Absent` where there is
        no store."""
        from roteiro_memory.check import Report

        conn = self._conn
        with self._waited(), _transaction(conn, _SNAPSHOT, writes=False, kept=False):
            found = self._found(conn)
            if not found.older:
                return Report(self._check(conn))
        key = (_LOCK_NAMESPACE + self.schema,)
        with self._waited(), _guarded(conn):
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", key)
            try:
                with _transaction(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ", kept=False):
                    found = self._found(conn)  # an opener may have migrated it since
                    return self._migrated_report(conn, found)
            finally:
                if not (conn.closed or conn.broken):  # else the server let the lock go
                    conn.execute("SELECT pg_advisory_unlock(hashtext(%s))", key)

    def _found(self, conn: Connection) -> Standing:
        """Where the store stands, for :meth:`report`: Absent where there is none."""
        found = self._standing(conn)[1]
        if found is None:
            raise Absent(f"no store in {self.describe()}")
        return found

    def _migrated_report(self, conn: Connection, found: Standing) -> Report:
        """:meth:`report` inside its transaction: the store migrated there,
        when it is older, then checked."""
        import psycopg

        from roteiro_memory.check import Report, migration_fails

        if not found.older:
            return Report(self._check(conn))
        try:
            self._apply(conn, found.pending, BUILDS, STEPS)
        except psycopg.OperationalError:
            raise  # the server's: unavailable, or busy (:meth:`_waited`)
        except psycopg.Error as error:
            mapped = self.failure(error)
            if isinstance(mapped, StoreUnavailable):
                # The role's or the session's (it may not migrate, or takes no
                # writes), not the store's: as opening would find.
                raise mapped from error
            return Report([migration_fails(found, SCHEMA_VERSION, _first_line(error))])
        return Report(self._check(conn), (found.version, SCHEMA_VERSION))

    def _export(self, conn: Connection) -> Iterator[str]:
        from roteiro_memory.stores.postgres import transfer

        return transfer.export_lines(conn)

    def _import(self, conn: Connection, parsed: Export) -> dict[str, int]:
        from roteiro_memory.stores.postgres import transfer

        return transfer.import_export(conn, parsed)

    # --- the schema --------------------------------------------------------

    def drop(self) -> None:
        """Remove this store's schema and everything in it, then close."""
        self._conn.execute(f"DROP SCHEMA IF EXISTS {self._ident()} CASCADE")
        self._link.close()

    def reopen(self) -> None:
        if self._closed:
            raise self._closed_error()
        self._link.close()
        self._link = self._open()

    def close(self) -> None:
        """Close the connection; a :meth:`throwaway` store's schema is dropped first."""
        if self._closed:
            return
        self._closed = True
        if self._throwaway:
            if self._held is not None and not link.stale(self._link):
                # Closed inside a block: its transaction ends unwritten, and
                # the drop is a statement of its own, not undone with it.
                self._link.execute("ROLLBACK")
            self.drop()
        else:
            self._link.close()

    @property
    def connection(self) -> Connection:
        """The underlying connection, for maintenance and tests (as it is:
        one the server has ended is replaced by the next call, not here)."""
        return self._link


def _refused(said: str) -> InvalidStoreName:
    """A connection parameter whose value no connection could use, ``said``
    saying which: the DSN's, or a ``PG*`` variable's standing in for it."""
    return InvalidStoreName(
        f"the PostgreSQL connection parameters are refused ({said}); correct the DSN, or the"
        " PG* environment variable that sets the parameter"
    )


def _malformed(said: str) -> InvalidStoreName:
    """A DSN the driver cannot read, ``said`` saying why."""
    return InvalidStoreName(
        f"the PostgreSQL DSN is malformed ({said}); expected "
        "postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DBNAME[?schema=NAME]"
    )


_WRITE = "BEGIN ISOLATION LEVEL READ COMMITTED"
"""How a write's transaction begins: read committed, whatever the session's
default (``default_transaction_isolation``, which a server, role or database
may set to ``serializable``): the id counter's row lock orders record
writers, and the next one, once it has the lock, sees what the last
committed; under a stricter level it failed instead (``could not serialize
access due to concurrent update``)."""


@contextlib.contextmanager
def _transaction(
    conn: Connection, begin: str = _WRITE, *, writes: bool = True, kept: bool = True
) -> Iterator[None]:
    """Run the body in one transaction: committed if it returns, rolled back
    if it (or the commit) raises; not ``kept``, rolled back however it ends,
    whatever it wrote undone.  The rollback runs only while the server
    still holds a transaction for it, and a rollback that fails anyway never
    replaces the error that caused it; a lost connection is reported as
    :class:`StoreUnavailable`, the original as its cause -- lost while a
    ``writes`` transaction's commit was on its way, as a write that may or
    may not have been stored (:func:`.link.commit_unknown`)."""
    with _guarded(conn):
        conn.execute(begin)
        try:
            yield
        except BaseException as error:
            _rollback(conn, error)
            raise
        if not kept:
            _rollback(conn, None)
            return
        try:
            conn.execute("COMMIT")
        except BaseException as error:
            if conn.broken and writes:
                raise link.commit_unknown(error) from error
            _rollback(conn, error)
            raise


_SNAPSHOT = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
"""How a read's transaction begins: one snapshot, no write."""


def _rollback(conn: Connection, cause: BaseException | None) -> None:
    import psycopg.pq

    if conn.closed or conn.broken:
        return  # the server ended the transaction with the connection
    if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        return  # no transaction is open: nothing to roll back
    try:
        conn.execute("ROLLBACK")
    except psycopg.Error as failed:
        if cause is None:
            raise
        cause.add_note(f"(and the rollback that followed failed too: {failed})")


def _first_line(error: BaseException) -> str:
    """The first line of the driver's message (its DETAIL and HINT follow),
    or the error's repr when it says nothing."""
    said = str(error).strip()
    return said.splitlines()[0] if said else repr(error)


@contextlib.contextmanager
def _guarded(conn: Connection) -> Iterator[None]:
    """Report a lost connection as :class:`StoreUnavailable`, so a caller
    (the protocol server, say) sees one of this package's errors; the
    driver's error is kept as its cause."""
    import psycopg

    try:
        yield
    except psycopg.OperationalError as error:
        if conn.broken or conn.closed:
            raise link.lost(error) from error
        raise
