"""Stores as an earlier version left them, made from a current one with the
released migrations' own text, so a test can open one and watch it migrate."""

from __future__ import annotations

import functools
from typing import Any
from unittest import mock

from roteiro_memory import lexical
from roteiro_memory.stores.postgres.migrations import MIGRATIONS as PG_MIGRATIONS
from roteiro_memory.stores.sql import index
from roteiro_memory.stores.sql.expressions import POSTGRES, SQLITE, Dialect
from roteiro_memory.stores.sqlite.migrations import MIGRATIONS as SQLITE_MIGRATIONS

CELL_TABLES = ("memory_chunks", "memory_cells", "memory_recent", "memory_stats")
"""The term index migration 6 creates, in place of 4's."""


PREVIOUS_TOKENIZER = lexical.Tokenizer(
    split_case=False, split_digits=False, keep_joined=False, join_query=False
)
"""The tokenizer migration 6 indexed with (``punct+fold+stop+stem``)."""


def _indexed_by_previous_tokenizer(conn: Any, d: Dialect) -> None:
    """The term index as migration 6 built it: every posting, and the name in
    ``memory_stats``, from :data:`PREVIOUS_TOKENIZER`."""
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
    (3, 4, 5 or 6): at 6, the index the previous tokenizer built; before,
    the term index of 4 in place of 6's (empty: 6 drops it), and no recall
    index before 5."""
    conn.execute("DELETE FROM schema_migrations WHERE version > ?", (version,))
    if version == 6:
        _indexed_by_previous_tokenizer(conn, SQLITE)
        return
    for table in CELL_TABLES:
        conn.execute(f"DROP TABLE {table}")
    if version >= 4:
        for statement in _statements(SQLITE_MIGRATIONS, 4):
            conn.execute(statement)
    if version < 5:
        conn.execute("DROP INDEX idx_mem_confidence")


def postgres_back_to(conn: Any, version: int) -> None:
    """:func:`sqlite_back_to` for a PostgreSQL store's connection."""
    conn.execute("DELETE FROM schema_migrations WHERE version > %s", (version,))
    if version == 6:
        _indexed_by_previous_tokenizer(conn, POSTGRES)
        return
    conn.execute(f"DROP TABLE {', '.join(CELL_TABLES)}")
    if version >= 4:
        for statement in _statements(PG_MIGRATIONS, 4):
            conn.execute(statement)
    if version < 5:
        conn.execute("DROP INDEX idx_mem_confidence")
