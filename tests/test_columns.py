"""The one column list: both schemas hold exactly its columns, and what is
derived from it says the same."""

from __future__ import annotations

import re
from pathlib import Path

from roteiro_memory.stores.postgres.migrations import MIGRATIONS as PG_MIGRATIONS
from roteiro_memory.stores.postgres.migrations import SCHEMA_VERSION as PG_SCHEMA_VERSION
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql.columns import CACHE_COLS, RECORD_COLS, SNAPSHOT_TABLES
from roteiro_memory.stores.sqlite.migrations import MIGRATIONS as SQLITE_MIGRATIONS
from roteiro_memory.stores.sqlite.migrations import SCHEMA_VERSION
from roteiro_memory.stores.sqlite.store import SQLiteStore
from roteiro_memory.transfer import EXPORT_SCHEMA_VERSION


def test_columns_are_the_sqlite_schemas_own(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "m.db") as store:
        for table, columns in cols.TABLES.items():
            info = store.connection.execute(f"PRAGMA table_info({table})").fetchall()
            # (name, may be null); a primary key is never null, however declared.
            stored = [(row[1], not row[3] and not row[5]) for row in info]
            wanted = [(c.name, c.nullable) for c in columns]
            assert [s for s in stored if s[0] != "applied_at"] == wanted, table


def test_columns_give_the_select_lists_and_snapshot_tables() -> None:
    assert RECORD_COLS.split(", ")[:-2] == [f"m.{n}" for n in cols.names(cols.RECORD_READ)]
    assert CACHE_COLS.split(", ")[:-2] == [f"c.{n}" for n in cols.names(cols.CACHE_READ)]
    assert [table for table, _, _ in SNAPSHOT_TABLES] == [
        table for table in cols.TABLES if table not in cols.INDEX_LAYOUT
    ]
    assert "search" not in cols.names(cols.RECORD_READ)


def test_columns_export_schema_version_is_both_stores() -> None:
    """The stores' schemas moved past the export's only by derived data (the
    term index, rebuilt on import) and by indexes, so the export format is
    unchanged, on a schema version of each backend's own."""
    assert EXPORT_SCHEMA_VERSION == 3
    # PostgreSQL 10-11 and 13 keys' indexes, 12 a function
    assert (SCHEMA_VERSION, PG_SCHEMA_VERSION) == (9, 13)
    for migrations in (SQLITE_MIGRATIONS, PG_MIGRATIONS):
        later = "".join(sql for version, _, sql in migrations if version > EXPORT_SCHEMA_VERSION)
        # Earlier term indexes, dropped since (by 6 and 8): derived data too.
        retired = set(re.findall(r"DROP TABLE (\w+)", later)) | {
            table.strip() for table in re.findall(r"DROP TABLE ([\w, ]+);", later)[0].split(",")
        }
        for version, _, sql in migrations:
            if version > EXPORT_SCHEMA_VERSION:
                created = re.findall(r"CREATE TABLE (\w+)", sql)
                # Keys and constraints aside, which leave every column as it was.
                kept = r"DROP CONSTRAINT|ADD CONSTRAINT|ALTER COLUMN \w+ SET NOT NULL"
                altered = re.findall(rf"ALTER TABLE (\w+) (?!{kept})", sql)
                assert set(created) <= set(cols.DERIVED_TABLES) | retired, version
                assert set(altered) <= set(cols.DERIVED_TABLES), version
        assert retired - set(cols.DERIVED_TABLES) == {
            "memory_terms",
            "memory_term_df",
            "memory_chunks",
        }


def test_columns_decode_by_name() -> None:
    assert cols.decode(("a", "b"), (1, 2)) == {"a": 1, "b": 2}
