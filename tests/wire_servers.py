"""Protocol servers for the wire tests, one per backend, and what their
answers must hold.

Each test starts ``python -m roteiro_memory protocol`` (once, the installed
``roteiro-memory`` script) and speaks to it line by line; every read has a
timeout (:mod:`wire`), so a hang fails instead of stalling the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from wire import WireServer, server_argv

BACKENDS = ("sqlite", "memory")


RECORD_FIELDS = (
    "id",
    "scope",
    "kind",
    "anchor",
    "anchor_state",
    "applies",
    "body",
    "confidence",
    "tree",
    "created_at",
    "superseded_by",
    "superseded_at",
)
"""A record's JSON fields, in the order every surface writes them;
``anchor`` is left out when the record has none."""
RECORD_KEYS = set(RECORD_FIELDS) - {"anchor"}


RECALLED_KEYS = {"score", "base_confidence", "anchor_penalty", "decay_factor", "age", "record"}


ENTRY_KEYS = {
    "key",
    "fingerprint",
    "json",
    "bytes",
    "generation",
    "last_used",
    "hits",
    "anchor_state",
}


ANCHOR_STATES = {"unanchored", "valid", "drifted", "vanished", "unverifiable"}


def argv_for(backend: str, folder: Path) -> list[str]:
    return server_argv(backend, folder / "memory.db" if backend == "sqlite" else None)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    return name


@pytest.fixture
def server(backend: str, tmp_path: Path) -> Iterator[WireServer]:
    """A fresh server of each backend, over a fresh store."""
    with WireServer(argv_for(backend, tmp_path)) as running:
        yield running


@pytest.fixture(scope="module", params=BACKENDS)
def shared(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[WireServer]:
    """One long-lived server per backend, holding a little of everything, for
    the many requests that must be refused without touching it."""
    folder = tmp_path_factory.mktemp(f"wire-{request.param}")
    with WireServer(argv_for(request.param, folder)) as running:
        running.ok("graph.put_nodes", {"nodes": [{"key": "n1", "path": "a.rs", "blob": "b1"}]})
        running.ok("graph.set_tree", {"tree": "t1"})
        running.ok("memory.record", {"kind": "lesson", "body": "first", "anchor": "n1"})
        running.ok("memory.record", {"kind": "decision", "body": "second", "supersedes": 1})
        running.ok("cache.put", {"key": "k", "fingerprint": "f", "json": "{}", "anchor": "n1"})
        running.ok("cache.get", {"key": "k"})
        yield running


def refused(server: WireServer, op: str, args: dict[str, Any] | None, kind: str) -> str:
    """Assert the request fails with ``kind`` and leaves the snapshot as it was;
    the error message."""
    before = server.ok("store.snapshot")
    error = server.error(op, args)
    assert error["kind"] == kind, error
    assert server.ok("store.snapshot") == before, f"{op} {args} changed the store"
    message: str = error["message"]
    return message


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
