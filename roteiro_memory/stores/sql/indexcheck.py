"""The integrity check of the term index (:mod:`.index`): where it
disagrees with the records it is derived from, as
:class:`~roteiro_memory.check.Finding` rows.

What must hold, and what a search would do wrong otherwise:

* every live record's postings are exactly its terms counted, in its cell,
  with its length -- in ``memory_recent`` or in the chunks, never both -- and
  no other record has any (search would misrank, or return a dead record);
* every chunk decodes, holds ascending ids no lower than its key, and starts
  after the chunk before it in its cell (a write finds a record's chunk by
  that order);
* each ``memory_cells`` row counts its chunks' postings and bounds their
  counts (document frequencies, and the bounds a search stops by);
* the statistics row counts the records, the live ones and their terms, and
  names this version's tokenizer.

The records are tokenized again, once each, and compared with the postings
a cell at a time, so the check costs about one pass over each.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Sequence
from typing import Any

from roteiro_memory.check import Finding
from roteiro_memory.stores.sql import index
from roteiro_memory.stores.sql import postings as pst

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.stores.sql.expressions import Dialect

__all__ = ["check", "index_findings"]

Record = tuple[int, Any, str, str | None, str | None, bool]
"""``(id, confidence, body, anchor key, anchor path, live)``, text decoded."""
Key = tuple[str, int]

_MISRANKED = (
    "the term index disagrees with the record: search would misrank it"
    " (export and import the store to rebuild the index)"
)


def check(conn: Any, d: Dialect) -> list[Finding]:
    """The index's findings; records whose text cannot be read are left to
    the record rules."""
    records: list[Record] = []
    for record_id, confidence, body, key, path, superseded_by in conn.execute(
        "SELECT id, confidence, body, anchor_key, anchor_path, superseded_by"
        " FROM agent_memory ORDER BY id"
    ):
        try:
            text = [None if value is None else d.untext(value) for value in (body, key, path)]
        except (UnicodeDecodeError, TypeError):
            continue
        if not isinstance(text[0], str) or not isinstance(confidence, float | int | None):
            continue
        records.append((record_id, confidence, text[0], text[1], text[2], superseded_by is None))
    # Each cell's closed chunks by key, then its tail (no key: last).
    chunks = conn.execute(
        "SELECT term, cell, first_id, postings, 0 FROM memory_chunks"
        " UNION ALL SELECT term, cell, NULL, tail, 1 FROM memory_cells ORDER BY 1, 2, 5, 3"
    ).fetchall()
    cells = conn.execute("SELECT term, cell, postings, max_tf, tail FROM memory_cells")
    recent = conn.execute("SELECT record_id, cell, length, terms FROM memory_recent").fetchall()
    row = conn.execute(
        "SELECT records, live, live_terms, tokenizer FROM memory_stats WHERE id = 0"
    ).fetchone()
    return index_findings(
        records,
        [(_text(d, term), *rest) for term, *rest in chunks] if d.text_as_bytes else chunks,
        ((_text(d, term), *rest) for term, *rest in cells),
        [(record_id, *rest[:2], _text(d, rest[2])) for record_id, *rest in recent],
        None if row is None else tuple(row),
    )


def _text(d: Dialect, raw: Any) -> Any:
    """Stored text as text; anything else as it is (a damaged store), which
    then equals no term a record gives."""
    if d.text_as_bytes:
        try:
            return d.untext(raw)
        except (UnicodeDecodeError, TypeError):
            return raw
    return raw


_MULTIPLIERS = (1_000_003, 998_244_353, 1_000_000_007, 2_147_483_647, 1_000_000_009, 998_244_853)
_COUNTED = 1 << 256
_NOT_TEXT = "not text"
"""A cell's postings are compared as one number: the sum over them of
``id * M1 + count * M2 + length * M3 + id * count * M4 + h * M5 + h * count
* M6``, ``h`` the term's hash, plus ``_COUNTED`` each (so the number of
postings is its high part).  A record's share is worked out from its sums
(its terms' hashes, and those times their counts) and the chunks' from whole
arrays, both at C speed; only a cell whose sums differ is compared posting
by posting, to name the records."""


def _sum(term: Any, ids: Sequence[int], counts: Sequence[int], lengths: Sequence[int]) -> int:
    m1, m2, m3, m4, m5, m6 = _MULTIPLIERS
    # A term that is not text equals no record's (b"x" hashes as "x" does).
    h = hash(term) if type(term) is str else hash((_NOT_TEXT, repr(term)))
    total = sum(counts)
    return int(
        m1 * sum(ids)
        + m2 * total
        + m3 * sum(lengths)
        + m4 * sum(map(operator.mul, ids, counts))
        + m5 * h * len(ids)
        + m6 * h * total
        + len(ids) * _COUNTED
    )


def _record_sum(record_id: int, counts: dict[str, int], length: int) -> int:
    """:func:`_sum` over one record's postings (its counts add up to its length)."""
    m1, m2, m3, m4, m5, m6 = _MULTIPLIERS
    hashes = list(map(hash, counts))
    return int(
        len(counts) * (record_id * m1 + length * m3 + _COUNTED)
        + length * (m2 + record_id * m4)
        + m5 * sum(hashes)
        + m6 * sum(map(operator.mul, hashes, counts.values()))
    )


def index_findings(
    records: Sequence[Record],
    chunks: Sequence[Sequence[Any]],
    cells: Iterable[Sequence[Any]],
    recent: Sequence[Sequence[Any]],
    stats: tuple[Any, ...] | None,
) -> list[Finding]:
    """The rules of the module docstring over rows as read: ``chunks`` as
    ``(term, cell, first id, bytes, is tail)`` in key order (a cell's tail,
    whose first id is None, after its closed chunks), ``cells`` as ``(term,
    cell, postings, max tf, tail)``, ``recent`` as ``(id, cell, length, terms)``,
    ``stats`` as ``(records, live, live terms, tokenizer)``."""
    out: list[Finding] = []
    held_recent = {row[0]: tuple(row[1:]) for row in recent}
    expected: dict[Any, int] = {}
    live_ids: set[int] = set()
    total = live = live_terms = 0
    for record_id, confidence, body, key, path, is_live in records:
        total += 1
        if not is_live:
            continue
        wanted = index.indexed(record_id, confidence, body, key, path)
        length = wanted.posting.length
        live += 1
        live_terms += length
        if not length:
            continue
        live_ids.add(record_id)
        if record_id in held_recent:
            terms = index.encode_terms(wanted.posting.counts)
            if held_recent[record_id] != (wanted.cell, length, terms):
                out.append(Finding("memory_recent", f"id {record_id}", _MISRANKED))
            continue
        share = _record_sum(record_id, dict(wanted.posting.counts), length)
        expected[wanted.cell] = expected.get(wanted.cell, 0) + share
    out.extend(
        Finding("memory_recent", f"id {record_id}", "a recent row of a record that is not live")
        for record_id in sorted(set(held_recent) - live_ids)
    )
    held, sums, most = _chunks(chunks, out)
    differ = {
        cell for cell in expected.keys() | sums.keys() if expected.get(cell) != sums.get(cell)
    }
    wrong = _records_in(differ, records, held_recent, chunks)
    for record_id in sorted(wrong):
        problem = _MISRANKED if record_id in live_ids else "postings of a record that is not live"
        out.append(Finding("memory_chunks", f"id {record_id}", problem))
    out.extend(_cells(cells, held, most))
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


def _records_in(
    differ: set[Any],
    records: Sequence[Record],
    held_recent: dict[int, Any],
    chunks: Sequence[Sequence[Any]],
) -> set[int]:
    """The records whose postings differ in the cells ``differ``, posting by posting."""
    if not differ:
        return set()
    want: set[tuple[Any, ...]] = set()
    for record_id, confidence, body, key, path, is_live in records:
        if not is_live or record_id in held_recent:
            continue
        wanted = index.indexed(record_id, confidence, body, key, path)
        if wanted.cell in differ:
            for term, count in wanted.posting.counts.items():
                want.add((term, wanted.cell, record_id, count, wanted.posting.length))
    have: set[tuple[Any, ...]] = set()
    for term, cell, _, blob, tail in chunks:
        if cell in differ:
            try:
                columns = (pst.decode_tail if tail else pst.decode)(bytes(blob))
            except (ValueError, TypeError):
                continue
            have.update((term, cell, *posting) for posting in zip(*columns, strict=True))
    return {posting[2] for posting in want ^ have}


def _chunks(
    rows: Iterable[Sequence[Any]], out: list[Finding]
) -> tuple[dict[Key, int], dict[Any, int], dict[Key, int]]:
    """How many postings the chunks hold by ``(term, cell)``, their sum
    (:data:`_COUNTED`) by cell, and the largest count by ``(term, cell)``; a
    chunk that breaks the layout is reported in ``out``."""
    held: dict[Key, int] = {}
    sums: dict[Any, int] = {}
    most: dict[Key, int] = {}
    last: dict[Key, int] = {}
    for term, cell, first, blob, tail in rows:
        table = "memory_cells" if tail else "memory_chunks"

        def where() -> str:
            return f"term {term!r} cell {cell!r}" + ("" if tail else f" from {first!r}")  # noqa: B023

        if type(cell) is not int or not (tail or type(first) is int):
            out.append(Finding(table, where(), "cell or first id is not a whole number"))
            continue
        try:
            ids, counts, lengths = (pst.decode_tail if tail else pst.decode)(bytes(blob))
        except (ValueError, TypeError) as error:
            out.append(Finding(table, where(), f"{error}: search cannot read it"))
            continue
        if not ids:
            continue  # an empty tail
        key = (term, cell)
        low = ids[0] if tail else first
        before = last.get(key)
        if ids[0] < low or (before is not None and before >= low) or not _ascending(ids):
            out.append(
                Finding(table, where(), "its ids are out of order with its key or the chunk before")
            )
        if min(counts) < 1:
            out.append(Finding(table, where(), "holds a count below 1"))
        last[key] = ids[-1]
        held[key] = held.get(key, 0) + len(ids)
        sums[cell] = sums.get(cell, 0) + _sum(term, ids, counts, lengths)
        most[key] = max(most.get(key, 0), max(counts))
    return held, sums, most


def _ascending(ids: Sequence[int]) -> bool:
    return all(map(operator.lt, ids, itertools.islice(ids, 1, None)))


def _cells(
    rows: Iterable[Sequence[Any]], held: dict[Key, int], most: dict[Key, int]
) -> list[Finding]:
    """Each ``memory_cells`` row against its chunks, in order of ``(term, cell)``."""
    out: list[tuple[str, Finding]] = []
    counted: dict[Key, tuple[Any, ...]] = {(row[0], row[1]): tuple(row[2:]) for row in rows}
    for term, cell in counted.keys() | held.keys():
        postings = held.get((term, cell), 0)
        row = counted.get((term, cell))
        if row is None:
            problem = f"missing, though chunks hold {postings}"
        elif type(row[0]) is not int or row[0] != postings:
            problem = (
                f"counts {row[0]!r} postings but its chunks hold {postings}:"
                " document frequencies would be wrong"
            )
        elif type(row[1]) is not int or row[1] < most.get((term, cell), 0):
            problem = (
                f"bounds counts by {row[1]!r} but a chunk holds"
                f" {most[term, cell]}: search could stop too early"
            )
        else:
            continue
        out.append(
            (repr((term, cell)), Finding("memory_cells", f"term {term!r} cell {cell!r}", problem))
        )
    return [finding for _, finding in sorted(out, key=lambda pair: pair[0])]
