"""A store's file as SQLite is told to open it: always as a ``file:`` URI
naming the file's absolute path, every character that means something in a
URI escaped.  SQLite may be built to read a plain file name that starts with
``file:`` as a URI (so ``--db 'file:other.db?mode=memory'`` would open
another file, or none); named this way, a store is always the file whose
name was given."""

from __future__ import annotations

import os
from urllib.parse import quote

__all__ = ["file_uri"]


def file_uri(path: str, options: str = "") -> str:
    """The URI of the file at ``path`` (made absolute), with SQLite's URI
    ``options`` (``mode=ro``, ...) after it when given.  The path's bytes
    are escaped as the file system holds them, so a name that is not UTF-8
    (read into ``str`` with surrogate escapes) names its own file."""
    uri = "file:" + quote(os.fsencode(os.path.abspath(path)), safe="/")
    return f"{uri}?{options}" if options else uri
