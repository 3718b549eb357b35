"""``roteiro-memory setup HOST``: configure a coding agent host for this
repository -- its MCP server entry and, for Claude Code, the hooks -- with
the absolute path of this installed command (a host's PATH rarely holds a
virtual environment's scripts).

The merge is :mod:`roteiro_memory.app.hostconfig`'s: only our entries
change, a second run changes nothing and says so, and a file that does not
parse is refused in one line with nothing written.  Writing is all or none
(:func:`_write_all`): a file that cannot be written is refused the same way,
before any file is replaced.  ``--print`` shows what would be written and
writes nothing.
"""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common, once

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from pathlib import Path

    from roteiro_memory.app.hostconfig import ConfigRefused, Edit
    from roteiro_memory.app.session import Session

SUMMARY = "configure a coding agent host (claude-code, cursor, codex) for this repository"
EXAMPLE = "roteiro-memory setup claude-code\n  roteiro-memory setup codex --print"

SYNCS = False
REFUSES = {"db": "setup writes a host's configuration, not the store"}

COMMAND = "roteiro-memory"

_NO_HOOKS = (
    "{host} runs no roteiro-memory hook (its hooks are not Claude Code's): the MCP server is "
    "there, and the README's AGENTS.md snippet tells the agent when to call it"
)


def configure(parser: argparse.ArgumentParser) -> None:
    from roteiro_memory.app.hostconfig import HOSTS

    parser.add_argument("host", choices=sorted(HOSTS), help="the host to configure")
    parser.add_argument(
        "--print",
        action="store_true",
        dest="show",
        help="print every file as it would be written, and write nothing",
    )
    parser.add_argument(
        "--repo",
        metavar="DIR",
        action=once("one repository at a time"),
        help="the repository to configure (default: the one this runs in)",
    )
    add_common(parser, db=False)


def installed_command() -> str:
    """The absolute path of this package's console script: beside the
    interpreter running it (a virtual environment's ``bin``), else on PATH."""
    import os
    import shutil
    import sys

    from roteiro_memory.errors import UsageError, excerpt

    beside = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), COMMAND)
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        found: str | None = beside
    else:
        found = shutil.which(COMMAND)
    if found is None:
        raise UsageError(
            f"the {COMMAND} command is not installed beside {sys.executable} nor on PATH, so "
            "there is no path to give the host; install the package (pip install -e .), "
            "then run setup again"
        )
    try:
        found.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8, decoded as lone surrogates
        raise UsageError(
            f"the {COMMAND} command is at {excerpt(os.fsencode(found), 200)}, a path that is "
            "not UTF-8 text, and a host's configuration (JSON, TOML) holds only text; install "
            "the package where its path is UTF-8, then run setup again"
        ) from None
    return os.path.abspath(found)


def _read(path: Path) -> str | None:
    """The file's text, or None when there is none; refused when it is there
    and cannot be read as a configuration file."""
    from roteiro_memory.app.hostconfig import ConfigRefused

    if not path.exists() and not path.is_symlink():
        return None
    if not path.is_file():
        raise ConfigRefused(f"{path} is not a regular file; nothing was written")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigRefused(f"{path} cannot be read ({error}); nothing was written") from None


def _write_all(root: Path, edits: list[Edit]) -> None:
    """Write every changed file of ``edits``, all or none.

    Each new text is written whole beside the file it replaces (with that
    file's mode, owner and group; a new file: the umask's, and this
    process's) and flushed to disk before any file is replaced, so a file
    that cannot be written -- a folder on its path that is a file, a folder
    that takes no new file -- refuses the whole setup, naming it, with every
    file as it was and every folder made for it removed; and the folders the
    files are renamed (or made) in are flushed after, so a crash cannot
    leave an empty file, or none, in the old one's place.  A symlink is
    written through, as an editor saves: the file it names is replaced and
    the link kept."""
    import contextlib
    import os

    from roteiro_memory.errors import UsageError

    made: list[Path] = []
    staged: list[tuple[str, str]] = []
    try:
        for edit in edits:
            if edit.changed:
                _stage(root / edit.path, edit.after, made, staged)
        for done, (temporary, target) in enumerate(staged):
            try:
                os.replace(temporary, target)
            except OSError as error:
                # Beside its target, a complete file is renamed over it unless
                # the disk itself fails: the one step that can leave some done.
                replaced = ", ".join(t for _, t in staged[:done]) or "none"
                raise UsageError(
                    f"{target} cannot be replaced ({error.strerror or error}); "
                    f"the files replaced before it: {replaced}"
                ) from None
        _sync_folders([os.path.dirname(t) for _, t in staged] + [str(f.parent) for f in made])
    except BaseException:
        for temporary, _ in staged:
            # Gone when renamed over its target already; one that cannot be
            # removed stays, and the error that stopped the setup is told.
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        for folder in reversed(made):
            with contextlib.suppress(OSError):  # not empty: a file was renamed into it
                folder.rmdir()
        raise


def _sync_folders(folders: list[str]) -> None:
    """Flush to disk each of ``folders``, so the renames into it (and the
    folders made in it) outlast a crash
    (:func:`~roteiro_memory.privatefile.sync_folder`).  Every file is
    replaced by then, so one that cannot be flushed is refused saying so."""
    from roteiro_memory import privatefile
    from roteiro_memory.errors import UsageError

    for folder in sorted(set(folders)):
        try:
            privatefile.sync_folder(folder)
        except OSError as error:
            raise UsageError(
                f"{folder} cannot be flushed to disk ({error.strerror or error}); every file "
                "was replaced, but a crash before the system writes the folder may undo that"
            ) from None


def _stage(path: Path, text: str, made: list[Path], staged: list[tuple[str, str]]) -> None:
    """Write ``text`` to a new file beside the file ``path`` names, with its
    mode, making the folders it needs (each added to ``made``); the new
    file's name and the target it is to replace are added to ``staged``.
    Refused, naming ``path``, when it cannot be written, or is read-only
    (no write bit: renaming over it would need only its folder's)."""
    import os
    import tempfile

    from roteiro_memory.app.hostconfig import ConfigRefused

    _make_folders(path, made)
    target = os.path.realpath(path)  # through a symlink, the file it names
    shown = str(path) if target == str(path) else f"{path} (a symlink to {target})"
    if any(target == staged_target for _, staged_target in staged):
        raise ConfigRefused(
            f"{path} and another of the host's files are one file, {target}, and each is "
            "written whole, so one's settings would be lost; make them two files; nothing was "
            "written"
        )
    try:
        status = os.stat(target) if os.path.exists(target) else None
        if status is not None and not status.st_mode & 0o222:
            raise ConfigRefused(
                f"{shown} is read-only (mode {status.st_mode & 0o777:04o}), which says it is "
                "not to be changed, and setup would replace it; make it writable (chmod u+w) "
                "to let setup merge into it; nothing was written"
            )
        handle, temporary = tempfile.mkstemp(
            dir=os.path.dirname(target), prefix=f".{os.path.basename(target)}."
        )
        staged.append((temporary, target))
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            if status is None:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            else:
                mode = status.st_mode & 0o777
                _keep_owner(temporary, status, shown)
            os.chmod(temporary, mode)
            out.flush()
            os.fsync(out.fileno())  # on disk, mode and owner too, before it replaces a file
    except OSError as error:
        raise ConfigRefused(
            f"{shown} cannot be written ({error.strerror or error}); nothing was written"
        ) from None


def _keep_owner(temporary: str, status: os.stat_result, shown: str) -> None:
    """Give the new file ``temporary`` the owner and group of the file it is
    to replace (``status``): run as root, setup must not take a user's file
    for root.  Refused, naming it, when that cannot be done (the file is
    another user's, and this is not root)."""
    import os

    from roteiro_memory.app.hostconfig import ConfigRefused

    mine = os.stat(temporary)
    if (mine.st_uid, mine.st_gid) == (status.st_uid, status.st_gid):
        return
    try:
        os.chown(temporary, status.st_uid, status.st_gid)
    except OSError as error:
        raise ConfigRefused(
            f"{shown} belongs to user {status.st_uid} and group {status.st_gid}, which the "
            f"file written in its place cannot be given ({error.strerror or error}); run setup "
            "as a user who can give it them (its owner, when a member of its group); nothing "
            "was written"
        ) from None


def _make_folders(path: Path, made: list[Path]) -> None:
    """Make the folders ``path`` is in that are not there, each added to
    ``made``; refused, naming it, when one is there and is not a folder (a
    file, a symlink to nothing) or cannot be made."""
    from roteiro_memory.app.hostconfig import ConfigRefused

    missing: list[Path] = []
    folder = path.parent
    while not folder.is_dir():  # through a symlink: a link to a folder is one
        if folder.exists() or folder.is_symlink():
            raise _not_a_folder(path, folder)
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir()
        except FileExistsError:
            if folder.is_dir():
                continue  # made meanwhile (another setup): used, and not removed as ours
            raise _not_a_folder(path, folder) from None
        except OSError as error:
            raise ConfigRefused(
                f"{path} cannot be written: its folder {folder} cannot be made "
                f"({error.strerror or error}); nothing was written"
            ) from None
        made.append(folder)


def _not_a_folder(path: Path, folder: Path) -> ConfigRefused:
    from roteiro_memory.app.hostconfig import ConfigRefused

    return ConfigRefused(
        f"{path} cannot be written: {folder} is not a folder (only a folder, or a symlink to "
        "one, can hold it); nothing was written"
    )


def _say(edits: list[Edit], root: Path, host: str, show: bool) -> None:
    """What setup did, or would do, for a person: a file's text and the
    repository's folder reach a terminal, their control characters escaped."""
    from roteiro_memory.cli.output import printable, say

    if show:
        for edit in edits:
            state = "would change" if edit.changed else "unchanged"
            say(f"# {edit.path} ({state})\n{printable(edit.after)}")
        return
    if not any(edit.changed for edit in edits):
        where = printable(str(root), one_line=True)
        say(f"nothing to change: {host} is already set up in {where}")
        return
    for edit in edits:
        verb = "unchanged" if not edit.changed else ("wrote" if edit.before is None else "updated")
        say(f"{verb} {edit.path}")


def run(args: argparse.Namespace, session: Session) -> int:
    import os
    from pathlib import Path

    from roteiro_memory.app.hostconfig import HOSTS, plan
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.errors import UsageError, excerpt
    from roteiro_memory.exitcodes import ExitCode

    if args.repo is not None:
        if not args.repo or not os.path.isdir(args.repo):
            raise UsageError(f"--repo {excerpt(args.repo)}: no such folder")
        os.chdir(args.repo)
    root = Path(session.require_repo("setup").root)
    host = HOSTS[args.host]
    command = installed_command()
    edits = plan(host, {name: _read(root / name) for name in host.files}, command)
    if not args.show:
        _write_all(root, edits)
    if args.json:
        emit(
            {
                "host": host.name,
                "root": str(root),
                "command": command,
                "written": not args.show,
                "files": [{"path": e.path, "changed": e.changed, "text": e.after} for e in edits],
            }
        )
        return ExitCode.OK
    _say(edits, root, host.name, args.show)
    if not host.hooks and not args.show:
        say(_NO_HOOKS.format(host=host.name))
    return ExitCode.OK
