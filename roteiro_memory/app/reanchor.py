"""Anchors that follow the code: where a stale record's code is now, and the
superseding record that says so.

What holds:

* **Listing writes nothing.**  :func:`proposals` reads the store and asks
  git; like ``list`` and ``recall`` it first syncs the code graph (unless
  the session does not sync), which brings the graph up to the working tree
  and writes no record.
* **The evidence** for a live record whose anchor *vanished* (or, the
  first, *drifted*), strongest first (read by
  :mod:`roteiro_memory.app.moves`): a node of the same family (file or
  symbol) in the graph now carrying the record's captured blob, which it
  did not when the record was written -- the code moved unchanged;
  git's own rename detection between the record's witness tree and the tree
  now (:mod:`roteiro_memory.repo.renames`), with git's similarity; and, for
  a symbol, the node of the same qualified name in the renamed file -- the
  code moved with its file, perhaps edited.  Only nodes with a blob are
  proposed: a record is re-anchored at the blob its new node has now; and
  only nodes whose key an anchor may be.
* **The decision** (:func:`propose`, pure).  One blob carrier, which the
  rename does not contradict, or several of which the rename picks one
  (unless another is in a file identical to the one it picks: git pairs
  identical files by their names alone):
  ``certain`` (one carrier that could not be checked against the record's
  own witness tree -- :mod:`roteiro_memory.app.moves` says when it can --
  ``likely``).  No carrier, and the renamed file holds the node: ``likely``
  (moved with edits; git's similarity says how much).  Anything else the
  evidence points at -- several carriers, or a carrier and a renamed node
  that disagree -- is ``ambiguous``: the places are listed and none is
  chosen, since supersession is recorded, never guessed.  A *drifted*
  anchor whose captured blob another node carries is decided the same way
  (its code is elsewhere now: two files swapped, a file moved and another
  made at its path), the drift listed last, but never ``certain``: its own
  node is still there, so the carrier may as well be a copy made since,
  the original edited after -- the same two trees; one whose blob no node carries
  has its node still there, changed: its proposal is ``confirm``, which
  only a reviewer who has read the code may do (:func:`confirm`) -- as
  they may for any drifted record, whatever is proposed.
* **Applying and confirming** (:func:`apply`, :func:`confirm`) write, for
  each record, a new one of the same kind, scope, body and confidence,
  anchored to the proposed node -- or, confirming, to the same one -- and
  superseding it, all in one :meth:`~roteiro_memory.store.Store.record_many`,
  in one transaction with the sync they were decided against: every record
  named is checked first, against the graph that sync built and has not
  written yet, so one refusal writes nothing, not even the sync.  The
  store captures the node's blob as it does for any write, so the new
  record reads back valid, and the old one stays, superseded, so the chain
  is auditable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from roteiro_memory.app import values
from roteiro_memory.app.moves import anchor_place, read_facts, unknown_symbols, unread_symbols
from roteiro_memory.errors import (
    AlreadySuperseded,
    NotFound,
    ReanchorRefused,
    UsageError,
    excerpt,
)
from roteiro_memory.semantics import AnchorState
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.app.session import Session
    from roteiro_memory.repo.graph import SyncReport
    from roteiro_memory.repo.renames import Rename
    from roteiro_memory.results import MemoryRecord
    from roteiro_memory.store import Graph, Store

__all__ = [
    "AMBIGUOUS",
    "CERTAIN",
    "CONFIRM",
    "LIKELY",
    "MOVE",
    "NONE",
    "REANCHOR_SCHEMA",
    "Evidence",
    "Proposal",
    "Proposals",
    "Rewrite",
    "Rewritten",
    "apply",
    "confirm",
    "confirm_refusal",
    "move_refusal",
    "proposals",
    "propose",
    "remedy",
]

REANCHOR_SCHEMA = "roteiro.reanchor/v1"

MOVE = "move"
"""Re-anchor the record to another node: ``reanchor --apply``."""
CONFIRM = "confirm"
"""The node is still there, changed: a reviewer may confirm the record."""
NONE = "none"
"""Nothing to propose."""

CERTAIN = "certain"
LIKELY = "likely"
AMBIGUOUS = "ambiguous"

BLOB = "blob"
RENAME = "rename"
SYMBOL = "symbol"
DRIFT = "drift"


@valueclass
class Evidence:
    """One fact a proposal rests on: a node carrying the captured ``blob``;
    a ``rename`` git found from tree ``before``; the ``symbol`` of the same
    qualified name in the renamed file; or the ``drift`` of the node still
    under the anchor's key (``blob`` its blob now)."""

    kind: str
    key: str | None = None
    blob: str | None = None
    rename: Rename | None = None
    before: str | None = None

    def to_json(self) -> Any:
        out: dict[str, Any] = {"kind": self.kind}
        if self.rename is not None:
            out.update(self.rename.to_json())
            out["before"] = self.before
        else:
            out["key"] = self.key
        if self.kind == DRIFT:
            out["blob"] = self.blob
        return out


@valueclass
class Proposal:
    """What to do about one record: ``action`` (:data:`MOVE`,
    :data:`CONFIRM` or :data:`NONE`); for a move, how sure (``certainty``)
    and the node ``to`` (None when ``ambiguous``) with its ``blob`` now;
    every node the evidence points at (``candidates``); the ``evidence``.
    Not ``searched`` (and :data:`NONE`) when where its code went was not
    worked out: that would have read its file's history (a hook's quick
    answer), which ``reanchor`` does."""

    record: MemoryRecord
    action: str = NONE
    certainty: str | None = None
    to: str | None = None
    blob: str | None = None
    candidates: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    searched: bool = True

    @property
    def movable(self) -> bool:
        """Whether ``reanchor --apply`` takes it: a move to one node."""
        return self.action == MOVE and self.to is not None

    def to_json(self) -> Any:
        return {
            "record": self.record.to_json(),
            "action": self.action,
            "certainty": self.certainty,
            "to": self.to,
            "blob": self.blob,
            "candidates": list(self.candidates),
            "evidence": [item.to_json() for item in self.evidence],
        }


@valueclass
class Proposals:
    """The proposals for a store's stale records, oldest record first, and
    the tree witness they were computed against."""

    tree: str | None
    proposals: tuple[Proposal, ...]

    def remedies(self) -> dict[int, str]:
        """The command line acting on each record that has one to run, by
        id (:func:`remedy`): what a notice about a stale record says."""
        found = {p.record.id: remedy(p) for p in self.proposals}
        return {record_id: line for record_id, line in found.items() if line is not None}

    def unsearched(self) -> list[int]:
        """The ids of the records whose code was not followed (not
        ``searched``): ``reanchor`` names one to say where it went."""
        return [p.record.id for p in self.proposals if not p.searched]

    def to_json(self) -> Any:
        return {
            "schema": REANCHOR_SCHEMA,
            "tree": self.tree,
            "proposals": [p.to_json() for p in self.proposals],
        }


@valueclass
class Rewrite:
    """One superseding record written: ``action`` :data:`MOVE` or
    :data:`CONFIRM`, the id it supersedes and the key that was its anchor."""

    action: str
    supersedes: int
    was: str
    record: MemoryRecord

    def to_json(self) -> Any:
        return {
            "action": self.action,
            "supersedes": self.supersedes,
            "from": self.was,
            "record": self.record.to_json(),
        }


@valueclass
class Rewritten:
    """The records one apply or confirm wrote, in the order named."""

    written: tuple[Rewrite, ...]

    def to_json(self) -> Any:
        return {"schema": REANCHOR_SCHEMA, "written": [w.to_json() for w in self.written]}


# --- The decision: pure ---------------------------------------------------------


def _followed(qualname: str | None, target: str, graph: Mapping[str, str | None]) -> str | None:
    """The node in renamed file ``target`` the record's anchor becomes: the
    file itself, or the symbol of the same qualified name; None when the
    graph has no such node with a blob."""
    from roteiro_memory.repo.languages import file_key, language_of, symbol_key

    if qualname is None:
        key = file_key(target)
    elif language_of(target) is None:
        return None
    else:
        key = symbol_key(target, qualname)
    return key if graph.get(key) is not None else None


def _copied(followed: str, carriers: Sequence[str], graph: Mapping[str, str | None]) -> bool:
    """Whether another of ``carriers`` is in a file of the very content of
    the renamed file holding ``followed``: git pairs a file with one of
    several identical ones by their names alone, which says nothing of
    where the code went."""
    from roteiro_memory.repo.languages import file_key, key_parts

    def content(key: str) -> str | None:
        parts = key_parts(key)
        return graph.get(file_key(parts[0])) if parts is not None else None

    picked = content(followed)
    return picked is not None and any(
        key != followed and content(key) == picked for key in carriers
    )


def propose(
    record: MemoryRecord,
    graph: Mapping[str, str | None],
    carriers: Sequence[str] = (),
    moved: Rename | None = None,
    before: str | None = None,
    *,
    checked: bool = True,
) -> Proposal:
    """The proposal for ``record``, read against ``graph`` (key -> blob now):
    ``carriers`` are the nodes of its family carrying its captured blob --
    each known not to have carried it in the tree the record was written
    against, unless not ``checked`` -- and ``moved`` the rename git found
    for its file from tree ``before``."""
    anchor = record.anchor
    state = record.anchor_state
    if anchor is None or not record.is_live or not state.is_stale:
        return Proposal(record)
    drift: list[Evidence] = []
    if state is AnchorState.DRIFTED:
        blob = graph.get(anchor.key)
        drift.append(Evidence(DRIFT, anchor.key, blob))
        if not carriers:  # nowhere else has its code: it changed where it is
            return Proposal(record, CONFIRM, None, anchor.key, blob, (anchor.key,), tuple(drift))
    evidence = [Evidence(BLOB, key) for key in carriers]
    followed = None
    if moved is not None:
        evidence.append(Evidence(RENAME, rename=moved, before=before))
        parts = anchor_place(record)
        followed = _followed(parts[1], moved.target, graph) if parts else None
        if followed is not None and parts is not None and parts[1] is not None:
            evidence.append(Evidence(SYMBOL, followed))
    evidence += drift
    candidates = tuple(dict.fromkeys([*carriers, *([followed] if followed else [])]))
    if len(carriers) == 1 and followed in (None, carriers[0]):
        # An unchecked carrier may be a copy that was there all along; a
        # drifted anchor's, a copy made since, its own node edited after.
        sure = (checked and not drift) or followed
        to, certainty = carriers[0], CERTAIN if sure else LIKELY
    elif followed is not None and followed in carriers and not _copied(followed, carriers, graph):
        to, certainty = followed, CERTAIN
    elif carriers:
        to, certainty = None, AMBIGUOUS
    elif followed is not None:
        to, certainty = followed, LIKELY
    else:
        return Proposal(record, NONE, evidence=tuple(evidence))
    if to is not None and _too_long(to):  # no record can be anchored there
        return Proposal(record, NONE, evidence=tuple(evidence))
    blob = graph.get(to) if to is not None else None
    return Proposal(record, MOVE, certainty, to, blob, candidates, tuple(evidence))


def _too_long(key: str) -> bool:
    """Whether ``key`` is longer than an anchor may be (a method of a class
    with a name thousands of characters long): a node no write takes."""
    from roteiro_memory.semantics import MAX_ANCHOR_BYTES

    return len(key.encode("utf-8", "surrogateescape")) > MAX_ANCHOR_BYTES


def _shown(key: str) -> str:
    from roteiro_memory.app.anchors import anchor_label

    return anchor_label(key)


_UNVERIFIABLE = (
    "its anchor {where} is unverifiable (its file does not parse now, or a blob is "
    "unknown), so nothing could be compared; fix the file, then sync"
)

_NOT_TAKEN: dict[str, tuple[str, dict[AnchorState, str]]] = {
    MOVE: (
        "re-anchored",
        {
            AnchorState.UNANCHORED: "it has no anchor (it holds repository-wide), so there is "
            "nothing to move",
            AnchorState.VALID: "its anchor {where} is valid, the code unchanged where it was",
            AnchorState.DRIFTED: "its anchor {where} is drifted, not moved -- the code is still "
            "there, changed, and no other node carries it; confirm the record if it still "
            "holds for the code as it is now",
            AnchorState.UNVERIFIABLE: _UNVERIFIABLE,
        },
    ),
    CONFIRM: (
        "confirmed",
        {
            AnchorState.UNANCHORED: "it has no anchor, so there is no code to confirm it against",
            AnchorState.VALID: "its anchor {where} is valid, the code unchanged since it was "
            "written",
            AnchorState.VANISHED: "its anchor {where} is vanished, the code gone from there; "
            "re-anchor it instead (reanchor shows where the code went)",
            AnchorState.UNVERIFIABLE: _UNVERIFIABLE,
        },
    ),
}
"""Why each operation does not take a record whose anchor is in a state:
re-anchoring takes a vanished anchor (when one node is proposed),
confirming a drifted one."""


def _not_taken(record: MemoryRecord, action: str) -> str | None:
    verb, why = _NOT_TAKEN[action]
    said = why.get(record.anchor_state)
    if said is None:
        return None
    where = _shown(record.anchor.key) if record.anchor is not None else "-"
    return f"record {record.id} cannot be {verb}: " + said.format(where=where)


def move_refusal(
    proposal: Proposal, unknown: Callable[[str], tuple[str, str] | None] | None = None
) -> str | None:
    """Why ``proposal``'s record cannot be re-anchored (one line naming what
    to do instead), or None when it can.  ``unknown`` says why the symbols
    of a file are not known, and what to do
    (:func:`~roteiro_memory.app.moves.unknown_symbols`; by default only a
    parser missing here is found)."""
    if proposal.movable:
        return None
    record = proposal.record
    head = f"record {record.id} cannot be re-anchored"
    # A drifted anchor whose code another node carries is refused as a move is.
    reason = None if any(e.kind == BLOB for e in proposal.evidence) else _not_taken(record, MOVE)
    if reason is not None:
        return reason
    if proposal.certainty == AMBIGUOUS:
        places = ", ".join(_shown(key) for key in proposal.candidates)
        return (
            f"{head}: its code is at several places now ({places}), so none is chosen; record "
            f"it again anchored to the right one, superseding {record.id}"
        )
    long = next((e.key for e in proposal.evidence if e.key and _too_long(e.key)), None)
    if long is not None:
        from roteiro_memory.semantics import MAX_ANCHOR_BYTES

        return (
            f"{head}: its code is at {excerpt(_shown(long))}, whose key is "
            f"{len(long.encode('utf-8', 'surrogateescape')):,} bytes, over the "
            f"{MAX_ANCHOR_BYTES:,} an anchor may be; record it again anchored to that file, "
            f"superseding {record.id}"
        )
    renamed = [item.rename for item in proposal.evidence if item.rename is not None]
    parts = anchor_place(record) if record.anchor is not None else None
    why = (unknown or unread_symbols)(renamed[0].target) if renamed and parts and parts[1] else None
    if why is not None:
        return (
            f"{head}: git finds its file renamed to {renamed[0].target} "
            f"({renamed[0].similarity}% alike), but {why[0]}, so where its code is in that "
            f"file cannot be told; {why[1]}"
        )
    found = (
        f"git finds its file renamed to {renamed[0].target} ({renamed[0].similarity}% alike), "
        "which holds no such node"
        if renamed
        else "git finds no rename of its file"
    )
    return (
        f"{head}: no node now carries its code and {found}, so there is nowhere to move it; "
        "a lesson about deleted code may still be worth keeping, or forget it"
    )


def confirm_refusal(record: MemoryRecord) -> str | None:
    """Why ``record`` cannot be confirmed (one line naming what to do
    instead), or None when it can: only a drifted anchor is confirmed."""
    return _not_taken(record, CONFIRM)


def remedy(proposal: Proposal) -> str | None:
    """The command line that acts on ``proposal``, for a notice: the
    re-anchoring of a move to one node, the confirmation of a drifted
    record; None when there is nothing to run."""
    if proposal.movable:
        return f"roteiro-memory reanchor --apply {proposal.record.id}"
    if proposal.action == CONFIRM:
        return f"roteiro-memory confirm {proposal.record.id}"
    return None


# --- Reading the facts ----------------------------------------------------------


def evidence_text(
    item: Evidence,
    to: str | None,
    label: Callable[[str], str] | None = None,
    quote: Callable[[str], str] = str,
) -> str:
    """One piece of evidence in a few words; a node is named (by ``label``,
    :func:`~roteiro_memory.app.anchors.anchor_label` unless given) only when
    it is not the one proposed, and a path git gave by ``quote``."""
    if item.rename is not None:
        return (
            f"git: {quote(item.rename.source)} -> {quote(item.rename.target)} "
            f"({item.rename.similarity}%)"
        )
    said = {BLOB: "same code", SYMBOL: "same name"}.get(item.kind, "its code changed")
    if item.kind == DRIFT or item.key is None or item.key == to:
        return said
    return f"{said} at {(label or _shown)(item.key)}"


def proposal_text(proposal: Proposal, label: Callable[[str], str] | None = None) -> str:
    """What is proposed, in a word or two: ``confirm``, the node to move to
    and how sure, or why there is none."""
    if proposal.action == CONFIRM:
        return "confirm"
    if proposal.to is not None:
        return f"{(label or _shown)(proposal.to)} ({proposal.certainty})"
    return str(proposal.certainty or NONE)


def _ids(session: Session, given: Sequence[object]) -> list[int]:
    """The record ids named, each once, checked before the store is opened."""
    what = session.spell("ids")
    wanted: dict[int, None] = {}  # in order, and a repeat found at once, however many
    for value in given:
        number = values.record_id(value, what)
        if number in wanted:
            raise UsageError(f"{what} {number} given twice: name each record once")
        wanted[number] = None
    return list(wanted)


def _named(
    store: Store, wanted: Sequence[int], operation: str, graph: Graph | None = None
) -> list[MemoryRecord]:
    """The live records ``wanted`` names, in order, their anchors resolved
    against ``graph`` when given; NotFound for an id that names none,
    AlreadySuperseded (naming the newest of its chain) for one that is
    superseded."""
    found = []
    for record_id in wanted:
        record = store.get(record_id, graph=graph)
        if record is None:
            raise NotFound(f"no memory record with id {record_id}")
        if record.superseded_by is not None:
            newest, seen = record, {record.id}
            # A damaged store may hold a cycle (check reports it): walk each id once.
            while newest.superseded_by is not None and newest.superseded_by not in seen:
                later = store.get(newest.superseded_by)
                if later is None:
                    break
                newest = later
                seen.add(later.id)
            said = f"memory record {record_id} is already superseded by {record.superseded_by}"
            if newest.superseded_by is not None:
                raise AlreadySuperseded(
                    f"{said}, and its chain ends in no live record (the store is damaged: "
                    "run roteiro-memory check)"
                )
            chain = "" if newest.id == record.superseded_by else ", the newest of its chain,"
            raise AlreadySuperseded(f"{said}; {operation} {newest.id}{chain} instead")
        found.append(record)
    return found


def _pending_graph(synced: SyncReport | None) -> Graph | None:
    """The graph a sync built and left unwritten, as reads resolve against
    it; None when there is none (the store's own is read, and no code of
    the repository's is loaded)."""
    if synced is None or synced.pending is None:
        return None
    from roteiro_memory.repo.graph import graph_blobs

    return graph_blobs(synced.pending)


def _stale(store: Store, graph: Graph | None = None) -> list[MemoryRecord]:
    """Every live record whose anchor drifted or vanished (against ``graph``
    when given), oldest first."""
    listing = store.list(graph=graph)
    return sorted((r for r in listing.records if r.anchor_state.is_stale), key=lambda r: r.id)


def _gather(
    session: Session,
    wanted: Sequence[int],
    operation: str,
    history: bool = True,
    *,
    write: bool,
    synced: bool = False,
) -> tuple[Proposals, SyncReport | None]:
    """The proposals for the records ``wanted`` names, or for every stale
    one, and the sync that came first (none when ``synced``: the caller's
    read synced already).  They are worked out from the store's graph
    (:func:`read_facts`: its nodes, and its witness where the history
    ends), so a store that takes no sync is read as last synced, the
    warning saying so.  Not ``write``: the sync writes nothing, and the
    proposals are those of the graph it left pending, as it will be once
    written."""
    store = session.store()  # first: with no repository to find it in, the failure is its
    repo = session.require_repo(operation)
    report = None if synced else session.sync(stored=True, write=write)
    built = None if report is None or report.pending is None else (report.tree, report.pending)
    graph = _pending_graph(report)
    records = _named(store, wanted, operation, graph) if wanted else _stale(store, graph)
    tree, graph, facts = read_facts(repo, store, records, history=history, built=built)
    found = [
        propose(record, graph, f.carriers, f.moved, f.before, checked=f.checked)
        if f.searched
        else Proposal(record, searched=False)
        for record, f in zip(records, facts, strict=True)
    ]
    return Proposals(tree, tuple(found)), report


# --- The use cases ----------------------------------------------------------------


def proposals(
    session: Session, ids: Sequence[object] = (), *, history: bool = True, synced: bool = False
) -> Proposals:
    """Where the code of each stale live record is now, with the evidence:
    the records ``ids`` names (any live record; NotFound or
    AlreadySuperseded for one that is not), or every live record whose
    anchor drifted or vanished.  Without ``history`` no file's history is
    read: a record whose witness tree git does not have is then not
    ``searched`` (the quick answer a hook gives).  ``synced``: this
    session's read synced the graph the store holds now, so it is read as
    that sync left it, the stat cache not asked again (a hook's notice).
    Writes no record."""
    wanted = _ids(session, ids)
    return _gather(session, wanted, "reanchor", history, write=True, synced=synced)[0]


def apply(session: Session, ids: Sequence[object] = (), *, all_certain: bool = False) -> Rewritten:
    """Re-anchor the records ``ids`` names to their proposed nodes, or with
    ``all_certain`` every record whose proposal is certain: one superseding
    record each, all in one transaction with the sync they were decided
    against.  A record without a proposal to one node is refused
    (:func:`move_refusal`), writing nothing, not even that sync."""
    wanted = _ids(session, ids)
    every = session.spell("all_certain")
    if all_certain and wanted:
        raise UsageError(f"give record ids or {every}, not both")
    if not all_certain and not wanted:
        raise UsageError(
            f"name the records to re-anchor ({session.spell('ids')}...), or give {every}"
        )
    session.writable_store()  # refused at once on a read-only store, before a sync
    gathered, synced = _gather(session, wanted, "reanchor", write=False)
    repo = session.require_repo("reanchor")
    found = gathered.proposals
    if all_certain:
        chosen = [p for p in found if p.movable and p.certainty == CERTAIN]
    else:
        for proposal in found:
            reason = move_refusal(proposal, lambda path: unknown_symbols(repo, path))
            if reason is not None:
                raise ReanchorRefused(reason)
        chosen = list(found)
    return _supersede(session, synced, [(p.record, str(p.to)) for p in chosen], MOVE)


def confirm(session: Session, ids: Sequence[object]) -> Rewritten:
    """Say that each drifted record ``ids`` names still holds for its code
    as it is now: one superseding record each, anchored to the same node at
    its blob now, all in one transaction with the sync they were checked
    against.  A record whose anchor is not drifted is refused
    (:func:`confirm_refusal`), writing nothing, not even that sync."""
    wanted = _ids(session, ids)
    if not wanted:
        raise UsageError(f"name the records to confirm ({session.spell('ids')}...)")
    store = session.writable_store()
    synced = session.sync(stored=True, write=False)
    records = _named(store, wanted, "confirm", _pending_graph(synced))
    for record in records:
        reason = confirm_refusal(record)
        if reason is not None:
            raise ReanchorRefused(reason)
    return _supersede(session, synced, [(r, r.anchor.key) for r in records if r.anchor], CONFIRM)


def _supersede(
    session: Session,
    synced: SyncReport | None,
    moves: Sequence[tuple[MemoryRecord, str]],
    action: str,
) -> Rewritten:
    """Write, in one transaction, the graph the sync ``synced`` left pending
    and a copy of each record anchored to its key and superseding it; the
    new records as stored.  With no record to write nothing is written:
    the sync is written only with what it was decided for."""
    from roteiro_memory.store import MemoryWrite

    writes = [
        MemoryWrite(
            record.kind,
            record.body,
            scope=record.scope,
            anchor=key,
            confidence=record.confidence,
            supersedes=record.id,
        )
        for record, key in moves
    ]
    from roteiro_memory.app.records import read_back, written

    rewrites: list[Rewrite] = []
    store, ids = session.store(), []
    if writes:
        with store.atomically():
            if synced is not None:
                synced.write(store)
            ids = store.record_many(writes)
        if synced is not None:
            session.synced(synced)
    with read_back(ids):
        stored = written(store, ids)
    for (record, _), new in zip(moves, stored, strict=True):
        assert record.anchor is not None  # each was moved from its anchor
        rewrites.append(Rewrite(action, record.id, record.anchor.key, new))
    return Rewritten(tuple(rewrites))
