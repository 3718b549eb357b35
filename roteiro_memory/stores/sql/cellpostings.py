"""One cell's postings of a term and its members, as a search reads them,
decoded only when first asked for: most cells a search reads are cut by
their bounds before any of their bytes are decoded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from roteiro_memory.stores.sql import postings as pst

__all__ = ["Held", "Members", "Unheld", "decoded", "unheld"]


class Held:
    """One term's postings in one cell as read: its segments, then its tail,
    decoded when first asked for, into the bits of one integer (bit ``n``:
    the cell's record of ordinal ``n`` holds the term) and the counts above 1."""

    __slots__ = (
        "_bits",
        "_bytes",
        "_counts",
        "_many",
        "cell",
        "expected",
        "raw",
        "segments",
        "tail",
    )

    def __init__(self, raw: Any, cell: int) -> None:
        self.raw = raw
        """The term as stored, to name a damaged row."""
        self.cell = cell
        self.segments: list[tuple[int, Any]] = []
        """``(segment, bytes)`` of each segment."""
        self.tail: Any = None
        self._bits: int | None = None
        self._bytes: bytes = b""
        self._many: list[tuple[int, Sequence[int], Sequence[int]]] = []
        """``(base, offsets, counts)`` of the postings counting more than 1."""
        self._counts: dict[int, int] | None = None
        self.expected: int | None = None
        """How many postings ``memory_cells`` counts here: bits decoded to
        any other number are damage, not an answer (a segment or tail cut
        short can still read as one), named by the cell's row, where the
        count is (the check names the damaged row itself)."""

    def bits(self) -> int:
        """The ordinals holding the term, as the bits of an integer (counted
        in :data:`decoded`)."""
        if self._bits is None:
            bits = 0
            for segment, blob in self.segments:
                try:
                    base = pst.segment_base(segment)
                    held, offsets, counts = pst.read_segment(bytes(blob))
                except (ValueError, TypeError) as error:
                    row = f"{pst.cell_row(self.raw, self.cell)} segment {segment!r}"
                    raise pst.damaged("memory_segments", row, error) from None
                bits |= held << base
                if offsets is not None and counts is not None:
                    self._many.append((base, offsets, counts))
            if self.tail is not None:
                ordinals, counted = self._tail()
                bits |= pst.bits_of(ordinals)
                if counted and max(counted) > 1:
                    self._many.append((0, ordinals, counted))
            found = bits.bit_count()
            if self.expected is not None and found != self.expected:
                miscount = (
                    f"counts {self.expected} postings, where its segments and tail hold {found}"
                )
                row = pst.cell_row(self.raw, self.cell)
                raise pst.damaged("memory_cells", row, ValueError(miscount))
            self._bits = bits
            decoded[0] += found
        return self._bits

    def _tail(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The tail's ordinals and counts, or the damage naming its row."""
        try:
            return pst.tail_postings(bytes(self.tail))
        except (ValueError, TypeError) as error:
            row = pst.cell_row(self.raw, self.cell)
            raise pst.damaged("memory_cells", row, error) from None

    def counts(self) -> dict[int, int]:
        """The counts above 1, by ordinal (a posting not there counts 1)."""
        if self._counts is None:
            self.bits()
            counts: dict[int, int] = {}
            for base, offsets, counted in self._many:
                if not base and counted and min(counted) > 1:  # a first segment's, at C speed
                    counts.update(zip(offsets, counted, strict=True))
                else:
                    counts.update(
                        (base + offset, count)
                        for offset, count in zip(offsets, counted, strict=True)
                        if count > 1
                    )
            self._counts = counts
        return self._counts

    def holding(self, ordinals: Iterable[int]) -> list[tuple[int, int]]:
        """``(ordinal, count)`` of each of ``ordinals`` that holds the term."""
        bits = self.bits()
        if not self._bytes:
            self._bytes = bits.to_bytes((bits.bit_length() + 7) // 8, "little")
        raw, size, counts = self._bytes, len(self._bytes), self.counts()
        if not counts:  # every posting counts 1: no look-up each
            return [(o, 1) for o in ordinals if o >> 3 < size and raw[o >> 3] >> (o & 7) & 1]
        return [
            (o, counts.get(o, 1)) for o in ordinals if o >> 3 < size and raw[o >> 3] >> (o & 7) & 1
        ]

    def holds(self, ordinal: int) -> bool:
        """Whether the record of ``ordinal`` holds the term."""
        return bool(self.bits() >> ordinal & 1)

    def in_tail(self, ordinal: int) -> bool:
        """Whether the posting of ``ordinal`` is in the tail."""
        if self.tail is None:
            return False
        return ordinal in pst.tail_postings(bytes(self.tail))[0]

    def every(self) -> list[tuple[int, int]]:
        """``(ordinal, count)`` of every posting, ascending."""
        counts = self.counts()
        return [(o, counts.get(o, 1)) for o in pst.ordinals(self.bits())]

    def listed(self) -> list[tuple[int, int]]:
        """:meth:`every`, for a search that asks nothing else of the cell: a
        tail alone, as a rare term's cells hold, is its own postings sorted,
        with no bitmap made, when they are as many distinct ordinals as
        ``memory_cells`` counts (otherwise :meth:`bits` names the damage)."""
        if self._bits is None and not self.segments and self.tail is not None:
            tail, counted = self._tail()
            if len(set(tail)) == len(tail) == self.expected:
                decoded[0] += len(tail)
                return sorted(zip(tail, counted, strict=True))
        return self.every()


decoded = [0]
"""Postings decoded by :meth:`Held.bits` in this process, for measurements."""


class Members:
    """The members of one cell, decoded a segment at a time as they are
    asked for: called with an ordinal, the record's ``(id, length)``."""

    def __init__(self, cell: int, members: Mapping[tuple[int, int], tuple[bytes, bytes]]) -> None:
        self.cell = cell
        self.raw = members
        self.decoded: dict[int, Any] = {}

    def __call__(self, ordinal: int) -> tuple[int, int]:
        segment, at = divmod(ordinal, pst.MEMBER_ORDINALS)
        held = self.decoded.get(segment)
        if held is None:
            raw = self.raw.get((self.cell, segment))
            if raw is None:
                raise Unheld(ordinal)
            held = self.decoded[segment] = pst.read_members_row(self.cell, segment, *raw)
        if at >= len(held[0]):
            raise Unheld(ordinal)
        return held[0][at], held[1][at]


class Unheld(Exception):
    """Postings name an ordinal no member holds: the postings' own row is
    damaged (or the members lost theirs), which :func:`unheld` names."""

    def __init__(self, ordinal: int) -> None:
        super().__init__(ordinal)
        self.ordinal = ordinal


def unheld(cell: int, ordinal: int, found: Mapping[str, Held]) -> Exception:
    """The failure of a search whose postings in ``cell`` name ``ordinal``,
    which no member holds: named by the row holding the posting."""
    for held in found.values():
        if held.holds(ordinal):
            tail = held.in_tail(ordinal)
            row = pst.cell_row(held.raw, cell)
            return pst.damaged(
                "memory_cells" if tail else "memory_segments",
                row,
                ValueError(f"a posting at ordinal {ordinal}, which no member of the cell holds"),
            )
    return pst.damaged(  # pragma: no cover -- only postings name ordinals
        "memory_members", f"cell {cell}", ValueError(f"no member at ordinal {ordinal}")
    )
