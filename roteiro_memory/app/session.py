"""The repository and store one request works on: found from ``--db``,
``ROTEIRO_MEMORY_DB`` or the clone, opened lazily, and synced with the working
tree before a read.  The command line, the MCP server and the hooks each open
one, so an agent sees exactly the store and anchor states a person sees.

Start-up: git machinery, the PostgreSQL module and the store are imported only
when a request gets that far (``docs/cli.md`` lists what each command loads)."""

from __future__ import annotations

import os
from collections.abc import Callable

from roteiro_memory.app.values import spell_option
from roteiro_memory.errors import GitError, StoreBusy, StoreUnavailable, UsageError, excerpt
from roteiro_memory.repo.location import DB_ENV, Location, locate, prepare
from roteiro_memory.repo.statcache import Place, StatCache, discover, forget
from roteiro_memory.terminal import to_stderr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Protocol

    from roteiro_memory.repo.graph import Repo, SyncReport
    from roteiro_memory.repo.working import Working
    from roteiro_memory.store import Graph, Store
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    class Progress(Protocol):
        """A progress display a sync reports to (the CLI's bar on a terminal)."""

        def __call__(self, done: int, total: int) -> None: ...
        def close(self) -> None: ...


__all__ = ["Session", "announce_migration"]


def _stderr(text: str) -> None:
    to_stderr(f"roteiro-memory: warning: {text}\n")


class Session:
    """The repository and store one request works on, found and opened lazily.

    ``db`` names the store (``--db``; else :data:`~roteiro_memory.repo.location.DB_ENV`,
    else the repository's); ``sync`` False reads the graph as last synced.
    ``warn`` is told what a person should know (a migration, a file that does
    not parse); ``progress``, when given, makes a display for a sync's
    parsing and hashing; ``spell`` is how this surface names an input in a
    refusal (``--limit`` on the command line, ``limit`` in a tool call).
    ``wait_ms``, when given, is how long the store waits for another
    process's lock (an SQLite store's busy timeout, a PostgreSQL store's
    ``lock_timeout``) unless
    :data:`~roteiro_memory.stores.sqlite.transactions.BUSY_TIMEOUT_ENV` says;
    given neither, :data:`~roteiro_memory.stores.sqlite.transactions.BUSY_TIMEOUT_MS`; and a
    sync still locked out of an SQLite store after it does not fail: anchors
    are then resolved in memory, as for a store opened read-only
    (:meth:`sync`).  ``connect_s``, when given, is how long connecting to a
    PostgreSQL store may take, in seconds, unless its DSN or
    ``PGCONNECT_TIMEOUT`` says (libpq waits for ever)."""

    def __init__(
        self,
        db: str | None = None,
        *,
        sync: bool = True,
        warn: Callable[[str], None] = _stderr,
        progress: Callable[[str], Progress] | None = None,
        spell: Callable[[str], str] = spell_option,
        wait_ms: int | None = None,
        connect_s: int | None = None,
    ) -> None:
        self.db = db
        self.syncs = sync
        self.wait_ms = wait_ms
        self.connect_s = connect_s
        self.warn = warn
        self.spell = spell
        self._progress = progress
        self._place: Place | None = None
        self._cache: StatCache | None = None
        self._repo: Repo | None = None
        self._looked = False
        self._located: Location | None = None
        self._store_file: str | None = None
        self._store: Store | None = None
        self._created = False
        self._made: SQLiteStore | None = None
        """The store, when this session made its file."""
        self.unsynced: str | None = None
        """Why the code graph could not be synced, when a sync could not
        write it: anchors are resolved against :attr:`_working`."""
        self._working: Working | None = None
        """The working tree's graph as the last sync that could not write it
        built it in memory (:meth:`sync`)."""
        self._said: set[str] = set()
        """The warnings about an unsynced graph given already (each once)."""
        self._sync_changes = 0
        """Commits of the syncs a read ran on its own (:meth:`sync`)."""
        self._made_folder: str | None = None
        self._cached: Place | None = None
        """Where this session wrote the stat cache, for the store it made."""

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
            from roteiro_memory.repo.graph import no_repo_reason

            raise GitError(f"{what} needs a git repository: {no_repo_reason()}")
        return repo

    def _location_repo(self) -> tuple[str | None, str | None]:
        """The git common directory the store is found in, when no store is
        named; else None, and why when it is not that the folder is outside
        any repository (git is missing, or fails)."""
        if self.db is not None or DB_ENV in os.environ:
            return None, None
        place = self.place()
        return (place.common_dir, None) if place is not None else (None, self.git_fault())

    def git_fault(self) -> str | None:
        """Why no repository is found here when git is to blame -- it is not
        on ``PATH`` (and no stat cache found the repository without it), or
        it fails here (a repository another user owns); None outside any
        repository, which is an answer, not a fault."""
        from roteiro_memory.repo.graph import OUTSIDE, no_repo_reason

        why = no_repo_reason()
        return None if why == OUTSIDE else why

    def _location(self) -> Location:
        """The store file and how it was chosen, found once: a relative
        ``--db`` means the folder the command (or the MCP server, which then
        moves to the repository's top level) was started in."""
        if self._located is None:
            found = locate(self.db, os.environ, *self._location_repo())
            try:
                real = os.path.realpath(found.path)
            except FileNotFoundError:  # a relative path, in a folder removed since
                raise StoreUnavailable(
                    f"{found.path} ({found.origin}) is a relative path, but the folder the "
                    "command runs in is gone; run it from a folder that exists, or give an "
                    "absolute path"
                ) from None
            self._located, self._store_file = found, real
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
        named = self.db if self.db is not None else os.environ.get(DB_ENV)
        if named is None or "://" not in named:
            return None  # a file path: start-up need not load the store-name parser
        from roteiro_memory.stores.naming import is_postgres_uri, parse_store_name

        if not is_postgres_uri(named):
            return None  # refused as the file it is not, naming where it was given
        name = parse_store_name("sqlite", named)
        return name.target if name is not None and name.kind == "postgres" else None

    def has_store(self) -> bool:
        """Whether there is a store to read, without making one: a DSN, or
        a store file that exists.  Outside a repository with no store named
        there is none; a store named that cannot be used is a mistake worth
        naming, and raises."""
        if self.dsn() is not None:
            return True
        from roteiro_memory.errors import StoreUnavailable

        try:
            path = self.store_path()
        except StoreUnavailable:
            if self.db is not None or DB_ENV in os.environ:
                raise
            return False
        return os.path.exists(path)

    def _lock_wait(self) -> int:
        """How long the store waits for another process's lock, whichever
        its backend: what the environment says, else this session's
        ``wait_ms``, else the default (:func:`~.sqlite.transactions.lock_wait_ms`)."""
        from roteiro_memory.stores.sqlite.transactions import lock_wait_ms

        return lock_wait_ms() if self.wait_ms is None else lock_wait_ms(self.wait_ms)

    def store(self, *, must_exist: bool = False, migrate: bool = True) -> Store:
        """The store, opened on first use (and made, unless ``must_exist``).
        Not ``migrate``: a PostgreSQL store is connected to, neither made
        nor migrated, for a check that writes nothing."""
        if self._store is None and self.dsn() is not None:
            from roteiro_memory.errors import Absent
            from roteiro_memory.stores.postgres.store import PostgresStore

            try:
                self._store = PostgresStore(
                    str(self.dsn()),
                    create=not must_exist,
                    lock_timeout_ms=self._lock_wait(),
                    migrate=migrate,
                    connect_timeout_s=self.connect_s,
                )
            except Absent as absent:
                raise UsageError(f"{absent}: nothing has been recorded there yet") from None
            announce_migration(self._store, self.warn)
        if self._store is None:
            location = self._location()
            if must_exist:
                from roteiro_memory.stores.sqlite.identity import nothing_at

                if nothing_at(location.path):  # not a path that cannot be looked at
                    raise UsageError(
                        f"no store at {location.path} ({location.origin}): nothing has been "
                        "recorded there yet"
                    )
            # Of the file the path leads to: through a dangling symlink no file
            # is there, and the store made at its target is this session's.
            existed = os.path.lexists(self.real_store_path())
            if not existed:
                _refuse_orphan_side_files(self.real_store_path(), location)
            self._made_folder = prepare(location)
            from roteiro_memory.stores.sqlite.store import SQLiteStore

            self._created = not existed
            try:
                store = SQLiteStore(location.path, busy_timeout_ms=self._lock_wait())
            except BaseException as error:
                if self._created:  # a store that never opened: the disk as it was
                    try:
                        self._remove_made()
                    except OSError as failed:
                        error.add_note(f"(and removing the file it made failed: {failed})")
                raise
            self._store = store
            self._made = store if self._created else None
            announce_migration(store, self.warn)
        return self._store

    def writable_store(self) -> Store:
        """The store, for a use case that writes: one opened read-only is
        refused at once, before a sync would say it cannot sync."""
        store = self.store()
        read_only = getattr(store, "read_only", None)
        if read_only is not None:
            from roteiro_memory.stores.sqlite.readonly import unwritable

            raise unwritable(store.describe(), read_only)
        return store

    def _store_identity(self, store: Store) -> str:
        """Which store this is, for the stat cache: the real path of its file,
        or where a PostgreSQL store lives (never with its password)."""
        if self.dsn() is not None:
            return store.describe()
        return self.real_store_path()

    def sync(
        self, *, full: bool = False, stored: bool = False, write: bool = True
    ) -> SyncReport | None:
        """Bring the store's graph up to the working tree, unless ``--no-sync``
        or there is no repository to sync from.

        The repository's stat cache answers first: when it vouches that the
        tree is what the store's graph was synced from, git is not run and
        None is returned, as it is when nothing syncs -- unless an anchor
        written since names a symbol of a file left unread that has no node
        (:mod:`~roteiro_memory.repo.unknown`), which a sync adds.  ``full`` (the
        ``sync`` command) always asks git.  A sync through git that finds the
        tree settled writes the cache for the next command.

        A store opened read-only takes no sync, nor does one whose write lock
        another process held longer than ``wait_ms`` (this session then does
        not wait for it again): the working tree's graph is then built in
        memory as a sync would build it, at every sync as a sync runs at
        every read, and every read resolves anchors against it
        (:meth:`graph_for`), so no state is claimed that was not checked;
        :attr:`unsynced` says why, and so does one warning.  ``stored``: the
        caller reads the store's own graph, not :meth:`graph_for`'s (the
        records it reads are resolved in the store), so none is built, and
        the warning says the states are those of the last sync.

        Not ``write``: the graph is built and nothing written; the report
        holds it ``pending`` for a use case that decides first whether to
        write at all, then writes it in its own transaction
        (:meth:`~roteiro_memory.repo.syncreport.SyncReport.write`) and, once that
        is committed, hands the report to :meth:`synced`."""
        if not self.syncs:
            return None
        place = self.place()
        if place is None:
            return None
        store = self.writable_store() if full else self.store()
        identity = self._store_identity(store)
        cache = self._cache
        if (
            not full
            and cache is not None
            and cache.unchanged(identity, store.tree(), os.environ)
            and not (cache.left_unread and _unknown_missing(store, cache.left_unread))
        ):
            self._working = None  # the store's graph is the working tree's
            return None
        why = getattr(store, "read_only", None) or (None if full else self.unsynced)
        if why is not None:
            self._unsynced(store, why, stored)
            return None
        repo = self.require_repo("sync")
        skip = self._own_files(repo)
        before = store.changes
        try:
            report = self._sync(store, repo, skip, write)
        except StoreBusy as busy:
            if self.wait_ms is None or full:
                raise
            why = f"another process held its write lock past the {busy.waited} ms this waits"
            self._unsynced(store, why, stored)
            return None
        # Said once the graph is built, written or not: a use case that
        # then refuses, writing nothing, has its user told why files went unread.
        for path, problem in report.unparsable:
            self.warn(f"{path} {problem}")
        for notice in report.notices:
            self.warn(notice)
        if not write:
            return report
        if not full and before is not None and store.changes is not None:
            self._sync_changes += store.changes - before
        return self.synced(report)

    def synced(self, report: SyncReport) -> SyncReport:
        """What follows a sync's write, once it is committed: the note of the
        languages it left unread, and the stat cache vouching for the tree
        it wrote.  A graph left pending and never written has neither."""
        from roteiro_memory.repo import statcache

        place, store = self.place(), self.store()
        assert place is not None, "a sync ran in a repository"
        assert report.pending is None, "its graph written"
        report.note_unread(self.require_repo("sync").git_dir)
        self._working = None
        if self._created:
            self._cached = place
        self._cache = statcache.record(
            self.require_repo("sync"),
            place,
            self._store_identity(store),
            report.tree,
            report.started_ns,
            report.listed,
            report.submodules,
            os.environ,
        )
        return report

    def _sync(
        self, store: Store, repo: Repo, skip: dict[str, str | None], write: bool
    ) -> SyncReport:
        from roteiro_memory.repo.graph import sync

        if self._progress is None:
            return sync(store, repo, skip=skip, write=write)
        parse_bar, hash_bar = self._progress("parsing"), self._progress("hashing")
        try:
            return sync(store, repo, parse_bar, hash_bar, skip, write=write)
        finally:
            hash_bar.close()
            parse_bar.close()

    def _unsynced(self, store: Store, why: str, stored: bool) -> None:
        """``store`` takes no sync, for the reason ``why``: resolve anchors
        against the working tree's graph built in memory now, unless the
        caller reads the ``stored`` graph; said once each."""
        self.unsynced = why
        if stored:
            states = "those of the last sync"
        else:
            from roteiro_memory.repo.working import working_graph

            repo = self.require_repo("sync")
            self._working = working_graph(store, repo, self._own_files(repo), self._working)
            states = "those of the working tree, read without writing it"
        said = f"{store.describe()}: {why}, so the code graph is not synced: anchor states are "
        if states not in self._said:
            self._said.add(states)
            self.warn(said + states)

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

    def check_revs(self, **revs: str | None) -> None:
        """Refuse an unknown revision before anything is synced or written."""
        for option, rev in revs.items():
            if rev is not None:
                from roteiro_memory.repo.graph import resolve_tree

                resolve_tree(self.require_repo(self.spell(option)), rev)

    def graph_for(self, rev: str | None) -> Graph | None:
        """The graph of ``rev`` to resolve anchors against; for None, the
        working tree's when the store could not take it (:meth:`sync`), else
        None: the store's."""
        if rev is None:
            return None if self._working is None else self._working.graph
        from roteiro_memory.repo.graph import rev_graph

        repo, store = self.require_repo(self.spell("rev")), self.store()
        _, graph = rev_graph(repo, rev, store.export_graph(), store.anchor_keys)
        return graph

    def touched(self, rev: str) -> set[str]:
        """Node keys that differ between ``rev`` and the working tree's graph
        (as synced, or as built in memory: :meth:`sync`)."""
        from roteiro_memory.repo.graph import graph_blobs, rev_graph, touched_keys

        repo = self.require_repo(self.spell("touched"))
        working = self.store().export_graph()
        _, before = rev_graph(repo, rev, working, self.store().anchor_keys)
        built = None if self._working is None else self._working.graph
        after = graph_blobs(working) if built is None else built
        return touched_keys(before, after)

    def changed(self, *, by_request: bool = False) -> bool:
        """Whether this session changed the store: migrated it on opening,
        or committed a write to it (a store that cannot count its writes is
        taken to have changed once it is open).  ``by_request``: leaving
        out what the syncs a read runs on its own wrote, which only mirror
        the working tree.  A store it made and the request did not change is
        removed again when the request fails (:meth:`close`)."""
        store = self._store
        if store is None:
            return False
        changes = store.changes
        if changes is not None and by_request:
            changes -= self._sync_changes
        migrated = getattr(store, "migrated", None) is not None
        return migrated or changes is None or changes > 0

    def failure_leaves_changes(self) -> bool:
        """Whether a request that fails now leaves the store changed: a
        store it made goes again unless the request itself wrote to it
        (:meth:`close`); one that was there keeps even a sync's changes."""
        return self.changed(by_request=self._created)

    def close(self, *, failed: bool = False) -> None:
        """Close the store.  ``failed``: the request failed (or found
        nothing), so a store file this session made and wrote nothing to is
        removed with its side files -- a refused request leaves the disk as
        it was."""
        if self._store is None:
            return
        made = self._made if failed and not self.changed(by_request=True) else None
        store, self._store, self._made = self._store, None, None
        try:
            # Another process may have opened the store this one made and
            # written to it since: the store decides, under its write lock.
            removed = made is not None and made.discard(self._remove_files)
            if removed:
                self._remove_made(files=False)
        except OSError as error:  # the request's own outcome stands; this is said beside it
            self.warn(
                f"the store this command made at {excerpt(self._store_file or '')} could not "
                f"be removed again ({error.strerror or error}); remove it by hand if unwanted"
            )
        finally:
            store.close()

    def _remove_made(self, *, files: bool = True) -> None:
        """Remove the store file this session made, with its side files (none
        was there before it: :func:`_refuse_orphan_side_files`) unless
        ``files`` is false (they are gone), the stat cache it wrote for it,
        and the store folder it made, left empty."""
        if files:
            self._remove_files()
        if self._cached is not None:
            forget(self._cached)
        folder = self._made_folder
        if folder is not None and os.path.isdir(folder) and not os.listdir(folder):
            os.rmdir(folder)

    def _remove_files(self) -> None:
        """Remove the store file this session made and its side files."""
        from roteiro_memory.stores.sqlite import SIDE_FILES

        assert self._store_file is not None
        for suffix in ("", *SIDE_FILES):
            try:
                os.unlink(self._store_file + suffix)
            except FileNotFoundError:
                continue


def _unknown_missing(store: Store, languages: list[str]) -> bool:
    """Whether some symbol an anchor names in a file of ``languages`` left
    unread has no node."""
    from roteiro_memory.repo.unknown import missing

    return bool(missing(store, languages))


def _refuse_orphan_side_files(real: str, location: Location) -> None:
    """Refuse to make a store where a side file of one is there already
    (``NAME-wal``, ``NAME-shm``, ``NAME-journal`` beside no ``NAME``): SQLite
    would take it for the new store's own and remove it, and it is not ours."""
    from roteiro_memory.stores.sqlite import SIDE_FILES

    for suffix in SIDE_FILES:
        if os.path.lexists(real + suffix):
            raise UsageError(
                f"no store at {location.path} ({location.origin}), but {excerpt(real + suffix)} "
                "is there, which SQLite would take for the new store's own file and remove: "
                "move it away, or choose another --db"
            )


def announce_migration(store: Store, warn: Callable[[str], None] = _stderr) -> None:
    """Say so when opening ``store`` migrated it: any command, reads too,
    migrates an older store (SQLite's or PostgreSQL's), and after it earlier
    versions cannot open it.  One already open on it (a server) is not
    stopped, and may write what this version would not: it must be restarted."""
    migrated = getattr(store, "migrated", None)
    if migrated is None:
        return
    version, newest, names = migrated
    warn(
        f"{store.describe()}: migrated the store from schema version {version} to "
        f"{newest} ({', '.join(names)}); earlier versions of "
        "roteiro-memory cannot open it now: restart any still running on it (an MCP server)"
    )
