"""The PostgreSQL schema, as append-only migrations.

Each migration is named, applied in order inside one schema, and recorded in
that schema's ``schema_migrations`` in the same transaction that applies it.
A released migration is never edited: a fix is a new one.

Where it departs from the SQLite schema (:mod:`roteiro_memory.stores.sqlite.migrations`),
and why:

* Every column holding text a caller chose (scopes, bodies, keys, paths,
  blobs, payloads, the tree witness) is ``bytea`` holding UTF-8.  PostgreSQL's
  ``text`` cannot hold U+0000, which the contract allows, and ``bytea``
  compares byte by byte, which for UTF-8 is code point order -- the order
  Python sorts strings in -- whatever the database's collation.  A token is
  a substring of a text exactly when its UTF-8 is a substring of the text's
  UTF-8, so matching in bytes is matching in characters.
* Ids are assigned by the store from ``agent_memory_ids``, not by a sequence:
  a sequence hands ids out before commit, so concurrent writers would commit
  them out of order.  The counter's row lock serialises record writes, so ids
  become visible in increasing order, and it survives ``forget`` so an id is
  never handed out twice.
* Terms of the term index (``memory_segments``, ``memory_cells``) and a
  recent record's terms are ``bytea`` too, for the same byte order.
* A record is found by its anchor through a hash index, not a B-tree,
  whose entry holds about 2,700 bytes: an anchor takes every length PROTOCOL
  allows (10).  The schema versions are PostgreSQL's own from 10 on.  For
  the same reason a graph node and a cache entry are unique by their key's
  SHA-256 and found through a hash index, so a key takes any length (11).
* ``created_at`` and ``superseded_at`` are text in the protocol's UTC
  ``YYYY-MM-DD HH:MM:SS`` form, so an export reproduces them exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from roteiro_memory.semantics import DEFAULT_BASE_CONFIDENCE, KIND_TOKENS
from roteiro_memory.stores.sql import index
from roteiro_memory.stores.sql.dialects import POSTGRES

__all__ = ["BUILDS", "MIGRATIONS", "NOW_TEXT", "SCHEMA_VERSION", "STEPS"]

_KINDS = ", ".join(f"'{token}'" for token in KIND_TOKENS)

NOW_TEXT = POSTGRES.now
"""The current UTC time as the protocol writes timestamps."""

MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (
        1,
        "graph nodes and the tree witness",
        """
        CREATE TABLE nodes (
            key  bytea PRIMARY KEY,
            kind bytea,
            name bytea,
            path bytea,
            blob bytea
        );
        CREATE TABLE sync_state (
            id   integer PRIMARY KEY CHECK (id = 0),
            tree bytea
        );
        """,
    ),
    (
        2,
        "agent_memory: the episodic tier, never auto-evicted, and its id counter",
        f"""
        CREATE TABLE agent_memory (
            id            bigint PRIMARY KEY CHECK (id > 0),
            scope         bytea NOT NULL,
            kind          text NOT NULL CHECK (kind IN ({_KINDS})),
            anchor_key    bytea,
            anchor_blob   bytea,
            anchor_path   bytea,
            body          bytea NOT NULL,
            confidence    double precision
                          CHECK (confidence IS NULL OR confidence BETWEEN 0.0 AND 1.0),
            tree          bytea,
            created_at    text NOT NULL DEFAULT {NOW_TEXT},
            superseded_by bigint REFERENCES agent_memory(id),
            superseded_at text,
            search        bytea NOT NULL
        );
        CREATE INDEX idx_mem_anchor ON agent_memory(anchor_key);
        CREATE INDEX idx_mem_live ON agent_memory(scope, superseded_by, id DESC);
        CREATE INDEX idx_mem_superseded_by ON agent_memory(superseded_by);
        CREATE TABLE agent_memory_ids (
            id      integer PRIMARY KEY CHECK (id = 0),
            last_id bigint NOT NULL
        );
        INSERT INTO agent_memory_ids (id, last_id) VALUES (0, 0);
        """,
    ),
    (
        3,
        "agent_cache: the transient tier, bounded by bytes, and its clock",
        """
        CREATE TABLE agent_cache (
            key         bytea PRIMARY KEY,
            fingerprint bytea NOT NULL,
            bytes       bigint NOT NULL,
            generation  bigint NOT NULL,
            last_used   bigint NOT NULL,
            hits        bigint NOT NULL DEFAULT 0,
            anchor_key  bytea,
            anchor_blob bytea,
            json        bytea NOT NULL
        );
        CREATE INDEX idx_cache_evict ON agent_cache(last_used);
        CREATE TABLE agent_cache_clock (
            id         integer PRIMARY KEY CHECK (id = 0),
            ticks      bigint NOT NULL,
            generation bigint NOT NULL
        );
        INSERT INTO agent_cache_clock (id, ticks, generation) VALUES (0, 0, 0);
        """,
    ),
    (
        4,
        "memory_terms: the term index memory.search ranks by, built from the records",
        """
        CREATE TABLE memory_terms (
            record_id bigint NOT NULL REFERENCES agent_memory(id),
            term      bytea NOT NULL,
            tf        bigint NOT NULL CHECK (tf > 0),
            length    bigint NOT NULL CHECK (length >= tf),
            PRIMARY KEY (term, record_id)
        );
        CREATE INDEX idx_terms_record ON memory_terms(record_id);
        CREATE TABLE memory_term_df (
            term bytea PRIMARY KEY,
            live bigint NOT NULL
        );
        CREATE TABLE memory_stats (
            id         integer PRIMARY KEY CHECK (id = 0),
            records    bigint NOT NULL,
            live       bigint NOT NULL,
            live_terms bigint NOT NULL
        );
        INSERT INTO memory_stats (id, records, live, live_terms) VALUES (0, 0, 0, 0);
        """,
    ),
    (
        5,
        "idx_mem_confidence: live records in recall's bound order, for a top-k that stops early",
        f"""
        CREATE INDEX idx_mem_confidence
            ON agent_memory((COALESCE(confidence, {DEFAULT_BASE_CONFIDENCE!r})) DESC, id DESC)
            WHERE superseded_by IS NULL;
        """,
    ),
    (
        6,
        "the term index in cells: chunks of live records' postings, cells' counts, recent records",
        """
        DROP TABLE memory_terms, memory_term_df, memory_stats;
        CREATE TABLE memory_chunks (
            term     bytea NOT NULL,
            cell     integer NOT NULL,
            first_id bigint NOT NULL,
            postings bytea NOT NULL,
            PRIMARY KEY (term, cell, first_id)
        );
        CREATE TABLE memory_cells (
            term     bytea NOT NULL,
            cell     integer NOT NULL,
            postings bigint NOT NULL CHECK (postings > 0),
            max_tf   bigint NOT NULL CHECK (max_tf > 0),
            tail     bytea NOT NULL,
            PRIMARY KEY (term, cell)
        );
        CREATE TABLE memory_recent (
            record_id bigint PRIMARY KEY REFERENCES agent_memory(id),
            cell      integer NOT NULL,
            length    bigint NOT NULL CHECK (length > 0),
            terms     bytea NOT NULL
        );
        CREATE TABLE memory_stats (
            id         integer PRIMARY KEY CHECK (id = 0),
            records    bigint NOT NULL,
            live       bigint NOT NULL,
            live_terms bigint NOT NULL,
            tokenizer  text NOT NULL
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
            cell    integer NOT NULL,
            segment integer NOT NULL CHECK (segment >= 0),
            ids     bytea NOT NULL,
            lengths bytea NOT NULL,
            PRIMARY KEY (cell, segment)
        );
        CREATE TABLE memory_segments (
            term     bytea NOT NULL,
            cell     integer NOT NULL,
            segment  integer NOT NULL CHECK (segment >= 0),
            postings bytea NOT NULL,
            PRIMARY KEY (term, cell, segment)
        );
        """,
    ),
    (
        9,
        "the term index holds a term over 1,024 bytes under a key of its own",
        # Checked from now on (the step keys the terms held): a process of an
        # earlier version still open on the store fails loudly when it adds
        # a long term as it is (not when it removes one's postings, which
        # finds no row: such a process must be restarted).
        """
        ALTER TABLE memory_cells ADD CONSTRAINT memory_cells_term_keyed
            CHECK (octet_length(term) <= 1024) NOT VALID;
        ALTER TABLE memory_segments ADD CONSTRAINT memory_segments_term_keyed
            CHECK (octet_length(term) <= 1024) NOT VALID;
        """,
    ),
    (
        10,
        "records are found by anchor through a hash index, which takes an anchor of any length",
        # A B-tree entry holds about 2,700 bytes, so an anchor longer than
        # that which did not compress was refused, where PROTOCOL takes any
        # up to 4,096.  Only equality finds a record by its anchor here (a
        # prefix filter reads the rows), which a hash index serves.
        """
        DROP INDEX idx_mem_anchor;
        CREATE INDEX idx_mem_anchor ON agent_memory USING hash (anchor_key);
        """,
    ),
    (
        11,
        "graph nodes and cache entries unique by their key's SHA-256: a key of any length",
        # The primary keys were B-trees on the key itself, whose entry holds
        # about 2,700 bytes: a longer key that did not compress was refused,
        # where PROTOCOL bounds neither.  A unique index on the SHA-256 keeps
        # one row a key (two keys sharing a SHA-256 is beyond concern) and is
        # what an upsert names (Dialect.keyed); a hash index finds a key.
        # A process of an earlier version still open on the store names the
        # key itself in its upserts, which no unique index matches now: its
        # node and cache writes fail (the driver's error), until restarted.
        """
        ALTER TABLE nodes DROP CONSTRAINT nodes_pkey;
        ALTER TABLE nodes ALTER COLUMN key SET NOT NULL;
        CREATE UNIQUE INDEX idx_nodes_key_sha256 ON nodes (sha256(key));
        CREATE INDEX idx_nodes_key ON nodes USING hash (key);
        ALTER TABLE agent_cache DROP CONSTRAINT agent_cache_pkey;
        ALTER TABLE agent_cache ALTER COLUMN key SET NOT NULL;
        CREATE UNIQUE INDEX idx_cache_key_sha256 ON agent_cache (sha256(key));
        CREATE INDEX idx_cache_key ON agent_cache USING hash (key);
        """,
    ),
    (
        12,
        "roteiro_product: the IEEE product of two factors, where PostgreSQL would refuse a 0",
        # Recall's score took the rare products near the bottom of the double
        # range (a tie at 2**-1075, a subnormal confidence) through scalar
        # subqueries binding each operand once, which the planner plans for
        # every statement, used or not: 6 ms of planning a recall, and their
        # cost counted for every row passed the JIT thresholds.  A function
        # binds its operands as variables, and is called by those rows only.
        f"""
        CREATE FUNCTION roteiro_product(a double precision, b double precision)
            RETURNS double precision LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $body$
        DECLARE
            x double precision := a * {2.0**537!r};
            y double precision := b * {2.0**537!r};
            s double precision;
            x_high double precision;
            y_high double precision;
        BEGIN
            IF a = 0 OR b = 0 THEN
                RETURN 0;
            END IF;
            IF a >= {2.0**-511!r} AND b >= {2.0**-511!r} THEN
                RETURN a * b;
            END IF;
            s := x * y;
            IF s <> 0.5 THEN
                RETURN CASE WHEN s > 0.5 THEN a * b ELSE 0 END;
            END IF;
            x_high := {134217729.0!r} * x - ({134217729.0!r} * x - x);
            y_high := {134217729.0!r} * y - ({134217729.0!r} * y - y);
            IF (((x_high * y_high - s) + x_high * (y - y_high)) + (x - x_high) * y_high)
                    + (x - x_high) * (y - y_high) > 0 THEN
                RETURN a * b;
            END IF;
            RETURN 0;
        END
        $body$;
        """,
    ),
    (
        13,
        "graph nodes found by a prefix of their key through a B-tree on its first bytes",
        # Since 11 a key is found by a hash index, which finds no range: the
        # nodes of a file or a folder (a prefix) were read by scanning every
        # node.  A key's first bytes fit a B-tree entry whatever its length
        # (Dialect.key_range).  The 256 is written here, not read from
        # KEY_START_BYTES: a store migrated keeps the index this text made.
        """
        CREATE INDEX idx_nodes_key_start ON nodes (substring(key FROM 1 FOR 256));
        """,
    ),
)

BUILDS: dict[int, Callable[[Any], None]] = {
    6: lambda conn: index.rebuild(conn, POSTGRES),
    7: lambda conn: index.reindex_if_stale(conn, POSTGRES),
    8: lambda conn: index.rebuild(conn, POSTGRES),
}
"""What a migration derives from the stored data, as SQLite's do
(:data:`roteiro_memory.stores.sqlite.migrations.BUILDS`): only the newest
pending build runs, once every pending migration's statements have."""

STEPS: dict[int, Callable[[Any], None]] = {9: lambda conn: index.key_long_terms(conn, POSTGRES)}
"""What a migration changes in the index in place, after any build, as
SQLite's do (:data:`roteiro_memory.stores.sqlite.migrations.STEPS`)."""

SCHEMA_VERSION = MIGRATIONS[-1][0]
"""The newest schema this version knows; a schema above it is refused."""
