"""A store's file as SQLite is told to open it: always as a ``file:`` URI
naming the file's absolute path, every character that means something in a
URI escaped.  SQLite may be built to read a plain file name that starts with
``file:`` as a URI (so ``--db 'file:other.db?mode=memory'`` would open
another file, or none); named this way, a store is always the file whose
name was given."""

from __future__ import annotations

import os
from urllib.parse import quote

from roteiro_memory.errors import InvalidStoreName, excerpt

__all__ = ["file_uri", "store_file"]


def store_file(path: object) -> str:
    """``path`` as a store's file name, or InvalidStoreName, with nothing
    opened: what is not a path (or is one as bytes), an empty path, and one
    holding a NUL character, which no file name can.  The one rule for a
    store file's name, wherever a store is named (:mod:`..naming`) or opened."""
    if not isinstance(path, (str, os.PathLike)) or not isinstance(named := os.fspath(path), str):
        raise InvalidStoreName(
            f"invalid store path {excerpt(path)}: expected the path of a store file "
            "(a str or os.PathLike of str)"
        )
    if not named:
        raise InvalidStoreName("the store path is empty: expected the path of a store file")
    if "\x00" in named:
        raise InvalidStoreName(
            f"invalid store path {excerpt(named)}: it holds a NUL character, which no file name can"
        )
    return named


def file_uri(path: str, options: str = "") -> str:
    """The URI of the file at ``path`` (made absolute), with SQLite's URI
    ``options`` (``mode=ro``, ...) after it when given.  The path's bytes
    are escaped as the file system holds them, so a name that is not UTF-8
    (read into ``str`` with surrogate escapes) names its own file."""
    uri = "file:" + quote(os.fsencode(os.path.abspath(path)), safe="/")
    return f"{uri}?{options}" if options else uri
