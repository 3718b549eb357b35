"""``roteiro-check-store``: SQLite's integrity check and the store's invariants.

Of the files passed, those that are stores by content (the SQLite header and
this project's schema, whatever their names) are checked; other files are not
this hook's business and are passed over in silence.  With no files, the
repository's own store is checked: the one ``roteiro-memory`` uses here
(``ROTEIRO_MEMORY_DB``, else ``roteiro/memory.db`` in the git common
directory), when it exists and is not empty; a PostgreSQL store named by
``ROTEIRO_MEMORY_DB`` is checked through the server, and one that cannot be
reached is a finding, never a pass; so is a repository git cannot locate
(git missing, or failing), whose store may be there.  So is a file that cannot be read, given
or the repository's own (permission denied, a directory in its place), and
a repository's own store that is not a regular file (a FIFO): the hook
passes only what it examined.

The checking is :func:`roteiro_memory.check.check_store`, the same that
``roteiro-memory check`` runs; this module only chooses files and prints
``FILE: TABLE ROW: PROBLEM`` per finding.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Sequence

from roteiro_memory.precommit.report import Finding, cannot_read, files, report
from roteiro_memory.precommit.sniff import is_sqlite, journaled, store_info, unreadable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["check", "check_given", "check_server", "main", "own_server", "own_store"]


def own_server() -> str | None:
    """The PostgreSQL DSN ``ROTEIRO_MEMORY_DB`` names, or None."""
    from roteiro_memory.repo.location import DB_ENV
    from roteiro_memory.stores.naming import is_postgres_uri, parse_store_name

    named = os.environ.get(DB_ENV)
    if not is_postgres_uri(named):
        return None  # a file, or refused as one (repo.location) naming the variable
    name = parse_store_name("sqlite", named)
    return name.target if name is not None and name.kind == "postgres" else None


def check_server(dsn: str) -> Iterator[Finding]:
    """One finding per problem in the PostgreSQL store at ``dsn``, or one
    saying why it could not be checked; none where no store is (the check
    makes none, migrates none -- an older one is judged as migrated, in a
    transaction rolled back -- nor waits on a lock longer than any command
    would)."""
    from roteiro_memory.errors import Absent, RoteiroError
    from roteiro_memory.stores.postgres.store import PostgresStore
    from roteiro_memory.stores.sqlite.transactions import lock_wait_ms

    try:
        store = PostgresStore(dsn, create=False, lock_timeout_ms=lock_wait_ms(), migrate=False)
        try:
            where, found = store.describe(), store.report().findings  # writes nothing
        finally:
            store.close()
    except Absent:
        return  # nothing recorded there yet: nothing to check, as for a file not yet made
    except Exception as error:  # a refusal, or the server's own failure (a full disk): one line
        from roteiro_memory.stores.failures import unexpected

        said = error if isinstance(error, RoteiroError) else unexpected(error)
        yield Finding("roteiro-check-store", f"{said}; nothing was checked")
        return
    for finding in found:
        yield Finding(where, finding.problem, _where(finding.table, finding.row))


def own_store() -> Path | None:
    """The repository's own store, where ``roteiro-memory`` keeps it; None
    when there is none to check (outside a repository, or nothing recorded).
    Something there that cannot be read, or is not a regular file, is
    returned, to be reported.  StoreUnavailable when git cannot tell which
    repository this is (it is missing, or fails): its store may be there,
    unchecked, so that is no pass."""
    from roteiro_memory.repo.location import DB_ENV, locate

    common_dir = None
    if DB_ENV not in os.environ:
        from roteiro_memory.repo.graph import OUTSIDE, find_repo, no_repo_reason

        repo = find_repo()
        if repo is None:
            why = no_repo_reason()
            if why == OUTSIDE:
                return None
            from roteiro_memory.errors import StoreUnavailable

            raise StoreUnavailable(
                f"cannot tell which git repository this is: {why}; or set {DB_ENV} to the "
                "path of the store file; nothing was checked"
            )
        common_dir = repo.common_dir
    from pathlib import Path

    path = Path(locate(None, os.environ, common_dir).path)
    try:
        info = path.stat()
    except FileNotFoundError:
        # Nothing recorded yet -- unless a link is there, naming nothing.
        return path if path.is_symlink() else None
    except OSError:
        return path  # there or not, it cannot be looked at: reported, never passed
    if stat.S_ISREG(info.st_mode):
        # Zero bytes is a store not yet written, as everywhere: nothing to check.
        return path if info.st_size > 0 else None
    # A directory in its place cannot be read, and a special file (a FIFO)
    # holds no store: either is reported, never passed (the check refuses a
    # FIFO without opening it, which would wait for ever).
    return path


def check(paths: Sequence[str | os.PathLike[str]]) -> Iterator[Finding]:
    """One finding per problem in each store among ``paths``."""
    if not paths:
        return  # the checker's imports are not free: a commit with no store skips them
    from roteiro_memory.errors import StoreUnavailable
    from roteiro_memory.repo.location import DB_ENV
    from roteiro_memory.stores.sqlite.checkfile import check_file

    # The hook takes no --db: what is in the store's place is moved, or the
    # variable names the store (as it does for roteiro-memory).
    remedy = f"move it away, or set {DB_ENV} to the path of the store file"
    for path in paths:
        try:
            found = check_file(path, remedy)
        except StoreUnavailable as error:  # not the store's fault, and never passed
            yield Finding("roteiro-check-store", f"{error}; nothing was checked")
            continue
        for finding in found:
            yield Finding(os.fspath(path), finding.problem, _where(finding.table, finding.row))


def check_given(paths: Sequence[str]) -> Iterator[Finding]:
    """One finding per problem in each store among the files ``paths``
    (recognised by content; other files are passed over), and one for each
    that cannot be read, which is never passed."""
    for path in paths:
        reason = unreadable(path)
        if reason is not None:
            yield cannot_read(path, reason)
        # is_sqlite first: it reads 16 bytes, and most files are not databases.
        elif is_sqlite(path) or journaled(path):
            from pathlib import Path

            from roteiro_memory.errors import StoreUnavailable

            try:
                info = store_info(Path(path))
            except StoreUnavailable as error:  # never passed
                yield Finding("roteiro-check-store", f"{error}; nothing was checked")
                continue
            if info is not None:
                yield from check([path])


def _check_own(path: Path) -> Iterator[Finding]:
    """The repository's own store, checked whatever it holds (not being a
    store is a finding), or why it cannot be read."""
    reason = unreadable(path)
    if reason is not None:
        yield cannot_read(os.fspath(path), reason)
    else:
        yield from check([path])


def _where(table: str, row: str | None) -> str:
    return table if row is None else f"{table} {row}"


def main(argv: Sequence[str] | None = None) -> int:
    given = files(
        argv,
        "roteiro-check-store",
        "Check roteiro-memory stores (recognised by content): SQLite's integrity check "
        "and the store's invariants. With no files, the repository's own store.",
    )
    if given:
        return report(check_given(given))
    from roteiro_memory.errors import RoteiroError

    try:
        server = own_server()
        if server is not None:
            return report(check_server(server))
        own = own_store()
    except RoteiroError as error:
        return report([Finding("roteiro-check-store", str(error))])
    return report(() if own is None else _check_own(own))


if __name__ == "__main__":
    raise SystemExit(main())
