"""The term index's postings as pure rules, with no I/O: which *cell* a
record's postings live in, what a cell's bound is, and how a chunk of
postings is encoded.

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
known exactly (count and length are in the postings) before any record is
fetched.

A chunk holds up to :data:`CHUNK_POSTINGS` postings of one term in one cell,
by ascending record id: the first id, the gaps between ids, the counts and
the lengths, as little-endian arrays each of the narrowest width its largest
value fits, after a four-byte header giving the widths.  Decoding is
:mod:`array`'s and :func:`itertools.accumulate`'s, at C speed.
"""

from __future__ import annotations

import itertools
import math
import struct
import sys
from array import array
from collections.abc import Sequence
from itertools import accumulate, pairwise

from roteiro_memory import lexical
from roteiro_memory import semantics as sem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.errors import Corrupt

__all__ = [
    "CHUNK_POSTINGS",
    "CONFIDENCE_STEPS",
    "LENGTH_STEPS",
    "Chunk",
    "cell_bound",
    "cell_of",
    "cell_row",
    "column",
    "damaged",
    "decode",
    "decode_tail",
    "encode",
    "length_floor",
    "tail_bytes",
    "tail_rows",
    "tf_norm",
    "width_of",
]

CONFIDENCE_STEPS = 20
"""Base confidence is bounded in steps of 1/20: the bound of a record of
confidence 0.93 is 0.95."""

LENGTH_STEPS = 4
"""Lengths are bounded in four steps per doubling (lengths below 8 exactly):
a record of 37 terms is bounded as one of 32."""

CHUNK_POSTINGS = 64
"""Most postings one chunk holds: a chunk is rewritten when postings join
or leave it, so it is kept to a few pages."""

_LENGTH_SHIFT = 9
"""A cell number is ``confidence step << 9 | length step`` (length steps are
below 4 * 64 + 8 = 264 < 512)."""

_EXACT_LENGTHS = 8


def confidence_step(confidence: float | None) -> int:
    """The least step ``j`` with ``j / CONFIDENCE_STEPS`` at least the base
    confidence (so the division, as a double, bounds it)."""
    base = sem.base_confidence(confidence)
    step = min(math.ceil(base * CONFIDENCE_STEPS), CONFIDENCE_STEPS)
    while step < CONFIDENCE_STEPS and step / CONFIDENCE_STEPS < base:
        step += 1
    return step


def length_step(length: int) -> int:
    """The step of a length: exact below 8, then :data:`LENGTH_STEPS` per doubling."""
    if length < _EXACT_LENGTHS:
        return length
    top = length.bit_length() - 1
    fraction = (length >> (top - 2)) & (LENGTH_STEPS - 1)
    return _EXACT_LENGTHS + (top - 3) * LENGTH_STEPS + fraction


def length_floor(step: int) -> int:
    """The least length of a step: no record of that step is shorter."""
    if step < _EXACT_LENGTHS:
        return step
    top, fraction = divmod(step - _EXACT_LENGTHS, LENGTH_STEPS)
    return (LENGTH_STEPS + fraction) << (top + 1)


def cell_of(confidence: float | None, length: int) -> int:
    """The cell of a record of this stated confidence and length."""
    return confidence_step(confidence) << _LENGTH_SHIFT | length_step(length)


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


def cell_bound(cell: int, weights: Sequence[tuple[float, int]], average_length: float) -> float:
    """The most any record of ``cell`` can score, for query terms of the
    given ``(idf, max tf in the cell)``."""
    confidence, length = cell_parts(cell)
    length = max(length, 1)
    total = 0.0
    for idf, max_tf in weights:
        total += idf * tf_norm(max_tf, length, average_length)
    return total * lexical.search_confidence(confidence) * (1.0 + BOUND_SLACK)


# --- chunks ------------------------------------------------------------------

_TYPECODES = {array(code).itemsize: code for code in "QLIHB"}
"""An unsigned array typecode for each width in bytes (1, 2, 4, 8)."""
_SWAP = sys.byteorder == "big"


def column(width: int) -> array[int]:
    """An empty array of unsigned values ``width`` bytes wide (1, 2, 4 or 8)."""
    return array(_TYPECODES[width])


def width_of(largest: int) -> int:
    """The fewest bytes (1, 2, 4 or 8) that hold ``largest``."""
    for width in (1, 2, 4, 8):
        if largest < 1 << (8 * width):
            return width
    raise ValueError(f"{largest} does not fit 64 bits")


Chunk = tuple[Sequence[int], Sequence[int], Sequence[int]]
"""A decoded chunk: record ids (ascending), term counts, record lengths."""


def encode(ids: Sequence[int], counts: Sequence[int], lengths: Sequence[int]) -> bytes:
    """A chunk's bytes: the first id, then each id's gap from the one before,
    the counts and the lengths, each array as narrow as its largest value
    allows (a four-byte header gives the widths)."""
    gaps = [b - a for a, b in pairwise(ids)]
    columns = ([ids[0]], gaps, counts, lengths)
    widths = [width_of(max(values, default=0)) for values in columns]
    parts = [bytes(widths)]
    for width, values in zip(widths, columns, strict=True):
        column = array(_TYPECODES[width], values)
        if _SWAP:
            column.byteswap()
        parts.append(column.tobytes())
    return b"".join(parts)


def decode(blob: bytes) -> Chunk:
    """The arrays of a chunk's bytes; ValueError when they are not a chunk's."""
    layout = _LAYOUTS.get((blob[:4], len(blob)))
    if layout is None:
        layout = _layout(blob)
    start, end, middle, gap, count, length = layout
    gaps = array(gap, blob[start:end])
    counts = array(count, blob[end:middle])
    lengths = array(length, blob[middle:])
    if _SWAP:
        for column in (gaps, counts, lengths):
            column.byteswap()
    first = int.from_bytes(blob[4:start], "little")
    return list(accumulate(gaps, initial=first)), counts, lengths


_Layout = tuple[int, int, int, str, str, str]
"""Where a chunk's gaps, counts and lengths start and end, and their typecodes."""

_LAYOUTS: dict[tuple[bytes, int], _Layout] = {}
"""Each layout seen, by header and length: a few thousand at most (four
widths for each of four arrays, up to :data:`CHUNK_POSTINGS` postings)."""


def _layout(blob: bytes) -> _Layout:
    """Where a chunk's arrays lie, from its header and length."""
    header = blob[:4]
    if len(header) < 4 or any(width not in _TYPECODES for width in header):
        raise ValueError("not a chunk of postings (bad header)")
    first, gap, count, length = header
    size, rest = divmod(len(blob) - 4 - first + gap, gap + count + length)
    if rest or size < 1:
        raise ValueError("not a chunk of postings (bad length)")
    start = 4 + first
    end = start + gap * (size - 1)
    codes = _TYPECODES
    layout = (start, end, end + count * size, codes[gap], codes[count], codes[length])
    if size <= CHUNK_POSTINGS:
        _LAYOUTS[header, len(blob)] = layout
    return layout


# --- tails -------------------------------------------------------------------

TAIL = struct.Struct("<IBH")
"""A posting as a cell's tail holds it: id, count and length, fixed widths,
so a writer appends postings to a tail without reading it (``||`` in SQL)."""


def tail_bytes(rows: Sequence[tuple[int, int, int]]) -> bytes | None:
    """``rows`` as tail bytes; None when one does not fit the fixed widths
    (it then goes to a closed chunk)."""
    try:
        return _packer(len(rows)).pack(*_flat(rows))
    except struct.error:
        return None


def _packer(size: int) -> struct.Struct:
    """:data:`TAIL` ``size`` times over, remembered for the sizes a tail has."""
    packer = _TAILS.get(size)
    if packer is None:
        packer = struct.Struct("<" + TAIL.format[1:] * size)
        if size < CHUNK_POSTINGS:
            _TAILS[size] = packer
    return packer


_TAILS: dict[int, struct.Struct] = {}
"""A :data:`TAIL` of each number of postings packed so far, all at once."""
_flat = itertools.chain.from_iterable


def tail_rows(blob: bytes) -> list[tuple[int, int, int]]:
    """A tail's postings; ValueError when the bytes are not a tail's."""
    _tail_size(blob)
    return list(TAIL.iter_unpack(blob))


def decode_tail(blob: bytes) -> Chunk:
    """A tail's postings as :func:`decode` gives a chunk's (its columns
    sliced out of one unpacking, at C speed)."""
    flat = _packer(_tail_size(blob)).unpack(blob)
    return flat[0::3], flat[1::3], flat[2::3]


def damaged(table: str, row: str, error: Exception) -> Corrupt:
    """The failure of an operation that met index bytes in ``row`` of
    ``table`` that are not what the index writes: the index is damaged,
    which the store's check reports too, and rebuilding it mends."""
    from roteiro_memory.errors import Corrupt

    return Corrupt(
        f"{table} {row}: {error}; the term index is damaged (check names every damaged"
        " row; export and import the store to rebuild the index)"
    )


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
