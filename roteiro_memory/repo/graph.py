"""The code graph, read from git: file nodes and symbol nodes.

Two graphs are built here.  The *working* graph is what :func:`sync` writes
into a store: one ``file:<path>`` node per tracked or untracked-but-not-ignored
file, its blob the id git gives its content on disk (:mod:`.blobs`), and one
``<prefix><path>::<qualname>`` node per definition in a file of a language
with symbols (``py:`` for Python; :mod:`.languages`, :mod:`.nodes`).  A
*revision* graph (:func:`rev_graph`) is the same thing for a commit, built in
memory and never written, so "is this lesson valid on main?" costs no store
write.

Sync is incremental.  Git's index already knows which tracked files are
unchanged (``diff-files`` compares against its stat cache), so only files it
reports changed, and untracked files, are hashed; a source file is re-parsed
only when its blob differs from the one the store holds.  The tree witness is
the id of the tree git would write for the synced files (:mod:`.treeid`),
without writing any object; when it equals the stored witness nothing is
written at all.
"""

from __future__ import annotations

import os
import stat
import subprocess
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path

from roteiro_memory.errors import GitError, excerpt
from roteiro_memory.repo import unknown, unread
from roteiro_memory.repo.binding import blob_id
from roteiro_memory.repo.blobs import clean_blobs, clean_content, stream_blob_id
from roteiro_memory.repo.languages import (
    FILE_PREFIX,
    PY_PREFIX,
    SYMBOL_PREFIXES,
    file_key,
    symbol_key,
)
from roteiro_memory.repo.nodes import (
    EXECUTABLE,
    GITLINK,
    REGULAR,
    SYMLINK,
    Built,
    FileEntry,
    Progress,
    Stored,
    build,
)
from roteiro_memory.repo.regular import open_regular, read_regular
from roteiro_memory.repo.revname import check_rev_name
from roteiro_memory.repo.syncreport import SyncReport
from roteiro_memory.repo.treeid import tree_id
from roteiro_memory.results import GraphNode
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.store import Store

__all__ = [
    "FILE_PREFIX",
    "PY_PREFIX",
    "FileEntry",
    "GitError",
    "Repo",
    "SyncReport",
    "build_working",
    "check_rev_name",
    "file_key",
    "find_repo",
    "graph_blobs",
    "linked_folder",
    "no_repo_reason",
    "rev_graph",
    "symbol_key",
    "sync",
    "touched_keys",
    "tree_graph",
    "tree_id",
    "working_entry",
    "working_files",
    "working_source",
]


MAX_UNTRACKED_BYTES = 16 * 1024 * 1024
"""An untracked file larger than this is taken for a log, a dump or a build
product, not source: it gets no node and is not read (untracked files are
hashed on every sync, as git keeps no stat cache for them)."""

SNIFF_BYTES = 8192
"""An untracked file with a NUL byte this near its start is binary, as git
decides it: no node either."""


@valueclass
class Repo:
    """Where a working tree and its git data live."""

    root: Path
    """The top level of the working tree."""
    common_dir: Path
    """The git directory shared by every worktree of the clone."""
    object_format: str
    """``sha1`` or ``sha256``: how blob and tree ids are hashed."""
    git_dir: Path | None = None
    """This worktree's own git directory (its index, the stat cache)."""

    def git(
        self,
        *args: str,
        input: bytes | None = None,
        ok: tuple[int, ...] = (0,),
        env: Mapping[str, str] | None = None,
    ) -> bytes:
        """Run ``git args`` at the top level, with ``env`` added to its
        environment; its stdout, or :class:`GitError` when it exits with a
        status not in ``ok``."""
        return _run(["git", "-C", str(self.root), *args], input=input, ok=ok, env=env)


NO_GIT = "git is not installed or not on PATH; install git to use it"
"""What any git call says when there is no git to run."""

OUTSIDE = "run it inside one"
""":func:`no_repo_reason` outside any repository, git working: the one
reason that is no fault of git's or its configuration."""

_LOCATE = ("--show-toplevel", "--git-common-dir", "--show-object-format", "--absolute-git-dir")


def _run(
    argv: Sequence[str],
    input: bytes | None = None,
    ok: tuple[int, ...] = (0,),
    env: Mapping[str, str] | None = None,
) -> bytes:
    try:
        done = subprocess.run(
            argv, input=input, capture_output=True, check=False, env={**_git_env(), **(env or {})}
        )
    except FileNotFoundError:
        raise GitError(NO_GIT) from None
    if done.returncode not in ok:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = message[-1] if message else f"exit status {done.returncode}"
        raise GitError(f"git {argv[3] if len(argv) > 3 else ''} failed: {detail}")
    return done.stdout


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    # Never take optional locks: a sync reads the index, it must not rewrite it
    # under a git command the user is running at the same moment.
    env["GIT_OPTIONAL_LOCKS"] = "0"
    env.setdefault("LC_ALL", "C")
    return env


def _locate(here: Path, of: Sequence[str] = _LOCATE) -> subprocess.CompletedProcess[bytes] | None:
    """git's answer to where the repository holding ``here`` is (``of``:
    what of it); None when there is no git to ask."""
    try:
        return subprocess.run(
            ["git", "-C", str(here), "rev-parse", *of],
            capture_output=True,
            check=False,
            env=_git_env(),
        )
    except FileNotFoundError:
        return None


def _here(cwd: str | os.PathLike[str] | None) -> Path | None:
    """``cwd``, else the folder the process runs in; None when that folder
    has been removed, so no repository holds it."""
    if cwd is not None:
        return Path(cwd)
    try:
        return Path.cwd()
    except FileNotFoundError:
        return None


def no_repo_reason(cwd: str | os.PathLike[str] | None = None) -> str:
    """Why :func:`find_repo` found no repository at ``cwd``, as the end of a
    sentence: outside any, git missing, or git failing (a malformed
    config, a repository owned by another user), in git's words (its
    ``fatal:`` line, not the hints after it)."""
    here = _here(cwd)
    if here is None:
        return "the folder it runs in is gone (removed since the command started in it)"
    done = _locate(here)
    if done is None:
        return NO_GIT
    said = done.stderr.decode("utf-8", "replace").strip().splitlines()
    fatal = next((line for line in said if line.startswith("fatal:")), said[-1] if said else "")
    if done.returncode == 0 or not fatal or "not a git repository" in fatal:
        return OUTSIDE
    return f"git cannot tell where one is here ({fatal})"


def find_repo(cwd: str | os.PathLike[str] | None = None) -> Repo | None:
    """The repository whose working tree holds ``cwd``; None outside any,
    and when git is missing or fails (:func:`no_repo_reason` says which)."""
    here = _here(cwd)
    done = _locate(here) if here is not None else None
    if here is None or done is None or done.returncode != 0:
        return None
    lines = _text(done.stdout).split("\n")
    if len(lines) != len(_LOCATE):  # a path holds a line break: each value is asked alone
        alone = [_locate(here, (asked,)) for asked in _LOCATE]
        lines = [_text(each.stdout) for each in alone if each is not None and not each.returncode]
        if len(lines) != len(_LOCATE):
            return None
    root = Path(lines[0])
    common = Path(lines[1])
    if not common.is_absolute():
        common = here / common
    return Repo(
        root=root,
        common_dir=common.resolve(),
        object_format=lines[2],
        git_dir=Path(lines[3]).resolve(),
    )


def _text(stdout: bytes) -> str:
    """What git printed, but the line break it ends with (a path's kept)."""
    return stdout.decode("utf-8", "surrogateescape").removesuffix("\n")


# --- The working tree -------------------------------------------------------


def _split_z(data: bytes) -> list[str]:
    return [item.decode("utf-8", "surrogateescape") for item in data.split(b"\0") if item]


def working_entry(
    repo: Repo, path: str, *, untracked: bool = False, carriage: set[str] | None = None
) -> FileEntry | str | None:
    """The entry of the file at ``path`` as it is on disk, hashed streamed
    (its blob the id of its bytes; ``path`` added to ``carriage`` when they
    hold a carriage return, which git may store otherwise: :mod:`.blobs`);
    None when it is gone or is not a file (a directory where a file was).
    A symbolic link is never followed: its entry is the link's own, its blob
    the hash of its target's name.  A regular file is hashed from what
    :func:`~.regular.open_regular` opens: something else put there since it
    was looked at (a link, a FIFO) is taken for no file.  An untracked file
    that cannot be source (:data:`MAX_UNTRACKED_BYTES`, :data:`SNIFF_BYTES`)
    is not hashed: the reason it has no node is returned instead.  What sync
    holds, and so what an anchor may name
    (:func:`roteiro_memory.app.anchors.verify_anchor`)."""
    full = repo.root / path
    if "/" in path and linked_folder(repo.root, path) is not None:
        return None  # git takes such a path for deleted: its folder is a link now
    try:
        info = full.lstat()
        if stat.S_ISLNK(info.st_mode):
            target = os.fsencode(os.readlink(full))
            return FileEntry(path, SYMLINK, blob_id(target, repo.object_format))
        opened = open_regular(path, str(repo.root)) if stat.S_ISREG(info.st_mode) else None
        if opened is None:
            return None
        with opened as handle:
            info = os.fstat(handle.fileno())
            why = not_source(info.st_size) if untracked else None
            if why is not None:
                return why
            head = handle.read(SNIFF_BYTES)
            why = not_source(info.st_size, head) if untracked else None
            if why is not None:
                return why
            blob, has_carriage = stream_blob_id(handle, head, repo.object_format)
            if has_carriage and carriage is not None:
                carriage.add(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    mode = EXECUTABLE if info.st_mode & stat.S_IXUSR else REGULAR
    return FileEntry(path, mode, blob)


def not_source(size: int, head: bytes | None = None) -> str | None:
    """Why an untracked file of ``size`` bytes whose first
    :data:`SNIFF_BYTES` are ``head`` (None: not read yet) cannot be source,
    so the graph leaves it out; None when it may be.  The one rule: sync
    leaves such a file out (:func:`working_entry`), and ``add --anchor``
    refuses one (:func:`roteiro_memory.app.anchors.verify_anchor`)."""
    if size > MAX_UNTRACKED_BYTES:
        return (
            f"is an untracked file of {size:,} bytes, over the "
            f"{MAX_UNTRACKED_BYTES // (1024 * 1024)} MiB a source file may be (it is not read)"
        )
    if head is not None and b"\0" in head:
        return f"is an untracked binary file (a NUL byte in its first {SNIFF_BYTES:,} bytes)"
    return None


def linked_folder(root: Path, path: str) -> str | None:
    """The first folder on the way to ``path`` (from the top level) that is
    a symbolic link, which git never follows: a file there is not the
    working tree's.  None when there is none."""
    folder = root
    parts = path.split("/")[:-1]
    for depth, part in enumerate(parts, 1):
        folder = folder / part
        try:
            if stat.S_ISLNK(os.lstat(folder).st_mode):
                return "/".join(parts[:depth])
        except OSError:
            return None  # gone: lstat of the file itself says so
    return None


def working_files(
    repo: Repo,
    progress: Progress | None = None,
    left_out: list[tuple[str, str]] | None = None,
    skip: Mapping[str, str | None] | None = None,
    hashed: set[str] | None = None,
    only: str | None = None,
) -> dict[str, FileEntry]:
    """Every tracked and untracked-but-not-ignored file of the working tree
    (the one at the path ``only``, when given, listed as it is among all).

    Tracked files git reports unchanged take their blob from the index without
    being read; the rest are hashed from disk, as git would store them
    (:mod:`.blobs`), and their paths added to ``hashed``.  An untracked file
    that cannot be source is left out, and ``(path, reason)`` added to
    ``left_out``; so is an untracked path in ``skip`` (the store's own
    files), with the reason ``skip`` gives, or silently when that is None.
    """
    spec = () if only is None else ("--", only)
    commands = {
        "index": ["ls-files", "--stage", "-v", "-z", *spec],
        # One walk of the working tree for both what changed and what is new;
        # git compares the content of files whose stat data alone differs.
        "status": [
            "status",
            "--porcelain=v2",
            "-z",
            "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
            *spec,
        ],
    }
    # The two listings are independent: run them side by side.
    try:
        running = {
            name: subprocess.Popen(
                ["git", "--literal-pathspecs", "-C", str(repo.root), *argv],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_git_env(),
            )
            for name, argv in commands.items()
        }
    except FileNotFoundError:  # as _run says it: the place came from the stat cache
        raise GitError(NO_GIT) from None
    output: dict[str, bytes] = {}
    for name, process in running.items():
        out, err = process.communicate()
        if process.returncode != 0:
            detail = err.decode("utf-8", "replace").strip() or f"exit {process.returncode}"
            raise GitError(f"git {commands[name][0]} failed in {repo.root}: {detail}")
        output[name] = out
    files: dict[str, FileEntry] = {}
    dirty, untracked = _changed(output["status"])
    if skip:
        for path in untracked:
            if path in skip and skip[path] is not None and left_out is not None:
                left_out.append((path, str(skip[path])))
        untracked = [path for path in untracked if path not in skip]
    for tagged in _split_z(output["index"]):
        # "<tag> <mode> <blob> <stage>\t<path>": fixed-width up to the tab.
        tag, item = tagged[0], tagged[2:]
        tab = item.index("\t")
        path = item[tab + 1 :]
        if item[tab - 1] != "0" or (tag != "H" and _unwatched(repo, tag, path)):
            dirty.add(path)
            continue
        files[path] = FileEntry(path, item[:6], item[7 : tab - 2])
    to_hash = sorted(dirty) + untracked
    new = set(untracked)
    carriage: set[str] = set()
    for done, path in enumerate(to_hash, 1):
        previous = files.pop(path, None)
        if previous is not None and previous.mode == GITLINK:
            files[path] = previous
        else:
            entry = working_entry(repo, path, untracked=path in new, carriage=carriage)
            if isinstance(entry, str):
                if left_out is not None:
                    said = f"{entry}, so it has no node; add it to .gitignore to say so"
                    left_out.append((path, said))
            elif entry is not None:
                files[path] = entry
                if hashed is not None:
                    hashed.add(path)
        if progress is not None:
            progress(done, len(to_hash))
    for path, blob in clean_blobs(repo, carriage).items():
        files[path] = files[path]._replace(blob=blob)
    return files


def _unwatched(repo: Repo, tag: str, path: str) -> bool:
    """Whether ``path``, tagged ``tag`` by ``git ls-files -v``, is a file git
    was told not to look at -- "assume unchanged" (a lower-case tag) or
    "skip worktree" (``S``) -- so its entry says nothing of what the working
    tree holds: it is hashed as a changed one is (and is gone when it is
    not there).  A skip-worktree file not on disk is one outside a sparse
    checkout, and keeps the index's entry."""
    if tag in "Ss":
        return os.path.lexists(repo.root / path)
    return tag.islower()


def _changed(status: bytes) -> tuple[set[str], list[str]]:
    """From ``git status --porcelain=v2 -z``: the tracked paths whose working
    copy differs from the index, and the untracked paths."""
    dirty: set[str] = set()
    untracked: list[str] = []
    for item in _split_z(status):
        tag = item[0]
        if tag == "1":
            # "1 XY sub mH mI mW hH hI path": Y is the working tree's side.
            fields = item.split(" ", 8)
            if fields[1][1] != ".":
                dirty.add(fields[8])
        elif tag == "u":
            dirty.add(item.split(" ", 10)[10])
        elif tag == "?" and not item.endswith("/"):
            untracked.append(item[2:])
    return dirty, untracked


def sync(
    store: Store,
    repo: Repo,
    progress: Progress | None = None,
    hash_progress: Progress | None = None,
    skip: Mapping[str, str | None] | None = None,
    *,
    write: bool = True,
) -> SyncReport:
    """Bring the store's nodes and tree witness up to the working tree.

    Writes nothing when the working tree's tree id equals the stored witness
    -- unless the last sync left files unread for want of a parser that can
    be found now (:mod:`.unread`), which this one reads, or some anchor
    written since names a symbol of such a file that has no node
    (:mod:`.unknown`), which this one adds.  Otherwise the graph
    and witness are replaced together
    (:meth:`~roteiro_memory.store.Store.replace_graph`), writing only the nodes
    that differ, so a sync racing another never leaves a mixed graph.
    ``skip`` names untracked paths that are not the code (the store's own
    files, when it lives in the working tree; :func:`working_files`).
    Not ``write``: the graph is left ``pending`` in the report, unwritten.
    """
    left_out: list[tuple[str, str]] = []
    hashed: set[str] = set()
    began = time.time_ns()
    files = working_files(repo, hash_progress, left_out, skip, hashed)
    tree = tree_id(files.values(), repo.object_format)
    submodules = [path for path, entry in files.items() if entry.mode == GITLINK]
    listed = [path for path, entry in files.items() if entry.mode != GITLINK]
    listed += [path for path, _ in left_out if path not in (skip or ())]
    left_unread = unread.languages(repo.git_dir)
    if store.tree() == tree and not (left_unread and unread.installed(left_unread)):
        added = unknown.add_missing(store, tree, left_unread) if left_unread and write else 0
        held = unknown.with_missing(store, left_unread) if left_unread and not write else None
        symbols = store.count_nodes(SYMBOL_PREFIXES)  # what the graph holds, read or not
        return SyncReport(
            tree,
            len(files),
            held is None,
            symbols,
            added,
            listed=listed,
            submodules=submodules,
            started_ns=began,
            pending=held,
        )
    built = build_working(store, repo, files, hashed, progress)
    pending = SyncReport(
        tree=tree,
        files=len(files),
        up_to_date=False,
        symbols=sum(1 for node in built.nodes if node.key.startswith(SYMBOL_PREFIXES)),
        parsed=built.parsed,
        unparsable=left_out + built.problems,
        listed=listed,
        submodules=submodules,
        started_ns=began,
        notices=[built.notice] if built.notice else [],
        pending=built.nodes,
        unread=sorted(built.unread) if built.unread or left_unread else None,
    )
    if write:
        pending.write(store).note_unread(repo.git_dir)
    return pending


def build_working(
    store: Store,
    repo: Repo,
    files: Mapping[str, FileEntry],
    hashed: set[str],
    progress: Progress | None = None,
) -> Built:
    """The nodes of the working tree's ``files`` (:func:`working_files`,
    which hashed those of ``hashed``), symbols reused from ``store``'s graph
    where a blob is unchanged: what :func:`sync` writes, :mod:`.working` reads."""

    def read(paths: Sequence[str]) -> dict[str, bytes]:
        # A file gone, replaced or changed since it was listed does not parse.
        sources = working_sources(repo, files, hashed, paths)
        return {path: b"\0" if data is None else data for path, data in sources.items()}

    stored = Stored.of(store.export_graph())
    return build(files, stored, read, repo.object_format, progress, store.anchor_keys)


def working_sources(
    repo: Repo, files: Mapping[str, FileEntry], hashed: Collection[str], paths: Sequence[str]
) -> dict[str, bytes | None]:
    """The bytes the symbols of each working file of ``paths`` are parsed
    from (and the parse limit is measured on), as :func:`working_files`
    listed it in ``files`` (having hashed those of ``hashed``); None for a
    file hashed and gone, replaced or changed since.  Opened by
    :mod:`.regular`'s rule, read in the clean form its blob is the id of
    (or its symbols would not be its node's); a file git listed unchanged
    whose bytes are not its blob (converted, changed since) or that is not
    there at all (outside a sparse checkout) is read from the index, its
    blob's; one that is there but no regular file -- a link, a FIFO, a
    folder swapped in since it was listed -- is None, never read through."""
    out: dict[str, bytes | None] = {}
    indexed: list[str] = []
    for path in paths:
        data = read_regular(path, None, str(repo.root))
        if data is not None:
            data = clean_content(data, files[path].blob, repo.object_format)
        elif os.path.lexists(repo.root / path):
            out[path] = None
            continue
        if data is None and path not in hashed:
            indexed.append(path)
            continue
        out[path] = data
    out.update(zip(indexed, _cat_blobs(repo, [files[p].blob for p in indexed]), strict=True))
    return out


def working_source(repo: Repo, path: str) -> bytes | None:
    """The bytes a sync would parse the symbols of the working file at
    ``path`` from (:func:`working_sources`), found as a sync finds them;
    None when a sync would list no such file, or it changed meanwhile."""
    hashed: set[str] = set()
    files = working_files(repo, hashed=hashed, only=path)
    return working_sources(repo, files, hashed, [path])[path] if path in files else None


# --- Revisions --------------------------------------------------------------


def resolve_tree(repo: Repo, rev: str) -> str:
    """The tree id ``rev`` names; :class:`GitError` naming the revision if
    none (:func:`check_rev_name` first)."""
    check_rev_name(rev)
    try:
        out = repo.git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{tree}}")
    except GitError:
        out = None  # no such revision: which of two reasons, asked below
    if out is not None:
        return out.decode("ascii").strip()
    expected = f"unknown revision {excerpt(rev)}: expected a commit, branch or tag of {repo.root}"
    try:
        repo.git("rev-parse", "--verify", "--quiet", "HEAD")
    except GitError:
        # HEAD names no commit: none was ever made, or its branch has none (an orphan).
        if repo.git("for-each-ref", "--count=1", "--format=%(objectname)").strip():
            raise GitError(f"{expected}, whose current branch has no commits yet") from None
        raise GitError(
            f"unknown revision {excerpt(rev)}: the repository at {repo.root} has no commits "
            "yet, so there is no revision to compare with; commit once, then try again"
        ) from None
    raise GitError(expected)


def _cat_blobs(repo: Repo, blobs: Sequence[str]) -> list[bytes]:
    """The contents of ``blobs``, in order, from one ``git cat-file --batch``."""
    if not blobs:
        return []
    data = repo.git("cat-file", "--batch", input=("\n".join(blobs) + "\n").encode("ascii"))
    out: list[bytes] = []
    pos = 0
    for blob in blobs:
        end = data.index(b"\n", pos)
        header = data[pos:end].split(b" ")
        if len(header) != 3:
            raise GitError(f"git cat-file could not read blob {blob}")
        size = int(header[2])
        out.append(data[end + 1 : end + 1 + size])
        pos = end + 1 + size + 1
    return out


def rev_files(repo: Repo, tree: str, paths: Sequence[str] = ()) -> dict[str, FileEntry]:
    """Every file of a tree, as ``git ls-tree -r`` lists it; only those at
    ``paths`` when some are given."""
    files: dict[str, FileEntry] = {}
    only = ("--", *paths) if paths else ()
    for item in _split_z(
        repo.git("--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", tree, *only)
    ):
        meta, _, path = item.partition("\t")
        mode, _kind, blob = meta.split(" ")
        files[path] = FileEntry(path, mode, blob)
    return files


def tree_graph(
    repo: Repo,
    tree: str,
    stored: Iterable[GraphNode],
    paths: Sequence[str] = (),
    files: Mapping[str, FileEntry] | None = None,
    anchored: Callable[[], Iterable[str]] | None = None,
) -> dict[str, str | None]:
    """The graph of tree ``tree`` as key -> blob, built in memory as a sync
    builds the working tree's -- of the files at ``paths`` only, when some
    are given (a path the tree does not hold has no node), or of ``files``,
    the tree's as :func:`rev_files` listed them.

    Symbols of a file whose blob equals the stored one are taken from
    ``stored`` (the synced working graph); only files that differ are read
    from git and parsed.
    """
    files = rev_files(repo, tree, paths) if files is None else files
    by_blob = {entry.path: entry.blob for entry in files.values()}

    def read(paths: Sequence[str]) -> dict[str, bytes]:
        return dict(zip(paths, _cat_blobs(repo, [by_blob[p] for p in paths]), strict=True))

    built = build(files, Stored.of(stored), read, repo.object_format, None, anchored)
    return graph_blobs(built.nodes)


def rev_graph(
    repo: Repo,
    rev: str,
    stored: Iterable[GraphNode],
    anchored: Callable[[], Iterable[str]] | None = None,
) -> tuple[str, dict[str, str | None]]:
    """The tree id of ``rev`` and its graph (:func:`tree_graph`)."""
    tree = resolve_tree(repo, rev)
    return tree, tree_graph(repo, tree, stored, anchored=anchored)


def graph_blobs(nodes: Iterable[GraphNode]) -> dict[str, str | None]:
    """A graph as the key -> blob mapping anchors are resolved against."""
    return {node.key: node.blob for node in nodes}


def touched_keys(before: Mapping[str, str | None], after: Mapping[str, str | None]) -> set[str]:
    """Keys present in one graph only, or with different blobs in the two."""
    keys = set(before) | set(after)
    return {k for k in keys if (k in before, before.get(k)) != (k in after, after.get(k))}
