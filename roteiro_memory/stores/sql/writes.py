"""The episodic tier's writes, in SQL over a :class:`~.dialects.Dialect`:
record, forget and reset.

Each function runs inside the write transaction its caller
(:class:`~.store.SQLStore`) opened and locked; the term index
(:mod:`.index`) is kept in the same transaction.  Loaded when a command
writes, not on every start-up.
"""

from __future__ import annotations

from collections.abc import Sequence

from roteiro_memory import semantics as sem
from roteiro_memory.collector import paused
from roteiro_memory.errors import NotFound
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import index

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.store import MemoryWrite
    from roteiro_memory.stores.sql.dialects import Dialect

__all__ = ["forget", "insert", "reset"]


def insert(conn: Any, d: Dialect, batch: Sequence[MemoryWrite], base: int) -> list[int]:
    """Write ``batch`` as the records ``base + 1``, ``base + 2``, ...,
    superseding what it names and indexing it; their ids.

    Whether the batch may be written is :func:`~roteiro_memory.semantics.check_batch`'s
    to decide, from the stored state of the records it supersedes; the
    anchor's blob and path, and the tree witness, are taken from the store's
    own graph now."""
    with paused():  # a batch's rows, terms and postings, and no cycle among them
        return _insert(conn, d, batch, base)


def _insert(conn: Any, d: Dialect, batch: Sequence[MemoryWrite], base: int) -> list[int]:
    valid = sem.check_batch(batch, base, _supersession(conn, d, sem.stored_targets(batch, base)))
    evidence = _anchor_evidence(conn, d, {w.anchor for w in batch if w.anchor is not None})
    witness = conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
    tree = cols.stored("sync_state", 0, "tree", d.read(witness[0]), str, True) if witness else None
    ids = list(range(base + 1, base + len(batch) + 1))
    rows = []
    indexed = []
    for new_id, write, ok in zip(ids, batch, valid, strict=True):
        blob, path = (None, None)
        if write.anchor is not None:
            blob, path = evidence.get(write.anchor, (None, None))
        rows.append(
            (
                new_id,
                d.text(ok.scope),
                ok.kind.value,
                d.optional(write.anchor),
                d.optional(blob),
                d.optional(path),
                d.text(ok.body),
                ok.confidence,
                d.optional(tree),
                d.text(sem.search_text(ok.body, write.anchor, path)),
            )
        )
        indexed.append(index.indexed(new_id, ok.confidence, ok.body, write.anchor, path))
    m = d.mark
    d.many(conn, cols.insert("agent_memory", cols.RECORD_WRITE, m), rows)
    d.many(
        conn,
        f"UPDATE agent_memory SET superseded_by = {m}, superseded_at = {d.now} WHERE id = {m}",
        [
            (new_id, write.supersedes)
            for new_id, write in zip(ids, batch, strict=True)
            if write.supersedes is not None
        ],
    )
    index.written(conn, d, [w.supersedes for w in batch], base, indexed)
    return ids


def _supersession(conn: Any, d: Dialect, targets: Sequence[int]) -> dict[int, int | None]:
    """What each stored record of ``targets`` is superseded by (None: live)."""
    stored: dict[int, int | None] = {}
    for chunk in d.chunks(targets):
        where, params = d.any_of("id", chunk)
        stored.update(
            conn.execute(f"SELECT id, superseded_by FROM agent_memory WHERE {where}", params)
        )
    return stored


def _anchor_evidence(
    conn: Any, d: Dialect, keys: set[str]
) -> dict[str, tuple[str | None, str | None]]:
    """The blob and path each anchor key's node carries now."""
    found: dict[str, tuple[str | None, str | None]] = {}
    for chunk in d.chunks(sorted(keys)):
        where, params = d.any_of("key", [d.text(key) for key in chunk])
        for raw in conn.execute(f"SELECT key, blob, path FROM nodes WHERE {where}", params):
            key, blob, path = (d.read(value) for value in raw)
            found[key] = (
                cols.stored("nodes", key, "blob", blob, str, True),
                cols.stored("nodes", key, "path", path, str, True),
            )
    return found


def forget(conn: Any, d: Dialect, id: int) -> list[int]:
    """Delete the record ``id``, clearing the pointers to it; the records
    that made live again, ascending.  NotFound when there is no such record."""
    m = d.mark
    if (
        not sem.fits_int64(id)
        or conn.execute(f"SELECT 1 FROM agent_memory WHERE id = {m}", (id,)).fetchone() is None
    ):
        raise NotFound(f"no memory record with id {id} to forget")
    live = (
        conn.execute(
            f"SELECT 1 FROM agent_memory WHERE id = {m} AND superseded_by IS NULL", (id,)
        ).fetchone()
        is not None
    )
    restored = sorted(
        row[0]
        for row in conn.execute(
            "UPDATE agent_memory SET superseded_by = NULL, superseded_at = NULL"
            f" WHERE superseded_by = {m} RETURNING id",
            (id,),
        )
    )
    index.forgotten(conn, d, id, live, restored)
    conn.execute(f"DELETE FROM agent_memory WHERE id = {m}", (id,))
    return restored


RESET_TABLES = (
    "memory_members",
    "memory_segments",
    "memory_cells",
    "memory_recent",
    "agent_memory",
    "agent_cache",
    "nodes",
    "sync_state",
)
"""What :func:`reset` empties, each table before the ones it references."""


def reset(conn: Any, d: Dialect) -> None:
    """Empty the store's tables and its clock, but for the id sequence,
    which is its store's own (:meth:`~.store.SQLStore._reset_ids`)."""
    d.empty(conn, RESET_TABLES)
    index.clear(conn, d)
    conn.execute("UPDATE agent_cache_clock SET ticks = 0, generation = 0")
