"""Reading a store where nothing may be written: a read-only folder or
filesystem, or a file its owner made read-only.

SQLite reads a WAL-mode database through its shared-memory index (``-shm``),
which it creates beside the file when it is not there, and a read-only open
still creates the log and the index, and leaves them.  So a store with no
log beside it (nothing is being written) is read as immutable, which needs
neither; one with a log is read through it, which needs the index there or
creatable -- when it is neither, the log cannot be read and the store is
not read without it, since the log may hold committed writes.

Read as immutable, the file takes no lock, so a writer that starts meanwhile
(its log, then its checkpoint into the file) may change pages under the
read.  A reader that must see one state of the file (``check``) takes a
:func:`witness` of it before and after, and believes what it read only when
the two are equal.
"""

from __future__ import annotations

import os
import sqlite3

from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.stores.sqlite.uri import file_uri

__all__ = [
    "Witness",
    "connect",
    "connect_as_found",
    "journaled",
    "logged",
    "reason",
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
    """A connection that reads the database at ``path`` and can write
    nothing, creating nothing beside it when no log is there (see the
    module docstring).  SQLite opens the file when it is first read, so a
    failure to open it is raised by the first statement."""
    return connect_as_found(path)[0]


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
        with open(path + "-journal", "rb") as handle:
            return handle.read(len(JOURNAL_MAGIC)) == JOURNAL_MAGIC
    except FileNotFoundError:
        return False
    except OSError:
        return True


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
