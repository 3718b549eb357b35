"""The repository and store one command works on: found from ``--db``,
``ROTEIRO_MEMORY_DB`` or the clone, opened lazily, and synced with the working
tree before a read.  The command line and the MCP server share it, so an agent
sees exactly the store and anchor states a person sees.

Start-up: git machinery, the PostgreSQL module and the store are imported only
when a command gets that far (``docs/cli.md`` lists what each command loads)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Collection, Iterable

from roteiro_memory.cli.output import warn
from roteiro_memory.errors import GitError, UsageError
from roteiro_memory.repo.location import Location, locate, prepare
from roteiro_memory.repo.statcache import Place, StatCache, discover
from roteiro_memory.semantics import AnchorFilter, check_supersedes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.cli.anchors import AnchorSpec
    from roteiro_memory.repo.graph import Repo, SyncReport
    from roteiro_memory.results import MemoryRecord
    from roteiro_memory.semantics import ValidWrite
    from roteiro_memory.store import Graph, Store

__all__ = ["Session", "anchor_filter", "announce_migration"]


class Session:
    """The repository and store one command works on, found and opened lazily."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self._place: Place | None = None
        self._cache: StatCache | None = None
        self._repo: Repo | None = None
        self._looked = False
        self._located: Location | None = None
        self._store_file: str | None = None
        self._store: Store | None = None

    def place(self) -> Place | None:
        """Where the repository is: from its stat cache when that can be
        trusted (:func:`~roteiro_memory.repo.statcache.discover`, no git
        run), else from git; None outside any."""
        if not self._looked:
            self._looked = True
            self._cache = discover(os.environ)
            if self._cache is not None:
                self._place = self._cache.place
            else:
                from roteiro_memory.repo.graph import find_repo

                repo = find_repo()
                if repo is not None:
                    self._repo = repo
                    self._place = Place(
                        root=str(repo.root),
                        git_dir=str(repo.git_dir),
                        common_dir=str(repo.common_dir),
                        object_format=repo.object_format,
                    )
        return self._place

    @property
    def repo(self) -> Repo | None:
        place = self.place()
        if self._repo is None and place is not None:
            from pathlib import Path

            from roteiro_memory.repo.graph import Repo

            self._repo = Repo(
                root=Path(place.root),
                common_dir=Path(place.common_dir),
                object_format=place.object_format,
                git_dir=Path(place.git_dir),
            )
        return self._repo

    def require_repo(self, what: str) -> Repo:
        repo = self.repo
        if repo is None:
            raise GitError(f"{what} needs a git repository: run it inside one")
        return repo

    def _location_repo(self) -> str | None:
        if getattr(self.args, "db", None) is None and "ROTEIRO_MEMORY_DB" not in os.environ:
            place = self.place()
            return place.common_dir if place is not None else None
        return None

    def _location(self) -> Location:
        """The store file and how it was chosen, found once: a relative
        ``--db`` means the folder the command (or the MCP server, which then
        moves to the repository's top level) was started in."""
        if self._located is None:
            found = locate(getattr(self.args, "db", None), os.environ, self._location_repo())
            self._located = found
            self._store_file = os.path.realpath(found.path)
        return self._located

    def store_path(self) -> str:
        return self._location().path

    def real_store_path(self) -> str:
        """The store file's real path, as it was when first found."""
        self._location()
        assert self._store_file is not None
        return self._store_file

    def dsn(self) -> str | None:
        """The PostgreSQL DSN the store is named by (``--db`` or
        ``ROTEIRO_MEMORY_DB``), or None when it is a file."""
        named = getattr(self.args, "db", None)
        if named is None:
            named = os.environ.get("ROTEIRO_MEMORY_DB")
        if named is None or "://" not in named:
            return None  # a file path: start-up need not load the store-name parser
        from roteiro_memory.stores.naming import parse_store_name

        name = parse_store_name("sqlite", named)
        return name.target if name is not None and name.kind == "postgres" else None

    def store(self, *, must_exist: bool = False) -> Store:
        if self._store is None and self.dsn() is not None:
            from roteiro_memory.stores.postgres.store import PostgresStore

            self._store = PostgresStore(str(self.dsn()))
        if self._store is None:
            location = self._location()
            if must_exist and not os.path.exists(location.path):
                raise UsageError(
                    f"no store at {location.path} ({location.origin}): nothing has been "
                    "recorded there yet"
                )
            prepare(location)
            from roteiro_memory.stores.sqlite.store import SQLiteStore

            store = SQLiteStore(location.path)
            self._store = store
            announce_migration(store)
        return self._store

    def _store_identity(self, store: Store) -> str:
        """Which store this is, for the stat cache: the real path of its file,
        or where a PostgreSQL store lives (never with its password)."""
        if self.dsn() is not None:
            return store.describe()
        return self.real_store_path()

    def sync(self, *, full: bool = False) -> SyncReport | None:
        """Bring the store's graph up to the working tree, unless ``--no-sync``
        or there is no repository to sync from.

        The repository's stat cache answers first: when it vouches that the
        tree is what the store's graph was synced from, git is not run and
        None is returned, as it is when nothing syncs.  ``full`` (the
        ``sync`` command) always asks git.  A sync through git that finds the
        tree settled writes the cache for the next command."""
        if getattr(self.args, "no_sync", False):
            return None
        place = self.place()
        if place is None:
            return None
        store = self.store()
        identity = self._store_identity(store)
        cache = self._cache
        if not full and cache is not None and cache.unchanged(identity, store.tree(), os.environ):
            return None
        import time

        from roteiro_memory.repo import statcache
        from roteiro_memory.repo.graph import sync

        repo = self.require_repo("sync")
        skip = self._own_files(repo)
        started = time.time_ns()
        if not sys.stderr.isatty():
            report = sync(store, repo, skip=skip)
        else:
            from roteiro_memory.cli.render import ProgressBar

            parse_bar, hash_bar = ProgressBar("parsing"), ProgressBar("hashing")
            try:
                report = sync(store, repo, parse_bar, hash_bar, skip)
            finally:
                hash_bar.close()
                parse_bar.close()
        for path, problem in report.unparsable:
            warn(f"{path} {problem}")
        for notice in report.notices:
            warn(notice)
        self._cache = statcache.record(
            repo,
            place,
            identity,
            report.tree,
            started,
            report.listed,
            report.submodules,
            os.environ,
        )
        return report

    def _own_files(self, repo: Repo) -> dict[str, str | None]:
        """The store's file and its companions, as repository paths, when the
        store lives in the working tree (``--db`` inside it): they are not
        code, and the graph leaves them out (the sync that meets the file
        itself saying that git does not ignore it)."""
        if self.dsn() is not None:
            return {}
        store = self.real_store_path()
        relative = os.path.relpath(store, os.path.realpath(repo.root))
        if relative == os.pardir or relative.startswith(os.pardir + os.sep):
            return {}
        name = relative.replace(os.sep, "/")
        said = (
            "is this command's store, inside the working tree and not ignored by git; "
            "add it to .gitignore so that it is never committed"
        )
        from roteiro_memory.stores.sqlite import SIDE_FILES

        return {name: said, **{name + suffix: None for suffix in SIDE_FILES}}

    def remember(
        self, valid: ValidWrite, spec: AnchorSpec | None, supersedes: int | None
    ) -> MemoryRecord:
        """Write one validated record, as ``add`` and the MCP ``remember``
        both do: the record it supersedes checked before anything syncs or is
        written, the graph synced so the anchor captures the blob the tree
        holds now, and the record read back with its anchor state."""
        store = self.store()
        if supersedes is not None:
            target = store.get(supersedes)
            check_supersedes(
                supersedes, target is not None, target.superseded_by if target else None
            )
        self.sync()
        new_id = store.record(
            valid.kind,
            valid.body,
            scope=valid.scope,
            anchor=spec.key if spec else None,
            confidence=valid.confidence,
            supersedes=supersedes,
        )
        record = store.get(new_id)
        assert record is not None  # just written, and only forget removes a record
        return record

    def check_revs(self, **revs: str | None) -> None:
        """Refuse an unknown revision before anything is synced or written."""
        for option, rev in revs.items():
            if rev is not None:
                from roteiro_memory.repo.graph import resolve_tree

                resolve_tree(self.require_repo(f"--{option}"), rev)

    def graph_for(self, rev: str | None) -> Graph | None:
        """The graph of ``rev`` to resolve anchors against; None for the store's."""
        if rev is None:
            return None
        from roteiro_memory.repo.graph import rev_graph

        repo = self.require_repo("--rev")
        _, graph = rev_graph(repo, rev, self.store().export_graph())
        return graph

    def touched(self, rev: str) -> set[str]:
        """Node keys that differ between ``rev`` and the graph as last synced."""
        from roteiro_memory.repo.graph import graph_blobs, rev_graph, touched_keys

        repo = self.require_repo("--touched")
        working = self.store().export_graph()
        _, before = rev_graph(repo, rev, working)
        return touched_keys(before, graph_blobs(working))

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


# --- Anchor filters ---------------------------------------------------------


def announce_migration(store: Store) -> None:
    """Say so when opening ``store`` migrated it: any command, reads too,
    migrates an older SQLite store, and after it earlier versions cannot
    open it."""
    migrated = getattr(store, "migrated", None)
    if migrated is None:
        return
    from roteiro_memory.stores.sqlite.migrations import SCHEMA_VERSION

    version, names = migrated
    warn(
        f"{store.describe()}: migrated the store from schema version {version} to "
        f"{SCHEMA_VERSION} ({', '.join(names)}); earlier versions of "
        "roteiro-memory cannot open it now"
    )


def anchor_filter(
    specs: Iterable[AnchorSpec] | None, touched: Collection[str] | None = None
) -> tuple[str | None, AnchorFilter | None]:
    """How ``--anchor`` (each value given) and ``--touched`` filter, as the
    store takes them: an exact key, or the anchors to keep -- the union of
    every value's, a bare path being the file and every symbol in it; with
    ``touched``, only the touched keys among those.  One symbol or raw key
    is the exact key; anything else is one :class:`AnchorFilter`."""
    unique = list({spec.key: spec for spec in specs or ()}.values())
    key: str | None = None
    anchors: AnchorFilter | None = None
    bare = [spec.path for spec in unique if spec.path is not None and spec.qualname is None]
    if len(unique) == 1 and not bare:
        key = unique[0].key
    elif unique:
        from roteiro_memory.repo.languages import language_of, symbol_prefix

        anchors = AnchorFilter(
            keys=frozenset(spec.key for spec in unique),
            prefixes=tuple(symbol_prefix(path) for path in bare if language_of(path)),
        )
    if touched is None:
        return key, anchors
    if anchors is None:
        anchors = AnchorFilter(keys=frozenset({key} if key is not None else touched))
    return None, anchors.narrowed(touched)
