"""Opening stores by name."""

from __future__ import annotations

from roteiro_memory import SQLiteStore, open_store


def test_a_temporary_sqlite_store_leaves_nothing_behind() -> None:
    """``open_store("sqlite")`` with no file works in a scratch folder that
    closing the store removes, so protocol servers and suites leak nothing."""
    store = open_store("sqlite")
    assert isinstance(store, SQLiteStore)
    store.record("lesson", "kept while open")
    folder = store.path.parent
    assert folder.is_dir()
    store.close()
    assert not folder.exists()
