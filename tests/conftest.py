"""Shared fixtures: one ``store`` fixture parametrized over every backend.

A backend joins every store-level test by adding one entry to
:data:`BACKEND_FACTORIES`, as PostgreSQL did.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pg_server
import pytest
from hypothesis import HealthCheck, settings

from roteiro_memory.app.session import Session
from roteiro_memory.store import Store
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.sqlite.store import SQLiteStore

# Reproducible in CI, exploratory elsewhere.  No deadline: SQLite timings vary
# with the disk, and a slow example is not a wrong one.
settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")

BACKEND_FACTORIES: dict[str, Callable[[Path], Store]] = {
    "sqlite": lambda tmp: SQLiteStore(tmp / "memory.db"),
    "memory": lambda tmp: ModelStore(),
    "postgres": pg_server.throwaway_store,
}
"""How each backend is opened in a fresh temporary folder, by fixture id."""


@pytest.fixture(params=list(BACKEND_FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh, empty store of each backend in turn."""
    opened = BACKEND_FACTORIES[request.param](tmp_path)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SQLiteStore]:
    """A fresh SQLite store, for the tests that look beneath the contract."""
    opened = SQLiteStore(tmp_path / "memory.db")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    """A session in a fresh repository, as the agent tools are run in it."""
    from agent_repo import GitRepo

    from roteiro_memory.agents import tools

    repo = GitRepo(tmp_path / "repo")
    monkeypatch.chdir(repo.root)
    opened = Session(str(tmp_path / "m.db"))
    opened.spell = tools.spell
    return opened
