"""Recognising a memory store, its companions and its exports by content.

A name proves nothing (a store can be called anything; ``notes.db`` may be
someone else's database), so every test here reads the file:

* a **store** is an SQLite database (its first 16 bytes are the SQLite header)
  that carries this project's ``PRAGMA application_id`` in its header, or
  whose schema holds this project's tables: ``agent_memory``, or a
  ``schema_migrations`` that records one of this project's migrations;
* a **companion** is a file named ``DB-wal``, ``DB-shm`` or ``DB-journal``
  beside a store ``DB``, whatever it holds (an empty log, or a shared-memory
  index, carries nothing that names its database); a **write-ahead log**,
  known by its magic number, whose frames carry this project's schema is a
  store's log wherever it lies;
* an **export** is JSON Lines whose first record carries the export format's
  tag.

Reading never changes anything: a database is opened ``immutable`` (so SQLite
creates no ``-wal`` or ``-shm`` file beside it) and only ever read.  Nothing
heavy is imported until a file looks like a database.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "APPLICATION_ID_BYTES",
    "EXPORT_TAG_FIELD",
    "EXPORT_TAG_PREFIX",
    "SQLITE_HEADER",
    "Recognised",
    "StoreInfo",
    "What",
    "is_sqlite",
    "is_stamped",
    "is_wal",
    "read_schema",
    "recognise",
    "store_info",
]

SQLITE_HEADER = b"SQLite format 3\x00"
WAL_MAGIC = (0x377F0682, 0x377F0683)
"""The first four bytes of a WAL file, big-endian; the last bit names the
byte order of its checksums."""
APPLICATION_ID_BYTES = b"RoMm"
"""A store's ``PRAGMA application_id``, as the header keeps it (big-endian, at
:data:`_APPLICATION_ID_OFFSET`); kept here rather than imported, so a hook
starts fast, and a test keeps it in step with
:data:`roteiro_memory.stores.sqlite.migrations.APPLICATION_ID`."""
_APPLICATION_ID_OFFSET = 68
SCHEMA_SIGNATURES = (b"CREATE TABLE agent_memory", b"CREATE TABLE agent_cache")
"""Text of this project's schema as SQLite keeps it in ``sqlite_master``."""
EXPORT_TAG_FIELD = "format"
EXPORT_TAG_PREFIX = "roteiro-memory.export/"
"""An export's first record carries its format in this field, starting with
this prefix whatever the version (kept here rather than imported, so a hook
starts fast; a test keeps it in step with :mod:`roteiro_memory.transfer`)."""
_SCAN_BYTES = 1 << 20
"""How much of a damaged database is scanned for the schema's text."""
_EXPORT_LINE_BYTES = 1 << 16
"""How much of a file is read looking for an export's first record."""


class What(enum.Enum):
    """What a recognised file is."""

    STORE = "a roteiro-memory store"
    WAL = "the write-ahead log of a roteiro-memory store"
    SHM = "the shared-memory index of a roteiro-memory store"
    JOURNAL = "the rollback journal of a roteiro-memory store"
    EXPORT = "a roteiro-memory export"


_COMPANIONS = {"-wal": What.WAL, "-shm": What.SHM, "-journal": What.JOURNAL}


@dataclass(frozen=True)
class StoreInfo:
    """What the schema of a database says about it."""

    tables: frozenset[str]
    migrations: tuple[tuple[int, str], ...]
    readable: bool
    """False when SQLite could not read the schema and the file's bytes were
    scanned instead."""

    @property
    def version(self) -> int | None:
        return max((v for v, _ in self.migrations), default=None)


@dataclass(frozen=True)
class Recognised:
    """A file recognised as something that must stay out of git."""

    path: Path
    what: What
    detail: str = ""


def _head(path: Path, size: int) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def is_sqlite(path: Path) -> bool:
    return _head(path, len(SQLITE_HEADER)) == SQLITE_HEADER


def is_stamped(path: Path) -> bool:
    """Whether the header of the database at ``path`` carries this project's
    application id: a file stamped so is a store, whatever its schema says."""
    end = _APPLICATION_ID_OFFSET + len(APPLICATION_ID_BYTES)
    return _head(path, end)[_APPLICATION_ID_OFFSET:end] == APPLICATION_ID_BYTES


def is_wal(path: Path) -> bool:
    head = _head(path, 4)
    return len(head) == 4 and int.from_bytes(head, "big") in WAL_MAGIC


def _our_migration_names() -> frozenset[str]:
    from roteiro_memory.stores.sqlite.migrations import MIGRATIONS

    return frozenset(name for _, name, _ in MIGRATIONS)


def read_schema(path: Path) -> tuple[frozenset[str], tuple[tuple[int, str], ...]]:
    """The tables of the database at ``path`` and the migrations it records,
    read without changing anything; :class:`sqlite3.DatabaseError` when SQLite
    cannot read them."""
    import sqlite3

    uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
    conn = sqlite3.connect(uri, uri=True)
    try:
        tables = frozenset(
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
        migrations: tuple[tuple[int, str], ...] = ()
        if "schema_migrations" in tables:
            migrations = tuple(
                (int(version), str(name))
                for version, name in conn.execute(
                    "SELECT version, name FROM schema_migrations ORDER BY version"
                )
            )
        return tables, migrations
    finally:
        conn.close()


def _carries_schema(path: Path) -> bool:
    data = _head(path, _SCAN_BYTES)
    return any(signature in data for signature in SCHEMA_SIGNATURES)


def store_info(path: Path) -> StoreInfo | None:
    """What the schema of ``path`` says, or None when it is not a store.

    A store whose schema is still only in its write-ahead log (a store in use,
    never checkpointed) is recognised by that log.  A database SQLite cannot
    read is recognised by the text of the schema in its first megabyte.
    """
    if not is_sqlite(path):
        return None
    import sqlite3

    stamped = is_stamped(path)
    try:
        tables, migrations = read_schema(path)
    except sqlite3.DatabaseError:
        if stamped or _carries_schema(path):
            return StoreInfo(frozenset(), (), readable=False)
        return None
    ours = _our_migration_names()
    if stamped or "agent_memory" in tables or any(name in ours for _, name in migrations):
        return StoreInfo(tables, migrations, readable=True)
    if not tables:
        wal = path.with_name(path.name + "-wal")
        if is_wal(wal) and _carries_schema(wal):
            return StoreInfo(tables, migrations, readable=True)
    return None


def _companion_of(path: Path) -> tuple[str, Path] | None:
    """The suffix of a companion's name and the database it would belong to."""
    for suffix in _COMPANIONS:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            return suffix, path.with_name(path.name[: -len(suffix)])
    return None


def _export_tag(path: Path) -> str | None:
    """The format tag of the export at ``path``, or None when it is not one."""
    head = _head(path, _EXPORT_LINE_BYTES)
    line = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    if not line.startswith(b"{"):
        return None
    try:
        first = json.loads(line)
    except ValueError:
        return None
    if not isinstance(first, dict):
        return None
    tag = first.get(EXPORT_TAG_FIELD)
    return tag if isinstance(tag, str) and tag.startswith(EXPORT_TAG_PREFIX) else None


def recognise(path: str | os.PathLike[str]) -> Recognised | None:
    """What ``path`` is, if it is a store, a store's companion or an export."""
    file = Path(path)
    if not file.is_file():
        return None
    info = store_info(file)
    if info is not None:
        detail = f"schema version {info.version}" if info.version is not None else ""
        return Recognised(file, What.STORE, detail)
    if is_wal(file) and _carries_schema(file):
        return Recognised(file, What.WAL)
    companion = _companion_of(file)
    if companion is not None:
        suffix, database = companion
        if database.is_file() and store_info(database) is not None:
            return Recognised(file, _COMPANIONS[suffix], f"beside {database.name}")
    if _export_tag(file) is not None:
        return Recognised(file, What.EXPORT)
    return None
