"""Files only their owner may read: the store, its exports and the stat cache.

Memory is unredacted prose, so every file this package makes is mode 0600
whatever the umask.  The two ways one is made are implemented here once:

* :func:`create` makes an empty file unless something is there already (a
  store before SQLite opens it; SQLite gives its ``-wal`` and ``-shm`` files
  the database file's mode);
* :func:`replace` writes a whole file beside its target and renames it over
  the target, so a write that fails half-way (a full disk, Ctrl-C) leaves no
  partial file, and an earlier one as it was.  (A process killed outright
  leaves its temporary: nothing runs to remove it.)
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO

__all__ = ["MODE", "create", "replace"]

MODE = 0o600
"""Read and write for the owner, nothing for anyone else."""


def create(path: str | os.PathLike[str]) -> bool:
    """Create ``path`` (through a symlink, its target) empty and private.

    False when something is there already, which is left untouched; any
    other failure raises :class:`OSError`."""
    target = os.path.realpath(path)
    try:
        handle = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, MODE)
    except FileExistsError:
        return False
    try:
        os.fchmod(handle, MODE)  # the umask may have taken bits away
    finally:
        os.close(handle)
    return True


def replace(target: str | os.PathLike[str], write: Callable[[TextIO], None]) -> None:
    """Make ``target`` a private file holding what ``write`` writes (UTF-8).

    ``write`` fills a new file beside the target (``.NAME.PID.tmp``), which is
    renamed over the target once it is complete.  Whatever fails -- opening,
    ``write`` itself, the rename -- the new file is removed and the failure
    raised, and ``target`` is as it was.  A target that is there and neither
    a regular file nor a symlink (a directory, a device such as
    ``/dev/null``, a FIFO) is refused with :class:`FileExistsError` before
    anything is written: renaming over it would put a file in its place."""
    if os.path.lexists(target):
        mode = os.lstat(target).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            raise FileExistsError(
                errno.EEXIST, "it is there and not a regular file, so it is not replaced"
            )
    folder, name = os.path.split(os.fspath(target))
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    if os.path.lexists(temporary):
        os.unlink(temporary)  # left by a process of this id that died writing
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    handle = os.open(temporary, flags, MODE)
    try:
        with open(handle, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), MODE)
            write(out)
        os.replace(temporary, target)
    except BaseException:
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(temporary)  # already gone: nothing is left to undo
        raise
