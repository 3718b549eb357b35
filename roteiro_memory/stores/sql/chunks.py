"""Writing postings into the term index's chunks and tails (:mod:`.index`
says which records go in and out; this module, where their postings go).

A cell's postings are its closed chunks, by ascending id, then its tail:
the newest postings, fewer than :data:`~.postings.CHUNK_POSTINGS`, in the
fixed-width form of :data:`~.postings.TAIL`.  Adding postings newer than any
indexed one appends their bytes to the tail in SQL, without reading it; only
a tail that fills is read, and closed into chunks.  ``memory_cells`` counts
each cell's postings and its tail's, so a writer knows which tails fill
without reading them.  Every statement runs once per kind, over all its rows.
"""

from __future__ import annotations

import bisect
import operator
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import postings as pst

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Protocol

    from roteiro_memory.stores.sql.expressions import Dialect

    class Posting(Protocol):
        """What this module reads of :class:`.index.Posting` (index imports
        this module, so the type is named by its shape)."""

        @property
        def counts(self) -> Mapping[str, int]: ...
        @property
        def length(self) -> int: ...

    class Indexed(Protocol):
        """What this module reads of :class:`.index.Indexed`."""

        @property
        def id(self) -> int: ...
        @property
        def cell(self) -> int: ...
        @property
        def posting(self) -> Posting: ...

    Key = tuple[Any, int]
    """A cell of a term: ``(the term as bound, cell)``."""

__all__ = ["Rows", "append", "place", "remove", "rows_of"]

Rows = list[tuple[int, int, int]]
"""Postings of one term in one cell: ``(record id, count, length)``, ascending."""


def grouped(records: Iterable[Indexed], d: Dialect) -> dict[Key, Rows]:
    """The postings of ``records`` by cell of a term, each cell's by ascending id."""
    groups: defaultdict[tuple[str, int], Rows] = defaultdict(list)
    for record in sorted(records, key=_id):
        record_id, cell, length = record.id, record.cell, record.posting.length
        once = (record_id, 1, length)  # most of a record's terms: one posting shared
        for term, count in record.posting.counts.items():
            groups[term, cell].append(once if count == 1 else (record_id, count, length))
    return {(d.text(term), cell): rows for (term, cell), rows in groups.items()}


_id = operator.attrgetter("id")


def rows_of(blob: Any, key: Key) -> Rows:
    """The postings of a closed chunk of the cell ``key``."""
    try:
        ids, counts, lengths = pst.decode(bytes(blob))
    except (ValueError, TypeError) as error:
        raise pst.damaged("memory_chunks", pst.cell_row(key[0], key[1]), error) from None
    return list(zip(ids, counts, lengths, strict=True))


def _encoded(rows: Rows) -> bytes:
    ids, counts, lengths = zip(*rows, strict=True)
    return pst.encode(ids, counts, lengths)


def _read(conn: Any, d: Dialect, table: str, column: str, keys: Sequence[Key]) -> list[Any]:
    """``(term, cell, column)`` of ``table``'s rows of the cells ``keys``
    (``column`` an expression over the table's alias ``t``, or a column)."""
    out: list[Any] = []
    for chunk in d.chunks(sorted(set(keys))):
        pairs, params = d.pairs(chunk)
        out.extend(
            conn.execute(
                f"SELECT t.term, t.cell, {column} FROM {pairs} JOIN {table} t"
                " ON t.term = column1 AND t.cell = column2",
                params,
            )
        )
    return out


def _tails(conn: Any, d: Dialect, keys: Sequence[Key]) -> dict[Key, Rows]:
    out: dict[Key, Rows] = {}
    for term, cell, blob in _read(conn, d, "memory_cells", "t.tail", keys):
        try:
            out[_key(d, term, cell)] = pst.tail_rows(bytes(blob))
        except (ValueError, TypeError) as error:
            raise pst.damaged("memory_cells", pst.cell_row(term, cell), error) from None
    return out


def _key(d: Dialect, raw: Any, cell: int) -> Key:
    return (bytes(raw) if d.text_as_bytes else raw), cell


class _Writes:
    """What a change writes, gathered."""

    def __init__(self, d: Dialect, fresh: bool = False) -> None:
        self.d = d
        self.fresh = fresh
        """The index was empty: every cell written is new, so it is loaded, not upserted."""
        self.closed: list[tuple[Any, int, int, bytes]] = []
        self.changed: list[tuple[bytes, Any, int, int]] = []
        self.dropped: list[tuple[Any, int, int]] = []
        self.appended: dict[Key, tuple[bytes, Rows]] = {}
        """Cells whose new postings join the tail as they are."""
        self.tails: dict[Key, Rows] = {}
        """Cells whose tail is written anew, with :attr:`added` postings."""
        self.added: dict[Key, Rows] = {}
        self.gone: Counter[Key] = Counter()

    def close(self, key: Key, rows: Rows) -> None:
        """``rows`` (the cell's tail and what joins it) as closed chunks, the
        last ones short of a full chunk left as the tail."""
        whole = len(rows) - len(rows) % pst.CHUNK_POSTINGS
        rest = rows[whole:]
        if rest and pst.tail_bytes(rest) is None:
            whole = len(rows)  # a posting too wide for a tail: closed too
            rest = []
        for start in range(0, whole, pst.CHUNK_POSTINGS):
            part = rows[start : start + pst.CHUNK_POSTINGS]
            self.closed.append((key[0], key[1], part[0][0], _encoded(part)))
        self.tails[key] = rest

    def run(self, conn: Any) -> None:
        d, m = self.d, self.d.mark
        here = f"term = {m} AND cell = {m}"
        d.many(conn, f"DELETE FROM memory_chunks WHERE {here} AND first_id = {m}", self.dropped)
        d.many(
            conn,
            f"UPDATE memory_chunks SET postings = {m} WHERE {here} AND first_id = {m}",
            self.changed,
        )
        d.load(conn, "memory_chunks", cols.names(cols.MEMORY_CHUNKS), self.closed)
        # In key order (keys are unique): neighbouring rows share B-tree pages.
        appended, added = sorted(self._appended_cells()), sorted(self._added_cells())
        if self.fresh:
            assert not self.gone, "a fresh index has nothing to take out"
            assert not self.changed, "a fresh index has no chunk to change"
            d.load(conn, "memory_cells", cols.names(cols.MEMORY_CELLS), appended + added)
            return
        upsert = cols.insert("memory_cells", cols.MEMORY_CELLS, m) + (
            " ON CONFLICT (term, cell) DO UPDATE SET"
            " postings = memory_cells.postings + excluded.postings,"
            f" max_tf = {d.greatest}(memory_cells.max_tf, excluded.max_tf), tail = "
        )
        d.many(conn, upsert + d.joined("memory_cells.tail", "excluded.tail"), appended)
        d.many(conn, upsert + "excluded.tail", added)
        # Emptied cells go; the rest lose their count and get their tail.
        gone = [(*key, n) for key, n in self.gone.items()]
        d.many(conn, f"DELETE FROM memory_cells WHERE {here} AND postings <= {m}", gone)
        d.many(
            conn,
            f"UPDATE memory_cells SET postings = postings - {m}, tail = {m} WHERE {here}",
            [(n, pst.tail_bytes(self.tails[term, cell]), term, cell) for term, cell, n in gone],
        )

    def _appended_cells(self) -> list[tuple[Any, int, int, int, bytes | None]]:
        """A ``memory_cells`` row of what each cell of :attr:`appended` gains:
        its postings, their largest count and the bytes joining its tail."""
        return [(*key, len(rows), _most(rows), blob) for key, (blob, rows) in self.appended.items()]

    def _added_cells(self) -> list[tuple[Any, int, int, int, bytes | None]]:
        """A ``memory_cells`` row of what each cell of :attr:`added` gains,
        with its tail as written anew."""
        return [
            (*key, len(rows), _most(rows), pst.tail_bytes(self.tails[key]))
            for key, rows in self.added.items()
        ]


def _most(rows: Rows) -> int:
    if len(rows) == 1:  # most cells of most terms: a rare term's record each
        return int(rows[0][1])
    return int(max(map(_count, rows)))


_count = operator.itemgetter(1)


def append(conn: Any, d: Dialect, records: Sequence[Indexed], fresh: bool = False) -> None:
    """Add the postings of ``records`` -- each newer than every record
    indexed -- after those of their cells.  ``fresh``: the index is empty."""
    groups = grouped(records, d)
    writes = _Writes(d, fresh)
    sizes: dict[Key, int] = {}
    if not fresh:
        found = _read(conn, d, "memory_cells", d.byte_length("t.tail"), list(groups))
        sizes = {_key(d, term, cell): n // pst.TAIL.size for term, cell, n in found}
    filling = []
    for key, rows in groups.items():
        if sizes.get(key, 0) + len(rows) < pst.CHUNK_POSTINGS:
            blob = pst.tail_bytes(rows)
            if blob is not None:
                writes.appended[key] = (blob, rows)
                continue
        filling.append(key)
    held = _tails(conn, d, filling) if filling and not fresh else {}
    for key in filling:
        writes.close(key, held.get(key, []) + groups[key])
        writes.added[key] = groups[key]
    writes.run(conn)


def place(conn: Any, d: Dialect, records: Sequence[Indexed]) -> None:
    """Add the postings of ``records`` among older ones (records a forget
    made live again): each cell they join is written anew."""
    m = d.mark
    writes = _Writes(d)
    groups = grouped(records, d)
    tails = _tails(conn, d, list(groups))
    for key, rows in groups.items():
        chunks = conn.execute(
            f"SELECT first_id, postings FROM memory_chunks WHERE term = {m} AND cell = {m}", key
        ).fetchall()
        writes.dropped.extend((*key, first) for first, _ in chunks)
        every = [row for _, blob in chunks for row in rows_of(blob, key)]
        writes.close(key, sorted(every + tails.get(key, []) + rows))
        writes.added[key] = rows
    writes.run(conn)


def remove(conn: Any, d: Dialect, records: Sequence[Indexed]) -> None:
    """Take ``records``' postings out of the chunks, tails and cells."""
    m = d.mark
    find = (
        f"SELECT first_id, postings FROM memory_chunks WHERE term = {m} AND cell = {m}"
        f" AND first_id <= {m} ORDER BY first_id DESC LIMIT 1"
    )
    groups = grouped(records, d)
    tails = _tails(conn, d, list(groups))
    writes = _Writes(d)
    chunks: dict[tuple[Any, int, int], Rows] = {}
    for key, rows in groups.items():
        tail = tails.get(key, [])
        for record_id, _, _ in rows:
            held = tail
            if not tail or record_id < tail[0][0]:
                found = conn.execute(find, (*key, record_id)).fetchone()
                if found is None:
                    continue
                place = (*key, found[0])
                if place not in chunks:
                    chunks[place] = rows_of(found[1], key)
                held = chunks[place]
            at = bisect.bisect_left(held, (record_id,))
            if at < len(held) and held[at][0] == record_id:
                del held[at]
                writes.gone[key] += 1
        writes.tails[key] = tail
    for place, held in chunks.items():
        # A chunk that lost its first id keeps its key: it only bounds the ids.
        if held:
            writes.changed.append((_encoded(held), *place))
        else:
            writes.dropped.append(place)
    writes.run(conn)
