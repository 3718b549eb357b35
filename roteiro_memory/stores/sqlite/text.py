"""Stored text that is not UTF-8, read so that the row holding it is named.

This package writes only UTF-8, but SQLite keeps whatever bytes a column is
given, and Python's driver fails a whole query on the first value it cannot
decode, naming no row.  The check and the export read through
:func:`undecodable_kept`: such bytes come back as text holding lone
surrogates (``surrogateescape``), which no value this version writes holds
(:func:`~roteiro_memory.semantics.is_utf8`), so the rules that judge each
value find it, in its row.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

__all__ = ["undecodable_kept"]


def _kept(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


@contextlib.contextmanager
def undecodable_kept(conn: sqlite3.Connection) -> Iterator[None]:
    """Within the block, ``conn`` reads text that is not UTF-8 as text
    holding lone surrogates, instead of failing the query; afterwards it
    reads as it did."""
    before = conn.text_factory
    conn.text_factory = _kept
    try:
        yield
    finally:
        conn.text_factory = before
