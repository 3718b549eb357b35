"""Writing postings into the term index's members, segments and tails
(:mod:`.index` says which records go in and out; this module, where their
postings go).

A record indexed takes the next *ordinal* of its cell, and its id and
length join the cell's members (``memory_members``, arrays a writer appends
to in SQL without reading them: :func:`~.postings.member_bytes`).  An
ordinal is never given twice: a record that stops being live keeps its
member and loses its postings, and takes its ordinal back if it is made
live again.  A term's postings in a cell are its segments
(``memory_segments``, a bitmap or list of ordinals each:
:func:`~.postings.encode_segment`), then its tail (``memory_cells.tail``):
the newest postings, fewer than :data:`~.postings.TAIL_POSTINGS`, which a
writer appends without reading them.  A tail that would fill is folded into
the segments it touches, which are read, changed and written back whole (a
few hundred bytes each).  ``memory_cells`` counts each cell's postings and
its tail's, so a writer knows which tails fill without reading them.  Every
statement runs once per kind, over all its rows.
"""

from __future__ import annotations

import bisect
import itertools
import operator
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType

from roteiro_memory.errors import BadRequest
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import postings as pst

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from roteiro_memory.stores.sql.dialects import Dialect

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

__all__ = [
    "HELD",
    "Rows",
    "append",
    "held_postings",
    "remove",
    "restore",
    "segment_postings",
]

Rows = list[tuple[int, int]]
"""Postings of one term in one cell: ``(ordinal, count)``, ascending."""
Group = tuple[list[int], Mapping[int, int]]
"""Postings of one term in one cell: their ordinals, ascending, and the
counts above 1 by ordinal (a posting not there counts 1)."""


def segment_postings(blob: Any, segment: int) -> Rows:
    """The postings a segment's bytes hold, as cell ordinals; ValueError when
    they are not a segment's."""
    base = segment * pst.SEGMENT_ORDINALS
    return [(base + offset, count) for offset, count in pst.segment_rows(bytes(blob))]


HELD = (
    "SELECT term, cell, segment, postings FROM memory_segments"
    " UNION ALL SELECT term, cell, NULL, tail FROM memory_cells"
)
"""Every term's postings as held, ``(term, cell, segment, bytes)``: each
segment, then each cell's tail (its segment NULL)."""


def held_postings(blob: Any, segment: Any) -> Rows:
    """The postings of a :data:`HELD` row, as cell ordinals: a segment's, or
    a tail's when ``segment`` is None; ValueError (or TypeError) when its
    bytes are not what the index writes."""
    if segment is None:
        return pst.tail_rows(bytes(blob))
    return segment_postings(blob, segment)


def _place(conn: Any, d: Dialect, records: Sequence[Indexed], fresh: bool) -> list[int]:
    """Give each of ``records`` (in id order) the next ordinal of its cell,
    its id and length joining the cell's members; their ordinals, in the
    same order."""
    size = pst.MEMBER_ORDINALS
    after: dict[int, int] = {}
    if not fresh:
        last = _last_members(conn, d, [r.cell for r in records])
        after = {cell: segment * size + held for cell, (segment, held) in last.items()}
    ordinals = []
    joining: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
    for record in records:
        ordinal = after.get(record.cell, 0)
        if ordinal >= pst.ORDINALS_AT_MOST:
            raise BadRequest(
                f"a cell of the term index holds at most {pst.ORDINALS_AT_MOST:,} records;"
                " export the store and import it to index it anew"
            )
        after[record.cell] = ordinal + 1
        ordinals.append(ordinal)
        ids, lengths = joining.setdefault((record.cell, ordinal // size), ([], []))
        ids.append(record.id)
        lengths.append(record.posting.length)
    rows = [
        (cell, segment, *pst.member_bytes(ids, lengths))
        for (cell, segment), (ids, lengths) in sorted(joining.items())
    ]
    if fresh:
        d.load(conn, "memory_members", cols.names(cols.MEMORY_MEMBERS), rows)
    else:
        d.many(
            conn,
            cols.insert("memory_members", cols.MEMORY_MEMBERS, d.mark)
            + " ON CONFLICT (cell, segment) DO UPDATE SET"
            f" ids = {d.joined('memory_members.ids', 'excluded.ids')},"
            f" lengths = {d.joined('memory_members.lengths', 'excluded.lengths')}",
            rows,
        )
    return ordinals


_MEMBER_KEY = ("cell", "segment")
"""How :func:`_read` keys ``memory_members``."""


def _last_members(conn: Any, d: Dialect, cells: Iterable[int]) -> dict[int, tuple[int, int]]:
    """Each of ``cells``' last members segment and how many members it
    holds (a cell with none is absent): a row a cell, however many it has."""
    size = pst.MEMBER_ORDINALS
    out: dict[int, tuple[int, int]] = {}
    for chunk in d.chunks(sorted(set(cells))):
        params: dict[str, Any] = {}
        relation = d.relation([(cell,) for cell in chunk], "i", params)
        for cell, segment, held, long in conn.execute(
            f"SELECT t.cell, t.segment, {d.byte_length('t.ids')}, {d.byte_length('t.lengths')}"
            f" FROM {relation} JOIN memory_members t ON t.cell = column1 AND t.segment ="
            " (SELECT MAX(s.segment) FROM memory_members s WHERE s.cell = column1)",
            params,
        ):
            if (
                type(segment) is not int
                or not 0 <= segment < pst.ORDINALS_AT_MOST // size
                or type(held) is not int
                or held % 8
                or held != 2 * long
                or held > 8 * size
            ):
                error = ValueError("not members of a cell (bad segment or lengths)")
                raise pst.damaged("memory_members", pst.members_row(cell, segment), error)
            out[int(cell)] = (segment, held // 8)
    return out


def _ordinals(conn: Any, d: Dialect, records: Sequence[Indexed]) -> dict[int, int]:
    """The ordinal each of ``records`` holds in its cell, for those that hold
    one.  Records take ordinals in id order, so a cell's members segments
    ascend by their first ids: each record's segment is found by bisecting
    them, one statement a step for all the records, and only that segment's
    ids are read.  A forget that indexes a record again after newer ones
    breaks that order, and any record the bisection then misses (that one, a
    neighbour of it, or one never indexed) is looked for in every segment of
    its cell, by the database: slower, never wrong, as an ordinal is taken
    only where the record's id is."""
    size = pst.MEMBER_ORDINALS
    cell_of = {r.id: r.cell for r in records if r.posting.length}  # no terms, no ordinal
    last = _last_members(conn, d, cell_of.values())
    # Each record's segment: the last in [low, high] whose first id is at most its id.
    span = {rid: (0, last[cell][0]) for rid, cell in cell_of.items() if cell in last}
    while probes := {
        rid: (cell_of[rid], (low + high + 1) // 2)
        for rid, (low, high) in span.items()
        if low < high
    }:
        first: dict[tuple[int, int], int] = {}
        for cell, segment, prefix in _read(
            conn, d, "memory_members", "substr(t.ids, 1, 8)", probes.values(), _MEMBER_KEY
        ):
            try:
                first[cell, segment] = pst.first_member(bytes(prefix))
            except (ValueError, TypeError) as error:
                row = pst.members_row(cell, segment)
                raise pst.damaged("memory_members", row, error) from None
        for rid, (cell, probe) in probes.items():
            low, high = span[rid]
            at = first.get((cell, probe))
            if at is None:
                del span[rid]  # a segment missing: looked for in every one below
            else:
                span[rid] = (probe, high) if at <= rid else (low, probe - 1)
    ends: dict[tuple[int, int], list[int]] = {}
    for rid, (low, _) in span.items():
        ends.setdefault((cell_of[rid], low), []).append(rid)
    out: dict[int, int] = {}
    for cell, segment, ids, lengths in _read(
        conn, d, "memory_members", "t.ids, t.lengths", ends, _MEMBER_KEY
    ):
        held = pst.read_members_row(cell, segment, ids, lengths)[0]
        for rid in ends[cell, segment]:
            if rid in held:
                out[rid] = segment * size + held.index(rid)
    for rid, cell in cell_of.items():
        if rid in out:
            continue
        # The database finds the segments whose ids hold the record's bytes;
        # only those are decoded (bytes across two ids are no member).
        held_in = conn.execute(
            f"SELECT segment, ids, lengths FROM memory_members WHERE cell = {d.mark}"
            f" AND {d.position(d.mark, 'ids')} > 0 ORDER BY segment",
            (cell, pst.member_bytes([rid], [1])[0]),
        )
        for segment, ids, lengths in held_in:
            held = pst.read_members_row(cell, segment, ids, lengths)[0]
            if rid in held:
                out[rid] = segment * size + held.index(rid)
                break
    return out


def _grouped(records: Sequence[Indexed], ordinals: Sequence[int], d: Dialect) -> dict[Key, Group]:
    """The postings of ``records`` by cell of a term: each cell's ordinals
    ascending, and the counts above 1 among them; in key order, so what is
    written from them is sorted already (the distinct terms are sorted
    once, not every cell of a term)."""
    cells: dict[int, defaultdict[str, list[int]]] = {}
    many: dict[tuple[str, int], dict[int, int]] = {}
    for record, ordinal in zip(records, ordinals, strict=True):
        cell = record.cell
        terms = cells.get(cell)
        if terms is None:
            terms = cells[cell] = defaultdict(list)
        counts = record.posting.counts
        for term in counts:
            terms[term].append(ordinal)
        if len(counts) < record.posting.length:  # else every term counts once
            for term, count in counts.items():
                if count > 1:
                    many.setdefault((term, cell), {})[ordinal] = count
    by_term: dict[str, list[tuple[int, list[int]]]] = defaultdict(list)
    for cell in sorted(cells):
        for term, held in cells[cell].items():
            by_term[term].append((cell, held))
    short = pst.HELD_AS_IS
    keys = dict(
        zip(
            by_term,
            d.texts([term if len(term) <= short else pst.index_term(term) for term in by_term]),
            strict=True,
        )
    )
    out: dict[Key, Group] = {}
    for term in sorted(by_term, key=keys.__getitem__):
        key = keys[term]
        for cell, held in by_term[term]:
            held.sort()  # in order already, but for records restored
            out[key, cell] = (held, many.get((term, cell), _NONE))
    return out


_NONE: Mapping[int, int] = MappingProxyType({})


def _rows(group: Group) -> Rows:
    held, counts = group
    if not counts:
        return list(zip(held, itertools.repeat(1)))
    return [(ordinal, counts.get(ordinal, 1)) for ordinal in held]


def _group(rows: Rows) -> Group:
    return [ordinal for ordinal, _ in rows], {o: c for o, c in rows if c > 1}


_id = operator.attrgetter("id")


def _read(
    conn: Any,
    d: Dialect,
    table: str,
    column: str,
    keys: Iterable[tuple[Any, ...]],
    key: Sequence[str] = ("term", "cell", "segment"),
) -> list[Any]:
    """The rows of ``table`` at ``keys``, each as its key followed by
    ``column`` (an expression over the table's alias ``t``, or several).
    ``key`` names the columns a key gives, in order: by default ``(term,
    cell)`` pairs or ``(term, cell, segment)`` triples."""
    out: list[Any] = []
    ordered = sorted(set(keys))
    if not ordered:
        return out
    width = len(ordered[0])
    names = key[:width]
    types = "".join("t" if name == "term" else "i" for name in names)
    on = " AND ".join(f"t.{name} = column{n + 1}" for n, name in enumerate(names))
    for chunk in d.chunks(ordered):
        params: dict[str, Any] = {}
        relation = d.relation(chunk, types, params)
        out.extend(
            conn.execute(
                f"SELECT {', '.join(f't.{name}' for name in names)}, {column}"
                f" FROM {relation} JOIN {table} t ON {on}",
                params,
            )
        )
    return out


def _key(d: Dialect, raw: Any, cell: int) -> Key:
    return (bytes(raw) if d.text_as_bytes else raw), int(cell)


def _tails(conn: Any, d: Dialect, keys: Sequence[Key]) -> dict[Key, Rows]:
    out: dict[Key, Rows] = {}
    for term, cell, blob in _read(conn, d, "memory_cells", "t.tail", keys):
        try:
            out[_key(d, term, cell)] = pst.tail_rows(bytes(blob))
        except (ValueError, TypeError) as error:
            raise pst.damaged("memory_cells", pst.cell_row(term, cell), error) from None
    return out


def _segments(
    conn: Any, d: Dialect, wanted: Mapping[Key, Sequence[int]]
) -> dict[tuple[Any, int, int], pst.Segment]:
    """What the segments ``wanted`` names hold, as bits and counts above 1,
    by ``(term, cell, segment)``: each key's segments holding any of its
    ordinals (ascending; absent when there is none yet)."""
    triples = [(*key, part) for key, held in wanted.items() for part in _spans(held)]
    out: dict[tuple[Any, int, int], pst.Segment] = {}
    for term, cell, segment, blob in _read(conn, d, "memory_segments", "t.postings", triples):
        term, cell = _key(d, term, cell)
        try:
            out[term, cell, int(segment)] = pst.decode_segment(bytes(blob))
        except (ValueError, TypeError) as error:
            row = f"{pst.cell_row(term, cell)} segment {segment}"
            raise pst.damaged("memory_segments", row, error) from None
    return out


def _spans(ordinals: Sequence[int]) -> dict[int, tuple[int, int]]:
    """The segments ``ordinals`` (ascending) fall in, each with the slice of
    them it holds: found by bisection, not ordinal by ordinal."""
    size = pst.SEGMENT_ORDINALS
    out: dict[int, tuple[int, int]] = {}
    start, end = 0, len(ordinals)
    while start < end:
        number = ordinals[start] // size
        stop = bisect.bisect_left(ordinals, (number + 1) * size, start, end)
        out[number] = (start, stop)
        start = stop
    return out


class _Writes:
    """What a change writes, gathered."""

    def __init__(self, d: Dialect, fresh: bool = False) -> None:
        self.d = d
        self.fresh = fresh
        """The index was empty: every row written is new, so it is loaded, not upserted."""
        self.segments: dict[tuple[Any, int, int], bytes] = {}
        """Segments written anew, by ``(term, cell, segment)``."""
        self.emptied: list[tuple[Any, int, int]] = []
        self.appended: dict[Key, tuple[bytes, int, int]] = {}
        """Cells whose new postings join the tail as they are: their bytes,
        how many postings and their largest count."""
        self.tails: dict[Key, Rows] = {}
        """Cells whose tail is written anew, with :attr:`added` postings."""
        self.added: dict[Key, tuple[int, int]] = {}
        """How many postings each cell of :attr:`tails` gains, and their largest count."""
        self.gone: Counter[Key] = Counter()

    def fold(
        self,
        key: Key,
        group: Group,
        held: Mapping[tuple[Any, int, int], pst.Segment],
        dropped: Iterable[int] = (),
    ) -> None:
        """Write ``key``'s segments again with ``group`` in them and the
        ordinals ``dropped`` out (``held``: what they hold now), each as the
        bits of an integer: a segment's postings are never listed one by one."""
        size = pst.SEGMENT_ORDINALS
        ordinals, counts = group
        adding = _spans(ordinals)
        counted: dict[int, dict[int, int]] = {}
        for ordinal, count in counts.items():
            counted.setdefault(ordinal // size, {})[ordinal % size] = count
        taking: dict[int, list[int]] = {}
        for ordinal in dropped:
            taking.setdefault(ordinal // size, []).append(ordinal % size)
        for number in adding.keys() | taking.keys() if taking else adding:
            place = (*key, number)
            bits, many = held.get(place, (0, _NONE))
            span = adding.get(number)
            if span is not None:
                start, stop = span
                whole = stop - start == len(ordinals)  # one segment: no slice to copy
                bits |= pst.bits_of(ordinals if whole else ordinals[start:stop], number * size)
                new = counted.get(number)
                if new:
                    many = {**many, **new}
            gone = taking.get(number)
            if gone:
                bits &= ~pst.bits_of(gone)
                if many:  # counts are of postings held: those of the gone go
                    many = dict(many)
                    for offset in gone:
                        many.pop(offset, None)
            if bits:
                self.segments[place] = pst.encode_bits(bits, many)
            elif place in held:
                self.emptied.append(place)

    def run(self, conn: Any) -> None:
        d, m = self.d, self.d.mark
        d.many(
            conn,
            f"DELETE FROM memory_segments WHERE term = {m} AND cell = {m} AND segment = {m}",
            sorted(self.emptied),
        )
        segments = [(*place, blob) for place, blob in sorted(self.segments.items())]
        # In key order (keys are unique): neighbouring rows share B-tree pages.
        appended, added = sorted(self._appended_cells()), sorted(self._added_cells())
        if self.fresh:
            assert not self.gone, "a fresh index has nothing to take out"
            d.load(conn, "memory_segments", cols.names(cols.MEMORY_SEGMENTS), segments)
            d.load(conn, "memory_cells", cols.names(cols.MEMORY_CELLS), sorted(appended + added))
            return
        d.many(
            conn,
            cols.insert("memory_segments", cols.MEMORY_SEGMENTS, m)
            + " ON CONFLICT (term, cell, segment) DO UPDATE SET postings = excluded.postings",
            segments,
        )
        upsert = cols.insert("memory_cells", cols.MEMORY_CELLS, m) + (
            " ON CONFLICT (term, cell) DO UPDATE SET"
            " postings = memory_cells.postings + excluded.postings,"
            f" max_tf = {d.greatest}(memory_cells.max_tf, excluded.max_tf), tail = "
        )
        d.many(conn, upsert + d.joined("memory_cells.tail", "excluded.tail"), appended)
        d.many(conn, upsert + "excluded.tail", added)
        # Emptied cells go; the rest lose their count and get their tail.
        here = f"term = {m} AND cell = {m}"
        gone = [(*key, n) for key, n in sorted(self.gone.items())]
        d.many(conn, f"DELETE FROM memory_cells WHERE {here} AND postings <= {m}", gone)
        d.many(
            conn,
            f"UPDATE memory_cells SET postings = postings - {m}, tail = {m} WHERE {here}",
            [(n, pst.tail_bytes(self.tails[term, cell]), term, cell) for term, cell, n in gone],
        )

    def _appended_cells(self) -> list[tuple[Any, int, int, int, bytes | None]]:
        """A ``memory_cells`` row of what each cell of :attr:`appended` gains:
        its postings, their largest count and the bytes joining its tail."""
        return [(*key, n, most, blob) for key, (blob, n, most) in self.appended.items()]

    def _added_cells(self) -> list[tuple[Any, int, int, int, bytes | None]]:
        """A ``memory_cells`` row of what each cell of :attr:`added` gains,
        with its tail as written anew."""
        return [
            (*key, n, most, pst.tail_bytes(self.tails[key]))
            for key, (n, most) in self.added.items()
        ]


def _gains(group: Group) -> tuple[int, int]:
    """How many postings ``group`` holds, and their largest count."""
    held, counts = group
    return len(held), max(counts.values()) if counts else 1


def append(conn: Any, d: Dialect, records: Sequence[Indexed], fresh: bool = False) -> None:
    """Index ``records`` (live, and not indexed, none ever given an ordinal):
    each takes the next ordinal of its cell, in id order, and its postings
    join their cells' tails, or the segments when a tail would fill.
    ``fresh``: the index is empty, so nothing is read first and every row
    is loaded, not merged.  A record of no terms has no postings, and takes
    no ordinal."""
    records = sorted((r for r in records if r.posting.length), key=_id)
    if records:
        _post(conn, d, records, _place(conn, d, records, fresh), fresh)


def restore(conn: Any, d: Dialect, records: Sequence[Indexed]) -> None:
    """Index again ``records`` that a forget made live: each at the ordinal
    it held, or at a new one if it never held one (it had been superseded
    while it waited in the recent tier)."""
    records = sorted((r for r in records if r.posting.length), key=_id)
    held = _ordinals(conn, d, records)
    again = [r for r in records if r.id in held]
    if again:
        _post(conn, d, again, [held[r.id] for r in again], False)
    append(conn, d, [r for r in records if r.id not in held])


def _post(
    conn: Any, d: Dialect, records: Sequence[Indexed], ordinals: Sequence[int], fresh: bool
) -> None:
    """Add the postings of ``records`` at ``ordinals`` (the same order)."""
    groups = _grouped(records, ordinals, d)
    writes = _Writes(d, fresh)
    sizes: dict[Key, int] = {}
    if not fresh:
        found = _read(conn, d, "memory_cells", d.byte_length("t.tail"), list(groups))
        sizes = {_key(d, term, cell): n // pst.TAIL.size for term, cell, n in found}
    filling = []
    for key, group in groups.items():
        if sizes.get(key, 0) + len(group[0]) < pst.TAIL_POSTINGS:
            blob = pst.tail_bytes(_rows(group))
            if blob is not None:
                writes.appended[key] = (blob, *_gains(group))
                continue
        filling.append(key)
    if fresh:
        for key in filling:
            writes.fold(key, groups[key], {})
            writes.tails[key] = []
            writes.added[key] = _gains(groups[key])
    elif filling:
        tails = _tails(conn, d, filling)
        every: dict[Key, Group] = {}
        for key in filling:
            group, tail = groups[key], tails.get(key)
            every[key] = _group(sorted(tail + _rows(group))) if tail else group
        held = _segments(conn, d, {key: group[0] for key, group in every.items()})
        for key in filling:
            writes.fold(key, every[key], held)
            writes.tails[key] = []
            writes.added[key] = _gains(groups[key])
    writes.run(conn)


def remove(conn: Any, d: Dialect, records: Sequence[Indexed]) -> None:
    """Take ``records``' postings out of the tails, segments and cells (a
    record holding no ordinal has none to take); their members stay."""
    held = _ordinals(conn, d, records)
    dropped: defaultdict[Key, dict[int, None]] = defaultdict(dict)
    for record in records:
        ordinal = held.get(record.id)
        if ordinal is None:
            continue
        for term in record.posting.counts:
            dropped[d.text(pst.index_term(term)), record.cell][ordinal] = None
    writes = _Writes(d)
    tails = _tails(conn, d, list(dropped))
    rest: dict[Key, list[int]] = {}
    for key, ordinals in dropped.items():
        tail = tails.get(key)
        if tail is None:
            continue  # no such cell of the term: nothing of it to take
        kept = [row for row in tail if row[0] not in ordinals]
        writes.gone[key] += len(tail) - len(kept)
        writes.tails[key] = kept
        in_tail = {row[0] for row in tail}
        rest[key] = sorted(o for o in ordinals if o not in in_tail)
    segments = _segments(conn, d, rest)
    size = pst.SEGMENT_ORDINALS
    for key, left in rest.items():
        present = [o for o in left if segments.get((*key, o // size), (0, {}))[0] >> (o % size) & 1]
        writes.gone[key] += len(present)
        writes.fold(key, ([], _NONE), segments, present)
    for key in list(writes.tails):
        if not writes.gone[key]:
            del writes.gone[key]  # nothing of the record was there after all
    writes.run(conn)
