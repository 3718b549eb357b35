"""A working file's blob id: the id of the blob git would store for it.

Git stores a file in its *clean* form: with its line endings converted where
the ``text`` and ``eol`` attributes or ``core.autocrlf`` say so.  An id
hashed from the bytes on disk would then differ from the one the commit of
those very bytes holds, and an anchor written before the commit would drift
at it though nothing changed.

So a working file is hashed here as it is read, and git is asked for the
ids of those whose bytes hold a carriage return, the one byte such a
conversion removes.  It is asked as ``git add`` would compute them, beside
the index (whether a file's indexed blob holds a carriage return decides
whether ``text=auto`` converts it), but into a copy of the index and
writing no object (``git update-index --info-only``), so the repository is
left as it was.  Every other file's id is the hash of its bytes, which is
git's own.  A file's symbols are read from the form its id is of
(:func:`clean_content`), so they are the ones a revision holding it has.

Git converts some files otherwise: through a ``filter``'s clean command
(Git LFS stores a pointer), collapsing ``$Id$`` under ``ident``, or from a
``working-tree-encoding``.  Those are never asked about: a filter is the
user's program, which may be slow, hang or write (LFS copies the file into
``.git``), and git runs none on a file before it is added.  While edited
or untracked such a file keeps the id of its bytes, its symbols read from
them; once committed and checked out, its node is the index's, and its
symbols are read from the index (:func:`~.graph.build_working`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Collection, Mapping
from functools import partial

from roteiro_memory.errors import GitError
from roteiro_memory.repo.binding import blob_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, BinaryIO, Protocol

    class Repo(Protocol):
        """What is asked of a repository here
        (:class:`roteiro_memory.repo.graph.Repo`, which imports this module)."""

        @property
        def root(self) -> Path: ...
        @property
        def common_dir(self) -> Path: ...
        @property
        def git_dir(self) -> Path | None: ...
        def git(
            self,
            *args: str,
            input: bytes | None = None,
            ok: tuple[int, ...] = (0,),
            env: Mapping[str, str] | None = None,
        ) -> bytes: ...


__all__ = [
    "CONVERSION_ATTRIBUTES",
    "clean_blobs",
    "clean_content",
    "empty_blob",
    "hasher",
    "stream_blob_id",
]

CONVERSION_ATTRIBUTES = ("filter", "ident", "working-tree-encoding")
"""The attributes under which git converts a file otherwise than its line
endings: a file one of them names is not asked about."""

_CHUNK_BYTES = 1 << 20
"""Files are hashed this much at a time, never read whole."""

Git = Callable[..., bytes]
"""How git is run: :meth:`roteiro_memory.repo.graph.Repo.git`."""


def hasher(object_format: str) -> Callable[..., Any]:
    """The hash function of ``object_format`` (``sha1`` or ``sha256``)."""
    if object_format == "sha1":
        try:
            # CPython's own SHA-1, the one hashlib falls back to: every sync
            # hashes the tree, and loading OpenSSL for hashlib costs more than
            # hashing a tree of thousands of files.
            from _sha1 import sha1  # type: ignore[import-not-found]
        except ImportError:  # a build without it: hashlib's is the same function
            from hashlib import sha1
        return sha1  # type: ignore[no-any-return]
    import hashlib  # here, not at the top: finding the repository needs no hashing

    return partial(hashlib.new, object_format)


def stream_blob_id(handle: BinaryIO, head: bytes, object_format: str) -> tuple[str, bool]:
    """:func:`~.binding.blob_id` of the bytes of the open file whose first
    bytes were ``head``, read a chunk at a time, and whether they hold a
    carriage return.  A file that grows or shrinks while read is read again
    (at most twice): git's header names the size before the content."""
    new = hasher(object_format)
    for _ in range(3):
        size = os.fstat(handle.fileno()).st_size
        digest = new()
        digest.update(b"blob %d\x00" % size)
        digest.update(head)
        carriage = b"\r" in head
        read = len(head)
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
            carriage = carriage or b"\r" in chunk
            read += len(chunk)
        if read == size:
            break
        handle.seek(0)
        head = b""
    hexdigest: str = digest.hexdigest()
    return hexdigest, carriage


def clean_blobs(repo: Repo, carriage: Collection[str]) -> dict[str, str]:
    """The ids ``git add`` would give the working files ``carriage``, whose
    bytes hold a carriage return, but for those a
    :data:`CONVERSION_ATTRIBUTES` attribute names.  Empty when git cannot
    read or list them all (one is gone since it was hashed) or no copy of
    the index can be made (no room for it): each keeps the id of its bytes
    for that sync, and the next asks again."""
    if not carriage:
        return {}
    ask = set(carriage) - _attributed(repo.git, sorted(carriage))
    if not ask:
        return {}
    import shutil  # here, not at the top: most syncs have no file to ask about
    import tempfile

    names = b"".join(os.fsencode(path) + b"\0" for path in sorted(ask))
    try:
        with tempfile.TemporaryDirectory(prefix="roteiro-index-") as folder:
            index = os.path.join(folder, "index")
            with contextlib.suppress(FileNotFoundError):  # no index yet: nothing is tracked
                # Dated as the index is, so git vouches for the stat data of the
                # same entries as it does there: a copy dated now would vouch for
                # a file edited in the second the index was written.
                shutil.copy2(_index_file(repo), index)
            env = {"GIT_INDEX_FILE": index}
            # A split index would write its shared part into the repository.
            repo.git(
                *("-c", "core.splitIndex=false", "update-index", "--add", "--info-only"),
                *("-z", "--stdin"),
                input=names,
                env=env,
            )
            listed = repo.git("ls-files", "--stage", "-z", env=env)
    except (GitError, OSError):
        return {}
    said: dict[str, str] = {}
    for item in listed.split(b"\0"):
        # "<mode> <blob> <stage>\t<path>", the path as the file system names it.
        meta, _, name = item.partition(b"\t")
        path = os.fsdecode(name)
        if path in ask and meta.endswith(b" 0"):
            said[path] = meta.split(b" ")[1].decode("ascii")
    return said if len(said) == len(ask) else {}


def _index_file(repo: Repo) -> str:
    """The index git reads for ``repo``: ``$GIT_INDEX_FILE`` (from the top
    level, as git is run there), else the worktree's own."""
    named = os.environ.get("GIT_INDEX_FILE")
    if named:
        return os.path.join(repo.root, named)
    return os.path.join(repo.git_dir or repo.common_dir, "index")


def _attributed(git: Git, paths: list[str]) -> set[str]:
    """Those of ``paths`` a :data:`CONVERSION_ATTRIBUTES` attribute is set on,
    from one ``git check-attr``."""
    if not paths:
        return set()
    data = b"".join(os.fsencode(path) + b"\0" for path in paths)
    said = git("check-attr", "-z", "--stdin", *CONVERSION_ATTRIBUTES, input=data).split(b"\0")
    # "<path> NUL <attribute> NUL <value> NUL", once for each attribute.
    return {
        os.fsdecode(said[i])
        for i in range(0, len(said) - 2, 3)
        if said[i + 2] not in (b"unspecified", b"unset")
    }


def clean_content(data: bytes, blob: str, object_format: str) -> bytes | None:
    """The form of a working file's bytes ``data`` that ``blob`` is the id
    of: ``data`` itself, or ``data`` with every CRLF made LF (the only
    conversions git is asked about).  None when it is neither: the file
    changed since its id was taken."""
    if blob_id(data, object_format) == blob:
        return data
    lines = data.replace(b"\r\n", b"\n")
    return lines if lines != data and blob_id(lines, object_format) == blob else None


def empty_blob(object_format: str) -> str:
    """The id git gives a file of no bytes."""
    return str(hasher(object_format)(b"blob 0\x00").hexdigest())
