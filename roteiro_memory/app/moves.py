"""Where a stale record's code went, as the graph, git and the store tell
it: the facts :func:`roteiro_memory.app.reanchor.propose` decides on.

What holds:

* **A carrier** is a node of the record's family carrying its captured blob
  now that did not in the tree holding the record's code: a copy that was
  there all along is not where the code went.  A carrier is *checked* only
  when that tree is the record's own witness and no other node that
  carried the blob in it has lost it since (such a twin may be what moved,
  under a key of its own); a tree standing in for a witness git never wrote
  lacks whatever was untracked then.  An unchecked carrier is proposed as
  likely at most, unless git's rename picks it.
* **The tree holding the record's code** is its witness when git has that
  tree; else the newest tree of ``HEAD``'s history whose node of the
  record's anchor has the blob it captured, looking back through the commits
  that changed its file -- so before any later edit or move of that code,
  and never a tree holding only another file of the same path.  With no
  such tree (the record was written on an edit never committed as it was),
  its file's rename is still looked for, from the tree holding the file
  when the record was written, by the clock (:func:`_base`).
* **A drifted anchor is followed as a vanished one is** when a node of its
  family carries its captured blob now (its own node does not: it
  changed): two files swapped, or a file moved and another made at its
  path, leave the record's code elsewhere, its carriers found and checked
  by the same rule.  With no such node its code changed where it is, and
  nothing is looked for -- no tree, no history.
* **An empty file identifies nothing**: every empty file has one blob, and
  git pairs any two as a rename, so neither is evidence for a record about one.
* Git is asked once per tree, and a file of an earlier tree is built once.
  Checking carriers against a witness builds only its files that the
  synced graph does not hold as they are there (:meth:`_TreeGraphs.changed`),
  and only the nodes carrying a blob looked for are indexed: in a large
  repository a hook's remedy costs the files changed since, not every file.
* **The store's graph is read as far as asked** (:class:`_Synced`): a
  key's blob, and the nodes carrying the blobs looked for, each found by
  the store (:meth:`~roteiro_memory.store.Store.find_nodes`); its file
  nodes, not its symbols, where carriers are checked against a witness; every
  node only where files of an earlier tree are built (reading history).
  So the proposals for an edited function, or a file renamed, cost those
  records, not the repository's thousands of nodes.
* **Looking back is bounded**: a file anchor's blob is compared with the
  file's blob in each tree, nothing parsed; a version of a file is parsed
  once however many trees hold it, and only the newest versions that fit in
  :data:`HISTORY_READ` bytes are.  Without ``history`` (a hook, which the
  agent waits on) no history is read at all.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from roteiro_memory.semantics import AnchorState
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.repo.graph import Repo
    from roteiro_memory.repo.nodes import Stored
    from roteiro_memory.repo.renames import Rename, State
    from roteiro_memory.results import GraphNode, MemoryRecord
    from roteiro_memory.store import Store

__all__ = [
    "Facts",
    "anchor_place",
    "blob_family",
    "read_facts",
    "unknown_symbols",
    "unread_symbols",
]


@valueclass
class Facts:
    """What is known of where one record's code went."""

    carriers: tuple[str, ...] = ()
    """The nodes of its family carrying its captured blob now, and not in
    the tree holding its code (all of them when not ``checked``)."""
    moved: Rename | None = None
    """The rename git found for its file, from tree ``before``."""
    before: str | None = None
    checked: bool = True
    """Whether its carriers could be told from copies (:func:`_found`)."""
    searched: bool = True
    """False when the tree holding its code was not looked for in history
    (``read_facts`` without ``history``): the rest is then not all there is."""


def blob_family(key: str) -> str | None:
    """Which nodes a key's blob may be compared with: a file's blob is its
    content's, a symbol's its own text's; any other key has no family."""
    from roteiro_memory.repo.languages import FILE_PREFIX, SYMBOL_PREFIXES

    if key.startswith(FILE_PREFIX):
        return FILE_PREFIX
    return "symbol" if key.startswith(SYMBOL_PREFIXES) else None


def anchor_place(record: MemoryRecord) -> tuple[str, str | None] | None:
    """The path and qualified name a record's anchor names, its captured
    path preferred (the key's own split otherwise)."""
    from roteiro_memory.repo.languages import key_parts

    assert record.anchor is not None
    parts = key_parts(record.anchor.key)
    if parts is None:
        return None
    path, qualname = parts
    captured = record.anchor.path
    if captured is not None and qualname is not None:
        from roteiro_memory.repo.languages import language_of, symbol_prefix

        prefix = symbol_prefix(captured) if language_of(captured) else None
        if prefix is not None and record.anchor.key.startswith(prefix):
            return captured, record.anchor.key[len(prefix) :]
    return (captured or path), qualname


def _carriers(nodes: Sequence[GraphNode], blobs: set[str]) -> dict[tuple[str, str], list[str]]:
    """Every node carrying one of ``blobs``, by (family, blob): the blobs
    looked up, so a repository's other nodes cost one set lookup each."""
    index: dict[tuple[str, str], list[str]] = {}
    for node in nodes:
        if node.blob not in blobs:
            continue
        family = blob_family(node.key)
        if node.blob is not None and family is not None:
            index.setdefault((family, node.blob), []).append(node.key)
    return index


HISTORY_READ = 2 * 1024 * 1024
"""How many bytes of a file's earlier versions :func:`_stand_ins` reads
(parses) looking for a symbol's captured blob: the newest versions that fit."""


def _stand_ins(
    repo: Repo,
    records: Sequence[MemoryRecord],
    present: set[str],
    trees: _TreeGraphs,
    graph: Mapping[str, str | None],
    history: bool = True,
) -> tuple[dict[int, str], dict[int, str], set[int]]:
    """For each of ``records``, a tree git has that holds its code as it
    captured it: its witness when git has that tree, else the newest tree
    of ``HEAD``'s history whose node of the record's anchor has the blob the
    record captured (:func:`~roteiro_memory.repo.renames.trees_holding`) --
    before any later edit or move of that code, and never a tree holding
    only another file of the same path (one the history held before the
    record's file, which was never committed, say).

    What it costs is bounded: a file anchor's blob is the file's, compared
    with the blob each tree holds; for a symbol, each version of the file is
    parsed once however many trees hold it, and only the newest versions
    that fit in :data:`HISTORY_READ` bytes are (:func:`_readable`).

    Second, for each record no tree holds the code of (it was written on an
    edit never committed as it was), the tree holding its file when it was
    written, which its file's rename is looked for from (:func:`_base`).
    Without ``history`` nothing is looked for: the ids of the records that
    would have been come third."""
    from roteiro_memory.repo import renames
    from roteiro_memory.repo.languages import FILE_PREFIX

    held: dict[str, list[State]] = {}
    readable: dict[str, set[str]] = {}
    out = {}
    based = {}
    skipped = set()
    for record in records:
        assert record.anchor is not None
        if record.tree in present:
            out[record.id] = record.tree
            continue
        parts = anchor_place(record)
        captured = record.anchor.blob
        if parts is None or captured is None:
            continue
        if not history:
            skipped.add(record.id)
            continue
        path = parts[0]
        if path not in held:
            held[path] = renames.trees_holding(repo, path)
        whole_file = record.anchor.key.startswith(FILE_PREFIX)
        if not whole_file and path not in readable:
            readable[path] = _readable(repo, path, held[path], graph)
        for state in held[path]:
            if state.blob is None:
                continue
            if whole_file:
                found = state.blob == captured
            elif state.blob in readable[path]:
                then = trees.version(state.tree, path, state.blob)
                found = then.get(record.anchor.key) == captured
            else:
                break  # the versions left are older, past what is read
            if found:
                out[record.id] = state.tree
                break
        if record.id not in out and (base := _base(held[path], record)) is not None:
            based[record.id] = base
    return out, based, skipped


def _base(held: Sequence[State], record: MemoryRecord) -> str | None:
    """The tree of ``held`` (newest first) that holds the record's file as
    it was when the record was written, by the clock: the oldest whose state
    lasted until then -- ``HEAD``'s own, or one the commit that changed the
    file next was made no earlier than the record (to the second) -- and so
    never a file of the path that was renamed away, or removed, before.
    None when none did, or the record's time cannot be read."""
    from datetime import UTC, datetime

    try:
        written = datetime.fromisoformat(record.created_at).replace(tzinfo=UTC)
    except ValueError:
        return None
    at = int(written.timestamp())
    base = None
    for state in held:
        if state.ended is not None and state.ended < at:
            break
        if state.blob is not None:
            base = state.tree
    return base


def _readable(
    repo: Repo, path: str, held: Sequence[State], graph: Mapping[str, str | None]
) -> set[str]:
    """The versions (blobs) of file ``path`` that :func:`_stand_ins` may
    parse: the newest of those ``held`` lists whose sizes add up to at most
    :data:`HISTORY_READ` -- the one the graph holds now is never parsed
    again, so it costs nothing."""
    from roteiro_memory.repo import renames
    from roteiro_memory.repo.languages import file_key

    now = graph.get(file_key(path))
    versions = list(dict.fromkeys(s.blob for s in held if s.blob is not None and s.blob != now))
    sizes = renames.blob_sizes(repo, versions)
    out = {now} if now is not None else set()
    room = HISTORY_READ
    for blob in versions:
        room -= sizes.get(blob, room + 1)
        if room < 0:
            break
        out.add(blob)
    return out


class _StoredGraph(Mapping[str, "str | None"]):
    """The store's graph as key -> blob, each key read from the store when
    first asked for (:meth:`~roteiro_memory.store.Store.find_nodes`): what a
    few records' proposals look up costs those lookups, not the graph."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._read: dict[str, tuple[str | None] | None] = {}

    def __getitem__(self, key: str) -> str | None:
        if key not in self._read:
            found = self._store.find_nodes([key])
            self._read[key] = (found[0].blob,) if found else None
        held = self._read[key]
        if held is None:
            raise KeyError(key)
        return held[0]

    def __iter__(self) -> Iterator[str]:
        return iter([node.key for node in self._store.export_graph()])

    def __len__(self) -> int:
        return len(self._store.export_graph())


class _Synced:
    """The synced graph the facts are read against: the one a sync built and
    has not written (``built``, in memory already), or the store's, of
    which only what is asked for is read -- a key's blob, the nodes carrying
    some blobs, the file nodes -- and the whole graph only
    where files of an earlier tree are built (:class:`_TreeGraphs`)."""

    def __init__(self, store: Store, built: tuple[str, Sequence[GraphNode]] | None) -> None:
        from roteiro_memory.repo.graph import graph_blobs

        self._store = store
        self._nodes = None if built is None else built[1]
        self.tree = store.tree() if built is None else built[0]
        self.graph: Mapping[str, str | None] = (
            _StoredGraph(store) if self._nodes is None else graph_blobs(self._nodes)
        )

    def every(self) -> Sequence[GraphNode]:
        """Every node, read once."""
        if self._nodes is None:
            self._nodes = self._store.export_graph()
        return self._nodes

    def files(self) -> Stored:
        """The synced graph's nodes as a sync reuses them: every node when
        in memory, else its file nodes, read by their keys' prefix."""
        from roteiro_memory.repo.languages import FILE_PREFIX
        from roteiro_memory.repo.nodes import Stored

        if self._nodes is not None:
            return Stored.of(self._nodes)
        return Stored.of(self._store.find_nodes(prefixes=[FILE_PREFIX]))

    def carrying(self, blobs: set[str]) -> Sequence[GraphNode]:
        """The nodes carrying one of ``blobs`` (and perhaps others)."""
        return self._store.find_nodes(blobs=blobs) if self._nodes is None else self._nodes


class _TreeGraphs:
    """The nodes of files as earlier trees hold them, each file of a tree
    built once, and each tree's differences from the graph once."""

    def __init__(self, repo: Repo, synced: _Synced) -> None:
        self._repo = repo
        self._synced = synced
        self._built: dict[str, tuple[set[str], dict[str, str | None]]] = {}
        self._changed: dict[str, tuple[dict[str, str | None], frozenset[str]]] = {}
        self._versions: dict[tuple[str, str], Mapping[str, str | None]] = {}

    def changed(self, tree: str) -> tuple[Mapping[str, str | None], frozenset[str]]:
        """What a graph of every node of ``tree`` holds that the synced
        graph may not: key -> blob of the nodes of its files whose nodes a
        tree's graph does not take from the synced one (a file changed
        since, gone, or not source), and the paths of the files whose nodes
        it does -- each of those nodes is the synced graph's own, the same
        key with the same blob.  The two make the whole tree's graph
        (:func:`~roteiro_memory.repo.graph.tree_graph`), which is not
        built: in a large repository, nearly all of it is the synced graph.
        Read from the store, only the synced graph's file nodes are read:
        the symbols of a file the tree's graph does not take are parsed
        from the tree, or, where they cannot be, have no blob, which nothing
        compared is (:func:`_found`)."""
        from roteiro_memory.repo.graph import rev_files, tree_graph
        from roteiro_memory.repo.languages import file_key
        from roteiro_memory.repo.nodes import takes_stored

        if tree not in self._changed:
            stored = self._synced.files()
            files = rev_files(self._repo, tree)
            same = frozenset(p for p, entry in files.items() if takes_stored(entry, stored))
            others = {p: entry for p, entry in files.items() if p not in same}
            theirs = [n for p in others for n in stored.symbols.get(p, ())]
            theirs += [n for p in others if (n := stored.nodes.get(file_key(p))) is not None]
            built = tree_graph(self._repo, tree, theirs, files=others)
            self._changed[tree] = built, same
        return self._changed[tree]

    def version(self, tree: str, path: str, blob: str) -> Mapping[str, str | None]:
        """Key -> blob of the nodes of file ``path`` as ``tree`` holds it, at
        ``blob``: a version of a file held by several trees is built once."""
        if (path, blob) not in self._versions:
            self._versions[path, blob] = self.blobs(tree, [path])
        return self._versions[path, blob]

    def blobs(self, tree: str, paths: Sequence[str]) -> Mapping[str, str | None]:
        """Key -> blob of the nodes of ``paths`` in ``tree`` (and of any
        other file of it built before)."""
        from roteiro_memory.repo.graph import tree_graph

        done, graph = self._built.setdefault(tree, (set(), {}))
        missing = sorted(set(paths) - done)
        if missing:
            graph.update(tree_graph(self._repo, tree, self._synced.every(), missing))
            done.update(missing)
        return graph


def _moves(
    repo: Repo,
    gone: Mapping[int, str],
    befores: Mapping[int, str],
    now: str | None,
    present: set[str],
) -> dict[int, tuple[Rename, str]]:
    """For each record whose anchor's file is gone (id -> the file's path),
    the rename git finds for the file from the tree that holds the record's
    code (:func:`_stand_ins`), and that tree.  Git is asked once per tree."""
    from roteiro_memory.repo import renames

    after = now if now in present else None
    found: dict[str, dict[str, Rename]] = {}
    out = {}
    for record_id, path in gone.items():
        before = befores.get(record_id)
        if before is None:
            continue
        if before not in found:
            found[before] = renames.renames(repo, before, after)
        if path in found[before]:
            out[record_id] = found[before][path], before
    return out


def read_facts(
    repo: Repo,
    store: Store,
    records: Sequence[MemoryRecord],
    *,
    history: bool = True,
    built: tuple[str, Sequence[GraphNode]] | None = None,
) -> tuple[str | None, Mapping[str, str | None], list[Facts]]:
    """The store's witness, its graph (key -> blob) and the facts of each
    of ``records``, in order; only a vanished anchor has any, or a drifted
    one whose captured blob another node carries now.  Without
    ``history`` no file's history is read (:func:`_stand_ins`), and a record
    whose witness git does not have is not ``searched``.  ``built``: the
    witness and graph a sync built and has not written, read instead of
    the store's, as they will be once written."""
    from roteiro_memory.repo import renames
    from roteiro_memory.repo.blobs import empty_blob
    from roteiro_memory.repo.languages import FILE_PREFIX, file_key

    synced = _Synced(store, built)
    now, graph = synced.tree, synced.graph
    empty = empty_blob(repo.object_format)
    stale = [
        r
        for r in records
        if r.anchor
        and r.anchor_state in (AnchorState.VANISHED, AnchorState.DRIFTED)
        and not (r.anchor.key.startswith(FILE_PREFIX) and r.anchor.blob == empty)
    ]
    wanted = {r.anchor.blob for r in stale if r.anchor and r.anchor.blob}
    carrying = synced.carrying(wanted) if wanted else ()
    by_blob = _carriers(carrying, wanted)
    # A drifted anchor's own node no longer carries its blob: with no other
    # node carrying it, its code changed where it is, and nothing is followed.
    followed = [r for r in stale if r.anchor_state is AnchorState.VANISHED or _carried(r, by_blob)]
    present = renames.present_trees(repo, [r.tree or "" for r in followed] + [now or ""])
    trees = _TreeGraphs(repo, synced)
    befores, based, skipped = _stand_ins(repo, followed, present, trees, graph, history)
    gone = {}
    for record in followed:
        parts = anchor_place(record)
        if parts is not None and file_key(parts[0]) not in graph:
            gone[record.id] = parts[0]
    moves = _moves(repo, gone, {**based, **befores}, now, present) if gone else {}
    path_of = {node.key: node.path for node in carrying}
    found = {
        record.id: _found(record, by_blob, befores, trees, graph, path_of) for record in followed
    }
    out = []
    for record in records:
        carriers, checked = found.get(record.id, ((), True))
        moved, before = moves.get(record.id, (None, None))
        out.append(Facts(carriers, moved, before, checked, record.id not in skipped))
    return now, graph, out


def _carried(record: MemoryRecord, by_blob: Mapping[tuple[str, str], list[str]]) -> bool:
    """Whether any node of ``record``'s family carries its captured blob now."""
    assert record.anchor is not None
    family = blob_family(record.anchor.key)
    blob = record.anchor.blob
    return family is not None and blob is not None and bool(by_blob.get((family, blob)))


def _found(
    record: MemoryRecord,
    by_blob: Mapping[tuple[str, str], list[str]],
    befores: Mapping[int, str],
    trees: _TreeGraphs,
    graph: Mapping[str, str | None],
    path_of: Mapping[str, str | None],
) -> tuple[tuple[str, ...], bool]:
    """The carriers of ``record``'s blob that did not carry it in the tree
    holding its code, and whether they are checked: whether that tree is
    the record's own witness, and no other node that carried the blob in it
    has lost it since -- such a twin may be what moved, under a key of its
    own; and a tree standing in for a witness git never wrote lacks
    whatever was untracked when the record was written (a copy, say), so
    only the carriers' own files are looked at in one."""
    assert record.anchor is not None
    family = blob_family(record.anchor.key)
    if record.anchor.blob is None or family is None:
        return (), True
    carriers = sorted(by_blob.get((family, record.anchor.blob), []))
    since = befores.get(record.id)
    if not carriers or since is None:
        return tuple(carriers), since is not None
    witness = since == record.tree  # befores holds the witness only when git has it
    same: frozenset[str] = frozenset()  # files whose nodes in ``then`` are the graph's
    if witness:
        then, same = trees.changed(since)  # the nodes of ``same`` carry it then as now
    else:
        then = trees.blobs(since, [path for key in carriers if (path := path_of.get(key))])
    kept = tuple(
        key
        for key in carriers
        if path_of.get(key) not in same and then.get(key) != record.anchor.blob
    )
    # A node of ``same`` has its blob still, so it is no twin that lost it.
    twins = witness and any(
        blob == record.anchor.blob
        and key != record.anchor.key
        and blob_family(key) == family
        and graph.get(key) != blob
        for key, blob in then.items()
    )
    return kept, witness and not twins


def unread_symbols(path: str) -> tuple[str, str] | None:
    """Why the symbols of file ``path`` are not known, and what to do, when
    this process cannot read its language's (its parser is not installed,
    or does not load); else None."""
    from roteiro_memory.repo.languages import PYTHON, SYMBOLS_EXTRA, language_of

    language = language_of(path)
    if language is None or language is PYTHON:
        return None
    from roteiro_memory.repo import treesitter

    if treesitter.available(language, path):
        return None
    return (
        f"the symbols of {language.name} files are not read here (their parser is not "
        "installed or does not load)",
        f"{SYMBOLS_EXTRA}, then reanchor again",
    )


def unknown_symbols(repo: Repo, path: str) -> tuple[str, str] | None:
    """Why the symbols of the working file ``path`` are not known, and what
    to do: its parser is missing, it does not parse, or it is too large to
    be parsed; None when they are known (or it is not there to be read)."""
    from roteiro_memory.errors import SourceTooLarge, SymbolError
    from roteiro_memory.repo.graph import working_source
    from roteiro_memory.repo.symbols import file_symbols

    missing = unread_symbols(path)
    source = working_source(repo, path) if missing is None else None
    if source is None:
        return missing
    try:
        file_symbols(path, source, repo.object_format)
    except SourceTooLarge as error:
        return f"it {error}, so it is not parsed", "anchor the record to the file instead"
    except SymbolError as error:
        return f"it does not parse ({error})", "fix it, then reanchor again"
    return None
