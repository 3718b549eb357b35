"""A whole store's use cases: its integrity check, export and import.

A file is checked read-only, never opened as a store (nor migrated: an
earlier version's store is judged on a private copy, migrated there); a
server's store is checked through the store, on one snapshot.  An export to a
file is written beside it and moved over it whole, private like the store it
copies, and is refused before the store is opened when it would land on one
of the store's own names, on something that is not a file, or on a file
holding something other than an export.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator

from roteiro_memory.errors import UsageError, excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

    from roteiro_memory.app.session import Session
    from roteiro_memory.check import Report

__all__ = ["check", "export_lines", "export_to", "import_lines"]


def check(session: Session) -> tuple[str, Report]:
    """Where the store is, and what a check of it found: every integrity
    problem, and for a store an earlier version wrote, the migration the
    next command to open it makes (it is judged as migrated).  Writes
    nothing: an SQLite file is migrated on a private copy, a PostgreSQL
    store in a transaction that is rolled back."""
    if session.dsn() is not None:
        from roteiro_memory.errors import Absent
        from roteiro_memory.stores.postgres.store import PostgresStore

        store = session.store(must_exist=True, migrate=False)
        assert isinstance(store, PostgresStore), "a DSN names a PostgreSQL store"
        try:
            return store.describe(), store.report()  # an older one judged as migrated
        except Absent as absent:
            raise UsageError(f"{absent}: nothing has been recorded there yet") from None
    from roteiro_memory.stores.sqlite.checkfile import report
    from roteiro_memory.stores.sqlite.identity import not_a_file, nothing_at

    path = session.store_path()
    refusal = not_a_file(path)
    if refusal is not None:
        raise refusal  # as opening it refuses it: a FIFO's open would wait for ever
    if nothing_at(path):
        raise UsageError(f"no store at {path}: nothing to check")
    if os.path.isfile(path) and os.path.getsize(path) == 0:
        # Zero bytes is a store not yet written, as a missing file is: any
        # command that records makes it a store.
        raise UsageError(f"no store at {path} (the file is empty): nothing to check")
    return path, report(path)


def export_lines(session: Session) -> Iterator[str]:
    """The whole store as JSON Lines, header first, read on one snapshot."""
    return session.store(must_exist=True).export_lines()


def export_to(session: Session, output: str) -> int:
    """Write the export to ``output`` whole (0600, moved into place), and say
    how many lines; a refused ``output`` is refused before the store is opened.
    The store is read whole first (its read snapshot holds every line
    anyway), so a failure of the store is its own error, never the output's."""
    check_output(output, session)
    lines = list(session.store(must_exist=True).export_lines())
    from roteiro_memory import privatefile

    def write(out: TextIO) -> None:
        for line in lines:
            out.write(line + "\n")

    try:
        privatefile.replace(output, write)
    except OSError as error:
        raise _cannot_write(output, error) from None
    return len(lines)


def check_output(output: str, session: Session) -> None:
    """Refuse an export target that is no file's name, one of the store's own
    names (writing there would leave the store under that name an export),
    or what is not replaceable
    (:func:`roteiro_memory.privatefile.check_replaceable`)."""
    if "\x00" in output:
        raise UsageError(f"invalid --output {excerpt(output)}: a file name holds no NUL byte")
    if os.path.basename(output) in ("", ".", ".."):
        raise UsageError(
            f"invalid --output {excerpt(output)}: that names a folder; "
            "expected the path of a file, such as memory.jsonl"
        )
    if session.dsn() is None and _names_the_store(output, session.real_store_path()):
        raise UsageError(
            f"invalid --output {excerpt(output)}: that is a name of the store being exported "
            "(or of a file SQLite keeps beside it); choose another path"
        )
    from roteiro_memory import privatefile

    try:
        privatefile.check_replaceable(output)
        held = _held_there(output)
    except OSError as error:
        raise _cannot_write(output, error) from None
    if held is not None:
        raise UsageError(
            f"cannot write {excerpt(output)}: it is there and holds {held}, not an export; "
            "export replaces only an earlier export (or an empty file), so nothing was written "
            "there (move it away, or choose another --output)"
        )


def _held_there(output: str) -> str | None:
    """What the regular file at ``output`` holds when it is no export, which
    an export must not take the place of (a source file named by a slip, a
    store): None for nothing there, an empty file, a symlink (replaced
    itself, what it points to left alone), and an export, recognised by its
    content as the pre-commit hooks recognise one."""
    import stat

    try:
        status = os.lstat(output)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(status.st_mode) or status.st_size == 0:
        return None
    from roteiro_memory.precommit.sniff import What, recognise

    found = recognise(output)
    if found is None:
        return f"{status.st_size:,} bytes of something else"
    return None if found.what is What.EXPORT else found.what.value


def _names_the_store(output: str, store_file: str) -> bool:
    """Whether ``output`` is a name of the SQLite store at ``store_file`` or
    of a side file beside it: the same path once symlinks are resolved, or
    the same file (a hard link, another case on a case-insensitive disk)."""
    from roteiro_memory.privatefile import same_file
    from roteiro_memory.stores.sqlite import SIDE_FILES

    return any(same_file(output, store_file + suffix) for suffix in ("", *SIDE_FILES))


def _cannot_write(output: str, error: OSError) -> UsageError:
    import errno

    reason = error.strerror or str(error)
    number = error.errno
    if isinstance(error, FileExistsError):  # not replaceable
        remedy = "choose another --output, or leave -o out to write to stdout"
    elif number in (errno.ENOSPC, errno.EDQUOT):
        remedy = "free some space, or choose another --output"
    elif number == errno.ENOENT and not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        remedy = "its folder does not exist: create it, or choose another --output"
    elif number in (errno.EACCES, errno.EPERM, errno.EROFS):
        remedy = "choose an --output in a folder you can write"
    else:
        remedy = "choose another --output"
    return UsageError(
        f"cannot write {excerpt(output)}: {reason}; nothing was written there ({remedy})"
    )


def import_lines(
    session: Session, lines: Iterable[str], source: str, warn: Callable[[str], None]
) -> dict[str, int]:
    """Load an export (its ``lines``, read from ``source``, the file as
    given or ``-`` for standard input) into the store, which must be empty,
    all or nothing; the counts of what was loaded.  A refusal names the
    file, and the line when it is one line's (``line 3 of dump.jsonl:``)."""
    from roteiro_memory.errors import ImportRefused
    from roteiro_memory.transfer import read_export

    try:
        parsed = read_export(lines)
        for warning in parsed.warnings:
            warn(f"{source}: {warning}")
        return session.store().import_export(parsed)
    except RecursionError:
        raise UsageError(
            f"cannot import {excerpt(source)}: a line nests arrays or objects too deeply "
            "to be an export"
        ) from None
    except ImportRefused as error:
        raise ImportRefused(_in_source(str(error), source)) from None


def _in_source(message: str, source: str) -> str:
    """An import refusal's ``message`` naming the file it read, ``source``,
    as the reader's own refusals do (``line 3 of dump.jsonl is ...``): a
    line's as ``line N of FILE: ...``, any other as ``cannot import FILE:
    ...``.  A name that does not print as it is (a line break in it) is
    quoted with escapes, so the message stays one line."""
    import re

    if source == "-":
        shown = "the export from standard input"
    else:
        shown = source if source.isprintable() else excerpt(source)
    line = re.match(r"line (\d+): ", message)
    if line is not None:
        return f"line {line[1]} of {shown}: {message[line.end() :]}"
    return f"cannot import {shown}: {message}"
