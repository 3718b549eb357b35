"""The fields of an export line, which are the columns both database stores
keep: declared once, here, in a module that imports nothing heavy, so a store
can name its columns (:mod:`roteiro_memory.stores.sql.columns`) without
loading the export machinery (:mod:`roteiro_memory.transfer`) at start-up."""

from __future__ import annotations

__all__ = ["CACHE", "NODE", "RECORD", "TIMESTAMP_FORMAT", "Field"]

TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
"""How a record's ``created_at`` and ``superseded_at`` are written, a UTC
time to the second (PROTOCOL's ``[P-created-at]``): SQLite's
``datetime('now')``, PostgreSQL's ``to_char`` of the same, and the model
store's ``strftime`` of this."""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple

    class Field(NamedTuple):
        """One field of a line, and the column it is stored in: its name, the
        Python type of what this version writes (``str``, ``int`` or
        ``float``), and whether it may be null."""

        name: str
        type: type
        nullable: bool = False

else:
    from collections import namedtuple

    Field = namedtuple("Field", ["name", "type", "nullable"], defaults=[False])
    Field.__doc__ = """One field of a line, and the column it is stored in: its name,
    the Python type of what this version writes (``str``, ``int`` or ``float``),
    and whether it may be null."""


NODE: tuple[Field, ...] = (
    Field("key", str),
    Field("kind", str, True),
    Field("name", str, True),
    Field("path", str, True),
    Field("blob", str, True),
)
RECORD: tuple[Field, ...] = (
    Field("id", int),
    Field("scope", str),
    Field("kind", str),
    Field("anchor_key", str, True),
    Field("anchor_blob", str, True),
    Field("anchor_path", str, True),
    Field("body", str),
    Field("confidence", float, True),
    Field("tree", str, True),
    Field("created_at", str),
    Field("superseded_by", int, True),
    Field("superseded_at", str, True),
)
"""Every column of a record but its search text, which import derives again."""
CACHE: tuple[Field, ...] = (
    Field("key", str),
    Field("fingerprint", str),
    Field("json", str),
    Field("bytes", int),
    Field("generation", int),
    Field("last_used", int),
    Field("hits", int),
    Field("anchor_key", str, True),
    Field("anchor_blob", str, True),
)
"""Every column of a cache entry."""
