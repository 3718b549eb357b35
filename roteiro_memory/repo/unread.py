"""Which languages a worktree's last sync could not read symbols of, kept
beside the stat cache (``<git dir>/roteiro/unread``, one name a line).

A sync that finds the tree unchanged writes nothing and reads no file; but a
file whose parser was missing then, and is installed now, must be read,
though nothing in the tree changed.  This file is what says so cheaply: the
sync that leaves files unread writes it, the one that leaves none removes
it, and while it names a language whose grammar can now be found, neither
the tree witness (:func:`roteiro_memory.repo.graph.sync`) nor the stat cache
(:mod:`.statcache`) vouches that the store is up to date.  Finding a grammar
looks it up on the import path; it loads nothing.
"""

from __future__ import annotations

import os

from roteiro_memory.repo.regular import read_regular

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import TextIO

__all__ = ["installed", "languages", "note"]

_FILE = os.path.join("roteiro", "unread")
_MAX_BYTES = 64 * 1024
"""A note larger than this (a few language names make one) is not read."""


def note(git_dir: str | os.PathLike[str], names: Iterable[str]) -> None:
    """Record ``names`` as the languages left unread (none: remove the file).
    A git directory that cannot be written to only costs the shortcut."""
    path = os.path.join(git_dir, _FILE)
    wanted = sorted(set(names))
    try:
        if not wanted:
            if os.path.lexists(path):
                os.unlink(path)
            return
        from roteiro_memory import privatefile
        from roteiro_memory.repo.location import private_folder

        private_folder(os.path.dirname(path))

        def write(out: TextIO) -> None:
            out.writelines(f"{name}\n" for name in wanted)

        privatefile.replace(path, write)
    except OSError:
        return


def languages(git_dir: str | os.PathLike[str] | None) -> list[str]:
    """The languages the last sync left unread; none when it left none."""
    if git_dir is None:
        return []
    data = read_regular(os.path.join(git_dir, _FILE), _MAX_BYTES)
    try:
        text = data.decode("utf-8") if data is not None else ""
    except UnicodeDecodeError:
        return []
    return [line.strip() for line in text.splitlines() if line.strip()]


def installed(names: Iterable[str]) -> bool:
    """Whether tree-sitter and the grammar of any language in ``names`` can
    be imported now."""
    import importlib.util

    from roteiro_memory.repo.languages import LANGUAGES

    wanted = set(names)
    modules = {
        module
        for language in LANGUAGES
        if language.name in wanted
        for module, _ in language.grammars.values()
    }
    if not modules or importlib.util.find_spec("tree_sitter") is None:
        return False
    return any(importlib.util.find_spec(module) is not None for module in modules)
