"""The stat cache: proof, without running git, that the working tree is what
the last sync saw.

Every command that reads syncs first, and asking git whether anything changed
costs a command line several processes -- more than the rest of a ``recall``.
So a sync that finds the tree settled leaves, in the worktree's own git
directory (``roteiro/statcache.json``), what it stood on: the repository's
facts as git gave them, the tree witness it left in the store, and the stat
data (mode, inode, size, modification and change times, in nanoseconds) of

* every file the graph holds, and every untracked file it left out;
* every directory git walks for untracked files -- all but ``.git``, the
  ones git ignores and submodules -- so a file created anywhere changes one,
  and every ``.gitignore`` and ``.gitattributes`` in them, ignored or not;
* what decides which files there are, read through links as git reads them:
  the worktree's index, ``HEAD`` and ``commondir`` (and its gitfile, in a
  linked worktree), the clone's ``config``,
  ``info/exclude`` and ``info/attributes``, every configuration file git
  read, the files those include and the ignore and attributes files they
  name, and the global and system ones the environment names (present or
  not, so that one appearing counts too).

A tree holding a repository of its own below its top level gets no cache
(whether git leaves that repository's files out depends on more than a
stat), nor does one with a folder that cannot be listed, nor one git asks
an fsmonitor hook about (the hook's answers are not stat data).

The next command finds the repository by looking for ``.git`` upwards from
where it runs, as git does, giving up -- and asking git -- at a directory
that may itself be a git directory (a bare repository, the inside of
``.git``), at a ``.git`` that is not plainly a git directory or a
``gitdir:`` file naming one, and at a repository this user does not own
(git's ``safe.directory`` is for git to apply).  It
takes the cache's word for where the repository is only when the ``.git``
found is the one the cache was written beside, no environment variable
changes how git finds or reads the repository (a ``GIT_*`` variable other
than :data:`_HARMLESS`), the environment names the same global files, and
the repository's own files are as they were; and for the tree only when,
besides, the store is the same store with the same witness and every stat
matches.  Anything else -- a cache missing, unreadable or of another
version -- and the command asks git, as it always did; the cache is never
more than a shortcut to the answer git would give.  Two gaps are known: a
system configuration or attributes file where a git build other than the
usual looks for it (not ``/etc/gitconfig``, ``/etc/gitattributes``) is not
watched; and a clean filter (``filter.*.clean``, git-lfs's among them) whose
program changes what it makes of a file the index holds stale stat data
for is not noticed until that file or the configuration changes.

While the last sync left files unread because their parser was missing
(:mod:`.unread`), the cache does not vouch for the tree once that parser can
be found: the next command asks git, and its sync reads them.

Racy timestamps, as git calls them: a file changed within a timestamp's
granularity of being looked at could change again without its stat data
changing.  So nothing is written while anything the cache would stand on
changed less than :data:`RACY_NS` before the sync began; the command after
the next quiet moment writes it.  A tree of more than :data:`MAX_ENTRIES`
files and directories gets no cache, so that reading it stays cheap beside
asking git; nor does a sparse checkout (a file it lists is not there to
stat).
"""

from __future__ import annotations

import json
import os
import stat

from roteiro_memory.errors import GitError
from roteiro_memory.repo.regular import read_regular
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from roteiro_memory.repo.graph import Repo

__all__ = [
    "MAX_ENTRIES",
    "RACY_NS",
    "Place",
    "StatCache",
    "discover",
    "forget",
    "record",
    "settled_since",
]

VERSION = 1
CACHE_DIR = "roteiro"
CACHE_FILE = "statcache.json"

RACY_NS = 2_000_000_000
"""How long ago (2 s, the coarsest timestamps a file system in use keeps)
everything must have last changed for a sync to write the cache."""

MAX_CACHE_BYTES = 64 * 1024 * 1024
"""A cache file larger than this (far beyond what :data:`MAX_ENTRIES`
make) is not read."""

MAX_ENTRIES = 100_000
"""At most this many files and directories are stat-checked (a quarter of a
second on a laptop); above it the cache is not written."""

_HARMLESS = (
    "GIT_AUTHOR_",
    "GIT_COMMITTER_",
    "GIT_SSH",
    "GIT_SSL_",
    "GIT_HTTP_",
    "GIT_CURL_",
    "GIT_PROXY_",
    "GIT_TRACE",
    "GIT_PS1_",
    "GIT_MERGE_",
    "GIT_ASKPASS",
    "GIT_TERMINAL_PROMPT",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_PAGER",
    "GIT_REFLOG_ACTION",
    "GIT_PROTOCOL",
    "GIT_ALLOW_PROTOCOL",
    "GIT_OPTIONAL_LOCKS",
    "GIT_FLUSH",
    "GIT_ADVICE",
    # These move configuration files; which files they name is part of
    # what the cache compares (:func:`_config_candidates`).
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
)
"""Prefixes of the ``GIT_*`` variables that change nothing about which files
git lists or how it hashes them -- identities, transports, tracing, prompts,
editors.  A command run with any other set (``GIT_DIR``, ``GIT_INDEX_FILE``,
``GIT_CONFIG_COUNT`` ...) asks git every time."""


@valueclass
class Place:
    """Where a repository is, as git answered: all paths absolute."""

    root: str
    """The top level of the working tree."""
    git_dir: str
    """This worktree's git directory (the cache lives here)."""
    common_dir: str
    """The git directory shared by every worktree of the clone."""
    object_format: str


_PLACE_FIELDS = {"root", "git_dir", "common_dir", "object_format"}


def _stat(path: str, *, follow: bool = False) -> list[int] | None:
    """The stat data the cache keeps of ``path`` (of a link itself, unless
    ``follow``: git hashes a link's text, but reads a configuration or ignore
    file through one); None when there is nothing there to stat."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except (OSError, ValueError):
        return None  # ValueError: a name no file can have (a NUL), from a damaged cache
    return [info.st_mode, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _config_candidates(environ: Mapping[str, str], root: str) -> list[str]:
    """The configuration, ignore and attributes files git would read beyond
    the repository's own, whether they exist or not, as the environment names
    them (a relative name is git's, run at the top level ``root``)."""
    home = environ.get("HOME", "")
    xdg = environ.get("XDG_CONFIG_HOME") or (os.path.join(home, ".config") if home else "")
    found = []
    if environ.get("GIT_CONFIG_NOSYSTEM", "").lower() not in ("1", "true", "yes", "on"):
        found.append(environ.get("GIT_CONFIG_SYSTEM", "/etc/gitconfig"))
    found.append("/etc/gitattributes")  # read unless GIT_ATTR_NOSYSTEM, which turns the cache off
    if "GIT_CONFIG_GLOBAL" in environ:
        found.append(environ["GIT_CONFIG_GLOBAL"])
    else:
        found += [os.path.join(xdg, "git", "config")] if xdg else []
        found += [os.path.join(home, ".gitconfig")] if home else []
    found += [os.path.join(xdg, "git", name) for name in ("ignore", "attributes")] if xdg else []
    return [os.path.join(root, path) for path in found]


def _environment_allows(environ: Mapping[str, str]) -> bool:
    return not any(name.startswith("GIT_") and not name.startswith(_HARMLESS) for name in environ)


class StatCache:
    """One worktree's cache, as read from its file."""

    def __init__(self, place: Place, data: dict[str, object]) -> None:
        self.place = place
        self._data = data

    @property
    def left_unread(self) -> list[str]:
        """The languages the sync the cache vouches for left files of unread,
        their parser missing here (:mod:`.unread`)."""
        left = self._data.get("unread")
        return [str(name) for name in left] if isinstance(left, list) else []

    def place_holds(self, environ: Mapping[str, str]) -> bool:
        """Whether the repository is where the cache says: its own files (the
        index, ``HEAD``, the configuration, ignore and attributes files) are
        as they were, and the environment names the same ones."""
        data = self._data
        if data.get("candidates") != _config_candidates(environ, self.place.root):
            return False
        watched = data.get("watched")
        if not isinstance(watched, list):
            return False
        return all(_is_entry(item) and _stat(item[0], follow=True) == item[1] for item in watched)

    def unchanged(self, store: str, tree: str | None, environ: Mapping[str, str]) -> bool:
        """Whether ``store``, whose tree witness is ``tree``, is synced with
        the working tree as it is now, by the cache's word."""
        data = self._data
        if tree is None or data.get("store") != store or data.get("tree") != tree:
            return False
        left = data.get("unread")
        if left:
            from roteiro_memory.repo import unread

            if not isinstance(left, list) or unread.installed(map(str, left)):
                return False  # files left unread can be read now
        return self.place_holds(environ) and self._tree_unchanged(
            data.get("paths"), data.get("stats")
        )

    def _tree_unchanged(self, paths: object, stats: object) -> bool:
        """Whether every file and folder of ``paths`` has the stat data
        ``stats`` holds for it, five numbers each: the loop every command
        runs, kept to one system call and five comparisons a path."""
        if type(paths) is not list or type(stats) is not list or len(stats) != 5 * len(paths):
            return False
        if not all(type(path) is str for path in paths):
            return False
        root = self.place.root
        lstat, join = os.lstat, os.path.join
        at = 0
        try:
            for path in paths:
                info = lstat(join(root, path) if path else root)
                if (
                    info.st_mtime_ns != stats[at + 3]
                    or info.st_ctime_ns != stats[at + 4]
                    or info.st_size != stats[at + 2]
                    or info.st_ino != stats[at + 1]
                    or info.st_mode != stats[at]
                ):
                    return False
                at += 5
        except (OSError, ValueError):
            return False  # gone (every path was there when the cache was written), or no name
        return True


def _is_entry(item: object) -> bool:
    """Whether ``item`` is ``[path, stat or null]`` as :func:`record` writes
    it (a pair, before JSON makes it a list): a cache is read as untrusted
    input, and anything else refutes it."""
    if not isinstance(item, (list, tuple)) or len(item) != 2 or not isinstance(item[0], str):
        return False
    recorded = item[1]
    return recorded is None or (
        isinstance(recorded, list)
        and len(recorded) == 5
        and all(type(value) is int for value in recorded)
    )


def _read_small(path: str) -> str | None:
    """The text of a small file git keeps one line in (``HEAD``, a gitfile,
    ``commondir``), its line ending dropped as git drops it; None when it is
    not a plain small file."""
    data = read_regular(path, 4096)
    if data is None:
        return None
    text = data.decode("utf-8", "surrogateescape").rstrip("\r\n")
    return None if "\n" in text or "\r" in text else text


def _may_be_git_directory(path: str) -> bool:
    """Whether git might take ``path`` for a git directory (a bare
    repository, or the inside of ``.git``): it has a ``HEAD`` of any kind.
    Loose on purpose: where it says yes, the search stops and git is asked."""
    return os.path.lexists(os.path.join(path, "HEAD"))


def _is_git_directory(path: str) -> bool:
    """Whether ``path`` is plainly a git directory, as git tests one: a
    ``HEAD`` naming a branch or a commit, and ``objects`` and ``refs`` in
    it or, for a linked worktree, in the clone's directory its ``commondir``
    names.  Strict on purpose: where it says no, git is asked."""
    head_path = os.path.join(path, "HEAD")
    if os.path.islink(head_path):
        try:
            named = os.readlink(head_path)
        except OSError:
            return False
        if not named.startswith("refs/"):
            return False
    else:
        head = _read_small(head_path)
        if head is None:
            return False
        if not head.startswith("ref: refs/") and not (
            len(head) in (40, 64) and all(c in "0123456789abcdef" for c in head)
        ):
            return False
    common = path
    if os.path.lexists(os.path.join(path, "commondir")):
        clone = _read_small(os.path.join(path, "commondir"))
        if not clone:
            return False
        common = os.path.join(path, clone)
    return os.path.isdir(os.path.join(common, "objects")) and os.path.isdir(
        os.path.join(common, "refs")
    )


def _dot_git(directory: str) -> tuple[str, list[int]] | None:
    """``directory``'s ``.git`` entry, when it is a git directory or a
    ``gitdir:`` file naming one: the git directory and the entry's identity
    (device, inode).  None for anything else there -- a link, a file of
    another kind, a git directory git would not take -- which only git can
    judge."""
    entry = os.path.join(directory, ".git")
    try:
        info = os.lstat(entry)
    except (OSError, ValueError):
        return None
    identity = [info.st_dev, info.st_ino]
    if stat.S_ISDIR(info.st_mode):
        return (entry, identity) if _is_git_directory(entry) else None
    text = _read_small(entry)
    if text is None or not text.startswith("gitdir: "):
        return None
    target = os.path.join(directory, text[len("gitdir: ") :])
    return (target, identity) if _is_git_directory(target) else None


def _owned(*paths: str) -> bool:
    """Whether this user owns every one of ``paths``: git refuses a
    repository someone else owns (``safe.directory``), and only git can say
    whether this one is let through."""
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    try:
        return all(uid is None or os.stat(path).st_uid == uid for path in paths)
    except (OSError, ValueError):
        return False


def discover(environ: Mapping[str, str]) -> StatCache | None:
    """The cache of the repository the current directory is in, found
    without git, when it can be trusted to say where that repository is;
    None when git must be asked.

    The search is git's, upwards from the current directory, on one file
    system; it gives up -- leaving the question to git -- at anything git
    might read otherwise: a directory that is itself a git directory (a bare
    repository, the inside of ``.git``), or a ``.git`` that is not plainly
    one."""
    if not _environment_allows(environ):
        return None
    try:
        here = os.getcwd()
        device = os.stat(here).st_dev
    except OSError:
        return None
    directory = here
    while True:
        if _may_be_git_directory(directory):
            return None
        if os.path.lexists(os.path.join(directory, ".git")):
            found = _dot_git(directory)
            if found is None:
                return None
            break
        parent = os.path.dirname(directory)
        try:
            if parent == directory or os.stat(parent).st_dev != device:
                return None  # git stops at the root and at a file system's edge
        except OSError:
            return None
        directory = parent
    git_dir, identity = found
    if not _owned(directory, os.path.join(directory, ".git"), git_dir):
        return None
    raw = read_regular(os.path.join(git_dir, CACHE_DIR, CACHE_FILE), MAX_CACHE_BYTES)
    if raw is None:
        return None  # no cache, or none that can be read: git is asked
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or type(data.get("version")) is not int:
        return None
    facts = data.get("place")
    if (
        data["version"] != VERSION
        or not isinstance(facts, dict)
        or set(facts) != _PLACE_FIELDS
        or not all(isinstance(value, str) for value in facts.values())
        or facts["root"] != directory
        or data.get("dot_git") != identity
        or facts["git_dir"] != os.path.realpath(git_dir)
    ):
        return None
    cache = StatCache(Place(**facts), data)
    return cache if cache.place_holds(environ) else None


# --- Writing ----------------------------------------------------------------


def settled_since(started_ns: int, stats: Iterable[list[int] | None]) -> bool:
    """Whether nothing of ``stats`` changed less than :data:`RACY_NS` before
    ``started_ns`` or after it."""
    limit = started_ns - RACY_NS
    return all(s is None or (s[3] < limit and s[4] < limit) for s in stats)


_RULE_FILES = frozenset({".gitignore", ".gitattributes"})
"""Files in the tree that change what git lists or how it compares: watched
wherever they are, even when ignored themselves (``*`` in a tool's own
``.gitignore`` ignores that file too)."""


def _directories(root: str, skip: set[str]) -> tuple[list[str], list[str]] | None:
    """Every directory under ``root`` git walks for untracked files, and
    every ignore or attributes file in them, as paths relative to ``root``
    (``""`` is ``root``), not entering links or ``skip``.  None -- no cache
    -- when there are more than :data:`MAX_ENTRIES`, when one cannot be
    listed (what git cannot see into, the cache cannot watch), or when one
    holds a ``.git`` of its own: whether git takes that for a nested
    repository (and leaves its files out) depends on more than its stat."""
    found: list[str] = []
    rules: list[str] = []
    pending = [""]
    while pending:
        relative = pending.pop()
        found.append(relative)
        if len(found) + len(rules) > MAX_ENTRIES:
            return None
        try:
            with os.scandir(os.path.join(root, relative) if relative else root) as listing:
                for entry in listing:
                    below = f"{relative}/{entry.name}" if relative else entry.name
                    if entry.name == ".git":
                        if relative:
                            return None
                    elif entry.is_dir(follow_symlinks=False):
                        if below not in skip:
                            pending.append(below)  # whatever its name: a folder is walked
                    elif entry.name in _RULE_FILES:
                        rules.append(below)
        except OSError:
            return None
    return found, rules


def _git_facts(repo: Repo) -> tuple[set[str], list[str]] | None:
    """From git: the ignored directories (which need no watching), and every
    configuration file it read plus the files the configuration names.  None
    when an fsmonitor hook answers git's questions about the tree: what it
    says can change with no stat the cache keeps changing."""
    listed = repo.git(
        "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"
    )
    # A folder listed here holds only ignored files, but only one that is
    # itself ignored stays so whatever is created in it: check-ignore says
    # which (exit status 1 when none is).
    candidates = [
        item[:-1]
        for item in listed.decode("utf-8", "surrogateescape").split("\0")
        if item.endswith("/")
    ]
    directories: set[str] = set()
    if candidates:
        # Each as "./PATH": check-ignore reads pathspecs, and a folder named
        # ":build" is not the pathspec magic it would otherwise be.
        answer = repo.git(
            "check-ignore",
            "-z",
            "--stdin",
            input="".join(f"./{path}\0" for path in candidates).encode("utf-8", "surrogateescape"),
            ok=(0, 1),
        )
        directories = {
            item.removeprefix("./").rstrip("/")
            for item in answer.decode("utf-8", "surrogateescape").split("\0")
            if item
        }
    listing = repo.git("config", "-z", "--list", "--show-origin")
    files: list[str] = []
    items = listing.decode("utf-8", "surrogateescape").split("\0")
    root = str(repo.root)
    for origin, setting in zip(items[::2], items[1::2], strict=False):
        source = os.path.join(root, origin[len("file:") :]) if origin.startswith("file:") else None
        if source is not None:
            files.append(source)
        key, _, value = setting.partition("\n")
        if key == "core.fsmonitor" and value.lower() not in ("", "false", "no", "off", "0"):
            return None
        if not value:
            continue
        if key in ("core.excludesfile", "core.attributesfile"):
            # A relative name is git's, run at the top level.
            files.append(os.path.join(root, os.path.expanduser(value)))
        elif key == "include.path" or (key.startswith("includeif.") and key.endswith(".path")):
            # Whether it exists or not: one that appears changes the
            # configuration.  A relative name is the including file's.
            base = os.path.dirname(source) if source is not None else root
            files.append(os.path.join(base, os.path.expanduser(value)))
    return directories, files


def _cache_path(place: Place) -> str:
    return os.path.join(place.git_dir, CACHE_DIR, CACHE_FILE)


def record(
    repo: Repo,
    place: Place,
    store: str,
    tree: str,
    started_ns: int,
    paths: Iterable[str],
    submodules: Iterable[str],
    environ: Mapping[str, str],
) -> StatCache | None:
    """Write the cache for ``store`` synced to ``tree`` from the ``paths`` a
    sync begun at ``started_ns`` listed, when the tree has settled, and
    return it (a long-lived process, the MCP server, goes on with it); else
    remove any earlier one and return None.

    A git directory that cannot be written to only means the next command
    asks git again: that failure is not the command's, and is not raised.
    """
    data = _gather(repo, place, store, tree, started_ns, paths, submodules, environ)
    if data is None:
        forget(place)
        return None
    return _write(place, data)


def _gather(
    repo: Repo,
    place: Place,
    store: str,
    tree: str,
    started_ns: int,
    paths: Iterable[str],
    submodules: Iterable[str],
    environ: Mapping[str, str],
) -> dict[str, object] | None:
    """What :func:`record` writes, or None when no cache can vouch for this
    tree now (see the module's docstring for each reason)."""
    if not _environment_allows(environ):
        return None
    dot_git = _dot_git(place.root)
    dot_git_path = os.path.join(place.root, ".git")
    if dot_git is None or os.path.realpath(dot_git[0]) != place.git_dir:
        return None
    files = sorted(set(paths))
    if len(files) > MAX_ENTRIES:
        return None
    # The files first: when they are still moving (or missing, as in a sparse
    # checkout), nothing more is asked of git.
    entries = [(relative, _stat(os.path.join(place.root, relative))) for relative in files]
    if any(info is None for _, info in entries):
        return None  # gone since git listed it: the tree is moving
    if not settled_since(started_ns, [info for _, info in entries]):
        return None
    try:
        facts = _git_facts(repo)
    except GitError:
        return None  # the sync itself succeeded: only the shortcut is lost
    if facts is None:
        return None
    ignored, configured = facts
    walked = _directories(place.root, ignored | set(submodules))
    if walked is None or len(walked[0]) + len(walked[1]) + len(files) > MAX_ENTRIES:
        return None
    directories, rules = walked
    listed = set(files)
    rules = [relative for relative in rules if relative not in listed]
    candidates = _config_candidates(environ, place.root)
    watched_paths = [
        os.path.join(place.git_dir, "index"),
        os.path.join(place.git_dir, "HEAD"),  # includeIf "onbranch:"
        os.path.join(place.git_dir, "commondir"),  # a linked worktree's clone
        *([dot_git_path] if os.path.isfile(dot_git_path) else []),  # a gitfile's target
        os.path.join(place.git_dir, "config.worktree"),
        os.path.join(place.common_dir, "config"),
        os.path.join(place.common_dir, "info", "exclude"),
        os.path.join(place.common_dir, "info", "attributes"),
        *candidates,
        *configured,
    ]
    watched = [(path, _stat(path, follow=True)) for path in dict.fromkeys(watched_paths)]
    folders = [
        (relative, _stat(os.path.join(place.root, relative) if relative else place.root))
        for relative in [*directories, *rules]
    ]
    if any(info is None for _, info in folders):
        return None
    if not settled_since(started_ns, [info for _, info in watched + folders]):
        return None
    entries += folders
    from roteiro_memory.repo import unread

    return {
        "version": VERSION,
        "place": {
            "root": place.root,
            "git_dir": place.git_dir,
            "common_dir": place.common_dir,
            "object_format": place.object_format,
        },
        "dot_git": dot_git[1],
        "store": store,
        "tree": tree,
        "unread": unread.languages(place.git_dir),
        "candidates": candidates,
        "watched": watched,
        "paths": [path for path, _ in entries],
        "stats": [number for _, info in entries if info is not None for number in info],
    }


def forget(place: Place) -> None:
    """Remove the worktree's cache, if any: the tree it stood on is moving,
    or the store it vouches for is gone."""
    target = _cache_path(place)
    try:
        if os.path.lexists(target):
            os.unlink(target)
    except OSError:
        return  # left behind, it still refutes itself: what moved has other stat data now


def _write(place: Place, data: dict[str, object]) -> StatCache | None:
    """Write ``data`` as the worktree's cache, whole and private; None when
    it cannot be written, which only means the next command asks git."""
    from roteiro_memory import privatefile
    from roteiro_memory.repo.location import private_folder

    target = _cache_path(place)
    try:
        private_folder(os.path.dirname(target))
        privatefile.replace(
            target, lambda out: json.dump(data, out, separators=(",", ":")), durable=False
        )
    except OSError:
        return None
    return StatCache(place, data)
