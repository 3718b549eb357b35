"""What each ``roteiro-memory`` subcommand does, given its parsed arguments.

Every handler checks all of its input before it touches the store -- before
even the incremental sync -- so a refused command leaves the store exactly as
it was.  Handlers return the exit status; user errors are raised as
:class:`~roteiro_memory.errors.RoteiroError` and reported by ``main``.

Under ``--json`` a handler's result goes out in the envelope
(:mod:`roteiro_memory.cli.envelope`), and so does "nothing there" for a
command that names one record or entry (:func:`missing`).  The git machinery
(:mod:`roteiro_memory.repo.graph`) is imported only by what syncs or reads a
revision: ``--no-sync --db`` never loads it.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
from collections.abc import Callable

from roteiro_memory import semantics as sem
from roteiro_memory.cli.output import emit, missing, say, warn
from roteiro_memory.cli.session import Session, anchor_filter
from roteiro_memory.errors import (
    InvalidConfidence,
    NotFound,
    RoteiroError,
    StreamClosed,
    UsageError,
    excerpt,
)
from roteiro_memory.exitcodes import ExitCode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any, TextIO

    from roteiro_memory.cli.anchors import AnchorSpec

__all__ = ["HANDLERS", "UsageError"]

OK, NOTHING = ExitCode.OK, ExitCode.NOTHING


def read_stdin(what: str) -> str:
    """All of standard input as UTF-8 text, ``what`` naming it in errors: a
    closed descriptor (``<&-``), a read error or bytes that are not UTF-8 are
    one-line errors, before anything is written."""
    if sys.stdin is None:
        raise StreamClosed(f"standard input is closed, but {what} is read from it (-)")
    try:
        data = sys.stdin.buffer.read()
    except OSError as error:
        reason = error.strerror or error
        raise StreamClosed(f"cannot read {what} from standard input ({reason})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{what} on standard input is not valid UTF-8: byte {data[error.start]:#04x} "
            f"at offset {error.start}; only UTF-8 text can be stored"
        ) from None


# --- Parsing values ---------------------------------------------------------


def whole(text: str | None, option: str, *, positive: bool = False) -> int | None:
    """A whole number given on the command line, or None when not given."""
    if text is None:
        return None
    value = sem.parse_whole_number(text)
    if value is None or not sem.fits_int64(value) or (positive and value == 0):
        allowed = "a positive whole number" if positive else "a whole number (0 = no limit)"
        raise UsageError(f"invalid {option} {excerpt(text)}: expected {allowed}")
    return value


def record_id(text: str) -> int:
    value = whole(text, "ID", positive=True)
    assert value is not None
    return value


def confidence(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        raise InvalidConfidence(
            f"invalid --confidence {excerpt(text)}: expected a number from 0 to 1, e.g. 0.8"
        ) from None
    return value


def budget(text: str | None) -> int:
    """Bytes from ``--budget-mb``, else from the environment, else the default."""
    if text is None:
        return sem.parse_cache_budget(os.environ.get(sem.CACHE_BUDGET_ENV))
    try:
        return sem.parse_cache_budget(text)
    except RoteiroError:
        raise UsageError(
            f"invalid --budget-mb {excerpt(text)}: expected a whole number of megabytes "
            f"(ASCII digits) whose byte count fits in 64 bits"
        ) from None


def _anchor_specs(session: Session, texts: list[str] | None) -> list[AnchorSpec] | None:
    if not texts:
        return None
    from roteiro_memory.cli.anchors import names_a_path, parse_anchor

    return [parse_anchor(text, session.repo if names_a_path(text) else None) for text in texts]


def _anchor_spec(session: Session, text: str | None) -> AnchorSpec | None:
    if text is None:
        return None
    from roteiro_memory.cli.anchors import names_a_path, parse_anchor

    # A raw key needs no repository, so none is looked for (no git is run).
    return parse_anchor(text, session.repo if names_a_path(text) else None)


def _verify(spec: AnchorSpec | None, session: Session) -> None:
    if spec is not None and spec.path is not None:
        from roteiro_memory.cli.anchors import verify_anchor

        verify_anchor(spec, session.repo)


# --- Episodic commands --------------------------------------------------------


def cmd_add(args: argparse.Namespace, session: Session) -> int:
    body = read_stdin("the body") if args.body == "-" else args.body
    valid = sem.validate_write(args.kind, args.scope, body, confidence(args.confidence))
    supersedes = whole(args.supersedes, "--supersedes", positive=True)
    spec = _anchor_spec(session, args.anchor)
    _verify(spec, session)
    record = session.remember(valid, spec, supersedes)
    if args.json:
        emit(record.to_json())
        return OK
    from roteiro_memory.cli import render

    where = (
        f", anchored to {render.anchor_label(spec.key)} ({render.state_label(record.anchor_state)})"
        if spec
        else ""
    )
    replaced = f", superseding {supersedes}" if supersedes is not None else ""
    say(f"recorded {record.id} ({record.kind.value}{where}{replaced})")
    return OK


def cmd_list(args: argparse.Namespace, session: Session) -> int:
    limit = whole(args.limit, "--limit")
    kinds = sem.parse_kinds(args.kind)
    specs = _anchor_specs(session, args.anchor)
    key, anchors = anchor_filter(specs)
    session.check_revs(rev=args.rev)
    store = session.store()
    session.sync()
    listing = store.list(
        scope=args.scope,
        kind=kinds,
        anchor_key=key,
        include_superseded=args.all,
        limit=limit,
        graph=session.graph_for(args.rev),
        anchors=anchors,
    )
    if args.json:
        emit(listing.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.listing_table(listing))
    return OK if listing.records else NOTHING


def cmd_recall(args: argparse.Namespace, session: Session) -> int:
    decay = sem.Decay.parse(args.decay)
    limit = whole(args.limit, "--limit")
    kinds = sem.parse_kinds(args.kind)
    specs = _anchor_specs(session, args.anchor)
    query = " ".join(args.query) if args.query else None
    session.check_revs(rev=args.rev, touched=args.touched)
    store = session.store()
    session.sync()
    touched = session.touched(args.touched) if args.touched is not None else None
    key, anchors = anchor_filter(specs, touched)
    # Words a person types are a question: the ranking arm answers it (the
    # evaluation measures it better, docs/eval.md); --filter keeps the exact
    # conjunctive match.  No words: every live record, ranked by evidence.
    ask = store.recall if query is None or args.filter else store.search
    recall = ask(
        query,  # type: ignore[arg-type]  # search is asked only with words
        scope=args.scope,
        kind=kinds,
        anchor_key=key,
        decay=decay,
        applicable_only=args.applicable_only,
        limit=limit,
        graph=session.graph_for(args.rev),
        anchors=anchors,
    )
    if args.json:
        emit(recall.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.recall_table(recall))
    return OK if recall.results else NOTHING


def cmd_show(args: argparse.Namespace, session: Session) -> int:
    wanted = record_id(args.id)
    session.check_revs(rev=args.rev)
    store = session.store()
    session.sync()
    record = store.get(wanted, graph=session.graph_for(args.rev))
    if record is None:
        return missing(args, f"no memory record with id {wanted}")
    if args.json:
        emit(record.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.record_detail(record))
    return OK


def cmd_forget(args: argparse.Namespace, session: Session) -> int:
    wanted = record_id(args.id)
    store = session.store()
    try:
        forgotten = store.forget(wanted)
    except NotFound as error:
        return missing(args, str(error))
    if args.json:
        emit(forgotten.to_json())
    else:
        restored = ", ".join(str(i) for i in forgotten.restored)
        again = f"; live again: {restored}" if restored else ""
        say(f"forgot {forgotten.id}{again}")
    return OK


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def cmd_sync(args: argparse.Namespace, session: Session) -> int:
    session.require_repo("sync")
    session.store()
    report = session.sync(full=True)
    assert report is not None
    if args.json:
        emit(report.to_json())
    elif report.up_to_date:
        say(f"up to date: {_plural(report.files, 'file')}, tree {report.tree[:12]}")
    else:
        say(
            f"synced {_plural(report.files, 'file')} and {_plural(report.symbols, 'symbol')} "
            f"({_plural(len(report.parsed), 'file')} parsed, "
            f"{_plural(report.written, 'node')} written, {report.removed} removed); "
            f"tree {report.tree[:12]}"
        )
    return OK


# --- Cache commands -----------------------------------------------------------


def cmd_cache_stats(args: argparse.Namespace, session: Session) -> int:
    limit = budget(args.budget_mb)
    stats = session.store().cache_stats(limit)
    if args.json:
        emit(stats.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.stats_text(stats))
    return OK


def cmd_cache_sweep(args: argparse.Namespace, session: Session) -> int:
    limit = budget(args.budget_mb)
    store = session.store()
    session.sync()
    swept = store.cache_sweep(limit)
    if args.json:
        emit(swept.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.sweep_text(swept))
    return OK


def cmd_cache_list(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.results import CACHE_SCHEMA

    store = session.store()
    session.sync()
    entries = store.cache_entries()
    if args.json:
        emit({"schema": CACHE_SCHEMA, "entries": [e.to_json() for e in entries]})
    else:
        from roteiro_memory.cli import render

        say(render.cache_table(entries))
    return OK if entries else NOTHING


def cmd_cache_get(args: argparse.Namespace, session: Session) -> int:
    store = session.store()
    session.sync()
    entry = store.cache_get(args.key)
    if entry is None:
        return missing(args, f"no cache entry {excerpt(args.key)}")
    if args.json:
        emit(entry.to_json())
    else:
        say(entry.json)
    return OK


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def cmd_cache_put(args: argparse.Namespace, session: Session) -> int:
    payload = read_stdin("the cache payload") if args.payload in (None, "-") else args.payload
    try:
        json.loads(payload, parse_constant=_not_json)
    except ValueError as error:
        raise UsageError(f"invalid cache payload: it is not JSON ({error})") from None
    except RecursionError:
        raise UsageError(
            "invalid cache payload: it nests arrays or objects too deeply to read "
            f"({len(payload)} characters); store a flatter value"
        ) from None
    spec = _anchor_spec(session, args.anchor)
    _verify(spec, session)
    store = session.store()
    session.sync()
    store.cache_put(args.key, args.fingerprint, payload, spec.key if spec else None)
    size = sem.cache_entry_bytes(args.key, args.fingerprint, payload)
    if args.json:
        put: dict[str, Any] = {"key": args.key, "fingerprint": args.fingerprint, "bytes": size}
        if spec is not None:
            put["anchor"] = spec.key
        emit(put)
    else:
        say(f"cached {excerpt(args.key)} ({size} bytes)")
    return OK


def cmd_cache_forget(args: argparse.Namespace, session: Session) -> int:
    found = session.store().cache_forget(args.key)
    if not found:
        return missing(args, f"no cache entry {excerpt(args.key)}")
    if args.json:
        emit({"key": args.key})
    else:
        say(f"forgot cache entry {excerpt(args.key)}")
    return OK


# --- Store-wide commands ------------------------------------------------------


def cmd_check(args: argparse.Namespace, session: Session) -> int:
    if session.dsn() is not None:
        # A server's store is checked through the store, on one snapshot.
        store = session.store()
        path: Path | str = store.describe()
        findings = store.check()
    else:
        # A file is checked read-only, never opened as a store (nor migrated).
        from roteiro_memory.stores.sqlite.check import check_file

        path = session.store_path()
        if not os.path.exists(path):
            raise UsageError(f"no store at {path}: nothing to check")
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            # Zero bytes is a store not yet written, as a missing file is:
            # any command that records makes it a store.
            raise UsageError(f"no store at {path} (the file is empty): nothing to check")
        findings = check_file(path)
    if args.json:
        emit({"store": str(path), "findings": [f.to_json() for f in findings]})
    else:
        from roteiro_memory.cli.output import printable

        for finding in findings:
            say(printable(str(finding)))  # a finding may quote stored text
        noun = "problem" if len(findings) == 1 else "problems"
        say(f"{path}: {len(findings)} {noun}" if findings else f"{path}: ok")
    return NOTHING if findings else OK


def cmd_export(args: argparse.Namespace, session: Session) -> int:
    to_stdout = args.output in (None, "-")
    if to_stdout and args.json:
        raise UsageError(
            "export --json needs -o FILE: the export itself is JSON Lines on stdout, and "
            "--json prints the envelope saying what was written to FILE"
        )
    if not to_stdout:
        _check_output(args.output, session)  # before the store is opened (or migrated)
    store = session.store(must_exist=True)
    if to_stdout:
        _warn_if_stdout_is_shared()
        for line in store.export_lines():
            sys.stdout.write(line + "\n")
        return OK
    from roteiro_memory import privatefile

    # Written beside the target and moved over it whole (private like the
    # store it copies): an export that fails half-way (a full disk, Ctrl-C)
    # leaves no partial file, and an earlier one intact.
    written = 0

    def write(out: TextIO) -> None:
        nonlocal written
        for line in store.export_lines():
            out.write(line + "\n")
            written += 1

    try:
        privatefile.replace(args.output, write)
    except (OSError, ValueError) as error:
        raise _cannot_write(args.output, error) from None
    if args.json:
        emit({"output": args.output, "lines": written})
    return OK


def _check_output(output: str, session: Session) -> None:
    """Refuse an ``--output`` the export must not be written to: a name that
    is no file's, one of the store's own names (writing there would leave
    the store under that name an export), or what is not replaceable
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
    except OSError as error:
        raise _cannot_write(output, error) from None


def _names_the_store(output: str, store_file: str) -> bool:
    """Whether ``output`` is a name of the SQLite store at ``store_file`` or
    of a side file beside it: the same path once symlinks are resolved, or
    the same file (a hard link, another case on a case-insensitive disk)."""
    from roteiro_memory.stores.sqlite import SIDE_FILES

    real = os.path.realpath(output)
    for suffix in ("", *SIDE_FILES):
        own = store_file + suffix
        if real == os.path.realpath(own):
            return True
        try:
            if os.path.samefile(output, own):
                return True
        except OSError:
            continue  # one of them is not there: not the same file
    return False


def _cannot_write(output: str, error: OSError | ValueError) -> UsageError:
    reason = getattr(error, "strerror", None) or str(error)
    remedy = (
        "choose another --output, or leave -o out to write to stdout"
        if isinstance(error, FileExistsError)  # not replaceable
        else "free some space, or choose another --output"
    )
    return UsageError(
        f"cannot write {excerpt(output)}: {reason}; nothing was written there ({remedy})"
    )


def _warn_if_stdout_is_shared() -> None:
    """Warn when the export goes to a regular file others may read (the shell
    created it with the umask's mode): it holds every record, unredacted."""
    try:
        info = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return
    if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
        warn(
            f"standard output is a file others can read (mode {stat.S_IMODE(info.st_mode):04o}) "
            "and an export holds every record unredacted; chmod 600 it, or write with "
            "-o FILE, which is created 0600"
        )


def cmd_import(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.transfer import read_export

    if args.file == "-":
        lines = read_stdin("the export").splitlines()
    else:
        from pathlib import Path

        try:
            lines = Path(args.file).read_text(encoding="utf-8").splitlines()
        except (OSError, ValueError) as error:  # ValueError: not UTF-8, or a NUL in the path
            reason = getattr(error, "strerror", None) or str(error)
            raise UsageError(f"cannot read {args.file}: {reason}") from None
    try:
        parsed = read_export(lines)
    except RecursionError:
        raise UsageError(
            f"cannot import {excerpt(args.file)}: a line nests arrays or objects too deeply "
            "to be an export"
        ) from None
    for warning in parsed.warnings:
        warn(f"{args.file}: {warning}")
    counts = session.store().import_export(parsed)
    if args.json:
        emit(counts)
    else:
        say(f"imported {counts['records']} records and {counts['cache']} cache entries")
    return OK


# --- Agents: handlers in roteiro_memory.agents.commands, imported when run ---


def cmd_mcp(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.agents.commands import cmd_mcp as serve_mcp

    return serve_mcp(args, session)


def cmd_pack(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.agents.commands import cmd_pack as print_pack

    return print_pack(args, session)


HANDLERS: dict[str, Callable[[argparse.Namespace, Session], int]] = {
    "add": cmd_add,
    "list": cmd_list,
    "recall": cmd_recall,
    "show": cmd_show,
    "forget": cmd_forget,
    "sync": cmd_sync,
    "cache stats": cmd_cache_stats,
    "cache sweep": cmd_cache_sweep,
    "cache list": cmd_cache_list,
    "cache get": cmd_cache_get,
    "cache put": cmd_cache_put,
    "cache forget": cmd_cache_forget,
    "check": cmd_check,
    "export": cmd_export,
    "import": cmd_import,
    "mcp": cmd_mcp,
    "pack": cmd_pack,
}


def run(name: str, args: argparse.Namespace) -> int:
    """Run the handler for ``name`` in a session it closes."""
    if sys.stdout is None:
        raise StreamClosed(
            f"standard output is closed (>&-), but {name} reports there; run it with stdout open"
        )
    session = Session(args)
    try:
        return HANDLERS[name](args, session)
    finally:
        session.close()
