"""Stores as a failing disk, or a stray write, leaves them."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def scribble_on_migrations(path: Path) -> None:
    """Overwrite 50 bytes of the rows at the end of the page holding
    ``schema_migrations`` with 0x11, as a failing disk or a stray write
    leaves it: the first migration's version then reads as 17 (a newer
    schema's, to a reader that believes it), its row cannot be read whole,
    and SQLite's integrity check finds "Rowid 17 out of order" -- the same
    each run (a scribble over the page's cell pointers makes SQLite read
    past the page, and what it finds varies)."""
    conn = sqlite3.connect(path)
    try:
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        root = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'schema_migrations'"
        ).fetchone()[0]
    finally:
        conn.close()
    assert not Path(f"{path}-wal").exists(), "the log would hold the page"
    with open(path, "r+b") as handle:
        handle.seek(root * page - 100)
        handle.write(b"\x11" * 50)
