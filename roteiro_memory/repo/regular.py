"""Opening a file that may be swapped while it is read: a working tree's file
git listed a moment before, or one of roteiro's own in the git directory.

Between a look at a path and the read of it, anything can be put there: a
symbolic link (to a file outside the repository, to ``/dev/zero``, to
itself), a FIFO, a folder.  So a file is opened here without following a
link and without waiting (opening a FIFO for reading waits for a writer),
and used only when the descriptor opened is a regular file -- whatever a
look at the path said before.  Given the top level of the working tree, no
folder on the way from it is entered through a link either, as git never
follows one.  Sync hashes and reads the working tree's files so
(:mod:`.graph`), ``add --anchor`` reads the file it checks
(:func:`roteiro_memory.app.anchors.verify_anchor`), and the stat cache, the
hooks and the note of unread files read their own (:mod:`.statcache`,
:mod:`.unread`).
"""

from __future__ import annotations

import errno
import os
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

__all__ = ["open_regular", "read_regular"]

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_FILE = os.O_RDONLY | _NONBLOCK | _NOFOLLOW
_FOLDER = os.O_RDONLY | _NONBLOCK | getattr(os, "O_DIRECTORY", 0)
_BENEATH = os.open in os.supports_dir_fd
"""Whether a path can be opened one folder at a time (not on Windows)."""

_NOT_REGULAR = frozenset({errno.ELOOP, errno.EMLINK, errno.ENXIO})
"""What opening fails with where the path is no regular file: a link not
followed (``ELOOP``; ``EMLINK`` on FreeBSD), a socket (``ENXIO``)."""


def open_regular(path: str, root: str | None = None) -> BinaryIO | None:
    """``path`` open for reading, when it is a regular file reached through
    no symbolic link; None when something else is there (a link, a FIFO, a
    folder, a device, a socket).  With ``root``, ``path`` is a ``/``-separated
    path from that folder (``root`` itself is taken as it is): no folder on
    the way is entered through a link, and none is ``..``.  Raises
    :class:`OSError` when nothing can be opened there (gone, forbidden)."""
    try:
        if root is None or not _BENEATH:
            descriptor = os.open(path if root is None else os.path.join(root, path), _FILE)
        else:
            *folders, name = path.split("/")
            if ".." in folders or name == "..":
                return None
            descriptor = _open_beneath(root, folders, name)
    except OSError as error:
        if error.errno in _NOT_REGULAR:
            return None
        raise
    try:
        regular = stat.S_ISREG(os.fstat(descriptor).st_mode)
    except OSError:
        os.close(descriptor)
        raise
    if not regular:
        os.close(descriptor)
        return None
    return open(descriptor, "rb")


def _open_beneath(root: str, folders: list[str], name: str) -> int:
    """The descriptor of ``name`` in ``folders`` below ``root``, opened one
    folder at a time, none through a link."""
    folder = os.open(root, _FOLDER)
    try:
        for part in folders:
            inner = os.open(part, _FOLDER | _NOFOLLOW, dir_fd=folder)
            os.close(folder)
            folder = inner
        return os.open(name, _FILE, dir_fd=folder)
    finally:
        os.close(folder)


def read_regular(path: str, limit: int | None, root: str | None = None) -> bytes | None:
    """The bytes of ``path`` (from ``root``, as :func:`open_regular` takes
    it) when it is a regular file reached through no link, of at most
    ``limit`` bytes (None: of any size, as a regular file ends); None
    otherwise, and when it cannot be read."""
    try:
        handle = open_regular(path, root)
        if handle is None:
            return None
        with handle:
            if limit is not None and os.fstat(handle.fileno()).st_size > limit:
                return None
            data = handle.read(-1 if limit is None else limit + 1)
    except (OSError, ValueError):  # ValueError: a name no file can have (a NUL)
        return None
    return data if limit is None or len(data) <= limit else None
