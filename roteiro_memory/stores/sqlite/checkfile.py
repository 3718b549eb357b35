"""``check`` of an SQLite store's file: read-only, never migrated, and a
store an earlier version wrote judged as the next command to open it will
find it.

SQLite's integrity and foreign-key checks run on the file as it is.  The
store's invariants are this version's rules over this version's schema, so
an older store is judged on a private copy, migrated there by the opener
itself (:class:`~.store.SQLiteStore`): the check reports what migrating it
would leave, and never the migrations opening applies as missing, nor the
tables they create.  The copy is SQLite's backup of the store, in a new
folder of the system's temporary folder (``TMPDIR``; the folder ``0700``,
the copy ``0600``), removed once judged: a file, not a database in memory,
since a store of a million records is a gigabyte.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

from roteiro_memory import privatefile
from roteiro_memory.check import Finding, Report
from roteiro_memory.collector import paused
from roteiro_memory.errors import Corrupt, StoreUnavailable
from roteiro_memory.stores.sqlite import readonly
from roteiro_memory.stores.sqlite.check import integrity_findings, judge
from roteiro_memory.stores.sqlite.failures import is_unavailable, unavailable, undecoded
from roteiro_memory.stores.sqlite.identity import CHOOSE_WITH_DB, not_a_file
from roteiro_memory.stores.sqlite.migrations import SQLITE_HEADER
from roteiro_memory.stores.sqlite.transactions import reading

__all__ = ["check_file", "report"]


def check_file(path: str | os.PathLike[str], remedy: str = CHOOSE_WITH_DB) -> list[Finding]:
    """Every problem found in the SQLite store at ``path`` (:func:`report`);
    empty when it is healthy."""
    return report(path, remedy).findings


def report(path: str | os.PathLike[str], remedy: str = CHOOSE_WITH_DB) -> Report:
    """What a check of the SQLite store at ``path`` finds, read-only; for a
    store an earlier version wrote, judged as migrated (the module
    docstring).  What is not a regular file
    (:func:`~roteiro_memory.stores.sqlite.identity.not_a_file`: a FIFO,
    whose open would wait for ever) is one finding, and never opened.  A
    store that cannot be read now (locked, a full disk, an I/O failure) is
    no finding about the store: that raises
    :class:`~roteiro_memory.errors.StoreUnavailable`, as any read would; so
    does a file read as immutable that a writer changed during every one of
    :data:`ATTEMPTS` checks (:func:`~.readonly.witness`): only a check of
    one state of the file is believed.  ``remedy``: what the user can do
    about a path that is no file, on the surface that checks it."""
    refusal = not_a_file(os.fspath(path), remedy)
    if refusal is not None:
        return Report([Finding("store", None, str(refusal))])
    path = Path(path)
    try:
        with path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except OSError as error:
        return Report([Finding("store", None, f"{path} cannot be read ({error.strerror})")])
    if header != SQLITE_HEADER:
        return Report([Finding("store", None, f"{path} is not an SQLite database")])
    for _ in range(ATTEMPTS):
        before = readonly.witness(str(path))
        found, immutable = _checked(path)
        if not immutable or readonly.witness(str(path)) == before:
            return found
    raise StoreUnavailable(
        f"{path}: written to while it was checked, {ATTEMPTS} times over, so what the check "
        "read may mix states; check it again when nothing is writing to it"
    )


ATTEMPTS = 3
"""Checks of a file read as immutable that a writer changed meanwhile (what
was read may mix two states, and look damaged) before the check gives up."""


def _checked(path: Path) -> tuple[Report, bool]:
    """The check of the SQLite file at ``path``, and whether it was read
    without a lock (as immutable, or from a copy), so that only a
    :func:`~.readonly.witness` tells whether a writer changed it meanwhile.

    A store whose log holds writes is read through the log's index
    (``-shm``), which SQLite creates beside it when it is not there: no
    process has the store open then (each would have made one), and the
    store and its log are read from a private copy, so nothing is made
    beside them (a fixture's folder stays as it was; a read-only one can
    still be checked).  A store beside a hot rollback journal
    (:func:`~.readonly.journaled`) holds pages of a write nobody committed,
    which read as immutable would be judged as the store: it is copied with
    its journal, SQLite rolls the journal back on the copy
    (:func:`~.readonly.connect_committed`), and the copy is checked -- the
    store as the next open reads it, the files left as they were, journal
    included, for that open to roll back."""
    real = os.path.realpath(path)
    if readonly.journaled(real):
        with _private_folder(path, readonly.JOURNALED) as folder:
            return _checked_at(lambda: _committed(str(path), folder), path)[0], True
    if os.path.exists(real + "-shm") or not readonly.logged(real):
        return _checked_at(lambda: readonly.connect_as_found(str(path)), path)
    with _private_folder(path, _LOGGED) as folder:
        copy = readonly.private_copy(str(path), folder, "-wal", _LOGGED)
        return _checked_at(lambda: readonly.connect_as_found(copy), path)[0], True


def _committed(path: str, folder: str) -> tuple[sqlite3.Connection, bool]:
    """A connection to a copy of the store at ``path`` rolled back in
    ``folder`` (:func:`~.readonly.connect_committed`), not read as immutable."""
    return readonly.connect_committed(path, folder), False


def _checked_at(
    connect: Callable[[], tuple[sqlite3.Connection, bool]], shown: Path
) -> tuple[Report, bool]:
    """:func:`_checked` reading the file ``connect`` opens
    (:func:`~.readonly.connect_as_found`, or a copy rolled back), the store
    named ``shown``, and whether it was read as immutable."""
    try:
        conn, immutable = connect()
    except sqlite3.Error as error:
        if is_unavailable(error):
            raise unavailable(shown, error) from None
        return Report([Finding("store", None, f"{shown} cannot be opened ({error})")]), False
    try:
        try:
            return _read(conn, shown), immutable
        except UnicodeDecodeError as error:
            raise undecoded(error) from None
    except sqlite3.DatabaseError as error:
        if is_unavailable(error):
            raise unavailable(shown, error) from None
        said = f"{shown} cannot be read as a store ({error})"
        return Report([Finding("store", None, said)]), immutable
    finally:
        conn.close()


def _read(conn: sqlite3.Connection, path: Path) -> Report:
    """The check, in a read transaction that is rolled back: it wrote
    nothing, and after a read SQLite found damaged its commit fails too.  A
    table too damaged to be read is one finding, after what SQLite's
    integrity check found: the rules cannot judge what cannot be read, and
    what the integrity check says of the damage is kept."""
    conn.execute("BEGIN")
    try:
        with paused():  # every row at once, and no cycle among them
            findings = integrity_findings(conn)
            try:
                judged = judge(conn, lambda: _migrated_copy(conn, path))
            except sqlite3.DatabaseError as error:
                if is_unavailable(error):
                    raise
                said = f"cannot be read as a store ({error})"
                return Report([*findings, Finding("store", None, said)])
            return Report(findings + judged.findings, judged.migrates)
    finally:
        if conn.in_transaction:  # SQLite ends it itself on some failures
            conn.execute("ROLLBACK")


@contextlib.contextmanager
def _migrated_copy(conn: sqlite3.Connection, path: Path) -> Iterator[sqlite3.Connection]:
    """A read transaction on a private copy of the store ``conn`` reads,
    migrated by the opener; the copy is removed afterwards.  A migration
    that fails raises :class:`~roteiro_memory.errors.Corrupt` naming the
    store at ``path``, as opening it would."""
    from roteiro_memory.stores.sqlite.store import RUN_CHECK, SQLiteStore

    with _private_folder(path, _MIGRATED) as folder:
        copy = os.path.join(folder, "memory.db")
        try:
            privatefile.create(copy)
            target = sqlite3.connect(copy)
            try:
                conn.backup(target)
            finally:
                target.close()
        except (OSError, sqlite3.Error) as error:
            if isinstance(error, sqlite3.Error) and not is_unavailable(error):
                raise  # the store's own failure, reported as the check's
            raise readonly.no_copy(str(path), folder, error, _MIGRATED) from None
        try:
            store = SQLiteStore(copy)
        except Corrupt as error:
            # Said of the store, and without the advice to check it.
            said = str(error).replace(copy, str(path)).removesuffix(f"; {RUN_CHECK}")
            raise Corrupt(said) from None
        try:
            with reading(store.connection) as migrated:
                yield migrated
        finally:
            store.close()


_MIGRATED = "a store an earlier version wrote is checked as migrated"
"""Why :func:`_migrated_copy` checks a copy."""
_LOGGED = "a store whose write-ahead log no process has open is read with that log"
"""Why :func:`_checked` reads a copy of a store beside its log."""


@contextlib.contextmanager
def _private_folder(path: Path, why: str) -> Iterator[str]:
    """A new private folder for a copy of the store at ``path``
    (:func:`~.readonly.scratch`), removed afterwards."""
    with readonly.scratch(str(path), why, "roteiro-memory-check-") as folder:
        yield folder
