"""Reading a store where nothing may be written: a read-only folder or
filesystem, or a file its owner made read-only.

SQLite reads a WAL-mode database through its shared-memory index (``-shm``),
which it creates beside the file when it is not there, and a read-only open
still creates the log and the index, and leaves them.  So a store with no
log beside it (nothing is being written) is read as immutable, which needs
neither; one with a log is read through it, which needs the index there or
creatable -- when it is neither, the log cannot be read and the store is
not read without it, since the log may hold committed writes.

A store beside a hot rollback journal (:func:`journaled`: a writer died
mid-transaction) holds pages nobody committed, which read as immutable
would be read as the store; SQLite rolls the journal back only by writing
to the store, which may not be written.  So the store and its journal are
copied to a private folder and SQLite rolls the copy back
(:func:`connect_committed`): the store is read as of its last commit,
and its files are left as they were, the journal for the next open where
they can be written to roll back.  That costs a copy of the store, once
per open, only while a journal is there.

Read as immutable, the file takes no lock, so a writer that starts meanwhile
(its log, then its checkpoint into the file) may change pages under the
read.  A reader that must see one state of the file (``check``) takes a
:func:`witness` of it before and after, and believes what it read only when
the two are equal.
"""

from __future__ import annotations

import os
import sqlite3
import stat

from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.stores.sqlite.uri import file_uri

TYPE_CHECKING = False
if TYPE_CHECKING:
    import tempfile

__all__ = [
    "COMPANIONS",
    "JOURNALED",
    "Committed",
    "Witness",
    "companion_refusal",
    "connect",
    "connect_as_found",
    "connect_committed",
    "journaled",
    "logged",
    "no_copy",
    "private_copy",
    "reason",
    "scratch",
    "unmigratable",
    "unreadable",
    "unwritable",
    "witness",
]


def reason(path: str) -> str | None:
    """Why nothing can be written to the store at ``path`` (an existing
    file), or None when it can be: its folder is read-only (SQLite must
    create its log beside it) or the file is."""
    real = os.path.realpath(path)
    if not os.access(os.path.dirname(real) or ".", os.W_OK):
        return "its folder is read-only"
    if not os.access(real, os.W_OK):
        return "the file is read-only"
    return None


def connect(path: str) -> sqlite3.Connection:
    """A connection that reads the database at ``path`` as of its last
    commit and can write nothing, creating nothing beside it when no log is
    there (see the module docstring).  Beside a hot rollback journal, it
    reads a private copy rolled back (:func:`connect_committed`), whose
    folder closing it removes; StoreUnavailable when no copy can be made.
    SQLite opens the file when it is first read, so a failure to open it is
    raised by the first statement."""
    if not journaled(os.path.realpath(path)):
        return connect_as_found(path)[0]
    copies = scratch(path, JOURNALED)
    try:
        conn = connect_committed(path, copies.name)
    except BaseException:
        copies.cleanup()
        raise
    conn.copies = copies
    return conn


class Committed(sqlite3.Connection):
    """A connection to a private copy of a store rolled back as of its last
    commit (:func:`connect_committed`); closing it removes ``copies``, the
    folder holding the copy, when it is set."""

    copies: tempfile.TemporaryDirectory[str] | None = None

    def close(self) -> None:
        super().close()
        if self.copies is not None:
            self.copies.cleanup()
            self.copies = None


def connect_committed(path: str, folder: str) -> Committed:
    """A connection reading the database at ``path`` as of its last commit
    though a hot rollback journal is beside it (:func:`journaled`): the
    database and the journal are copied into the private ``folder``
    (:func:`private_copy`), and the copy opened to be written, so that
    SQLite rolls the journal back on it as it first reads it -- the one way
    a journal is rolled back, SQLite's own.  Then it writes nothing
    (``query_only``), as a read-only connection would.  The files at
    ``path`` are only read."""
    copy = private_copy(path, folder, "-journal", JOURNALED)
    conn = sqlite3.connect(copy, isolation_level=None, factory=Committed)
    try:
        conn.execute("PRAGMA query_only = ON")  # reads nothing: the first read rolls back
    except BaseException:
        conn.close()
        raise
    return conn


def connect_as_found(path: str) -> tuple[sqlite3.Connection, bool]:
    """:func:`connect`, and whether the file is read as immutable (no lock
    keeps a writer from changing it meanwhile: :func:`witness`)."""
    real = os.path.realpath(path)
    read_log = logged(real)
    mode = "mode=ro" if read_log else "mode=ro&immutable=1"
    conn = sqlite3.connect(file_uri(real, mode), uri=True, isolation_level=None)
    return conn, not read_log


def logged(path: str) -> bool:
    """Whether a write-ahead log holding writes is beside the database at
    ``path``: it is read through it, never as immutable."""
    wal = path + "-wal"
    return os.path.exists(wal) and os.path.getsize(wal) > 0


JOURNAL_MAGIC = bytes.fromhex("d9d505f920a163d7")
"""How a rollback journal's header begins while it holds a transaction's
pages; committing deletes the journal, truncates it or zeroes its header."""


def journaled(path: str) -> bool:
    """Whether a rollback journal that may be hot -- left by a writer that
    crashed, or held by one mid-transaction -- is beside the database at
    ``path``: the file's pages are then not all committed ones, and SQLite
    reads it only once the journal is rolled back, which writes to it.  One
    that is there but cannot be read is taken to be hot: it is not ignored."""
    try:
        # O_NONBLOCK: opening a FIFO waits for a writer without it.
        handle = os.open(path + "-journal", os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return True  # a FIFO, a folder: never read, and not ignored (private_copy names it)
        return os.read(handle, len(JOURNAL_MAGIC)) == JOURNAL_MAGIC
    except OSError:
        return True
    finally:
        os.close(handle)


SETTLED_NS = 50_000_000
"""How long ago a file must have been last changed for a change to show in
its times: the kernel stamps them from a clock that moves in ticks of a few
milliseconds, so a write in the tick of the one before could leave them as
they were."""

Witness = tuple[tuple[int, int, int, int, int] | None, ...]
"""What :func:`witness` sees: each file's device, inode, size and times."""


def witness(path: str) -> Witness:
    """The state of the database at ``path``, its log and its rollback
    journal as the file system shows them: any write to one changes it.  Taken once the
    last change is :data:`SETTLED_NS` old, waiting out the rest (never
    longer: a time ahead of the clock waits no more), so that a write after
    it shows in the times."""
    import time

    real = os.path.realpath(path)
    seen = _states(real)
    latest = max((state[4] for state in seen if state is not None), default=0)
    young = latest + SETTLED_NS - time.time_ns()
    if young <= 0:
        return seen
    time.sleep(min(young, SETTLED_NS) / 1e9)
    return _states(real)


def _states(real: str) -> Witness:
    seen: list[tuple[int, int, int, int, int] | None] = []
    for name in (real, real + "-wal", real + "-journal"):
        try:
            info = os.stat(name)
        except OSError:
            seen.append(None)
            continue
        seen.append((info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns))
    return tuple(seen)


JOURNALED = "a store beside a hot rollback journal is read with that journal rolled back"
"""Why a store beside a hot journal is read from a private copy."""


def scratch(
    path: str, why: str, prefix: str = "roteiro-memory-copy-"
) -> tempfile.TemporaryDirectory[str]:
    """A new private folder (``0700``, its name starting with ``prefix``)
    in the system's temporary folder (``TMPDIR``) for a copy of the store
    at ``path``, removed by its ``cleanup``; StoreUnavailable, saying
    ``why`` a copy is read, when none can be made."""
    import tempfile

    try:
        return tempfile.TemporaryDirectory(prefix=prefix)
    except OSError as error:
        raise no_copy(path, tempfile.gettempdir(), error, why) from None


def private_copy(path: str, folder: str, suffix: str, why: str) -> str:
    """The path of a copy, in ``folder``, of the database at ``path`` and
    of its companion (``path`` + ``suffix``: its log or journal), each made
    private (``0600``) before it is written; StoreUnavailable, saying
    ``why`` a copy is read, when they cannot be copied."""
    import shutil

    from roteiro_memory import privatefile

    real = os.path.realpath(path)
    odd = companion_refusal(path, real, suffix)
    if odd is not None:
        raise odd
    copy = os.path.join(folder, "memory.db")
    try:
        for end in ("", suffix):
            privatefile.create(copy + end)
            shutil.copyfile(real + end, copy + end)
    except OSError as error:
        raise no_copy(path, folder, error, why) from None
    return copy


COMPANIONS = {
    "-journal": "rollback journal",
    "-wal": "write-ahead log",
    "-shm": "write-ahead log's index",
}
"""The files SQLite keeps beside a store, by the suffix of their name."""


def companion_refusal(path: str, real: str, suffix: str) -> StoreUnavailable | None:
    """The refusal of a store whose log, journal or log index (``real`` +
    ``suffix``) is no regular file -- a folder, a FIFO -- which SQLite
    cannot read the store past (opening a FIFO journal waits for a writer
    for ever), and which no copy in another folder would mend; None when it
    is a file, or not there."""
    from roteiro_memory.privatefile import file_kind

    try:
        mode = os.stat(real + suffix).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    return StoreUnavailable(
        f"{path}{suffix} is {file_kind(mode)}, where SQLite keeps the store's "
        f"{COMPANIONS.get(suffix, 'companion file')}: the store cannot be read past it; "
        "move it away"
    )


def no_copy(path: str, folder: str, error: Exception, why: str) -> StoreUnavailable:
    """The refusal of a store that is read from a private copy, for ``why``,
    when none can be made in ``folder``."""
    remedy = "set TMPDIR to a folder with room for a copy of the store"
    if why == JOURNALED:
        remedy += f", or open it once where it can be written, so SQLite rolls {path}-journal back"
    return StoreUnavailable(
        f"{path}: {why}, on a private copy, which cannot be made in {folder} ({error}); {remedy}"
    )


def unwritable(path: str, why: str) -> StoreUnavailable:
    """The refusal of a write to a store opened read-only, ``why`` saying why."""
    return StoreUnavailable(
        f"{path}: {why}, so the store can be read but not written; nothing was written"
    )


def unmigratable(path: str, why: str, version: int) -> StoreUnavailable:
    """The refusal of a read-only store that must be migrated (or created)
    before this version reads it."""
    return StoreUnavailable(
        f"{path}: {why}, and this version reads the store only once it is at schema "
        f"version {version}, which means writing to it; open it once where it can be "
        "written, or read it with the version that wrote it"
    )


def unreadable(path: str, why: str | None, error: sqlite3.Error) -> StoreUnavailable | None:
    """The refusal of a read-only store whose write-ahead log SQLite cannot
    read, lacking the shared-memory index it cannot create beside it; None
    for any other failure, or a store that is not read-only."""
    if why is None or getattr(error, "sqlite_errorname", "") != "SQLITE_CANTOPEN":
        return None
    return StoreUnavailable(
        f"{path}: {why}, and the write-ahead log beside it ({path}-wal) may hold committed "
        f"writes, which SQLite reads only through a shared-memory index ({path}-shm) that "
        "cannot be created there; copy the store and its -wal file to a folder that can be "
        "written, and read it there"
    )
