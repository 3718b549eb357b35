"""A working file's blob id: the id of the blob git would store for it.

Git stores a file in its *clean* form: line endings converted where the
``text`` and ``eol`` attributes or ``core.autocrlf`` say so, a ``filter``'s
clean command run (Git LFS stores a pointer), an ``$Id$`` collapsed under
``ident``, a ``working-tree-encoding`` turned into UTF-8.  An id hashed from
the bytes on disk would then differ from the one the commit of those very
bytes holds, and an anchor written before the commit would drift at it though
nothing changed.

So a working file is hashed here as it is read, and git is asked
(``git hash-object``, which writes nothing) for the ids of the few files it
may convert: those whose bytes hold a carriage return, the one byte a
line-ending conversion removes, and those a conversion attribute names.
Every other file's id is the hash of its bytes, which is git's own.  A
file's symbols are read from its clean form too (:func:`clean_content`), so
they are the ones a revision holding the file has.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection
from functools import partial

from roteiro_memory.errors import GitError
from roteiro_memory.repo.binding import blob_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

__all__ = [
    "CONVERSION_ATTRIBUTES",
    "clean_blobs",
    "clean_content",
    "hasher",
    "stream_blob_id",
]

CONVERSION_ATTRIBUTES = ("filter", "ident", "working-tree-encoding")
"""The attributes under which git may store other bytes than a file's own
though they hold no carriage return."""

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


def clean_blobs(git: Git, hashed: Collection[str], carriage: Collection[str]) -> dict[str, str]:
    """The ids git gives those of the working files ``hashed`` it may
    convert: the ones in ``carriage`` (their bytes hold a carriage return)
    and the ones a :data:`CONVERSION_ATTRIBUTES` attribute names.  Empty
    when git cannot read them all -- a filter it is told is required is
    missing, as ``git add`` could not store them either, or one is gone
    since it was hashed -- and each keeps the id of its bytes."""
    ask = set(carriage) | _attributed(git, [path for path in hashed if path not in carriage])
    if not ask:
        return {}
    paths = sorted(ask)
    lines = b"".join(_stdin_path(path) for path in paths)
    try:
        said = git("hash-object", "--stdin-paths", input=lines).decode("ascii").split()
    except GitError:
        return {}
    if len(said) != len(paths):
        raise GitError(f"git hash-object answered {len(said)} ids for {len(paths)} files")
    return dict(zip(paths, said, strict=True))


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


def _stdin_path(path: str) -> bytes:
    """``path`` as a line of ``git hash-object --stdin-paths``, which reads a
    line starting with a double quote as a C-quoted name and drops a line's
    last carriage return."""
    raw = os.fsencode(path)
    if b"\n" not in raw and b"\r" not in raw and not raw.startswith(b'"'):
        return raw + b"\n"
    quoted = "".join(
        f"\\{byte:03o}" if byte < 0x20 or byte in b'"\\' else chr(byte) for byte in raw
    )
    return b'"' + quoted.encode("latin-1") + b'"\n'


def clean_content(
    data: bytes, blob: str, object_format: str, bytes_blob: str | None = None
) -> bytes | None:
    """The clean form of a working file's bytes ``data``, git's id for which
    is ``blob``: ``data`` itself, or ``data`` with every CRLF made LF,
    whichever ``blob`` is the id of.  Where git converts the file some other
    way (a filter, ``ident``), ``data`` as it is, when ``bytes_blob``, the id
    of the bytes hashed, is its id: its symbols are read from those bytes.
    None when ``data`` is none of these: the file changed since."""
    own = blob_id(data, object_format)
    if own == blob:
        return data
    lines = data.replace(b"\r\n", b"\n")
    if lines != data and blob_id(lines, object_format) == blob:
        return lines
    return data if own == bytes_blob else None
