"""The integrity check of the term index (:mod:`.index`): where it
disagrees with the records it is derived from, as
:class:`~roteiro_memory.check.Finding` rows.

What must hold, and what a search would do wrong otherwise:

* every live record that has terms is in ``memory_recent`` or among its
  cell's members, with its length, and no other record is in
  ``memory_recent``; a cell's members are whole segments but the last, and
  name each record once (search would miss a record, misrank it, or
  return another);
* every live record's postings are exactly its terms counted, at its
  ordinal in its cell, and no other ordinal has any;
* every segment and tail decodes, and each ``memory_cells`` row counts its
  postings and bounds their counts (document frequencies, and the bounds a
  search stops by);
* the statistics row counts the records, the live ones and their terms, and
  names this version's tokenizer.

The records are tokenized again, once each, and compared with the postings
a cell at a time, so the check costs about one pass over each.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from typing import Any

from roteiro_memory.check import Finding
from roteiro_memory.stores.sql import index, segments
from roteiro_memory.stores.sql import postings as pst

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.stores.sql.dialects import Dialect

__all__ = ["check", "index_findings"]

Record = tuple[int, Any, str, str | None, str | None, bool]
"""``(id, confidence, body, anchor key, anchor path, live)``, text decoded."""
Key = tuple[str, int]

_MISRANKED = (
    "the term index disagrees with the record: search would misrank it"
    " (export and import the store to rebuild the index)"
)


def check(conn: Any, d: Dialect) -> list[Finding]:
    """The index's findings; records whose text cannot be read, or whose
    confidence no cell bounds (:func:`_bounded`), are left to the record rules."""
    records: list[Record] = []
    for record_id, confidence, body, key, path, superseded_by in conn.execute(
        "SELECT id, confidence, body, anchor_key, anchor_path, superseded_by"
        " FROM agent_memory ORDER BY id"
    ):
        try:
            text = [None if value is None else d.untext(value) for value in (body, key, path)]
        except (UnicodeDecodeError, TypeError):
            continue
        if not isinstance(text[0], str) or not _bounded(confidence):
            continue
        records.append((record_id, confidence, text[0], text[1], text[2], superseded_by is None))
    members = conn.execute("SELECT cell, segment, ids, lengths FROM memory_members").fetchall()
    # Each cell's segments, and its tail (no segment).
    held = conn.execute(segments.HELD).fetchall()
    cells = conn.execute("SELECT term, cell, postings, max_tf, tail FROM memory_cells")
    recent = conn.execute("SELECT record_id, cell, length, terms FROM memory_recent").fetchall()
    row = conn.execute(
        "SELECT records, live, live_terms, tokenizer FROM memory_stats WHERE id = 0"
    ).fetchone()
    return index_findings(
        records,
        members,
        [(_text(d, term), *rest) for term, *rest in held] if d.text_as_bytes else held,
        ((_text(d, term), *rest) for term, *rest in cells),
        [(record_id, *rest[:2], _text(d, rest[2])) for record_id, *rest in recent],
        None if row is None else tuple(row),
    )


def _bounded(confidence: Any) -> bool:
    """Whether a stored confidence is one a cell of the index can bound: a
    number, finite (an infinity or NaN, planted past the constraints, has no
    cell; the record rules name it as outside [0, 1]), or none."""
    if isinstance(confidence, float):
        return math.isfinite(confidence)
    return isinstance(confidence, int | None)


def _text(d: Dialect, raw: Any) -> Any:
    """Stored text as text; anything else as it is (a damaged store), which
    then equals no term a record gives."""
    if d.text_as_bytes:
        try:
            return d.untext(raw)
        except (UnicodeDecodeError, TypeError):
            return raw
    return raw


_MULTIPLIERS = (
    1_000_003,
    998_244_353,
    1_000_000_007,
    1_000_000_009,
    998_244_853,
    2_147_483_647,
    4_294_967_291,
)
_COUNTED = 1 << 256
_NOT_TEXT = "not text"
"""A cell's postings are compared as one number: the sum over them of
``o * M1 + count * M2 + o * count * M3 + h * M4 + h * count * M5 + o * o *
M6 + h * o * M7``, ``o`` the posting's ordinal and ``h`` its term's hash,
plus ``_COUNTED`` each (so the number of postings is its high part): a
posting moved to another ordinal, or to another term, changes it.  A
record's share is worked out from its sums (its terms' hashes, and those
times their counts), and a segment's from its bytes, both at C speed; only
a cell whose sums differ is compared posting by posting, to name the
records."""

_POP = bytes(bin(byte).count("1") for byte in range(256))
_OFFSET_SUM = bytes(sum(k for k in range(8) if byte >> k & 1) for byte in range(256))
_SQUARE_SUM = bytes(sum(k * k for k in range(8) if byte >> k & 1) for byte in range(256))
"""Per byte value: how many bits it sets, the sum of their offsets, and of
their offsets squared."""
_BYTE_AT = [8 * j for j in range(4096)]
_BYTE_AT_SQUARED = [64 * j * j for j in range(4096)]
"""Where the ``j``-th byte of a bitmap starts, and that squared."""


def _hash(term: Any) -> int:
    # A term that is not text equals no record's (b"x" hashes as "x" does).
    return hash(term) if type(term) is str else hash((_NOT_TEXT, repr(term)))


def _sum(h: int, n: int, ordinals: int, counts: int, products: int, squares: int) -> int:
    """:data:`_MULTIPLIERS`' sum over ``n`` postings of one term (hash ``h``)
    whose ordinals, counts, ordinals times counts and ordinals squared add
    up as given."""
    m1, m2, m3, m4, m5, m6, m7 = _MULTIPLIERS
    return (
        m1 * ordinals
        + m2 * counts
        + m3 * products
        + h * (m4 * n + m5 * counts + m7 * ordinals)
        + m6 * squares
        + n * _COUNTED
    )


def _segment_sum(h: int, blob: bytes, segment: int) -> tuple[int, int, int]:
    """A segment's :func:`_sum`, its postings and its largest count."""
    form, body, many, _ = pst.segment_parts(blob)
    if form == pst.LIST:
        n, offsets = len(body), sum(body)
        squares = sum(map(operator.mul, body, body))
    else:
        raw = bytes(body)
        pops = raw.translate(_POP)
        sums = raw.translate(_OFFSET_SUM)
        n = sum(pops)
        offsets = sum(map(operator.mul, _BYTE_AT, pops)) + sum(sums)
        # (8j + k)**2 = 64 j**2 + 2 * 8j * k + k**2, over each byte j's bits k.
        squares = sum(map(operator.mul, _BYTE_AT_SQUARED, pops))
        squares += 2 * sum(map(operator.mul, _BYTE_AT, sums)) + sum(raw.translate(_SQUARE_SUM))
    base = segment * pst.SEGMENT_ORDINALS
    ordinals = offsets + n * base
    squares += 2 * base * offsets + n * base * base
    extra = sum(count - 1 for count in many.values())
    products = ordinals + sum((base + o) * (c - 1) for o, c in many.items())
    total = _sum(h, n, ordinals, n + extra, products, squares)
    return total, n, max(many.values(), default=1)


def _tail_sum(h: int, blob: bytes) -> tuple[int, int, int]:
    """A tail's :func:`_sum`, its postings and its largest count (1 when empty)."""
    ordinals, counts = pst.tail_postings(blob)
    total = _sum(
        h,
        len(ordinals),
        sum(ordinals),
        sum(counts),
        sum(map(operator.mul, ordinals, counts)),
        sum(map(operator.mul, ordinals, ordinals)),
    )
    return total, len(ordinals), max(counts, default=1)


def _record_sum(ordinal: int, counts: dict[str, int], length: int) -> int:
    """:func:`_sum` over one record's postings (its counts add up to its length),
    each term as the index holds it (:func:`~.postings.index_term`)."""
    m1, m2, m3, m4, m5, m6, m7 = _MULTIPLIERS
    held_as = counts if max(map(len, counts)) <= pst.HELD_AS_IS else map(pst.index_term, counts)
    hashes = list(map(hash, held_as))
    held = sum(hashes)
    return int(
        len(counts) * (ordinal * m1 + ordinal * ordinal * m6 + _COUNTED)
        + length * (m2 + ordinal * m3)
        + m4 * held
        + m7 * ordinal * held
        + m5 * sum(map(operator.mul, hashes, counts.values()))
    )


def index_findings(
    records: Sequence[Record],
    members: Sequence[Sequence[Any]],
    held: Sequence[Sequence[Any]],
    cells: Iterable[Sequence[Any]],
    recent: Sequence[Sequence[Any]],
    stats: tuple[Any, ...] | None,
) -> list[Finding]:
    """The rules of the module docstring over rows as read: ``members`` as
    ``(cell, segment, ids, lengths)``, ``held`` as ``(term, cell, segment,
    bytes)`` (a cell's tail with the segment None), ``cells`` as ``(term,
    cell, postings, max tf, tail)``, ``recent`` as ``(id, cell, length,
    terms)``, ``stats`` as ``(records, live, live terms, tokenizer)``."""
    out: list[Finding] = []
    held_recent = {row[0]: tuple(row[1:]) for row in recent}
    member_of, at = _members(members, out)
    expected: dict[Any, int] = {}
    with_terms: set[Any] = set()
    indexed: set[Any] = set()
    """The live records of terms that are not waiting in the recent tier."""
    total = live = live_terms = 0
    for record_id, confidence, body, key, path, is_live in records:
        total += 1
        if not is_live:
            member = member_of.get(record_id)
            if member is not None:
                # What a forget that made it live again would find.
                wanted = index.indexed(record_id, confidence, body, key, path)
                if member[0] != wanted.cell or member[2] != wanted.posting.length:
                    out.append(Finding("memory_members", f"id {record_id}", _RESTORED_WRONG))
            continue
        wanted = index.indexed(record_id, confidence, body, key, path)
        length = wanted.posting.length
        live += 1
        live_terms += length
        if not length:
            continue
        with_terms.add(record_id)
        if record_id in held_recent:
            terms = index.encode_terms(wanted.posting.counts)
            if held_recent[record_id] != (wanted.cell, length, terms):
                out.append(Finding("memory_recent", f"id {record_id}", _MISRANKED))
            continue
        indexed.add(record_id)
        member = member_of.get(record_id)
        if member is None:
            out.append(Finding("memory_members", f"id {record_id}", _MISSING))
            continue
        cell, ordinal, member_length = member
        if cell != wanted.cell or member_length != length:
            out.append(Finding("memory_members", f"id {record_id}", _MISRANKED))
            continue
        share = _record_sum(ordinal, dict(wanted.posting.counts), length)
        expected[cell] = expected.get(cell, 0) + share
    out.extend(
        Finding("memory_recent", f"id {record_id}", "a recent row of a record that is not live")
        for record_id in sorted(set(held_recent) - with_terms)
    )
    counted, sums, most = _postings(held, out)
    differ = {
        cell for cell in expected.keys() | sums.keys() if expected.get(cell) != sums.get(cell)
    }
    out.extend(_misplaced(differ, records, indexed, member_of, at, held))
    out.extend(_cells(cells, counted, most))
    wanted_stats = (total, live, live_terms, index.tokenizer_name())
    if stats is None or [type(n) for n in stats[:3]] != [int] * 3 or stats != wanted_stats:
        out.append(
            Finding(
                "memory_stats",
                "id 0",
                f"holds (records, live, live terms, tokenizer) {stats!r}, but the records "
                f"and this version give {wanted_stats!r}",
            )
        )
    return out


_RESTORED_WRONG = (
    "the member of a superseded record disagrees with it: search would misrank it"
    " once a forget made it live again (export and import the store to rebuild the index)"
)
_MISSING = (
    "missing: search would never find the record (export and import the store to rebuild the index)"
)


def _members(
    rows: Sequence[Sequence[Any]], out: list[Finding]
) -> tuple[dict[Any, tuple[Any, int, int]], dict[tuple[Any, int], Any]]:
    """Each member's ``(cell, ordinal, length)`` by record id, and the id at
    each ``(cell, ordinal)``; a row that cannot be read, a cell whose
    segments leave a gap, and a record named twice are reported in ``out``."""
    size = pst.MEMBER_ORDINALS
    by_cell: dict[Any, dict[int, tuple[Any, Any]]] = {}
    for cell, segment, ids, lengths in rows:
        where = pst.members_row(cell, segment)
        if type(cell) is not int or type(segment) is not int or segment < 0:
            out.append(Finding("memory_members", where, "cell or segment is not a whole number"))
            continue
        try:
            by_cell.setdefault(cell, {})[segment] = pst.read_members(bytes(ids), bytes(lengths))
        except (ValueError, TypeError) as error:
            out.append(Finding("memory_members", where, f"{error}: search cannot read it"))
    member_of: dict[Any, tuple[Any, int, int]] = {}
    at: dict[tuple[Any, int], Any] = {}
    for cell, parts in sorted(by_cell.items()):
        last = max(parts)
        # Distinct whole numbers from 0: as many as the last one plus one
        # exactly when none is missing.
        if len(parts) != last + 1 or any(
            len(ids) != size for n, (ids, _) in parts.items() if n != last
        ):
            out.append(
                Finding(
                    "memory_members",
                    f"cell {cell!r}",
                    "its segments leave a gap: the ordinals after it name the wrong records",
                )
            )
        for segment, (ids, lengths) in sorted(parts.items()):
            for n, (record_id, length) in enumerate(zip(ids, lengths, strict=True)):
                ordinal = segment * size + n
                if record_id in member_of:
                    out.append(
                        Finding(
                            "memory_members", f"id {record_id}", "a record that is a member twice"
                        )
                    )
                member_of[record_id] = (cell, ordinal, length)
                at[cell, ordinal] = record_id
    return member_of, at


def _misplaced(
    differ: set[Any],
    records: Sequence[Record],
    indexed: set[Any],
    member_of: dict[Any, tuple[Any, int, int]],
    at: dict[tuple[Any, int], Any],
    held: Sequence[Sequence[Any]],
) -> list[Finding]:
    """The records whose postings differ in the cells ``differ``, posting by
    posting, and the ordinals holding postings that no member names."""
    if not differ:
        return []
    want: set[tuple[Any, ...]] = set()
    for record_id, confidence, body, key, path, _ in records:
        member = member_of.get(record_id)
        if record_id not in indexed or member is None or member[0] not in differ:
            continue
        wanted = index.indexed(record_id, confidence, body, key, path)
        for term, count in wanted.posting.counts.items():
            want.add((pst.index_term(term), member[0], member[1], count))
    have: dict[tuple[Any, ...], str] = {}
    """Each posting held, with the table holding it."""
    for term, cell, segment, blob in held:
        if cell in differ:
            try:
                rows = segments.held_postings(blob, segment)
            except (ValueError, TypeError):
                continue
            table = "memory_cells" if segment is None else "memory_segments"
            have.update(((term, cell, ordinal, count), table) for ordinal, count in rows)
    out: list[Finding] = []
    # Each table holding a wrong posting of a record (or ordinal) is named:
    # a tail's and a segment's alike, in one order whatever the set's.
    wrong: dict[Any, set[str]] = {}
    strays: dict[tuple[Any, Any], set[str]] = {}
    for posting in want ^ have.keys():
        _, cell, ordinal, _ = posting
        table = have.get(posting, "memory_segments")  # one missing is a segment's
        named = at.get((cell, ordinal))
        if named is None:
            strays.setdefault((cell, ordinal), set()).add(table)
        else:
            wrong.setdefault(named, set()).add(table)
    for record_id, tables in sorted(wrong.items(), key=lambda pair: repr(pair[0])):
        problem = _MISRANKED if record_id in indexed else "postings of a record that is not live"
        out.extend(Finding(table, f"id {record_id}", problem) for table in sorted(tables))
    out.extend(
        Finding(
            table,
            f"cell {cell!r} ordinal {ordinal!r}",
            "postings at an ordinal no member names: search would fail on them",
        )
        for (cell, ordinal), tables in sorted(strays.items(), key=lambda pair: repr(pair[0]))
        for table in sorted(tables)
    )
    return out


def _postings(
    rows: Iterable[Sequence[Any]], out: list[Finding]
) -> tuple[dict[Key, int], dict[Any, int], dict[Key, int]]:
    """How many postings the segments and tails hold by ``(term, cell)``,
    their sum (:data:`_COUNTED`) by cell, and the largest count by ``(term,
    cell)``; a row that breaks the layout is reported in ``out``."""
    counted: dict[Key, int] = {}
    sums: dict[Any, int] = {}
    most: dict[Key, int] = {}
    for term, cell, segment, blob in rows:
        tail = segment is None
        table = "memory_cells" if tail else "memory_segments"

        def where() -> str:
            return f"term {term!r} cell {cell!r}" + ("" if tail else f" segment {segment!r}")  # noqa: B023

        if type(cell) is not int or not (tail or (type(segment) is int and segment >= 0)):
            out.append(Finding(table, where(), "cell or segment is not a whole number"))
            continue
        h = _hash(term)
        try:
            if tail:
                total, n, largest = _tail_sum(h, bytes(blob))
                if not n:
                    continue
            else:
                total, n, largest = _segment_sum(h, bytes(blob), segment)
        except (ValueError, TypeError) as error:
            out.append(Finding(table, where(), f"{error}: search cannot read it"))
            continue
        key = (term, cell)
        counted[key] = counted.get(key, 0) + n
        sums[cell] = sums.get(cell, 0) + total
        most[key] = max(most.get(key, 0), largest)
    return counted, sums, most


def _cells(
    rows: Iterable[Sequence[Any]], counted: dict[Key, int], most: dict[Key, int]
) -> list[Finding]:
    """Each ``memory_cells`` row against its postings, in order of ``(term, cell)``."""
    out: list[tuple[str, Finding]] = []
    rows_by_key: dict[Key, tuple[Any, ...]] = {(row[0], row[1]): tuple(row[2:]) for row in rows}
    for term, cell in rows_by_key.keys() | counted.keys():
        postings = counted.get((term, cell), 0)
        row = rows_by_key.get((term, cell))
        if row is None:
            problem = f"missing, though segments hold {postings}"
        elif type(row[0]) is not int or row[0] != postings:
            problem = (
                f"counts {row[0]!r} postings but its segments and tail hold {postings}:"
                " document frequencies would be wrong"
            )
        elif type(row[1]) is not int or row[1] < most.get((term, cell), 0):
            problem = (
                f"bounds counts by {row[1]!r} but a posting counts"
                f" {most[term, cell]}: search could stop too early"
            )
        else:
            continue
        out.append(
            (repr((term, cell)), Finding("memory_cells", f"term {term!r} cell {cell!r}", problem))
        )
    return [finding for _, finding in sorted(out, key=lambda pair: pair[0])]
