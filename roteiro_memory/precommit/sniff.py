"""Recognising a memory store, its companions and its exports by content.

A name proves nothing (a store can be called anything; ``notes.db`` may be
someone else's database), so every test here reads the file:

* a **store** is an SQLite database (its first 16 bytes are the SQLite header)
  that carries this project's ``PRAGMA application_id`` in its header, or
  whose ``schema_migrations`` records one of this project's migrations (a
  table named ``agent_memory`` alone is no proof: another tool may name one
  so), judged by what SQLite reads, never by text its rows may quote;
* a **companion** is a file named ``DB-wal``, ``DB-shm`` or ``DB-journal``
  beside a store ``DB``, whatever it holds (an empty log, or a shared-memory
  index, carries nothing that names its database);
* a **write-ahead log** is any SQLite WAL, known by its 32-byte header (the
  magic number, the format version, a page size, and the header's own
  checksum), wherever it lies and whatever its name: a log's frames are
  pages of its database, and the log of a ``forget`` or an update holds
  record bodies but no schema text, so nothing in a log alone tells a
  store's from another database's -- every one is refused (one whose
  frames carry this project's schema is named as a store's);
* an **export** is JSON Lines whose first record carries the export format's
  tag, or (its header cut off) is a node, record or cache line of one, with
  that line's fields and no others; or a JSON array of those; in UTF-8 or
  UTF-16, after any amount of blank space;
* an **SQL dump** (``iterdump``, ``.dump``) is text that opens a transaction,
  creates this project's tables and inserts rows into them;
* any of these inside a **gzip** file or a **tar** archive (or both) is what
  it wraps.

A file given to a hook that cannot be read at all (permission denied, a
directory, nothing there, an I/O error) is recognised as none of these, and
that is no answer: it was not examined.  :func:`unreadable` says why, for the
hook to report it rather than pass it.  A special file (a FIFO, a device)
opens, but holds no stored content, so it is no store and is passed over.

Every read is bounded: at most :data:`_SCAN_BYTES` of content (past at most
:data:`_BLANK_BYTES` of leading blank space), and as much unpacked from a
wrapper.

Reading never changes anything: a database is opened ``immutable`` (so SQLite
creates no ``-wal`` or ``-shm`` file beside it) and only ever read; one
beside a hot rollback journal is also read as of its last commit, from a
private copy SQLite rolls back.  Nothing heavy is imported until a file
looks like a database.
"""

from __future__ import annotations

import contextlib
import enum
import errno
import os
import stat

from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
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
    "journaled",
    "read_schema",
    "recognise",
    "store_info",
    "unreadable",
    "wal_header",
]

SQLITE_HEADER = b"SQLite format 3\x00"
WAL_MAGIC = (0x377F0682, 0x377F0683)
"""The first four bytes of a WAL file, big-endian; the last bit names the
byte order of its checksums."""
WAL_FORMAT = 3007000
"""The file format version a WAL header carries (SQLite 3.7.0's)."""
_WAL_HEADER_BYTES = 32
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
_BLANK_BYTES = 1 << 24
"""How much leading blank space is skipped looking for content."""
WAL_SIGNATURES = (*SCHEMA_SIGNATURES, b"agent_memory")
"""A log's frames name the store's tables in its schema, or, written after
the schema, in ``sqlite_sequence`` (every record write updates that row)."""
EXPORT_LINE_PREFIXES = (
    '{"type": "node", "key": ',
    '{"type": "record", "id": ',
    '{"type": "cache", "key": ',
    '{"type": "end", "counts": ',
)
"""How an export's node, record, cache and trailer lines begin, as the exporter writes
them (a test keeps these in step with :mod:`roteiro_memory.transfer`)."""
DUMP_OPENINGS = ("BEGIN TRANSACTION;", "PRAGMA foreign_keys=OFF;")
"""How ``Connection.iterdump`` and the sqlite3 shell's ``.dump`` begin."""
DUMP_INSERTS = tuple(
    form
    for table in ("agent_cache", "agent_cache_clock", "agent_memory", "schema_migrations")
    for form in (f'"{table}"', f"{table} ")
)
"""A dump's inserts into this project's tables, quoted (``iterdump``) or not
(``.dump``): the cache and its clock, written soon after the first tables
(a dump goes table by table, by name), and the records and migrations."""
_WRAPPER_DEPTH = 3


class What(enum.Enum):
    """What a recognised file is."""

    STORE = "a roteiro-memory store"
    WAL = "the write-ahead log of a roteiro-memory store"
    ANY_WAL = (
        "an SQLite write-ahead log (its frames are pages of a database, which may be a store: "
        "a log alone does not say whose)"
    )
    SHM = "the shared-memory index of a roteiro-memory store"
    JOURNAL = "the rollback journal of a roteiro-memory store"
    EXPORT = "a roteiro-memory export"
    DUMP = "an SQL dump of a roteiro-memory store"


_COMPANIONS = {"-wal": What.WAL, "-shm": What.SHM, "-journal": What.JOURNAL}


@valueclass
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


@valueclass
class Recognised:
    """A file recognised as something that must stay out of git."""

    path: Path
    what: What
    detail: str = ""


def _head(path: str | os.PathLike[str], size: int) -> bytes:
    """The first ``size`` bytes of ``path``; nothing when it is not a
    regular file (through a symlink, its target): a FIFO would block the
    read until something wrote to it, and no special file is a store."""
    try:
        # O_NONBLOCK: opening a FIFO waits for a writer without it.
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            return b""
        data = b""
        while len(data) < size:
            chunk = os.read(handle, size - len(data))
            if not chunk:
                break
            data += chunk
        return data
    except OSError:
        return b""
    finally:
        os.close(handle)


def unreadable(path: str | os.PathLike[str]) -> str | None:
    """Why ``path``, given to a hook as a file, cannot be read (the system's
    words: ``Permission denied``, ``Is a directory``, ``No such file or
    directory``), or None when it can.  Its first byte is read, so a file
    that opens but fails to read is caught too.  A special file (a FIFO, a
    device) is None: it is opened without blocking and never read, holding no
    stored content (see :func:`_head`)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ENXIO and _is_socket(path):
            return None  # a socket opens to no one: a special file, passed over
        return _reason(error)
    try:
        mode = os.fstat(handle).st_mode
        if stat.S_ISDIR(mode):
            return os.strerror(errno.EISDIR)
        if stat.S_ISREG(mode):
            os.read(handle, 1)
        return None
    except OSError as error:
        return _reason(error)
    finally:
        os.close(handle)


def _is_socket(path: str | os.PathLike[str]) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def _reason(error: OSError) -> str:
    return error.strerror or str(error) or type(error).__name__


def is_sqlite(path: str | os.PathLike[str]) -> bool:
    return _head(path, len(SQLITE_HEADER)) == SQLITE_HEADER


def is_stamped(path: Path) -> bool:
    """Whether the header of the database at ``path`` carries this project's
    application id: a file stamped so is a store, whatever its schema says."""
    end = _APPLICATION_ID_OFFSET + len(APPLICATION_ID_BYTES)
    return _head(path, end)[_APPLICATION_ID_OFFSET:end] == APPLICATION_ID_BYTES


def wal_header(data: bytes) -> bool:
    """Whether ``data`` opens with an SQLite WAL header: the magic number,
    the format version, a page size SQLite uses (a power of two from 512 to
    65536), and the checksum of the header's first 24 bytes, as 32-bit words
    in the byte order the magic names, summed as SQLite sums them."""
    if len(data) < _WAL_HEADER_BYTES:
        return False
    magic, version, page_size = (int.from_bytes(data[i : i + 4], "big") for i in (0, 4, 8))
    if magic not in WAL_MAGIC or version != WAL_FORMAT:
        return False
    if not (512 <= page_size <= 65536 and page_size & (page_size - 1) == 0):
        return False
    big = magic & 1  # the checksum's words are big-endian, else little-endian
    words = [int.from_bytes(data[i : i + 4], "big" if big else "little") for i in range(0, 24, 4)]
    first = second = 0
    for index in range(0, 6, 2):
        first = (first + words[index] + second) & 0xFFFFFFFF
        second = (second + words[index + 1] + first) & 0xFFFFFFFF
    return (first, second) == (
        int.from_bytes(data[24:28], "big"),
        int.from_bytes(data[28:32], "big"),
    )


def is_wal(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is an SQLite write-ahead log (:func:`wal_header`)."""
    return wal_header(_head(path, _WAL_HEADER_BYTES))


def _our_migration_names() -> frozenset[str]:
    from roteiro_memory.stores.sqlite.migrations import MIGRATIONS

    return frozenset(name for _, name, _ in MIGRATIONS)


def read_schema(path: Path) -> tuple[frozenset[str], tuple[tuple[int, str], ...]]:
    """The tables of the database at ``path`` and the migrations it records,
    read without changing anything; :class:`sqlite3.DatabaseError` when SQLite
    cannot read them.  A row whose version is not a whole number or whose name
    is not text is no migration of ours (another tool's table of that name,
    or damage, which the store's check judges) and is left out."""
    import sqlite3

    from roteiro_memory.stores.sqlite.failures import undecoded

    uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
    conn = sqlite3.connect(uri, uri=True)
    try:
        tables = frozenset(
            row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        )
        migrations: tuple[tuple[int, str], ...] = ()
        if "schema_migrations" in tables:
            migrations = tuple(
                (version, name)
                for version, name in conn.execute(
                    "SELECT version, name FROM schema_migrations ORDER BY version"
                )
                if type(version) is int and type(name) is str
            )
        return tables, migrations
    except UnicodeDecodeError as error:
        raise undecoded(error) from None
    finally:
        conn.close()


def _carries_schema(path: Path) -> bool:
    data = _head(path, _SCAN_BYTES)
    return any(signature in data for signature in SCHEMA_SIGNATURES)


def store_info(path: Path) -> StoreInfo | None:
    """What the schema of ``path`` says, or None when it is not a store.

    A store whose schema is still only in its write-ahead log (a store in use,
    never checkpointed) is recognised by that log.  A database SQLite cannot
    read is recognised by the text of the schema in its first megabyte.  A
    file beside a hot rollback journal (a writer died mid-transaction) holds
    pages nobody committed, which may read as no store though its last
    commit is one: it is a store when either is (:func:`_committed_info`).
    StoreUnavailable when that commit is to be read and no private copy can
    be made to read it on.
    """
    found = _info(path) if is_sqlite(path) else None
    if found is not None or not journaled(path):
        return found
    return _committed_info(path)


def journaled(path: str | os.PathLike[str]) -> bool:
    """Whether a hot rollback journal is beside the database at ``path``
    (:func:`roteiro_memory.stores.sqlite.readonly.journaled`, the one rule);
    SQLite is loaded only when a file of its name is there."""
    real = os.path.realpath(path)
    if not os.path.lexists(real + "-journal"):
        return False
    from roteiro_memory.stores.sqlite import readonly

    return readonly.journaled(real)


def _committed_info(path: Path) -> StoreInfo | None:
    """:func:`_info` of the database at ``path`` as of its last commit: of
    a private copy of it and its hot journal, which SQLite rolls back
    (:func:`~roteiro_memory.stores.sqlite.readonly.connect_committed`, the
    copy ``check-store`` judges).  The files at ``path`` are only read; a
    copy SQLite cannot roll back is judged as it is left."""
    import sqlite3
    from pathlib import Path

    from roteiro_memory.stores.sqlite import readonly

    with readonly.scratch(str(path), readonly.JOURNALED, "roteiro-memory-sniff-") as folder:
        conn = readonly.connect_committed(str(path), folder)
        # The first read rolls the copy back; a copy that cannot be is judged
        # by its bytes as they are left, as any damage is.
        try:
            with contextlib.suppress(sqlite3.DatabaseError):
                conn.execute("SELECT count(*) FROM sqlite_master")
        finally:
            conn.close()
        copy = Path(folder) / "memory.db"
        return _info(copy) if is_sqlite(copy) else None


def _info(path: Path) -> StoreInfo | None:
    """:func:`store_info` of the SQLite database at ``path`` as its bytes
    are found."""
    import sqlite3

    stamped = is_stamped(path)
    try:
        tables, migrations = read_schema(path)
    except sqlite3.DatabaseError:
        if stamped or _carries_schema(path):
            return StoreInfo(frozenset(), (), readable=False)
        return None
    ours = _our_migration_names()
    # Not a table's name alone: agent_memory is a name another tool may use.
    if stamped or any(name in ours for _, name in migrations):
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


_BLANK = b" \t\r\n"
_OPENINGS = (b"{", b"[", *(opening.encode() for opening in DUMP_OPENINGS))
"""How what :func:`recognise` looks at for text may begin: an export, its
JSON array, an SQL dump."""
_PLAIN_BYTES = 512
"""How much of a file :func:`_plainly_none` reads: a tar header's magic lies
at 257, within it."""


def _content(path: Path) -> bytes:
    """The first :data:`_SCAN_BYTES` of ``path`` past its leading blank space
    (at most :data:`_BLANK_BYTES` of it); nothing, as an empty file, when it
    cannot be read: there is nothing in it to recognise."""
    try:
        with path.open("rb") as handle:
            skipped = 0
            while skipped <= _BLANK_BYTES:
                chunk = handle.read(1 << 16)
                if not chunk:
                    return b""
                rest = chunk.lstrip(_BLANK)
                if rest:
                    return rest + handle.read(_SCAN_BYTES - len(rest))
                skipped += len(chunk)
    except OSError:
        return b""
    return b""


def _text(data: bytes) -> str | None:
    """``data`` as text, UTF-16 when its byte order mark or its NULs say so;
    None when it is neither UTF-8 nor UTF-16."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data[: len(data) // 2 * 2].decode("utf-16", "replace")
    sample = data[:64]
    if len(sample) >= 8 and sample[1::2] == bytes(len(sample[1::2])):
        return data[: len(data) // 2 * 2].decode("utf-16-le", "replace")
    if len(sample) >= 8 and sample[0::2] == bytes(len(sample[0::2])):
        return data[: len(data) // 2 * 2].decode("utf-16-be", "replace")
    if b"\0" in sample:
        return None
    return data.decode("utf-8", "replace").lstrip("\ufeff")


_LINE_FIELDS_AT_LEAST = 3
"""Fewest of its type's fields a node, record or cache line must hold: every
version writes all of them, an older one perhaps fewer than today's."""


def _is_export_item(item: object) -> bool:
    """Whether a JSON value is an export's header, or one of its lines: a
    node, record or cache line holds only its type's fields
    (:mod:`roteiro_memory.fields`), at least :data:`_LINE_FIELDS_AT_LEAST` of
    them, the first (its key or id) among them; the trailer holds exactly
    its three.  Another tool's ``{"type": "node", "key": ..., "label": ...}``
    is none of these."""
    if not isinstance(item, dict):
        return False
    tag = item.get(EXPORT_TAG_FIELD)
    if isinstance(tag, str) and tag.startswith(EXPORT_TAG_PREFIX):
        return True
    from roteiro_memory.fields import CACHE, NODE, RECORD

    kind = item.get("type")
    if kind == "end":
        return set(item) == {"type", "counts", "sha256"}
    specs = {"node": NODE, "record": RECORD, "cache": CACHE}
    spec = specs.get(kind) if isinstance(kind, str) else None
    if spec is None:
        return False
    held = set(item) - {"type"}
    return (
        spec[0].name in held
        and len(held) >= _LINE_FIELDS_AT_LEAST
        and held <= {field.name for field in spec}
    )


def _export_text(text: str) -> bool:
    """Whether ``text`` opens an export: JSON Lines, or a JSON array of lines."""
    import json

    text = text.lstrip(" \t\r\n\ufeff")
    if text.startswith("["):
        try:
            first, _ = json.JSONDecoder().raw_decode(
                text, len(text[1:]) - len(text[1:].lstrip()) + 1
            )
            return _is_export_item(first)  # which writes it again, as deep
        except (ValueError, RecursionError):  # not JSON, or nested past any export
            return False
    line, ended, _ = text.partition("\n")
    line = line.rstrip("\r")
    if not ended and line.startswith(EXPORT_LINE_PREFIXES):
        return True  # a record line longer than what was read: how it begins is all there is
    if not line.startswith("{"):
        return False
    try:  # the first object, on its line or over several (pretty-printed: ``jq .``)
        return _is_export_item(json.JSONDecoder().raw_decode(text)[0])
    except (ValueError, RecursionError):
        return False


def _dump_text(text: str) -> bool:
    """Whether ``text`` opens a dump of a store: a transaction that creates
    this project's tables and inserts rows into one (a dump writes each
    table's rows after it; every store holds some, its migrations and its
    cache clock), so a schema file that only creates them is none."""
    text = text.lstrip(" \t\r\n\ufeff")
    return (
        text.startswith(DUMP_OPENINGS)
        and any(signature.decode() in text for signature in SCHEMA_SIGNATURES)
        and any(f"INSERT INTO {table}" in text for table in DUMP_INSERTS)
    )


def _gunzip(data: bytes) -> bytes:
    import zlib

    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, _SCAN_BYTES)
    except zlib.error:
        return b""


def _tar_members(data: bytes) -> list[tuple[str, bytes]]:
    """The (name, content) of each regular member of a ustar archive whose
    header lies within ``data``; content as far as ``data`` holds it."""
    members: list[tuple[str, bytes]] = []
    offset = 0
    while offset + 512 <= len(data) and data[offset + 257 : offset + 262] == b"ustar":
        header = data[offset : offset + 512]
        name = header[:100].split(b"\0", 1)[0].decode("utf-8", "replace")
        try:
            size = int(header[124:136].split(b"\0", 1)[0].strip() or b"0", 8)
        except ValueError:
            break
        start = offset + 512
        if header[156:157] in (b"0", b"\0"):
            members.append((name, data[start : start + size]))
        offset = start + (size + 511) // 512 * 512
    return members


def _inside(data: bytes, depth: int = 0) -> tuple[What, str] | None:
    """What the bytes opening a file (or unpacked from one) hold, and where."""
    if data.startswith(SQLITE_HEADER) and any(s in data for s in SCHEMA_SIGNATURES):
        return What.STORE, ""
    if wal_header(data):
        ours = any(signature in data for signature in WAL_SIGNATURES)
        return (What.WAL if ours else What.ANY_WAL), ""
    if depth < _WRAPPER_DEPTH and data.startswith(b"\x1f\x8b"):
        found = _inside(_gunzip(data), depth + 1)
        return None if found is None else (found[0], _wrapped("gzip-compressed", found[1]))
    if depth < _WRAPPER_DEPTH and data[257:262] == b"ustar":
        for name, content in _tar_members(data):
            found = _inside(content, depth + 1)
            if found is not None:
                return found[0], _wrapped(f"in a tar archive, as {name}", found[1])
        return None
    text = _text(data)
    if text is None:
        return None
    if _export_text(text):
        return What.EXPORT, ""
    if _dump_text(text):
        return What.DUMP, ""
    return None


def _wrapped(how: str, inner: str) -> str:
    return f"{how}, {inner}" if inner else how


def _plainly_none(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is, by its name and first bytes alone, none of what
    :func:`recognise` looks for, so that it is passed over without loading
    pathlib: most files a commit passes are ASCII text whose first non-blank
    byte opens neither an export (``{``, ``[``) nor a dump.  Anything else --
    a NUL or a byte past ASCII (a database, a WAL, gzip, tar, UTF-16, a byte
    order mark), or blank space throughout what was read -- is looked at in
    full."""
    name = os.fspath(path)
    if name.endswith(tuple(_COMPANIONS)):
        return False
    head = _head(name, _PLAIN_BYTES)
    start = head.lstrip(_BLANK)
    if not start or not head.isascii() or b"\0" in head:
        return False
    # An opening cut off where the read ended may still be one.
    return not any(start.startswith(opening) or opening.startswith(start) for opening in _OPENINGS)


def recognise(path: str | os.PathLike[str]) -> Recognised | None:
    """What ``path`` is, if it is a store, a store's companion or an export."""
    if not os.path.isfile(path) or _plainly_none(path):
        return None
    from pathlib import Path

    file = Path(path)
    info = store_info(file)
    if info is not None:
        detail = f"schema version {info.version}" if info.version is not None else ""
        return Recognised(file, What.STORE, detail)
    found = _inside(_content(file))
    if found == (What.STORE, ""):
        # A database (not wrapped) is a store by what SQLite reads of it
        # (store_info), not by its bytes: its rows may quote a schema.
        found = None
    if found is not None and found[0] is What.WAL:
        return Recognised(file, *found)
    companion = _companion_of(file)
    if companion is not None:
        suffix, database = companion
        if database.is_file() and store_info(database) is not None:
            return Recognised(file, _COMPANIONS[suffix], f"beside {database.name}")
    return None if found is None else Recognised(file, *found)
