"""The episodic tier's use cases: remember, get, forget, list, and ranked reads.

Each checks everything it was given before it touches the store -- before
even the incremental sync -- so a refused request leaves the store exactly as
it was; then it opens the store, syncs the graph (so anchors resolve against
the working tree now), and asks the store, which filters, ranks and limits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from roteiro_memory import semantics as sem
from roteiro_memory.app import values
from roteiro_memory.errors import Absent, Corrupt, NotFound, StoreUnavailable
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Collection
    from typing import Any

    from roteiro_memory.app.anchors import AnchorSpec
    from roteiro_memory.app.session import Session
    from roteiro_memory.conflicts import Conflict
    from roteiro_memory.results import MemoryForgotten, MemoryListing, MemoryRecord, Recall
    from roteiro_memory.store import Store

    JSON = Any

__all__ = [
    "Remembered",
    "Selection",
    "forget",
    "get",
    "listing",
    "ranked",
    "remember",
    "same_body",
    "written",
]


@valueclass
class Selection:
    """Which records a read keeps, as a request names them: any of ``kinds``
    (none: every kind), of ``scope`` when given, anchored to any of
    ``anchors`` (a bare path also takes the symbols in that file), with
    anchors resolved against commit ``rev`` instead of the working tree."""

    kinds: tuple[str, ...] = ()
    scope: str | None = None
    anchors: tuple[str, ...] = ()
    rev: str | None = None


@valueclass
class Remembered:
    """What a remember answered: the record as stored, whether it was
    already there (an equal live record, so nothing was written), and the
    conflict it is part of, when it is a live decision that others at its
    anchor disagree with (:mod:`roteiro_memory.conflicts`)."""

    record: MemoryRecord
    existing: bool = False
    conflict: Conflict | None = None

    @property
    def against(self) -> tuple[int, ...]:
        """The live decisions the record disagrees with, oldest first."""
        return () if self.conflict is None else self.conflict.against(self.record.id)

    def to_json(self) -> JSON:
        """``id``, ``existing`` and ``record``; and ``conflicts``, as a read
        carries them beside its records, only when there is one."""
        out: JSON = {
            "id": self.record.id,
            "existing": self.existing,
            "record": self.record.to_json(),
        }
        if self.conflict is not None:
            out["conflicts"] = [self.conflict.to_json()]
        return out


def anchor_specs(
    session: Session, texts: Sequence[str], *, write: bool = False
) -> list[AnchorSpec]:
    """What each anchor text names, for a ``write`` or a read; a raw key
    needs no repository, so none is looked for (no git is run)."""
    if not texts:
        return []
    from roteiro_memory.app.anchors import names_a_path, parse_anchor

    what = session.spell("anchor")
    return [
        parse_anchor(text, session.repo if names_a_path(text) else None, what, write=write)
        for text in texts
    ]


def _anchor_filter(
    specs: Sequence[AnchorSpec], touched: Collection[str] | None = None
) -> tuple[str | None, sem.AnchorFilter | None]:
    """:func:`~roteiro_memory.app.anchors.anchor_filter`, loaded only when a
    read names anchors or a change."""
    if not specs and touched is None:
        return None, None
    from roteiro_memory.app.anchors import anchor_filter

    return anchor_filter(specs or None, touched)


def anchor_spec(session: Session, text: str | None, *, verify: bool = False) -> AnchorSpec | None:
    """The one anchor a write names, refused (when ``verify``) if it is a
    path or symbol the working tree does not hold, or a raw key no sync
    makes (:func:`~roteiro_memory.app.anchors.verify_anchor`)."""
    if text is None:
        return None
    spec = anchor_specs(session, [text], write=True)[0]
    if verify:
        from roteiro_memory.app.anchors import verify_anchor

        # A raw key is checked without the repository: no git is run for it.
        repo = session.repo if spec.path is not None else None
        verify_anchor(spec, repo, session.spell("anchor"))
    return spec


_PROBE_WORDS = 8
"""How many of a body's distinct words the search for an equal record asks for."""


def same_body(one: str, other: str) -> bool:
    """Whether two bodies say the same: equal once case is folded (as
    queries fold it, :func:`str.lower`) and every run of white space is one
    space, none at the ends."""
    return " ".join(one.lower().split()) == " ".join(other.lower().split())


def _existing(
    store: Store, valid: sem.ValidWrite, key: str | None, supersedes: int | None
) -> MemoryRecord | None:
    """A live record this write would repeat: the same kind, scope and
    anchor, the same body (:func:`same_body`), and -- when the write
    supersedes a record -- already its successor.  Candidates come from
    the store: those at the anchor, or for an unanchored write those
    holding every word of the body (a superset of the equal ones)."""
    if key is not None:
        found = store.list(scope=valid.scope, kind=valid.kind, anchor_key=key).records
    else:
        # Any of the body's words narrow the candidates to a superset of
        # the equal bodies; a few distinct ones keep the query cheap.
        words = " ".join(list(dict.fromkeys(sem.query_tokens(valid.body)))[:_PROBE_WORDS])
        recalled = store.recall(words, scope=valid.scope, kind=valid.kind).results
        found = [r.record for r in recalled if r.record.anchor is None]
    for record in found:
        if not same_body(record.body, valid.body):
            continue
        if supersedes is not None:
            target = store.get(supersedes)
            if target is None or target.superseded_by != record.id:
                continue
        return record
    return None


def remember(
    session: Session,
    kind: str,
    body: str,
    *,
    scope: str = sem.DEFAULT_SCOPE,
    anchor: str | None = None,
    confidence: object = None,
    supersedes: object = None,
    allow_duplicate: bool = False,
) -> Remembered:
    """Write one record and return it as stored, with its anchor state: the
    write checked (the PROTOCOL order), the anchor verified and the record it
    supersedes looked up before anything syncs, the graph synced so the
    anchor captures the blob the tree holds now.  ``confidence`` and
    ``supersedes`` may be text or JSON numbers (:mod:`.values`).

    The same lesson recorded twice is one record: a live record of the same
    kind, scope and anchor whose body is the same (:func:`same_body`) is
    answered as existing and nothing is written, unless
    ``allow_duplicate``.  A rule of this use case, not of the store:
    PROTOCOL's ``memory.record`` always writes.  The look for that record
    and the write are one step (:meth:`~roteiro_memory.store.Store.atomically`),
    so writers adding the same lesson at once write it once."""
    spell = session.spell
    valid = sem.validate_write(
        values.kind_token(kind), scope, body, values.confidence(confidence, spell("confidence"))
    )
    target_id = values.superseded_id(supersedes, spell("supersedes"))
    spec = anchor_spec(session, anchor, verify=True)
    store = session.writable_store()
    key = spec.key if spec else None
    if target_id is not None:
        _check_target(store, valid, key, target_id, allow_duplicate)
    session.sync()
    with store.atomically():
        repeated = None if allow_duplicate else _existing(store, valid, key, target_id)
        if repeated is None:
            new_id = store.record(
                valid.kind,
                valid.body,
                scope=valid.scope,
                anchor=key,
                confidence=valid.confidence,
                supersedes=target_id,
            )
    if repeated is not None:
        return _answered(store, repeated, existing=True)
    with read_back([new_id]):
        return _answered(store, written(store, [new_id])[0], existing=False)


def _check_target(
    store: Store, valid: sem.ValidWrite, key: str | None, target_id: int, allow_duplicate: bool
) -> None:
    """Refuse, before anything syncs, superseding a record that is not there
    or is superseded already -- unless by the record this write repeats,
    which is answered as existing.  The store checks again as it writes."""
    target = store.get(target_id)
    superseded = target is not None and target.superseded_by is not None
    if superseded and not allow_duplicate and _existing(store, valid, key, target_id):
        return
    sem.check_supersedes(target_id, target is not None, target.superseded_by if target else None)


@contextlib.contextmanager
def read_back(ids: Sequence[int]) -> Iterator[None]:
    """Reads made once the records ``ids`` are committed.  A store failing
    then (the server gone, a lock held past the wait) says what failed, and
    that the records are stored: its own advice -- nothing was changed, try
    again -- would have them written twice."""
    try:
        yield
    except (StoreUnavailable, Corrupt) as error:
        if not ids:
            raise
        many = len(ids) > 1
        named = ", ".join(str(i) for i in ids)
        said = (
            f"recorded as memory record{'s' if many else ''} {named}, stored; reading "
            f"{'them' if many else 'it'} back then failed: {error.cause or error}; look "
            f"{'them' if many else 'it'} up by id once the store can serve, rather than "
            "recording again"
        )
        raise (Corrupt if isinstance(error, Corrupt) else StoreUnavailable)(said) from error


def written(store: Store, ids: Sequence[int]) -> list[MemoryRecord]:
    """The records ``ids``, just written and committed, read back.  Another
    process may have forgotten one in between: that is said, as
    :class:`~roteiro_memory.errors.Absent` (the record is not there to
    show), never taken for a damaged store."""
    out = []
    for new_id in ids:
        record = store.get(new_id)
        if record is None:
            raise Absent(
                f"recorded as {new_id}, but another process has forgotten memory record "
                f"{new_id} since: it is not in the store"
            )
        out.append(record)
    return out


def _answered(store: Store, record: MemoryRecord, *, existing: bool) -> Remembered:
    """The answer for ``record``, with the conflict at its anchor, looked up
    as every read looks it up (:func:`~roteiro_memory.app.shown.conflicts_among`)."""
    from roteiro_memory.app.shown import conflicts_among

    found = [c for c in conflicts_among(store, [record]) if c.against(record.id)]
    return Remembered(record, existing=existing, conflict=found[0] if found else None)


def get(session: Session, record_id: object, *, rev: str | None = None) -> MemoryRecord:
    """One record, superseded or not, its anchor resolved against the working
    tree (or ``rev``); :class:`~roteiro_memory.errors.Absent` when there is none."""
    wanted = values.record_id(record_id, session.spell("id"))
    session.check_revs(rev=rev)
    store = session.store()
    session.sync()
    record = store.get(wanted, graph=session.graph_for(rev))
    if record is None:
        raise Absent(f"no memory record with id {wanted}")
    return record


def forget(session: Session, record_id: object) -> MemoryForgotten:
    """Delete one record, restoring what it superseded; Absent when there is none."""
    wanted = values.record_id(record_id, session.spell("id"))
    try:
        return session.store().forget(wanted)
    except NotFound as error:
        raise Absent(str(error)) from None


def listing(
    session: Session,
    selection: Selection,
    *,
    include_superseded: bool = False,
    limit: object = None,
) -> MemoryListing:
    """The selected records, newest first; ``limit`` (None or 0: all) keeps the newest."""
    keep = values.whole(limit, session.spell("limit"))
    kinds = sem.parse_kinds([values.kind_token(kind) for kind in selection.kinds])
    values.check_scope(selection.scope, session.spell("scope"))
    key, anchors = _anchor_filter(anchor_specs(session, selection.anchors))
    session.check_revs(rev=selection.rev)
    store = session.store()
    session.sync()
    return store.list(
        scope=selection.scope,
        kind=kinds,
        anchor_key=key,
        include_superseded=include_superseded,
        limit=keep,
        graph=session.graph_for(selection.rev),
        anchors=anchors,
    )


def ranked(
    session: Session,
    selection: Selection,
    *,
    query: str | None = None,
    exact: bool = False,
    decay: str = "none",
    applicable_only: bool = False,
    limit: object = None,
    touched: str | None = None,
) -> Recall:
    """The live selected records, ranked.

    Words are a question: the ranking arm answers it (``memory.search``:
    records holding any of them, relevance times evidence; the evaluation
    measures it better, docs/eval.md), or with ``exact`` the conjunctive
    match of ``memory.recall``.  No words (or only white space): every
    selected record ranked by evidence.  ``touched`` keeps records anchored
    to what differs between that revision and the working tree."""
    parsed = sem.Decay.parse(decay)
    keep = values.whole(limit, session.spell("limit"))
    kinds = sem.parse_kinds([values.kind_token(kind) for kind in selection.kinds])
    values.check_scope(selection.scope, session.spell("scope"))
    if query is not None:
        # JSON can carry a lone surrogate (no argument of a command line
        # can): refused, rather than searched for or taken as a word.
        sem.check_utf8(query, session.spell("query"))
    specs = anchor_specs(session, selection.anchors)
    session.check_revs(rev=selection.rev, touched=touched)
    store = session.store()
    session.sync()
    changed = session.touched(touched) if touched is not None else None
    key, anchors = _anchor_filter(specs, changed)
    words = query if query is not None and sem.strip_white_space(query) else None
    ask = store.recall if words is None or exact else store.search
    return ask(
        words,  # type: ignore[arg-type]  # search is asked only with words
        scope=selection.scope,
        kind=kinds,
        anchor_key=key,
        decay=parsed,
        applicable_only=applicable_only,
        limit=keep,
        graph=session.graph_for(selection.rev),
        anchors=anchors,
    )
