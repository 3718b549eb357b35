"""Where git says a file went: its own rename detection between a tree a
record was written against and the tree now.

Git pairs a deleted file with an added one when their contents are similar
enough (``-M``, at least half the same by default) and reports how similar,
as a percentage; an unchanged move is 100.  We ask it rather than guess
(``git diff-tree -M`` between two trees, ``git diff-index -M`` between a
tree and the working tree), and read its ``--name-status -z`` output, where
a rename is ``R<similarity>``, the old path and the new one, each ended by a
NUL (git's diff-format documentation).

A record's *witness* is the id of the tree its store was synced from when
it was written.  It is a git object only when that exact state was
committed (or written by git some other way): a tree with untracked or
uncommitted files in it was hashed, never written.  When it is not an
object, a tree of ``HEAD``'s history that held the path may stand in
(:func:`trees_holding` lists them; the caller chooses the one holding the
record's code).
"""

from __future__ import annotations

from collections.abc import Iterable

from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.repo.graph import Repo

__all__ = [
    "HISTORY_LOOKED_AT",
    "Rename",
    "State",
    "blob_sizes",
    "parse_renames",
    "present_trees",
    "renames",
    "trees_holding",
]

_HEX = frozenset("0123456789abcdef")


@valueclass
class Rename:
    """One file git paired across two trees."""

    source: str
    target: str
    similarity: int
    """How alike git found the two, in percent (100: unchanged)."""

    def to_json(self) -> dict[str, object]:
        from roteiro_memory.repo.nodes import shown_path

        return {
            "from": shown_path(self.source),
            "to": shown_path(self.target),
            "similarity": self.similarity,
        }


def parse_renames(output: bytes) -> dict[str, Rename]:
    """The renames in ``git diff --name-status -z`` output, by old path.

    Each entry is a status, then one path -- or two for a rename or a copy
    (``R``/``C`` followed by the similarity) -- every field ended by a NUL.
    Copies and every other status are passed over."""
    fields = [item.decode("utf-8", "surrogateescape") for item in output.split(b"\0")]
    found: dict[str, Rename] = {}
    index = 0
    while index < len(fields) and fields[index]:
        status = fields[index]
        if status[0] in "RC":
            source, target = fields[index + 1], fields[index + 2]
            if status[0] == "R" and status[1:].isdigit():
                found[source] = Rename(source, target, int(status[1:]))
            index += 3
        else:
            index += 2
    return found


def _is_object_id(text: str) -> bool:
    return len(text) in (40, 64) and set(text) <= _HEX


def present_trees(repo: Repo, trees: Iterable[str]) -> set[str]:
    """Which of ``trees`` are tree objects in the repository, asked in one
    ``git cat-file --batch-check``."""
    wanted = sorted({tree for tree in trees if _is_object_id(tree)})
    if not wanted:
        return set()
    out = repo.git("cat-file", "--batch-check", input=("\n".join(wanted) + "\n").encode())
    present = set()
    for line in out.decode("ascii", "replace").splitlines():
        name, _, kind = line.partition(" ")
        if kind.startswith("tree "):
            present.add(name)
    return present


def _rev_tree(repo: Repo, rev: str) -> str | None:
    out = repo.git("rev-parse", "--verify", "--quiet", f"{rev}^{{tree}}", ok=(0, 1, 128))
    text = out.decode("ascii", "replace").strip()
    return text if _is_object_id(text) else None


def _blob_at(repo: Repo, tree: str, path: str) -> str | None:
    """The blob of file ``path`` in ``tree``; None when it holds none there."""
    out = repo.git(
        "--literal-pathspecs", "ls-tree", "-z", "--full-tree", tree, "--", path, ok=(0, 128)
    )
    wanted = path.encode("utf-8", "surrogateescape")
    for item in out.split(b"\0"):
        meta, _, name = item.partition(b"\t")
        fields = meta.split(b" ")
        if name == wanted and len(fields) == 3 and fields[1] == b"blob":
            return fields[2].decode("ascii", "replace")
    return None


HISTORY_LOOKED_AT = 50
"""How many of the commits that changed a file :func:`trees_holding` looks
back through for the trees that held it."""


@valueclass
class State:
    """One state of a file in ``HEAD``'s history: a tree, the file's blob
    there (None when the tree does not hold it), and when the state ended:
    the committer time (seconds since the epoch) of the commit that changed
    the file next, None for ``HEAD``'s own."""

    tree: str
    blob: str | None
    ended: int | None = None


def trees_holding(repo: Repo, path: str) -> list[State]:
    """The trees of ``HEAD``'s history that held ``path``, newest first, one
    for each state the file had, with its blob in each: ``HEAD``'s own when it
    holds the path, then the tree just before each of the last
    :data:`HISTORY_LOOKED_AT` commits that changed it (the one that removed
    it first, when it is gone).  None when no commit ever held it (or there
    are no commits).  A tree is listed once however many states it stands
    for.  Git is asked a fixed number of times, and once per tree listed.
    A path holding a NUL byte, which no file name may (an anchor imported
    or sent over a tool that says so), was held by none: git is not asked."""
    if "\0" in path:
        return []
    head = _rev_tree(repo, "HEAD")
    if head is None:
        return []
    trees = [head]
    ended: dict[str, int] = {}
    changed = repo.git(
        "--literal-pathspecs", "rev-list", f"--max-count={HISTORY_LOOKED_AT}", "HEAD", "--", path
    ).split()
    if changed:
        # Each one's own parents, asked apart: with a path, rev-list --parents
        # rewrites them to the previous commit that touched the path, whose tree
        # misses every commit in between.  A root commit, with none, made the
        # file from nothing.
        listed = repo.git(
            "log", "--no-walk=unsorted", "--format=%ct %P", *(c.decode() for c in changed)
        )
        lines = [line.split() for line in listed.decode("ascii", "replace").splitlines()]
        parents = [(int(ids[0]), ids[1]) for ids in lines if len(ids) > 1 and ids[0].isdigit()]
        if parents:
            out = repo.git("rev-parse", *(f"{rev}^{{tree}}" for _, rev in parents))
            listed_trees = out.decode("ascii", "replace").split()
            for (time, _), tree in zip(parents, listed_trees, strict=True):
                if _is_object_id(tree):
                    trees.append(tree)
                    ended.setdefault(tree, time)
    found = []
    for at, tree in enumerate(dict.fromkeys(trees)):
        blob = _blob_at(repo, tree, path)
        if at or blob is not None:  # HEAD's own tree only when it holds the path
            found.append(State(tree, blob, ended.get(tree) if at else None))
    return found


def blob_sizes(repo: Repo, blobs: Iterable[str]) -> dict[str, int]:
    """The size in bytes of each of ``blobs`` git has, asked in one
    ``git cat-file --batch-check``."""
    wanted = sorted({blob for blob in blobs if _is_object_id(blob)})
    if not wanted:
        return {}
    out = repo.git("cat-file", "--batch-check", input=("\n".join(wanted) + "\n").encode())
    sizes = {}
    for line in out.decode("ascii", "replace").splitlines():
        fields = line.split(" ")
        if len(fields) == 3 and fields[1] == "blob" and fields[2].isdigit():
            sizes[fields[0]] = int(fields[2])
    return sizes


def renames(repo: Repo, before: str, after: str | None) -> dict[str, Rename]:
    """The files git finds renamed from tree ``before`` to tree ``after``, or
    to the working tree's tracked files when ``after`` is None (an untracked
    file is not git's to pair: ``git add`` it), by old path."""
    options = ("-M", "-z", "--name-status", "--no-ext-diff")
    if after is None:
        out = repo.git("diff-index", *options, before, "--")
    else:
        out = repo.git("diff-tree", "-r", *options, before, after, "--")
    return parse_renames(out)
