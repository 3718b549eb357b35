"""The embedded store on SQLite: the SQL store (:mod:`roteiro_memory.stores.sql`)
on one file, WAL, foreign keys on.

What is SQLite's own is here: opening the file (refusing what is not ours
before anything is written), migrating it, and the transactions.  Writes
take the write lock up front (``BEGIN IMMEDIATE``) and wait for it, so many
processes sharing a clone's store queue rather than fail, and the one write
lock orders every write: none of the per-row locks a shared engine takes is
needed.  Reads run in one transaction so their several queries see one state.
A store whose folder or file cannot be written is opened to be read only
(:mod:`.readonly`), as of its last commit even beside a hot rollback
journal (read from a private copy rolled back), and a write commits only
while the store's path still names the file it opened (:mod:`.identity`); a
file removed or replaced while the store opens it is opened again.
"""

from __future__ import annotations

import builtins
import os
import sqlite3

from roteiro_memory import arguments
from roteiro_memory import semantics as sem
from roteiro_memory.errors import (
    Corrupt,
    RoteiroError,
    StoreUnavailable,
)
from roteiro_memory.standing import Standing, standing
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql.dialects import SQLITE
from roteiro_memory.stores.sql.store import SQLStore
from roteiro_memory.stores.sqlite import IN_MEMORY, readonly
from roteiro_memory.stores.sqlite.failures import is_unavailable, unavailable, undecoded
from roteiro_memory.stores.sqlite.identity import FileIdentity, not_a_file
from roteiro_memory.stores.sqlite.migrations import (
    APPLICATION_ID,
    BUILDS,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_HEADER,
    STEPS,
    recognised,
    stored_standing,
)
from roteiro_memory.stores.sqlite.sharing import Exclusion
from roteiro_memory.stores.sqlite.transactions import (
    BUSY_TIMEOUT_ENV,
    BUSY_TIMEOUT_MS,
    Transaction,
    atomic,
    busy,
    enter_wal,
    lock_wait_ms,
    reading,
)
from roteiro_memory.stores.sqlite.uri import file_uri, store_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    import tempfile
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from roteiro_memory.check import Finding
    from roteiro_memory.transfer import Export

__all__ = ["BUSY_TIMEOUT_ENV", "BUSY_TIMEOUT_MS", "IN_MEMORY", "SQLITE_HEADER", "SQLiteStore"]


RUN_CHECK = "run `roteiro-memory check` on it"
"""What a store refused as damaged is told to do: the check names what is wrong."""


CACHE_KIB = 64 * 1024
"""The page cache of a store's connection, at most (SQLite's default is 2 MiB).
A million records are a gigabyte, and a write merging the recent records
into the index touches thousands of its pages: with the default cache each
is read again from the file, and a write costs twice what it does in a small
store (``bench/search.py``, "add latency").  Pages are cached only as they
are read, so a small store's connection stays small."""


OPEN_ATTEMPTS = 5
"""How many times a store looks again for its file when it was removed or
replaced while the store opened it, before refusing to open."""


class _Replaced(Exception):
    """The file went, or another took its name, while the store opened it:
    nothing was done through the connection, which is closed; open again."""


def _went(identity: FileIdentity | None) -> bool:
    """Whether the path no longer names the file a store was opening (one in
    memory has none, so never)."""
    return identity is not None and not identity.holds()


def _existing(path: str) -> bool:
    """Whether a file is at ``path`` already (through a symlink, at its
    target); what is not a regular file (:func:`not_a_file`), or a file that
    is not an SQLite database, is refused without being touched."""
    refusal = not_a_file(path)
    if refusal is not None:
        raise refusal
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return False
    except OSError as error:
        raise StoreUnavailable(f"{path}: cannot be read ({error.strerror})") from None
    if header and header != SQLITE_HEADER:
        raise Corrupt(f"{path}: not a roteiro-memory store (not an SQLite database)")
    return True


class SQLiteStore(SQLStore):
    """The two-tier store in one SQLite file (or, named :data:`IN_MEMORY`,
    in memory)."""

    name = "sqlite"
    dialect = SQLITE
    ID_TABLE = ("sqlite_sequence", "name, seq", "name")
    _conn: sqlite3.Connection

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int | None = None) -> None:
        self.file = store_file(path)
        """The store's file, as given."""
        self._busy_ms = (
            lock_wait_ms()
            if busy_timeout_ms is None
            else arguments.wait_ms(busy_timeout_ms, "busy_timeout_ms", minimum=0)
        )
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.migrated: tuple[int, int, builtins.list[str]] | None = None
        """Set when opening migrated an existing store: the schema version it
        was at, the one it is at now, and the names of the migrations applied."""
        self.read_only: str | None = None
        """Why nothing can be written to the store (its folder or file is
        read-only), when it was opened to be read only; None otherwise."""
        self._identity: FileIdentity | None = None
        self._exclusion = Exclusion()
        self._commits = 0
        self._others = 0
        self._conn = self._open()

    @classmethod
    def temporary(cls) -> SQLiteStore:
        """A store in a new temporary folder, which :meth:`close` removes."""
        import tempfile

        scratch = tempfile.TemporaryDirectory(prefix="roteiro-memory-")
        store = cls(os.path.join(scratch.name, "memory.db"))
        store._scratch = scratch
        return store

    @property
    def path(self) -> Path:
        """The store's file."""
        from pathlib import Path

        return Path(self.file)

    # --- connection and schema -------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """A connection to the file the path names: opened again, up to
        :data:`OPEN_ATTEMPTS` times, when the file is removed or replaced
        while it opens (:mod:`.identity`)."""
        for _ in range(OPEN_ATTEMPTS):
            try:
                return self._open_once()
            except _Replaced:
                continue
        raise StoreUnavailable(
            f"{self.file}: cannot be opened: the file was removed or replaced each of the "
            f"{OPEN_ATTEMPTS} times it was opened (other processes making and removing it); "
            "nothing was written; try again"
        )

    def _companions_are_files(self) -> None:
        """Refuse a store whose journal, log or log index is no regular file
        (:func:`~.readonly.companion_refusal`).  A path that cannot be made
        absolute (its folder removed under a relative one) is left to
        :meth:`_made_file`, which says so."""
        try:
            real = os.path.realpath(self.file)
        except OSError:
            return
        for suffix in readonly.COMPANIONS:
            odd = readonly.companion_refusal(self.file, real, suffix)
            if odd is not None:
                raise odd

    def _open_once(self) -> sqlite3.Connection:
        in_memory = self.file == IN_MEMORY
        if not in_memory:  # first: nothing is made for a store that cannot be opened
            self._companions_are_files()
        identity = None if in_memory else self._made_file()
        read_only = None if in_memory else readonly.reason(self.file)
        try:
            if read_only is None:
                # mode=rw: the file is made private (:meth:`_made_file`), never by SQLite.
                name = self.file if in_memory else file_uri(self.file, "mode=rw")
                conn = sqlite3.connect(
                    name, timeout=self._busy_ms / 1000, isolation_level=None, uri=True
                )
            else:
                conn = readonly.connect(self.file)
        except sqlite3.Error as error:
            if _went(identity):
                raise _Replaced from None
            raise StoreUnavailable(f"{self.file}: cannot be opened ({error})") from None
        guard = None if identity is None else identity.check
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            conn.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            # Read without the write lock: a store that needs nothing opens
            # beside a writer, and one that is not ours is refused unwritten.
            with reading(conn):
                pending = self._standing(conn).pending
            if _went(identity):  # before anything is written
                raise _Replaced
            if read_only is not None:
                if pending:
                    raise readonly.unmigratable(self.file, read_only, SCHEMA_VERSION)
            else:
                conn.execute("PRAGMA foreign_keys = ON")
                enter_wal(conn, self._busy_ms)
                conn.execute("PRAGMA synchronous = NORMAL")
                if pending:
                    self._migrate(conn, guard)
            # Again now the connection holds its read lock (WAL), which keeps
            # the file from being removed by a process that made it (discard).
            if _went(identity):
                raise _Replaced
        except Exception as error:
            refusal = self._refusal(conn, error, read_only)  # asks the connection: before closing
            conn.close()
            if _went(identity):
                raise _Replaced from None  # whatever failed read a file that went
            if refusal is None:
                raise
            raise refusal from None
        except BaseException:
            conn.close()
            raise
        self.read_only = read_only
        self._identity = identity
        # What other connections have committed, as of now: a commit of one
        # moves it on, this connection's own do not (:meth:`discard`).
        self._others = conn.execute("PRAGMA data_version").fetchone()[0]
        return conn

    def _made_file(self) -> FileIdentity:
        """The file at the store's path, made (private) when nothing is
        there, as it is before SQLite opens it."""
        if not _existing(self.file):
            from roteiro_memory import privatefile

            try:
                privatefile.create(self.file)
            except OSError as error:
                raise StoreUnavailable(
                    f"{self.file}: cannot create the store ({error.strerror})"
                ) from None
        try:
            return FileIdentity(self.file, self.file)
        except FileNotFoundError:  # removed since: look again
            raise _Replaced from None
        except OSError as error:
            raise StoreUnavailable(f"{self.file}: cannot be opened ({error.strerror})") from None

    def _refusal(
        self, conn: sqlite3.Connection, error: Exception, read_only: str | None
    ) -> RoteiroError | None:
        """What opening raises for SQLite's ``error``; None for one raised as it is."""
        if isinstance(error, sqlite3.OperationalError):
            return (
                busy(conn, error)
                or readonly.unreadable(self.file, read_only, error)
                or self._unusable(error)
            )
        if isinstance(error, sqlite3.DatabaseError):
            return self._unusable(error)
        if isinstance(error, UnicodeDecodeError):
            return self._unusable(undecoded(error))
        return None

    def _unusable(self, error: sqlite3.Error) -> RoteiroError:
        """Why opening failed: the disk (full, an I/O failure) is no damage
        of the store's, and says so."""
        if is_unavailable(error):
            return unavailable(self.file, error)
        return self._damaged(str(error))

    def _damaged(self, why: str) -> Corrupt:
        return Corrupt(f"{self.file}: not a usable roteiro-memory store ({why}); {RUN_CHECK}")

    def _standing(self, conn: sqlite3.Connection) -> Standing:
        """Where the store stands (:func:`~.migrations.stored_standing`),
        having checked it is ours: it carries :data:`APPLICATION_ID`, or is
        empty, or has exactly the schema an earlier version (which stamped
        no id) left.  Anything else, a migrations table no version writes,
        or a schema a newer version wrote, is refused before anything is
        written.

        A store that records exactly this version's migrations opens on
        that alone.  Any other reading is believed only once SQLite's quick
        check passes the table: a damaged page reads as rows no version
        wrote, which must be reported as damage, never as a newer schema.
        Only a store to migrate or refuse pays for the check."""
        why = recognised(conn)
        if why is not None:
            raise Corrupt(
                f"{self.file}: an SQLite database but not a roteiro-memory store {why}; "
                "refusing to change it: choose the path of a store, or a new one, with --db"
            )
        found = stored_standing(conn)
        if found is None:
            return standing((), MIGRATIONS)
        if found.current:
            return found
        for (line,) in conn.execute("PRAGMA quick_check(schema_migrations)").fetchall():
            if line != "ok":
                raise self._damaged(f"schema_migrations: {line}")
        if found.damage is not None:
            raise self._damaged(f"schema_migrations {found.damage}")
        if found.newer:
            self._refuse_newer(found.newer[-1], SCHEMA_VERSION)
        return found

    def _migrate(self, conn: sqlite3.Connection, guard: Callable[[], None] | None) -> None:
        with atomic(conn, guard):
            found = self._standing(conn)  # again under the lock: another may have migrated
            if not found.pending:
                return
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                " applied_at TEXT NOT NULL DEFAULT (datetime('now')))"
            )
            self._apply(conn, found.pending, BUILDS, STEPS)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        if found.version:
            self.migrated = (found.version, SCHEMA_VERSION, [name for _, name, _ in found.pending])

    # --- transactions and ids ----------------------------------------------

    def _write_transaction(self) -> Transaction:
        """One write transaction, holding the write lock from its start
        (:func:`~roteiro_memory.stores.sqlite.transactions.atomic`), refused
        on a read-only store, and committed only while the store's path
        still names the file it was opened on (:mod:`.identity`)."""
        if self.read_only is not None:
            raise readonly.unwritable(self.file, self.read_only)
        guard = None if self._identity is None else self._identity.check
        return atomic(self._conn, guard, self._committed)

    def _committed(self, rows: int) -> None:
        # A write that changed nothing (a cache miss) is none, nor is a
        # block that only read (its rows are those of TEMP tables).
        if rows and not self._only_read():
            self._commits += 1

    @property
    def changes(self) -> int:
        return self._commits

    def _read_transaction(self) -> Transaction:
        return reading(self._conn)

    def _reserve_ids(self, conn: sqlite3.Connection, count: int) -> int:
        # AUTOINCREMENT would hand out one past the larger of the sequence and
        # the largest id; the write lock is ours, so the batch takes the ids
        # after it, and writing them moves the sequence on.
        base: int = cols.stored(
            "sqlite_sequence",
            "agent_memory",
            "seq",
            conn.execute(
                "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence"
                " WHERE name = 'agent_memory'), 0),"
                " COALESCE((SELECT MAX(id) FROM agent_memory), 0))"
            ).fetchone()[0],
            int,
        )
        if base > sem.INT64_MAX - count:
            raise Corrupt(
                f"agent_memory: the id sequence is at {base}, so {count} more ids would "
                f"pass the largest 64-bit id {sem.INT64_MAX}; this store can take no more "
                "records: record into a new store"
            )
        return base

    def _reset_ids(self, conn: sqlite3.Connection) -> None:
        conn.execute("DELETE FROM sqlite_sequence WHERE name = 'agent_memory'")

    # --- integrity and transfer -------------------------------------------

    def _check(self, conn: sqlite3.Connection) -> builtins.list[Finding]:
        from roteiro_memory.stores.sqlite import check

        return check.check_connection(conn)

    def _export(self, conn: sqlite3.Connection) -> Iterator[str]:
        from roteiro_memory.stores.sqlite import transfer

        return transfer.export_lines(conn)

    def _import(self, conn: sqlite3.Connection, parsed: Export) -> dict[str, int]:
        from roteiro_memory.stores.sqlite import transfer

        return transfer.import_export(conn, parsed)

    # --- the file ---------------------------------------------------------

    def describe(self) -> str:
        return self.file

    def reopen(self) -> None:
        if self._closed:
            raise self._closed_error()
        # Open the new connection before closing the old: a refused reopen (the
        # file replaced or upgraded meanwhile) leaves the store as it was.
        conn = self._open()
        self._conn.close()
        self._conn = conn

    def discard(self, remove: Callable[[], None]) -> bool:
        """Run ``remove``, which deletes the store's files, only while the
        store is as this connection left it: its path still names the file
        opened, no other connection has committed to it since, and it holds
        no record and no cache entry -- so a store made for a request that
        wrote nothing goes, and one another process wrote to meanwhile stays.
        Looked at and removed under the write lock: a write waiting for it
        then finds the file gone and is refused (:mod:`.identity`), never
        acknowledged.  A store another process has open (has read: it may
        write next) is kept too, and one that begins to read it meanwhile
        waits until it is removed, then opens the path afresh (:mod:`.sharing`).
        Whether ``remove`` ran; a store whose lock another process holds (not
        waited for), or that cannot be looked at, is kept."""
        conn = self._conn
        conn.execute("PRAGMA busy_timeout = 0")  # a writer there now keeps it: no wait
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error:
            return False  # another holds the lock, so it is writing to it
        finally:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
        try:
            if self._identity is not None:
                self._identity.check()
            others = conn.execute("PRAGMA data_version").fetchone()[0]
            held = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM agent_memory) OR EXISTS (SELECT 1 FROM agent_cache)"
            ).fetchone()[0]
            if others != self._others or held:
                return False
            if self._identity is not None and not self._exclusion.take(self._identity):
                return False
            try:
                remove()
            except BaseException:
                self._exclusion.give_back()
                raise
            return True
        except (sqlite3.Error, StoreUnavailable):
            return False  # kept: what cannot be looked at may hold others' writes
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")

    def close(self) -> None:
        self._closed = True
        self._conn.close()
        self._exclusion.close()  # after the connection: it drops this process's locks
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None
