"""The term index's postings as pure rules, with no I/O: which *cell* a
record's postings live in, what a cell's bound is, and how a term's postings
in a cell are encoded.

A record's postings all go to one cell: its base confidence rounded up to a
step of :data:`CONFIDENCE_STEPS`, and its length (number of terms) rounded
down to a step of :data:`LENGTH_STEPS` per doubling.  Both are fixed when the
record is written (records never change), so a record never moves.  What a
cell gives a search is a bound that holds whatever the statistics are when it
runs: BM25's term weight grows with the term's count and shrinks with the
record's length, whatever the average length, so

    weight(t) <= idf(t) * tfnorm(max tf of t in the cell, the cell's least length)

and a record's search evidence (its base confidence tempered, times anchor
penalty and decay) is at most its tempered base confidence, since penalty and
decay never exceed 1.  A cell's bound for a query is the sum of those weights
over the query terms it holds, times its highest base confidence tempered
(:func:`~roteiro_memory.lexical.search_confidence`, which is monotone): no
record in it scores more.  Every term of a record shares the record's cell,
so the cells of one search are visited in descending bound and, in each, all
the query's postings of its records are read together: their relevance is
known exactly before any record is fetched.

Inside its cell a record indexed has an *ordinal*, its place in the order
the cell's records were indexed, and a term's postings in a cell are the
ordinals of the records that hold it, with each one's count.  Most are kept
in *segments* of :data:`SEGMENT_ORDINALS` ordinals each, as a bitmap (or,
where the term is rare, a list of offsets), with the counts above 1 beside
them: which records of a cell hold which query terms is then a matter of
``&`` and ``|`` over Python integers, at C speed, whatever the number of
postings.  The newest postings wait in the cell's *tail*, fixed-width
``(ordinal, count)`` pairs a writer appends without reading
(:data:`TAIL`), until :data:`TAIL_POSTINGS` of them are folded into the
segments.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import operator
import struct
import sys
from array import array
from collections.abc import Mapping, Sequence

from roteiro_memory import lexical
from roteiro_memory import semantics as sem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory.errors import Corrupt

__all__ = [
    "CONFIDENCE_STEPS",
    "HELD_AS_IS",
    "INDEX_TERM_BYTES",
    "LENGTH_STEPS",
    "MEMBER_ID",
    "MEMBER_LENGTH",
    "MEMBER_ORDINALS",
    "ORDINALS_AT_MOST",
    "SEGMENT_ORDINALS",
    "TAIL",
    "TAIL_POSTINGS",
    "Norms",
    "Segment",
    "bits_of",
    "cell_bound",
    "cell_of",
    "cell_row",
    "cell_scale",
    "damaged",
    "decode_segment",
    "encode_bits",
    "encode_segment",
    "first_member",
    "index_term",
    "is_cell",
    "length_floor",
    "member_bytes",
    "members_row",
    "ordinals",
    "read_members",
    "read_members_row",
    "read_segment",
    "segment_base",
    "segment_parts",
    "segment_rows",
    "tail_bytes",
    "tail_postings",
    "tail_rows",
    "tf_norm",
]

CONFIDENCE_STEPS = 10
"""Base confidence is bounded in steps of 1/10: the bound of a record of
confidence 0.93 is 1.0.  Finer steps bound a record more closely but make
more cells, each visited at a cost of its own: measured on the search
bench, tenths read the least."""

LENGTH_STEPS = 4
"""Lengths are bounded in four steps per doubling (lengths below 8 exactly):
a record of 37 terms is bounded as one of 32.  A power of two."""

_LENGTH_SHIFT = 10
"""A cell number is ``confidence step << 10 | length step`` (length steps are
below 1024 for any length below 2**64 and up to 16 steps per doubling)."""


def confidence_step(confidence: float | None) -> int:
    """The least step ``j`` with ``j / CONFIDENCE_STEPS`` at least the base
    confidence (so the division, as a double, bounds it)."""
    base = sem.base_confidence(confidence)
    step = min(math.ceil(base * CONFIDENCE_STEPS), CONFIDENCE_STEPS)
    while step < CONFIDENCE_STEPS and step / CONFIDENCE_STEPS < base:
        step += 1
    return step


def length_step(length: int) -> int:
    """The step of a length: exact below twice :data:`LENGTH_STEPS` (a power
    of two), then that many steps per doubling, each the next bits of the
    length below its highest."""
    exact = 2 * LENGTH_STEPS
    if length < exact:
        return length
    top = length.bit_length() - 1
    bits = LENGTH_STEPS.bit_length() - 1
    fraction = (length >> (top - bits)) & (LENGTH_STEPS - 1)
    return exact + (top - bits - 1) * LENGTH_STEPS + fraction


def length_floor(step: int) -> int:
    """The least length of a step: no record of that step is shorter."""
    exact = 2 * LENGTH_STEPS
    if step < exact:
        return step
    top, fraction = divmod(step - exact, LENGTH_STEPS)
    return (LENGTH_STEPS + fraction) << (top + 1)


def cell_of(confidence: float | None, length: int) -> int:
    """The cell of a record of this stated confidence and length."""
    return confidence_step(confidence) << _LENGTH_SHIFT | length_step(length)


def is_cell(cell: object) -> bool:
    """Whether ``cell`` is a cell number :func:`cell_of` can give."""
    return type(cell) is int and 0 <= cell >> _LENGTH_SHIFT <= CONFIDENCE_STEPS


def cell_parts(cell: int) -> tuple[float, int]:
    """A cell's highest base confidence and least length."""
    step = cell >> _LENGTH_SHIFT
    return step / CONFIDENCE_STEPS, length_floor(cell & ((1 << _LENGTH_SHIFT) - 1))


def tf_norm(count: int, length: int, average_length: float) -> float:
    """BM25's term weight without its IDF: :func:`~roteiro_memory.lexical.term_weight`
    of an IDF of 1."""
    return lexical.term_weight(count, length, average_length, 1.0)


BOUND_SLACK = 1e-9
"""Relative room a bound is given over the doubles it is computed from, so
no rounding of the exact score can pass it."""


def cell_scale(cell: int) -> tuple[float, int]:
    """What every bound of a record of ``cell`` is taken at: its highest base
    confidence tempered as search weighs it, with :data:`BOUND_SLACK`, and
    its least length (at least 1)."""
    confidence, length = cell_parts(cell)
    return lexical.search_confidence(confidence) * (1.0 + BOUND_SLACK), max(length, 1)


class Norms(dict[tuple[int, int], float]):
    """:func:`tf_norm` at one average length, by ``(count, length)``, each
    worked out once: a search asks for the same few many times over (a
    cell's bound and its records' bounds, for each term of each cell)."""

    def __init__(self, average_length: float) -> None:
        super().__init__()
        self.average_length = average_length

    def __missing__(self, key: tuple[int, int]) -> float:
        value = self[key] = tf_norm(key[0], key[1], self.average_length)
        return value


def cell_bound(
    scale: tuple[float, int], weights: Sequence[tuple[float, int]], norms: Norms
) -> float:
    """The most any record of a cell can score, for query terms of the
    given ``(idf, max tf in the cell)``: each term's weight at its largest
    count and the cell's least length, times its confidence, ``scale`` being
    the cell's :func:`cell_scale` (``norms`` gives :func:`tf_norm`)."""
    confidence, length = scale
    total = 0.0
    for idf, max_tf in weights:
        total += idf * norms[max_tf, length]
    return total * confidence


# --- segments ----------------------------------------------------------------

SEGMENT_ORDINALS = 4096
"""Ordinals one segment covers: a segment's bitmap is at most 512 bytes, so
a write rewrites at most that much of a term's postings in a cell."""

ORDINALS_AT_MOST = 1 << 27
"""The most records one cell takes ordinals for.  A search makes one bitmap
as wide as the largest ordinal it reads, so an ordinal past this is read
as damage, not as a bitmap of gigabytes."""

BITMAP, LIST = 0, 1
"""A segment's two forms: a bitmap of its offsets (bit ``k`` of byte ``j``
is offset ``8j + k``), or their list (two bytes each), whichever is shorter."""

_HEADER = struct.Struct("<BH")
"""A segment's first bytes: its form, and how many of its postings count
more than 1.  Those follow, their offsets (two bytes each, ascending) then
their counts (four bytes each); then the bitmap or the list."""

_COUNT_BYTES = 4
_SWAP = sys.byteorder == "big"


Segment = tuple[int, dict[int, int]]
"""A decoded segment: its offsets as the bits of an integer, and the counts
above 1 by offset (a posting not there counts 1)."""


def encode_segment(offsets: Sequence[int], counts: Sequence[int]) -> bytes:
    """The bytes of a segment holding ``offsets`` (distinct, below
    :data:`SEGMENT_ORDINALS`, at least one), each with its count."""
    return encode_bits(
        bits_of(offsets), {o: c for o, c in zip(offsets, counts, strict=True) if c > 1}
    )


def encode_bits(bits: int, counts: Mapping[int, int]) -> bytes:
    """The bytes of a segment holding the offsets set in ``bits`` (at least
    one, below :data:`SEGMENT_ORDINALS`), those of ``counts`` that many
    times and the rest once: a bitmap is written from the integer whole."""
    mapped = (bits.bit_length() + 7) // 8
    if 2 * bits.bit_count() < mapped:
        form, body = LIST, _le(array("H", ordinals(bits)))
    else:
        form, body = BITMAP, bits.to_bytes(mapped, "little")
    if not counts:  # most segments: every posting counts once
        return _HEADER.pack(form, 0) + body
    offsets, counted = zip(*sorted(counts.items()), strict=True)
    return b"".join(
        (
            _HEADER.pack(form, len(offsets)),
            _le(array("H", offsets)),
            _le(array("I", counted)),
            body,
        )
    )


def _le(values: array[int]) -> bytes:
    if _SWAP:
        values.byteswap()
    return values.tobytes()


def _read(code: str, data: bytes) -> array[int]:
    values = array(code, data)
    if _SWAP:
        values.byteswap()
    return values


def segment_parts(blob: bytes) -> tuple[int, bytes | array[int], dict[int, int], int]:
    """A segment's form, its body (the bitmap's bytes, or the list of offsets),
    its counts above 1 by offset, and its offsets as bits; ValueError when
    the bytes are not a segment's: a form, lengths, offsets in order and
    within the segment, a bitmap with no trailing zero byte, counts of 2 or
    more, each of a posting the segment holds."""
    if len(blob) < _HEADER.size:
        raise ValueError("not a segment of postings (too short)")
    form, many = _HEADER.unpack_from(blob)
    start = _HEADER.size + many * 2
    end = start + many * _COUNT_BYTES
    if form not in (BITMAP, LIST) or len(blob) <= end:
        raise ValueError("not a segment of postings (bad header or length)")
    data = blob[end:]
    body: bytes | array[int]
    if form == LIST:
        if len(data) % 2:
            raise ValueError("not a segment of postings (bad length)")
        body = _read("H", data)
        if not _ascending(body) or body[-1] >= SEGMENT_ORDINALS:
            raise ValueError("not a segment of postings (offsets out of order or range)")
        bits = bits_of(body)
    else:
        if len(data) > SEGMENT_ORDINALS // 8 or not data[-1]:
            raise ValueError("not a segment of postings (bad bitmap)")
        body = data
        bits = int.from_bytes(data, "little")
    counts: dict[int, int] = {}
    if many:
        offsets = _read("H", blob[_HEADER.size : start])
        counted = _read("I", blob[start:end])
        if not _ascending(offsets) or min(counted) < 2:
            raise ValueError("not a segment of postings (bad counts)")
        named = bits_of(offsets)
        if bits & named != named:
            raise ValueError("not a segment of postings (a count of no posting)")
        counts = dict(zip(offsets, counted, strict=True))
    return form, body, counts, bits


def decode_segment(blob: bytes) -> Segment:
    """A segment's offsets (as bits) and counts above 1; ValueError as
    :func:`segment_parts`."""
    _, _, counts, bits = segment_parts(blob)
    return bits, counts


def read_segment(blob: bytes) -> tuple[int, array[int] | None, array[int] | None]:
    """What a search reads of a segment: its offsets as bits, and the offsets
    and counts of its postings that count more than 1 (None when none do).
    Only what a search could misread is checked (ValueError): its layout,
    and that no offset lies outside the segment.  The rest of
    :func:`segment_parts`' rules are the integrity check's."""
    size = len(blob)
    if size < _HEADER.size:
        raise ValueError("not a segment of postings (too short)")
    form, many = _HEADER.unpack_from(blob)
    start = _HEADER.size + many * 2
    end = start + many * _COUNT_BYTES
    if form == BITMAP and end < size <= end + SEGMENT_ORDINALS // 8:
        bits = int.from_bytes(blob[end:], "little")
    elif form == LIST and end < size and not (size - end) % 2:
        listed = _read("H", blob[end:])
        if max(listed) >= SEGMENT_ORDINALS:
            raise ValueError("not a segment of postings (offsets out of range)")
        bits = bits_of(listed)
    else:
        raise ValueError("not a segment of postings (bad header or length)")
    if not many:
        return bits, None, None
    offsets = _read("H", blob[_HEADER.size : start])
    if max(offsets) >= SEGMENT_ORDINALS:
        raise ValueError("not a segment of postings (a count's offset out of range)")
    return bits, offsets, _read("I", blob[start:end])


def segment_base(segment: object) -> int:
    """The first ordinal of segment number ``segment``; ValueError when that
    is no segment's number (not a whole number, negative, or past
    :data:`ORDINALS_AT_MOST`)."""
    if type(segment) is not int or not 0 <= segment * SEGMENT_ORDINALS < ORDINALS_AT_MOST:
        raise ValueError(f"segment {segment!r} is not a segment's number")
    return segment * SEGMENT_ORDINALS


def bits_of(ordinals: Sequence[int], base: int = 0) -> int:
    """``ordinals`` (distinct, none below ``base``) less ``base`` as the bits
    of an integer: set in a bytearray and read once, not an integer made
    per ordinal (one alone is shifted into place)."""
    if len(ordinals) < 2:
        return sum(1 << (ordinal - base) for ordinal in ordinals)
    bitmap = bytearray(((max(ordinals) - base) >> 3) + 1)
    if base:
        for ordinal in ordinals:
            ordinal -= base
            bitmap[ordinal >> 3] |= 1 << (ordinal & 7)
    else:
        for ordinal in ordinals:
            bitmap[ordinal >> 3] |= 1 << (ordinal & 7)
    return int.from_bytes(bitmap, "little")


def _ascending(values: Sequence[int]) -> bool:
    return all(map(operator.lt, values, itertools.islice(values, 1, None)))


_OFFSETS = [tuple(k for k in range(8) if byte >> k & 1) for byte in range(256)]
"""The set bits of each byte value, low to high."""


def ordinals(bits: int) -> list[int]:
    """The set bits of ``bits``, ascending: a cell's ordinals from its bitmap.
    A few are found one by one; more, a byte of the bitmap at a time."""
    if bits.bit_count() <= _FEW_BITS:
        out = []
        while bits:
            low = bits & -bits
            out.append(low.bit_length() - 1)
            bits ^= low
        return out
    raw = bits.to_bytes((bits.bit_length() + 7) // 8, "little")
    table = _OFFSETS
    return [
        at + k
        for at, byte in zip(range(0, 8 * len(raw), 8), raw, strict=True)
        if byte
        for k in table[byte]
    ]


_FEW_BITS = 16


def segment_rows(blob: bytes) -> list[tuple[int, int]]:
    """A segment's postings as ``(offset, count)``, ascending; ValueError as
    :func:`decode_segment`."""
    bits, counts = decode_segment(blob)
    return [(offset, counts.get(offset, 1)) for offset in ordinals(bits)]


# --- members -----------------------------------------------------------------

MEMBER_ORDINALS = 128
"""Ordinals one segment of a cell's members covers: a search reads the
segments holding the records it works out, six kilobytes at most each."""

MEMBER_ID = "Q"
MEMBER_LENGTH = "I"
"""A cell's members, a segment of ordinals at a time: the record ids (eight
bytes each) and the lengths (four bytes each) of the records in ordinal
order, two arrays a writer appends to in SQL without reading them."""


def member_bytes(ids: Sequence[int], lengths: Sequence[int]) -> tuple[bytes, bytes]:
    """Members' ids and lengths as a segment's bytes hold them."""
    return _le(array(MEMBER_ID, ids)), _le(array(MEMBER_LENGTH, lengths))


def read_members(ids: bytes, lengths: bytes) -> tuple[array[int], array[int]]:
    """A members segment's ids and lengths; ValueError when the bytes are
    not a segment's (the two of different sizes, or a length of 0)."""
    held = _read(MEMBER_ID, ids) if not len(ids) % 8 else None
    long = _read(MEMBER_LENGTH, lengths) if not len(lengths) % 4 else None
    if held is None or long is None or len(held) != len(long):
        raise ValueError("not members of a cell (bad lengths)")
    if not held or len(held) > MEMBER_ORDINALS or min(long) < 1:
        raise ValueError("not members of a cell (no member, too many, or a length of 0)")
    return held, long


def members_row(cell: object, segment: object) -> str:
    """How a message names a row of a cell's members: ``cell 5 segment 0``."""
    return f"cell {cell!r} segment {segment!r}"


def read_members_row(
    cell: object, segment: object, ids: Any, lengths: Any
) -> tuple[array[int], array[int]]:
    """A ``memory_members`` row's ids and lengths (:func:`read_members`), or
    the damage naming the row when they are not a segment's."""
    try:
        return read_members(bytes(ids), bytes(lengths))
    except (ValueError, TypeError) as error:
        raise damaged("memory_members", members_row(cell, segment), error) from None


def first_member(prefix: bytes) -> int:
    """The id of a members segment's first record, from the first eight
    bytes of its ids; ValueError when there are not eight."""
    if len(prefix) != 8:
        raise ValueError("not members of a cell (no first id)")
    return _read(MEMBER_ID, prefix)[0]


# --- tails -------------------------------------------------------------------

TAIL = struct.Struct("<IH")
"""A posting as a cell's tail holds it: ordinal and count, fixed widths, so a
writer appends postings to a tail without reading it (``||`` in SQL)."""

TAIL_POSTINGS = 8
"""Fewest postings a tail holds when they are folded into the segments: a
tail is read by every search of its term, so it is kept to a few hundred
bytes, while folding it rewrites a segment."""


def tail_bytes(rows: Sequence[tuple[int, int]]) -> bytes | None:
    """``(ordinal, count)`` rows as tail bytes; None when one does not fit
    the fixed widths (it then goes to a segment)."""
    try:
        return _packer(len(rows)).pack(*_flat(rows))
    except struct.error:
        return None


def _packer(size: int) -> struct.Struct:
    """:data:`TAIL` ``size`` times over, remembered for the sizes a tail has."""
    packer = _TAILS.get(size)
    if packer is None:
        packer = struct.Struct("<" + TAIL.format[1:] * size)
        if size < TAIL_POSTINGS:
            _TAILS[size] = packer
    return packer


_TAILS: dict[int, struct.Struct] = {}
"""A :data:`TAIL` of each number of postings packed so far, all at once."""
_flat = itertools.chain.from_iterable


def tail_postings(blob: bytes) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """A tail's ordinals and their counts, in the order written (one
    unpacking, at C speed); ValueError when the bytes are not a tail's (a
    count below 1 included)."""
    flat = _packer(_tail_size(blob)).unpack(blob)
    ordinals, counts = flat[0::2], flat[1::2]
    if counts and (min(counts) < 1 or max(ordinals) >= ORDINALS_AT_MOST):
        raise ValueError("not a tail of postings (a count below 1, or an ordinal out of range)")
    return ordinals, counts


def tail_rows(blob: bytes) -> list[tuple[int, int]]:
    """A tail's postings, ``(ordinal, count)``; ValueError as :func:`tail_postings`."""
    return list(zip(*tail_postings(blob), strict=True))


def damaged(table: str, row: str, error: Exception) -> Corrupt:
    """The failure of an operation that met index bytes in ``row`` of
    ``table`` that are not what the index writes: the index is damaged,
    which the store's check reports too, and rebuilding it mends."""
    from roteiro_memory.errors import Corrupt

    return Corrupt(
        f"{table} {row}: {error}; the term index is damaged (check names every damaged"
        " row; export and import the store to rebuild the index)"
    )


INDEX_TERM_BYTES = 1_024
"""Longest term, in UTF-8 bytes, that ``memory_cells`` and ``memory_segments``
hold as it is: a word of a pasted hash or dump can be as long as a body, and
a PostgreSQL index entry holds at most about 2,700 bytes."""


HELD_AS_IS = INDEX_TERM_BYTES // 4
"""Most characters a term can have and be held as it is, whatever they are
(four bytes a character at most): a caller that meets many terms skips
:func:`index_term` for these."""


def index_term(term: str) -> str:
    """What ``memory_cells`` and ``memory_segments`` hold ``term`` under:
    itself, or for a term over :data:`INDEX_TERM_BYTES`, its first 64
    characters, a tab (which no term holds) and the SHA-256 of its UTF-8 in
    hex -- one key per term, and no term's own."""
    if len(term) <= HELD_AS_IS:
        return term
    encoded = term.encode("utf-8")
    if len(encoded) <= INDEX_TERM_BYTES:
        return term
    return f"{term[:64]}\t{hashlib.sha256(encoded).hexdigest()}"


def cell_row(term: object, cell: int) -> str:
    """How a message names the row of a term's cell: ``term 'x' cell 5``
    (the term as stored, bytes read as UTF-8)."""
    from roteiro_memory.errors import excerpt

    if isinstance(term, bytes | memoryview):
        term = bytes(term).decode("utf-8", "backslashreplace")
    return f"term {excerpt(term)} cell {cell}"


def _tail_size(blob: bytes) -> int:
    """How many postings a tail's bytes hold; ValueError when they are not a tail's."""
    size, rest = divmod(len(blob), TAIL.size)
    if rest:
        raise ValueError("not a tail of postings (bad length)")
    return size
