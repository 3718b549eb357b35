"""The SQLite schema, as append-only migrations.

Each migration is named, applied in order, and recorded in
``schema_migrations`` in the same transaction that applies it.  A released
migration is never edited: a fix is a new one.

Departures from the seed's proposed shapes, each for a reason:

* ``nodes.blob`` is the seed's ``blob_hash``, named as PROTOCOL names it.
* ``agent_cache.json`` is the last column, so reading the narrow columns the
  sweep needs never walks a payload's overflow pages.
* ``agent_memory.search`` holds the lower-cased body, anchor key and anchor
  path (:func:`roteiro_memory.semantics.search_text`), computed once at write,
  so queries are matched in SQL by the same Unicode rule as everywhere else.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

from roteiro_memory.semantics import DEFAULT_BASE_CONFIDENCE, KIND_TOKENS
from roteiro_memory.standing import Standing, standing

__all__ = [
    "APPLICATION_ID",
    "BUILDS",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "SQLITE_HEADER",
    "STEPS",
    "TERM_KEYED_TRIGGERS",
    "created_objects",
    "created_tables",
    "recognised",
    "stored_standing",
]

SQLITE_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file."""

APPLICATION_ID = int.from_bytes(b"RoMm", "big")
"""``PRAGMA application_id`` of a roteiro-memory store: stamped in the same
transaction as a migration, so a file carrying it is ours.  (Not a migration:
it lives in the file header, not in the schema.)  A store an earlier version
wrote carries none and is recognised by its exact schema instead
(:func:`recognised`)."""

_KINDS = ", ".join(f"'{token}'" for token in KIND_TOKENS)

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "graph nodes and the tree witness",
        """
        CREATE TABLE nodes (
            key  TEXT PRIMARY KEY,
            kind TEXT,
            name TEXT,
            path TEXT,
            blob TEXT
        );
        CREATE TABLE sync_state (
            id   INTEGER PRIMARY KEY CHECK (id = 0),
            tree TEXT
        );
        """,
    ),
    (
        2,
        "agent_memory: the episodic tier, never auto-evicted",
        f"""
        CREATE TABLE agent_memory (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            scope         TEXT NOT NULL,
            kind          TEXT NOT NULL CHECK (kind IN ({_KINDS})),
            anchor_key    TEXT,
            anchor_blob   TEXT,
            anchor_path   TEXT,
            body          TEXT NOT NULL,
            confidence    REAL CHECK (confidence IS NULL OR confidence BETWEEN 0.0 AND 1.0),
            tree          TEXT,
            created_at    TEXT NOT NULL DEFAULT (datetime('now')),
            superseded_by INTEGER REFERENCES agent_memory(id),
            superseded_at TEXT,
            search        TEXT NOT NULL
        );
        CREATE INDEX idx_mem_anchor ON agent_memory(anchor_key);
        CREATE INDEX idx_mem_live ON agent_memory(scope, superseded_by, id DESC);
        CREATE INDEX idx_mem_superseded_by ON agent_memory(superseded_by);
        """,
    ),
    (
        3,
        "agent_cache: the transient tier, bounded by bytes, and its clock",
        """
        CREATE TABLE agent_cache (
            key         TEXT PRIMARY KEY,
            fingerprint TEXT NOT NULL,
            bytes       INTEGER NOT NULL,
            generation  INTEGER NOT NULL,
            last_used   INTEGER NOT NULL,
            hits        INTEGER NOT NULL DEFAULT 0,
            anchor_key  TEXT,
            anchor_blob TEXT,
            json        TEXT NOT NULL
        );
        CREATE INDEX idx_cache_evict ON agent_cache(last_used);
        CREATE TABLE agent_cache_clock (
            id         INTEGER PRIMARY KEY CHECK (id = 0),
            ticks      INTEGER NOT NULL,
            generation INTEGER NOT NULL
        );
        INSERT INTO agent_cache_clock (id, ticks, generation) VALUES (0, 0, 0);
        """,
    ),
    (
        4,
        "memory_terms: the term index memory.search ranks by, built from the records",
        """
        CREATE TABLE memory_terms (
            record_id INTEGER NOT NULL REFERENCES agent_memory(id),
            term      TEXT NOT NULL,
            tf        INTEGER NOT NULL CHECK (tf > 0),
            length    INTEGER NOT NULL CHECK (length >= tf),
            PRIMARY KEY (term, record_id)
        ) WITHOUT ROWID;
        CREATE INDEX idx_terms_record ON memory_terms(record_id);
        CREATE TABLE memory_term_df (
            term TEXT PRIMARY KEY,
            live INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE memory_stats (
            id         INTEGER PRIMARY KEY CHECK (id = 0),
            records    INTEGER NOT NULL,
            live       INTEGER NOT NULL,
            live_terms INTEGER NOT NULL
        );
        INSERT INTO memory_stats (id, records, live, live_terms) VALUES (0, 0, 0, 0);
        """,
    ),
    (
        5,
        "idx_mem_confidence: live records in recall's bound order, for a top-k that stops early",
        f"""
        CREATE INDEX idx_mem_confidence
            ON agent_memory(COALESCE(confidence, {DEFAULT_BASE_CONFIDENCE!r}) DESC, id DESC)
            WHERE superseded_by IS NULL;
        """,
    ),
    (
        6,
        "the term index in cells: chunks of live records' postings, cells' counts, recent records",
        """
        DROP INDEX idx_terms_record;
        DROP TABLE memory_terms;
        DROP TABLE memory_term_df;
        DROP TABLE memory_stats;
        CREATE TABLE memory_chunks (
            term     TEXT NOT NULL,
            cell     INTEGER NOT NULL,
            first_id INTEGER NOT NULL,
            postings BLOB NOT NULL,
            PRIMARY KEY (term, cell, first_id)
        ) WITHOUT ROWID;
        CREATE TABLE memory_cells (
            term     TEXT NOT NULL,
            cell     INTEGER NOT NULL,
            postings INTEGER NOT NULL CHECK (postings > 0),
            max_tf   INTEGER NOT NULL CHECK (max_tf > 0),
            tail     BLOB NOT NULL,
            PRIMARY KEY (term, cell)
        ) WITHOUT ROWID;
        CREATE TABLE memory_recent (
            record_id INTEGER PRIMARY KEY REFERENCES agent_memory(id),
            cell      INTEGER NOT NULL,
            length    INTEGER NOT NULL CHECK (length > 0),
            terms     TEXT NOT NULL
        );
        CREATE TABLE memory_stats (
            id         INTEGER PRIMARY KEY CHECK (id = 0),
            records    INTEGER NOT NULL,
            live       INTEGER NOT NULL,
            live_terms INTEGER NOT NULL,
            tokenizer  TEXT NOT NULL
        );
        INSERT INTO memory_stats (id, records, live, live_terms, tokenizer)
            VALUES (0, 0, 0, 0, 'punct+fold+stop+stem');
        """,
    ),
    (
        7,
        "the term index rebuilt when another tokenizer built it (identifiers split into words)",
        "",
    ),
    (
        8,
        "the term index in bitmaps: each cell's members, a term's postings in segments of them",
        """
        DROP TABLE memory_chunks;
        DELETE FROM memory_cells;
        CREATE TABLE memory_members (
            cell    INTEGER NOT NULL,
            segment INTEGER NOT NULL CHECK (segment >= 0),
            ids     BLOB NOT NULL,
            lengths BLOB NOT NULL,
            PRIMARY KEY (cell, segment)
        ) WITHOUT ROWID;
        CREATE TABLE memory_segments (
            term     TEXT NOT NULL,
            cell     INTEGER NOT NULL,
            segment  INTEGER NOT NULL CHECK (segment >= 0),
            postings BLOB NOT NULL,
            PRIMARY KEY (term, cell, segment)
        ) WITHOUT ROWID;
        """,
    ),
    (
        9,
        "the term index holds a term over 1,024 bytes under a key of its own",
        "",
    ),
)


def _build_term_index(conn: sqlite3.Connection) -> None:
    from roteiro_memory.stores.sql import index
    from roteiro_memory.stores.sql.dialects import SQLITE

    index.rebuild(conn, SQLITE)


def _reindex(conn: sqlite3.Connection) -> None:
    from roteiro_memory.stores.sql import index
    from roteiro_memory.stores.sql.dialects import SQLITE

    index.reindex_if_stale(conn, SQLITE)


BUILDS: dict[int, Callable[[sqlite3.Connection], None]] = {
    6: _build_term_index,
    7: _reindex,
    8: _build_term_index,
}
"""What a migration derives from the stored data, in the same transaction:
a store that had records before the term index (or before its present
layout) gets their postings.  A build derives the whole index from the
records, in this version's layout, so only the newest one pending runs,
once every pending migration's statements have (an older store takes them
all in one transaction): 7 builds again only an index another tokenizer
built, and 8 builds the index in the layout of members and segments."""


TERM_KEYED_TRIGGERS = tuple(
    (f"{table}_term_keyed_{event.split()[0].lower()}", table, event)
    for table in ("memory_cells", "memory_segments")
    for event in ("INSERT", "UPDATE OF term")
)
"""The triggers migration 9 creates, as ``(name, table, event)``: each
refuses a term over the key's size written as it is (an earlier version's
writer, still open on the store)."""


def _key_long_terms(conn: sqlite3.Connection) -> None:
    from roteiro_memory.stores.sql import index
    from roteiro_memory.stores.sql.dialects import SQLITE
    from roteiro_memory.stores.sql.postings import INDEX_TERM_BYTES

    index.key_long_terms(conn, SQLITE)
    # A process of an earlier version, open on the store before it migrated,
    # would go on writing long terms as they are: refused, it fails loudly.
    # Its removal of a long term's postings (a supersede, a forget) finds no
    # row under the term and is not refused: the migration's announcement
    # asks for such processes to be restarted, and the check reports what
    # one left.
    for name, table, event in TERM_KEYED_TRIGGERS:
        conn.execute(
            f"CREATE TRIGGER {name} BEFORE {event} ON {table}"
            f" WHEN length(CAST(NEW.term AS BLOB)) > {INDEX_TERM_BYTES}"
            f" BEGIN SELECT RAISE(ABORT, '{table}: a term over {INDEX_TERM_BYTES} bytes"
            " is held under its key since schema 9; this roteiro-memory is older than"
            " the store: upgrade it'); END"
        )


STEPS: dict[int, Callable[[sqlite3.Connection], None]] = {9: _key_long_terms}
"""What a migration changes in the index in place, after any build: 9 holds
a long term under its key (:func:`~roteiro_memory.stores.sql.postings.index_term`),
and refuses one held as it is (an earlier version's writer, still open,
adding one; its removals are not caught)."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The newest schema this version knows; a store above it is refused."""


def created_tables(versions: set[int]) -> set[str]:
    """The tables the migrations numbered ``versions`` create, with
    ``schema_migrations``: exactly the tables (other than SQLite's own) of a
    store at those migrations."""
    sql = "".join(body for version, _, body in MIGRATIONS if version in versions)
    dropped = set(re.findall(r"DROP TABLE (\w+)", sql))
    created = {table for table in re.findall(r"CREATE TABLE (\w+)", sql)}
    # A table dropped and created again (memory_stats, by 6) is there.
    recreated = {
        table
        for table in dropped
        if sql.rfind(f"CREATE TABLE {table} ") > sql.rfind(f"DROP TABLE {table};")
    }
    return {"schema_migrations", *(created - dropped), *recreated}


def created_objects() -> dict[str, tuple[str, str]]:
    """The indexes and triggers of a store at :data:`SCHEMA_VERSION`, by
    name, as ``(type, table)`` -- those its migrations create and none drops
    (SQLite's own, a key's, aside)."""
    sql = "".join(body for _, _, body in MIGRATIONS)
    dropped = set(re.findall(r"DROP INDEX (\w+)", sql))
    made = {
        name: ("index", table)
        for name, table in re.findall(r"CREATE INDEX (\w+)\s+ON (\w+)", sql)
        if name not in dropped
    }
    made.update((name, ("trigger", table)) for name, table, _ in TERM_KEYED_TRIGGERS)
    return made


def stored_standing(conn: sqlite3.Connection) -> Standing | None:
    """Where the store open on ``conn`` stands by its ``schema_migrations``
    (:func:`~roteiro_memory.standing.standing`), or None when it has none."""
    if not conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    ).fetchone():
        return None
    rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    return standing(rows, MIGRATIONS)


def recognised(conn: sqlite3.Connection) -> str | None:
    """Whether the database open on ``conn`` is a roteiro-memory store: one
    that carries :data:`APPLICATION_ID`, or an empty one, or one whose schema
    is exactly what an earlier version (which stamped no id) left --
    ``schema_migrations`` with our columns recording our first migrations by
    number and name, and exactly their tables (SQLite's own, such as
    ``sqlite_stat1`` after ANALYZE, aside).  None when it is; else why not,
    to follow "not a roteiro-memory store"."""
    stamp = conn.execute("PRAGMA application_id").fetchone()[0]
    if stamp == APPLICATION_ID:
        return None
    why = (
        f"(application id {stamp:#x}, not {APPLICATION_ID:#x}, and its tables and "
        "schema_migrations are not those of an earlier roteiro-memory)"
    )
    if stamp:
        return why
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not tables and conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0:
        return None  # a new, empty database
    if "schema_migrations" not in tables:
        return why
    columns = [row[1] for row in conn.execute("PRAGMA table_info(schema_migrations)")]
    if columns != ["version", "name", "applied_at"]:
        return why
    found = stored_standing(conn)
    if found is None or found.version == 0 or found.newer or found.damage is not None:
        return why  # a newer version stamps the id: what it records, an earlier one did not
    expected = created_tables({version for version, _, _ in MIGRATIONS if version <= found.version})
    if {t for t in tables if not t.startswith("sqlite_")} != expected:
        return why
    return None
