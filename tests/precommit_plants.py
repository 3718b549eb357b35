"""Good and planted-bad inputs for the pre-commit hooks' tests.

Each ``plant_*`` writes one file (or a store and its companions) under a
folder and returns its path.  Bad stores are made the only way a real one goes
bad: through SQLite, behind the library's back.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from roteiro_memory.stores.sqlite.store import SQLiteStore


def plant_store(path: Path, records: int = 3) -> Path:
    """A healthy store, closed (so it is one file, with no WAL beside it)."""
    store = SQLiteStore(path)
    try:
        first = store.record("lesson", "retries double-count the first timeout", confidence=0.9)
        for n in range(1, records):
            store.record("decision", f"decision {n}", supersedes=first if n == 1 else None)
        store.cache_put("context:a", "fp", '{"a": 1}')
    finally:
        store.close()
    return path


_CRASH_MID_TRANSACTION = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA cache_size = 1")  # every dirty page spills to the file before a commit
conn.execute("BEGIN IMMEDIATE")
for statement in sys.argv[2:]:
    conn.execute(statement)
os._exit(0)  # a crash: the journal stays, and the file holds the transaction's pages
"""
_TORN_WRITE = (
    "UPDATE agent_memory SET search = 'nothing'",
    "CREATE TABLE ballast (filler BLOB)",
    *["INSERT INTO ballast VALUES (zeroblob(4096))"] * 64,
)
"""A write that leaves the file malformed when it dies half-way."""
_HIDING_WRITE = (
    "DROP TABLE schema_migrations",
    "UPDATE agent_memory SET body = body || ' ' || hex(zeroblob(2000))",
)
"""A write that leaves the file readable, but recording no migration, when
it dies half-way."""


def crash_mid_transaction(path: Path, statements: tuple[str, ...] = _TORN_WRITE) -> Path:
    """The store at ``path``, put in rollback-journal mode, that a writer
    crashed on in the middle of a transaction of ``statements``: beside it,
    the hot journal holding the pages as they were, and in it, pages of a
    write nobody committed."""
    conn = sqlite3.connect(path, isolation_level=None)
    assert conn.execute("PRAGMA journal_mode = DELETE").fetchone() == ("delete",)
    conn.close()
    before = path.read_bytes()
    crash = [sys.executable, "-c", _CRASH_MID_TRANSACTION, str(path), *statements]
    subprocess.run(crash, check=True)
    journal = path.with_name(path.name + "-journal")
    assert journal.stat().st_size > 0, "the crash left no journal"
    assert path.read_bytes() != before, "the crashed write never reached the file"
    return path


def plant_hot_journal(folder: Path) -> Path:
    """A healthy store (``memory.db`` in ``folder``) beside a hot journal,
    the file malformed as found (:func:`crash_mid_transaction`)."""
    return crash_mid_transaction(plant_store(folder / "memory.db"))


def plant_hidden_by_a_hot_journal(folder: Path) -> Path:
    """A store (``memory.db`` in ``folder``) whose last commit holds a fault
    the check reports, stamped with no application id (as the earliest
    versions left one), beside the hot journal of a write that died after
    dropping ``schema_migrations``: as found, the file reads as an SQLite
    database recording none of this project's migrations -- no store."""
    path = plant_bad_store(folder / "memory.db", "confidence")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA application_id = 0")
    conn.close()
    return crash_mid_transaction(path, _HIDING_WRITE)


@contextmanager
def open_store(path: Path) -> Iterator[SQLiteStore]:
    """A store held open, its last writes still in its write-ahead log."""
    store = SQLiteStore(path)
    store.connection.execute("PRAGMA wal_autocheckpoint = 0")
    try:
        store.record("lesson", "kept in the log until a checkpoint")
        yield store
    finally:
        store.close()


def plant_companions(folder: Path, name: str = "memory.db") -> list[Path]:
    """Copies of a store in use: the database, its WAL and its shared-memory
    index, taken while the store is open."""
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "live" / name
    source.parent.mkdir(exist_ok=True)
    out = []
    with open_store(source):
        for suffix in ("", "-wal", "-shm"):
            target = folder / (name + suffix)
            shutil.copyfile(source.with_name(name + suffix), target)
            out.append(target)
    shutil.rmtree(source.parent)
    return out


def plant_fifo(path: Path, through: str = "fifo") -> Path:
    """A FIFO at ``path``; with ``through`` "symlink", a symlink to it beside
    it, which is returned instead.  Reading either waits for a writer."""
    import os

    os.mkfifo(path)
    if through != "symlink":
        return path
    link = path.with_name("link-to-" + path.name)
    link.symlink_to(path)
    return link


def plant_export(path: Path, store: Path) -> Path:
    """What ``roteiro-memory export --output PATH`` writes for ``store``."""
    from roteiro_memory.transfer import export_lines

    source = SQLiteStore(store)
    try:
        path.write_text("".join(line + "\n" for line in export_lines(source)), encoding="utf-8")
    finally:
        source.close()
    return path


def plant_wal_alone(folder: Path) -> Path:
    """The write-ahead log of a store reopened after its schema was
    checkpointed, copied without its database: its frames hold record bodies
    but no schema."""
    (folder / "live").mkdir(parents=True, exist_ok=True)
    source = plant_store(folder / "live" / "memory.db")
    with open_store(source):
        copy = folder / "copied-log"
        shutil.copyfile(source.with_name("memory.db-wal"), copy)
    shutil.rmtree(source.parent)
    return copy


def _export_text(folder: Path) -> str:
    return plant_export(folder / "source.jsonl", plant_store(folder / "source.db")).read_text()


def _gzip(path: Path, data: bytes) -> Path:
    import gzip

    path.write_bytes(gzip.compress(data))
    return path


def _tar(path: Path, members: dict[str, Path], mode: str = "w") -> Path:
    import tarfile

    with tarfile.open(path, mode) as archive:
        for name, member in members.items():
            archive.add(member, arcname=name)
    return path


def _dump(path: Path, store: Path) -> Path:
    conn = sqlite3.connect(store)
    try:
        path.write_text("\n".join(conn.iterdump()) + "\n")
    finally:
        conn.close()
    return path


def _leaked(folder: Path, how: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    if how == "wal-alone":
        return plant_wal_alone(folder)
    if how == "gzip-store":
        return _gzip(folder / "memory.db.gz", plant_store(folder / "memory.db").read_bytes())
    if how == "tar-store":
        return _tar(
            folder / "backup.tar",
            {"notes.txt": _note(folder), "m.db": plant_store(folder / "m.db")},
        )
    if how == "tar-gz-export":
        exported = folder / "e.jsonl"
        exported.write_text(_export_text(folder))
        return _tar(folder / "backup.tgz", {"e.jsonl": exported}, "w:gz")
    if how == "gzip-export":
        return _gzip(folder / "e.jsonl.gz", _export_text(folder).encode())
    if how == "iterdump":
        return _dump(folder / "memory.sql", plant_store(folder / "m.db"))
    if how == "padded-iterdump":
        # Blank space that pushes the dump's opening across the hook's first read.
        dump = _dump(folder / "memory.sql", plant_store(folder / "m.db"))
        dump.write_text(" " * 500 + dump.read_text())
        return dump
    text = _export_text(folder)
    out = folder / "leaked.txt"
    if how == "headerless-export":
        out.write_text(text.split("\n", 1)[1])
    elif how == "utf16-export":
        out.write_bytes(text.encode("utf-16"))
    elif how == "utf16le-export-no-bom":
        out.write_bytes(text.encode("utf-16-le"))
    elif how == "json-array-export":
        out.write_text(json.dumps([json.loads(line) for line in text.splitlines()], indent=2))
    elif how == "padded-export":
        out.write_text(" " * (64 * 1024) + "\n" + text)
    else:
        raise KeyError(how)
    return out


def _note(folder: Path) -> Path:
    note = folder / "note.txt"
    note.write_text("a note before the store\n")
    return note


LEAKED_FORMS = (
    "wal-alone",
    "gzip-store",
    "tar-store",
    "tar-gz-export",
    "gzip-export",
    "iterdump",
    "padded-iterdump",
    "headerless-export",
    "utf16-export",
    "utf16le-export-no-bom",
    "json-array-export",
    "padded-export",
)
"""Each form memory leaks in that ``roteiro-forbid-store`` must recognise by
content, by name; :func:`plant_leaked` writes one."""


def plant_leaked(folder: Path, how: str) -> Path:
    return _leaked(folder, how)


def plant_foreign_sqlite(path: Path) -> Path:
    """An SQLite database that is not a store."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.execute("INSERT INTO notes (body) VALUES ('not memory')")
    conn.commit()
    conn.close()
    return path


def plant_undecodable_name(path: Path) -> Path:
    """A database whose schema names a table with bytes that are not UTF-8
    (damage): SQLite then quotes those bytes in its message."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET name = CAST(x'e974' AS TEXT) WHERE name = 'agent_cache_clock'"
    )
    conn.commit()
    conn.close()
    return path


def plant_foreign_migrations(path: Path) -> Path:
    """Another tool's SQLite database with a ``schema_migrations`` table of
    its own: versions as text and as NULL."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (version TEXT, name TEXT)")
    conn.executemany(
        "INSERT INTO schema_migrations VALUES (?, ?)",
        [("2024_01_01_init", "create users"), (None, "x"), (3, b"blob")],
    )
    conn.commit()
    conn.close()
    return path


def damage(path: Path, sql: str, *params: object) -> Path:
    """Run ``sql`` on the store at ``path`` with its CHECK constraints and
    foreign keys off, as a buggy writer or another tool would."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA ignore_check_constraints = ON")
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute(sql, params)
    finally:
        conn.close()
    return path


def _corrupt_index(path: Path) -> None:
    """Leave an index that disagrees with its table: SQLite's integrity check
    reports it, while the file still opens."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'idx_mem_anchor'"
        ).fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    with path.open("r+b") as handle:
        handle.seek((root - 1) * page_size)
        page = bytearray(handle.read(page_size))
        # A leaf index page: its cell count (bytes 3-4) set to zero empties it.
        page[3:5] = b"\x00\x00"
        handle.seek((root - 1) * page_size)
        handle.write(page)


BAD_STORES: dict[str, Callable[[Path], object]] = {
    "dangling": lambda p: damage(p, "UPDATE agent_memory SET superseded_by = 999 WHERE id = 3"),
    "cycle": lambda p: damage(p, "UPDATE agent_memory SET superseded_by = 1 WHERE id = 2"),
    "fork": lambda p: damage(p, "UPDATE agent_memory SET superseded_by = 2 WHERE id = 3"),
    "kind": lambda p: damage(p, "UPDATE agent_memory SET kind = 'rumour' WHERE id = 3"),
    "confidence": lambda p: damage(p, "UPDATE agent_memory SET confidence = 1.5 WHERE id = 1"),
    "scope": lambda p: damage(p, "UPDATE agent_memory SET scope = ' padded' WHERE id = 3"),
    "body": lambda p: damage(p, "UPDATE agent_memory SET body = '   ' WHERE id = 3"),
    "bytes": lambda p: damage(p, "UPDATE agent_cache SET bytes = bytes + 1"),
    "clock": lambda p: damage(p, "UPDATE agent_cache SET last_used = 99"),
    "newer": lambda p: damage(
        p, "INSERT INTO schema_migrations (version, name) VALUES (99, 'from the future')"
    ),
    "integrity": _corrupt_index,
    "blob-anchor": lambda p: damage(p, "UPDATE agent_memory SET anchor_key = X'6869' WHERE id = 2"),
    "sequence-text": lambda p: damage(p, "UPDATE sqlite_sequence SET seq = 'many'"),
    "no-clock": lambda p: damage(p, "DELETE FROM agent_cache_clock"),
    "created-at": lambda p: damage(
        p, "UPDATE agent_memory SET created_at = 'not a date' WHERE id = 2"
    ),
    "clock-full": lambda p: damage(p, "UPDATE agent_cache_clock SET ticks = 9223372036854775807"),
    "stamp": lambda p: damage(p, "UPDATE agent_cache SET generation = -1"),
}
"""Each way a store goes bad that ``roteiro-check-store`` must report, by name."""


def plant_bad_store(path: Path, how: str) -> Path:
    plant_store(path, records=4)
    BAD_STORES[how](path)
    return path


# --- Conformance case files -------------------------------------------------

GOOD_CASE = """\
cases:
  - id: extra-record-returns-id
    title: Recording returns the new record's id
    clause: PROTOCOL memory.record
    invariant: anchor-captured-at-write
    requires: [episodic]
    steps:
      - op: memory.record
        args: {kind: lesson, body: a lesson}
        expect: {id: 1}
"""
"""A valid case file whose one case id no shipped case uses."""


@dataclass(frozen=True)
class PlantedCases:
    files: list[Path]
    expected: str
    """How the one line ``roteiro-lint-cases`` must print starts."""
    mentions: str = ""
    """What else that line must say, wherever the loader puts it."""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _one(folder: Path, text: str, line: str, mentions: str = "") -> PlantedCases:
    path = _write(folder / "bad.yaml", text)
    return PlantedCases([path], line.format(path=path), mentions)


BAD_CASES: dict[str, Callable[[Path], PlantedCases]] = {
    "schema": lambda d: _one(
        d,
        GOOD_CASE.replace("    title: Recording returns the new record's id\n", ""),
        "{path}:2: case 'extra-record-returns-id': at (top level): 'title' is a required property",
    ),
    "invariant": lambda d: _one(
        d,
        GOOD_CASE.replace("invariant: anchor-captured-at-write", "invariant: no-such-rule"),
        "{path}:2: case 'extra-record-returns-id': at invariant: unknown invariant 'no-such-rule'",
    ),
    "op": lambda d: _one(
        d,
        GOOD_CASE.replace("op: memory.record", "op: memory.remember"),
        "{path}:8: case 'extra-record-returns-id': at steps[0].op: ",
        "'memory.remember'",
    ),
    "yaml": lambda d: _one(d, "cases: [\n", "{path}:2: is not valid YAML"),
    "ref": lambda d: _one(
        d,
        GOOD_CASE.replace("expect: {id: 1}", "expect: {id: {$ref: nothing}}"),
        "{path}:8: case 'extra-record-returns-id': at steps[0]: "
        "refers to 'nothing', which no earlier step saves",
    ),
    "duplicate": lambda d: PlantedCases(
        [_write(d / "a.yaml", GOOD_CASE), _write(d / "b.yaml", GOOD_CASE)],
        f"{d / 'b.yaml'}:2: case 'extra-record-returns-id': duplicate case id, "
        f"first defined at {d / 'a.yaml'}:2",
    ),
    "digits": lambda d: _one(
        d,
        GOOD_CASE.replace("expect: {id: 1}", "expect: {id: " + "9" * 5_000 + "}"),
        "{path}:10: is not valid YAML: '" + "9" * 40 + "'... (5000 characters) is no int YAML",
    ),
    "deep": lambda d: _one(
        d, "cases: " + "[" * 900 + "]" * 900 + "\n", "{path}: nests lists or mappings too deeply"
    ),
    "date": lambda d: _one(
        d,
        GOOD_CASE.replace("expect: {id: 1}", "expect: {id: 2026-02-30}"),
        "{path}:10: is not valid YAML: an unquoted date or time is no JSON value",
    ),
    "bool": lambda d: _one(
        d,
        GOOD_CASE.replace("expect: {id: 1}", "expect: {id: !!bool maybe}"),
        "{path}:10: is not valid YAML: 'maybe' is no bool YAML can make",
    ),
    "registry": lambda d: PlantedCases(
        [
            _write(d / "invariants.yaml", "invariants:\n  - tag: Bad Tag\n"),
            _write(d / "a.yaml", GOOD_CASE),
        ],
        f"{d / 'invariants.yaml'}:2: at invariants[0]: missing",
    ),
}
"""Each fault ``roteiro-lint-cases`` must report, by name: the files to pass
and the start of the line it must print."""


def plant_cases(folder: Path, how: str) -> PlantedCases:
    return BAD_CASES[how](folder)


# --- A backend, sound or broken ----------------------------------------------

BACKEND_MODULE = '''\
from roteiro_memory.stores.model import ModelStore


class Broken(ModelStore):
    """Hands out ids one hundred past the ones it stores."""

    def record(self, *args, **kwargs):
        return super().record(*args, **kwargs) + 100


def broken():
    return Broken()


def sound():
    return ModelStore()
'''
"""A repository's backend module: ``sound`` passes the suite, ``broken`` fails
every case that checks a recorded id."""


def plant_backend_repo(folder: Path) -> Path:
    """A folder holding ``mybackend.py`` and ``cases/extra.yaml``."""
    _write(folder / "mybackend.py", BACKEND_MODULE)
    _write(folder / "cases" / "extra.yaml", GOOD_CASE)
    return folder
