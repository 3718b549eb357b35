"""Whether another process has a store's file open, as SQLite's own locks say.

In WAL mode every connection that has read the database holds a POSIX read
lock on the file's shared byte range until it closes (SQLite's unix VFS:
``SHARED_SIZE`` bytes from ``PENDING_BYTE + 2``).  A write lock on that
range, asked for without waiting, is granted only while no other process
holds one there (a process's own locks never conflict with it), and while
it is held no other connection can start reading: one opening the file
waits, then finds that the path no longer names the file it read
(:mod:`.identity`) and opens what is there now.

POSIX locks belong to the process, not to a descriptor: closing *any*
descriptor of the file drops all of them, SQLite's own included.  So the
descriptor that asks stays open until the store's connection is closed.
Windows has no such locks (and an open file cannot be removed there): every
question is answered as if no other process had the file open.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.stores.sqlite.identity import FileIdentity

__all__ = ["SHARED_FIRST", "SHARED_SIZE", "Exclusion"]

PENDING_BYTE = 0x40000000
SHARED_FIRST = PENDING_BYTE + 2
SHARED_SIZE = 510
"""SQLite's unix VFS (``os_unix.c``): the bytes its readers' locks cover."""


class Exclusion:
    """Keeps other processes from reading a store's file, while none is."""

    __slots__ = ("fd",)

    def __init__(self) -> None:
        self.fd: int | None = None
        """Of the file, opened on the first :meth:`take`; closed only by
        :meth:`close`, after the connection (see the module docstring)."""

    def take(self, identity: FileIdentity) -> bool:
        """Whether no other process has the file ``identity`` names open (has
        read it); when none has, none can start to until :meth:`give_back`
        or :meth:`close`.  False when the file cannot be opened to ask, or
        the path names another file now."""
        if sys.platform == "win32":
            return True
        import fcntl

        if self.fd is None:
            try:
                self.fd = os.open(identity.path, os.O_RDWR)  # a write lock needs it
            except OSError:
                return False
        info = os.fstat(self.fd)
        if (info.st_dev, info.st_ino) != (identity.device, identity.inode):
            return False
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, SHARED_SIZE, SHARED_FIRST)
        except OSError:  # held by another process (or locks unsupported there): it may read
            return False
        return True

    def give_back(self) -> None:
        """Let others read again: back to the read lock this process's
        connection holds there (lowering a lock is never refused)."""
        if sys.platform != "win32" and self.fd is not None:
            import fcntl

            fcntl.lockf(self.fd, fcntl.LOCK_SH | fcntl.LOCK_NB, SHARED_SIZE, SHARED_FIRST)

    def close(self) -> None:
        """Close the descriptor, dropping this process's locks on the file:
        only once its connection is closed."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
