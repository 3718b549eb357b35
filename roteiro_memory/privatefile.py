"""Files only their owner may read: the store, its exports and the stat cache.

Memory is unredacted prose, so every file holding it (or facts about the
repository it is anchored in) is mode 0600 whatever the umask.  The two ways
one is made are implemented here once:

* :func:`create` makes an empty file unless something is there already (a
  store before SQLite opens it; SQLite gives its ``-wal`` and ``-shm`` files
  the database file's mode);
* :func:`replace` writes a whole file beside its target and renames it over
  the target, so a write that fails half-way (a full disk, Ctrl-C) leaves no
  partial file, and an earlier one as it was, flushing it to disk first
  unless it is a cache worked out again when lost.  (A process killed
  outright leaves its temporary: nothing runs to remove it.)
"""

from __future__ import annotations

import errno
import os
import re
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO

__all__ = [
    "MODE",
    "check_replaceable",
    "create",
    "file_kind",
    "replace",
    "same_file",
    "sync_folder",
]

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


_KINDS = {
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFLNK: "a symbolic link",
}


def file_kind(mode: int) -> str:
    """What a path whose ``st_mode`` is ``mode`` and is not a regular file
    is, for a message: ``a directory``, ``a FIFO``, ``a character device``..."""
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def check_replaceable(target: str | os.PathLike[str]) -> None:
    """Refuse, with :class:`FileExistsError`, a ``target`` that is there and
    is not a regular file -- a directory, a FIFO, a device, a socket, or a
    symlink to one -- and a name of an open stream (``/dev/stdout``, or a
    symlink through ``/proc/self/fd/1``) whatever it leads to, since
    :func:`replace` would put a file in its place.  Nothing there, a regular
    file, or any other symlink to a regular file or to nothing is
    replaceable: a symlink is replaced itself, and what it pointed to is left
    as it was."""
    stream = _stream_link(target)
    if stream is not None:
        raise FileExistsError(
            errno.EEXIST,
            f"it names an open stream ({stream}), not a file; only a regular file, or a "
            "symlink to one, is replaced",
        )
    try:
        mode = os.stat(target).st_mode  # through a symlink: what it points to
    except FileNotFoundError:
        return  # nothing there, or a symlink to nothing
    if not stat.S_ISREG(mode):
        raise FileExistsError(
            errno.EEXIST,
            f"it is {file_kind(mode)}; only a regular file, or a symlink to one, is replaced",
        )


def same_file(path: str | os.PathLike[str], other: str | os.PathLike[str]) -> bool:
    """Whether ``path`` and ``other`` name one file: the same path once
    symlinks are resolved, or the same file (a hard link, another case on a
    case-insensitive disk).  What :func:`replace` writes at ``path`` would
    then take the place of ``other``."""
    if os.path.realpath(path) == os.path.realpath(other):
        return True
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False  # one of them is not there: not the same file


_STREAM = re.compile(r"/dev/std(?:in|out|err)|/dev/fd/[0-9]+|/proc/[^/]+/fd/[0-9]+")
"""Names of a process's open files (its streams), not of files: through one,
a stream redirected to a file looks like that file."""

_MOST_LINKS = 40
"""Most symlinks followed, as the system follows them."""


def _stream_link(target: str | os.PathLike[str]) -> str | None:
    """The name of an open stream that ``target`` is, or that its chain of
    symlinks passes through; None when it is neither."""
    path = os.path.abspath(os.fspath(target))
    for _ in range(_MOST_LINKS):
        if _STREAM.fullmatch(path):
            return path
        try:
            link = os.readlink(path)
        except OSError:  # not a symlink, or nothing there
            return None
        path = os.path.normpath(os.path.join(os.path.dirname(path), link))
    return None


def replace(
    target: str | os.PathLike[str], write: Callable[[TextIO], None], durable: bool = True
) -> None:
    """Make ``target`` a private file holding what ``write`` writes (UTF-8).

    ``write`` fills a new file beside the target (``.NAME.PID.tmp``), which is
    renamed over the target once it is complete.  Whatever fails -- opening,
    ``write`` itself, the rename, an interrupt -- the new file is removed and
    the failure raised, and ``target`` is as it was.  A target that is not
    replaceable (:func:`check_replaceable`) is refused before anything is
    written.  When ``durable`` (an export, a report), the new file is flushed
    to disk before the rename and its folder after (:func:`sync_folder`), so
    a crash leaves the old file or the new one, never an empty one; a cache
    that is worked out again when lost (the stat cache, a hook's session
    state) is not, as a flush costs every event that writes it."""
    check_replaceable(target)
    folder, name = os.path.split(os.fspath(target))
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    if os.path.lexists(temporary):
        os.unlink(temporary)  # left by a process of this id that died writing
    # O_EXCL: a name that is taken, a planted symlink included, is refused.
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, MODE)
    try:
        with open(handle, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), MODE)
            write(out)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(temporary)  # already gone: nothing is left to undo
        raise
    if durable:
        sync_folder(folder or ".")


def sync_folder(folder: str | os.PathLike[str]) -> None:
    """Flush ``folder`` to disk, so the files renamed or made in it outlast a
    crash, where the system can (a folder opened with ``O_DIRECTORY``;
    Windows has none, and needs no such flush; a file system that flushes no
    folder -- some network ones -- says so with ``EINVAL``, and the rename
    is as safe there as it gets); OSError when it fails."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(handle)
    except OSError as error:
        if error.errno not in _NO_FOLDER_FLUSH:
            raise
    finally:
        os.close(handle)


_NO_FOLDER_FLUSH = frozenset({errno.EINVAL, errno.ENOTSUP})
"""What ``fsync`` of a folder fails with on a file system that flushes none."""
