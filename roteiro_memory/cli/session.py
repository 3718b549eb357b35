"""The repository and store one command works on: found from ``--db``,
``ROTEIRO_MEMORY_DB`` or the clone, opened lazily, and synced with the working
tree before a read.  The command line and the MCP server share it, so an agent
sees exactly the store and anchor states a person sees."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from roteiro_memory.cli.output import warn
from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.repo.graph import (
    PY_PREFIX,
    GitError,
    Repo,
    SyncReport,
    find_repo,
    graph_blobs,
    resolve_tree,
    rev_graph,
    sync,
    touched_keys,
)
from roteiro_memory.repo.location import locate, prepare
from roteiro_memory.semantics import AnchorFilter
from roteiro_memory.store import Graph, Store
from roteiro_memory.stores.naming import parse_store_name
from roteiro_memory.stores.sqlite.migrations import SCHEMA_VERSION
from roteiro_memory.stores.sqlite.store import SQLiteStore

if TYPE_CHECKING:
    from roteiro_memory.cli.anchors import AnchorSpec

__all__ = ["Session", "anchor_filter"]


class Session:
    """The repository and store one command works on, found and opened lazily."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._repo: Repo | None = None
        self._looked = False
        self._store: Store | None = None
        self.synced: SyncReport | None = None

    @property
    def repo(self) -> Repo | None:
        if not self._looked:
            self._repo = find_repo()
            self._looked = True
        return self._repo

    def require_repo(self, what: str) -> Repo:
        repo = self.repo
        if repo is None:
            raise GitError(f"{what} needs a git repository: run it inside one")
        return repo

    def _location_repo(self) -> Path | None:
        if getattr(self.args, "db", None) is None and "ROTEIRO_MEMORY_DB" not in os.environ:
            repo = self.repo
            return repo.common_dir if repo is not None else None
        return None

    def store_path(self) -> Path:
        return locate(getattr(self.args, "db", None), os.environ, self._location_repo()).path

    def dsn(self) -> str | None:
        """The PostgreSQL DSN the store is named by (``--db`` or
        ``ROTEIRO_MEMORY_DB``), or None when it is a file."""
        named = getattr(self.args, "db", None)
        if named is None:
            named = os.environ.get("ROTEIRO_MEMORY_DB")
        if named is None:
            return None
        name = parse_store_name("sqlite", named)
        return name.target if name is not None and name.kind == "postgres" else None

    def store(self, *, must_exist: bool = False) -> Store:
        if self._store is None and self.dsn() is not None:
            from roteiro_memory.stores.postgres.store import PostgresStore

            self._store = PostgresStore(str(self.dsn()))
        if self._store is None:
            location = locate(getattr(self.args, "db", None), os.environ, self._location_repo())
            if must_exist and not location.path.exists():
                raise StoreUnavailable(
                    f"no store at {location.path} ({location.origin}): nothing has been "
                    "recorded there yet"
                )
            prepare(location)
            store = SQLiteStore(location.path)
            self._store = store
            if store.migrated is not None:
                # Any command, reads too, migrates an older store; it says so.
                version, names = store.migrated
                warn(
                    f"{location.path}: migrated the store from schema version {version} to "
                    f"{SCHEMA_VERSION} ({', '.join(names)}); earlier versions of "
                    "roteiro-memory cannot open it now"
                )
        return self._store

    def sync(self, *, announce: bool = False) -> SyncReport | None:
        """Bring the store's graph up to the working tree, unless ``--no-sync``
        or there is no repository to sync from."""
        if getattr(self.args, "no_sync", False):
            return None
        repo = self.repo
        if repo is None:
            return None
        store = self.store()
        if not sys.stderr.isatty():
            report = sync(store, repo)
        else:
            from roteiro_memory.cli.render import ProgressBar

            parse_bar, hash_bar = ProgressBar("parsing"), ProgressBar("hashing")
            try:
                report = sync(store, repo, parse_bar, hash_bar)
            finally:
                hash_bar.close()
                parse_bar.close()
        for path, problem in report.unparsable:
            warn(f"{path} {problem}")
        self.synced = report
        return report

    def check_revs(self, **revs: str | None) -> None:
        """Refuse an unknown revision before anything is synced or written."""
        for option, rev in revs.items():
            if rev is not None:
                resolve_tree(self.require_repo(f"--{option}"), rev)

    def graph_for(self, rev: str | None) -> Graph | None:
        """The graph of ``rev`` to resolve anchors against; None for the store's."""
        if rev is None:
            return None
        repo = self.require_repo("--rev")
        _, graph = rev_graph(repo, rev, self.store().export_graph())
        return graph

    def touched(self, rev: str) -> set[str]:
        """Node keys that differ between ``rev`` and the graph as last synced."""
        repo = self.require_repo("--touched")
        working = self.store().export_graph()
        _, before = rev_graph(repo, rev, working)
        return touched_keys(before, graph_blobs(working))

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


# --- Anchor filters ---------------------------------------------------------


def anchor_filter(
    spec: AnchorSpec | None, touched: Collection[str] | None = None
) -> tuple[str | None, AnchorFilter | None]:
    """How ``--anchor`` and ``--touched`` filter, as the store takes them: an
    exact key, or the anchors to keep -- for a bare path the file and every
    symbol in it; with ``touched``, only the touched keys among those."""
    key: str | None = None
    anchors: AnchorFilter | None = None
    if spec is not None and spec.path is not None and spec.qualname is None:
        anchors = AnchorFilter(keys=frozenset({spec.key}), prefixes=(f"{PY_PREFIX}{spec.path}::",))
    elif spec is not None:
        key = spec.key
    if touched is None:
        return key, anchors
    if anchors is None:
        anchors = AnchorFilter(keys=frozenset({key} if key is not None else touched))
    return None, anchors.narrowed(touched)
