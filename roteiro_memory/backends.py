"""Opening a store by name: ``sqlite`` (the embedded default) or ``memory``."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.model import ModelStore
from roteiro_memory.sqlite import SQLiteStore
from roteiro_memory.store import Store

__all__ = ["BACKENDS", "open_store"]

BACKENDS = ("sqlite", "memory")
"""The backends this package ships."""


def open_store(backend: str = "sqlite", db: str | os.PathLike[str] | None = None) -> Store:
    """Open the store ``backend`` names.

    ``sqlite`` opens ``db``, creating it if absent, or a fresh file in a new
    temporary folder when ``db`` is None.  ``memory`` is the in-memory model and
    takes no ``db``.
    """
    if backend == "memory":
        if db is not None:
            raise StoreUnavailable("the memory backend keeps nothing on disk and takes no --db")
        return ModelStore()
    if backend == "sqlite":
        if db is None:
            db = Path(tempfile.mkdtemp(prefix="roteiro-memory-")) / "memory.db"
        return SQLiteStore(db)
    raise StoreUnavailable(f"unknown backend {backend!r}: expected one of {', '.join(BACKENDS)}")
