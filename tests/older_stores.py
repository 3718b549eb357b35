"""Stores as an earlier version left them, made from a current one with the
released migrations' own text, so a test can open one and watch it migrate."""

from __future__ import annotations

import functools
from typing import Any
from unittest import mock

from roteiro_memory import lexical
from roteiro_memory.stores.postgres.migrations import MIGRATIONS as PG_MIGRATIONS
from roteiro_memory.stores.sql import index
from roteiro_memory.stores.sql.dialects import Dialect
from roteiro_memory.stores.sqlite.migrations import MIGRATIONS as SQLITE_MIGRATIONS

LAYOUT_TABLES = ("memory_members", "memory_segments", "memory_cells")
"""The term index's tables migration 8 creates, in place of 6's chunks and cells."""
CELL_TABLES = ("memory_chunks", "memory_cells", "memory_recent", "memory_stats")
"""The term index migration 6 creates, in place of 4's."""


PREVIOUS_TOKENIZER = lexical.Tokenizer(
    split_case=False, split_digits=False, keep_joined=False, join_query=False
)
"""The tokenizer migration 6 indexed with (``punct+fold+stop+stem``)."""


def indexed_by_previous_tokenizer(conn: Any, d: Dialect) -> None:
    """The term index as the previous tokenizer builds it: every posting,
    and the name in ``memory_stats``, from :data:`PREVIOUS_TOKENIZER`."""
    terms = functools.partial(lexical.document_terms, tokenizer=PREVIOUS_TOKENIZER)
    with (
        mock.patch.object(lexical, "TOKENIZER", PREVIOUS_TOKENIZER),
        mock.patch.object(lexical, "document_terms", terms),
    ):
        index.rebuild(conn, d)


def _statements(migrations: Any, version: int) -> list[str]:
    sql = next(body for number, _, body in migrations if number == version)
    return [statement for statement in sql.split(";") if statement.strip()]


def sqlite_back_to(conn: Any, version: int) -> None:
    """Put the SQLite store open on ``conn`` back at migration ``version``
    (3 to 8): at 8, the layout as it is, without 9's refusal of a long term
    held as it is; at 6 and 7, the index in chunks (of no postings), built by the
    previous tokenizer at 6; before, the term index of 4 in place of 6's
    (empty: 6 drops it), and no recall index before 5."""
    conn.execute("DELETE FROM schema_migrations WHERE version > ?", (version,))
    if version < 9:
        for table in ("memory_cells", "memory_segments"):
            for event in ("insert", "update"):
                conn.execute(f"DROP TRIGGER IF EXISTS {table}_term_keyed_{event}")
    if version >= 8:
        return
    if version >= 6:
        tokenizer = PREVIOUS_TOKENIZER if version == 6 else lexical.TOKENIZER
        _sqlite_chunk_layout(conn, tokenizer.name)
        return
    for table in (*LAYOUT_TABLES, "memory_recent", "memory_stats"):
        conn.execute(f"DROP TABLE {table}")
    if version >= 4:
        for statement in _statements(SQLITE_MIGRATIONS, 4):
            conn.execute(statement)
    if version < 5:
        conn.execute("DROP INDEX idx_mem_confidence")


def _sqlite_chunk_layout(conn: Any, tokenizer: str) -> None:
    for table in LAYOUT_TABLES:
        conn.execute(f"DROP TABLE {table}")
    for statement in _statements(SQLITE_MIGRATIONS, 6):
        if "memory_chunks (" in statement or "memory_cells (" in statement:
            conn.execute(statement)
    conn.execute("DELETE FROM memory_recent")
    conn.execute("UPDATE memory_stats SET tokenizer = ?", (tokenizer,))


def postgres_back_to(conn: Any, version: int) -> None:
    """:func:`sqlite_back_to` for a PostgreSQL store's connection."""
    conn.execute("DELETE FROM schema_migrations WHERE version > %s", (version,))
    if version < 13:
        conn.execute("DROP INDEX idx_nodes_key_start")
    if version < 12:
        conn.execute("DROP FUNCTION roteiro_product")
    if version < 11:
        for table, index in (("nodes", "idx_nodes_key"), ("agent_cache", "idx_cache_key")):
            conn.execute(f"DROP INDEX {index}, {index}_sha256")
            conn.execute(f"ALTER TABLE {table} ADD PRIMARY KEY (key)")
    if version < 10:
        conn.execute("DROP INDEX idx_mem_anchor")
        conn.execute("CREATE INDEX idx_mem_anchor ON agent_memory(anchor_key)")
    if version < 9:
        for table in ("memory_cells", "memory_segments"):
            conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {table}_term_keyed")
    if version >= 8:
        return
    if version >= 6:
        tokenizer = PREVIOUS_TOKENIZER if version == 6 else lexical.TOKENIZER
        conn.execute(f"DROP TABLE {', '.join(LAYOUT_TABLES)}")
        for statement in _statements(PG_MIGRATIONS, 6):
            if "memory_chunks (" in statement or "memory_cells (" in statement:
                conn.execute(statement)
        conn.execute("DELETE FROM memory_recent")
        conn.execute("UPDATE memory_stats SET tokenizer = %s", (tokenizer.name,))
        return
    conn.execute(f"DROP TABLE {', '.join((*LAYOUT_TABLES, 'memory_recent', 'memory_stats'))}")
    if version >= 4:
        for statement in _statements(PG_MIGRATIONS, 4):
            conn.execute(statement)
    if version < 5:
        conn.execute("DROP INDEX idx_mem_confidence")
