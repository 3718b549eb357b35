"""Which file a store's connection writes to, and whether its path still names it.

SQLite holds its database file open by descriptor, so a file removed, or
replaced by a folder or by another file renamed over it, goes on taking
writes -- into a file no other process can open, gone when the connection
closes.  A long-lived process (the MCP server, the protocol server) would
acknowledge those writes.  So the store keeps the device and inode its path
named just before SQLite opened it, and before each write, and again just
before each commit, checks that the path names that file still; when it does
not, the write is refused and nothing is written.

While it opens, the store looks again once the connection has first read
the file: a file removed or replaced in between (another process's read that
made the store and found nothing removes it again) is one this connection
may not have opened, and nothing has been done through it yet, so the store
opens again, on what the path names then.  From that read on the connection
holds SQLite's read lock, which keeps a process removing a store it made from
removing this one (:mod:`.sharing`).

Once open, the store does not reopen on its own: the files beside the old
and the new database (``-wal``, ``-shm``) go by name, so a connection that
has written to a file that was replaced cannot be closed or reused safely
while others use what is there now.  Restarting the process opens what the
path names then.
"""

from __future__ import annotations

import errno
import os
import stat

from roteiro_memory.errors import StoreUnavailable

__all__ = ["CHOOSE_WITH_DB", "FileIdentity", "not_a_file"]

CHOOSE_WITH_DB = "choose a file path with --db"
"""What a command that takes ``--db`` advises for a store that is no file."""


def not_a_file(path: str, remedy: str = CHOOSE_WITH_DB) -> StoreUnavailable | None:
    """The refusal of ``path`` when what is there (through a symlink, at its
    target) is not a regular file: a directory, or a special file -- a FIFO,
    a device -- which holds no store, and a FIFO's open would wait for a
    writer for ever; or when symbolic links in the path lead round in a loop,
    so it names no file at all; ``remedy`` is what the caller's user can do
    instead.  None for a regular file, or nothing there (or what cannot be
    looked at otherwise: opening it says why).  Looked at once, never opened."""
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        if error.errno != errno.ELOOP:
            return None
        return StoreUnavailable(
            f"{path}: its symbolic links lead round in a loop ({error.strerror}), so it names "
            f"no file, and no roteiro-memory store; {remedy}"
        )
    except ValueError:  # a NUL in the path, which opening refuses
        return None
    if stat.S_ISDIR(mode):
        return StoreUnavailable(f"{path}: is a directory, not a roteiro-memory store")
    if not stat.S_ISREG(mode):
        return StoreUnavailable(
            f"{path}: not a regular file, so not a roteiro-memory store; {remedy}"
        )
    return None


def nothing_at(path: str) -> bool:
    """Whether nothing is at ``path`` (through a symlink, at its target): no
    file, or a file where a folder of the path should be.  A path that
    cannot be looked at -- a folder that may not be searched -- may name a
    store, so it is not nothing: opening it says why (a symlink loop is
    refused before, by :func:`not_a_file`)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except (OSError, ValueError):  # ValueError: a NUL in the path, which opening refuses
        return False
    return False


def _what(path: str) -> str | None:
    """What is at ``path`` when it is not a regular file (through a symlink,
    at its target); None for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "nothing (the file was removed)"
    except OSError as error:
        return f"what cannot be looked at ({error.strerror})"
    if stat.S_ISDIR(mode):
        return "a folder"
    return None if stat.S_ISREG(mode) else "what is not a regular file"


class FileIdentity:
    """The file ``path`` names now: made just before SQLite opens it, so,
    once :meth:`holds` after the connection's first read, the file the
    connection reads (the path named it before and after the open)."""

    __slots__ = ("device", "inode", "path", "shown")

    def __init__(self, path: str, shown: str) -> None:
        self.path = os.path.abspath(path)
        """The path, absolute: a server moves to the repository's top level
        after opening a store named relative to where it started."""
        self.shown = shown
        """The path as the store names it in messages."""
        info = os.stat(self.path)
        self.device = info.st_dev
        self.inode = info.st_ino

    def holds(self) -> bool:
        """Whether ``path`` names the file still (False when nothing there
        can be looked at)."""
        try:
            info = os.stat(self.path)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == (self.device, self.inode)

    def check(self) -> None:
        """Refuse, as :class:`StoreUnavailable`, a write through a connection
        whose file ``path`` no longer names."""
        if self.holds():
            return
        now = _what(self.path) or "another file (one put in its place)"
        raise StoreUnavailable(
            f"{self.shown}: the store file this process opened is no longer there: the path "
            f"now names {now}, so a write would go where nobody can read it; nothing was "
            "written; restart this command (or server) to use what the path names now"
        )
