"""The term index ``memory.search`` ranks by, kept by both database stores.

Five tables, derived from the live records and written in the same
transaction as the record writes that change them (:mod:`.columns` lists
their columns):

* ``memory_members`` -- each cell's records in the order they were indexed
  there (a record's *ordinal*), their ids and lengths (:mod:`.segments`);
* ``memory_segments`` -- a term's postings in one cell (:mod:`.postings`), a
  segment of ordinals at a time: which of the cell's records hold the term,
  as a bitmap or a list, and the counts above 1;
* ``memory_cells`` -- per term and cell, how many postings it holds, the
  largest count among them, and its tail (the newest postings, not yet in a
  segment): a term's live document frequency is the sum over its cells
  (plus its recent records), and a cell's bound comes from its largest count;
* ``memory_recent`` -- the records written since the last merge, one row each
  with its cell, length and term counts: a record write adds one row, not a
  row per term, and once :data:`RECENT_RECORDS` have gathered the writer that
  adds the last merges them all into the segments;
* ``memory_stats`` -- one row: how many records, how many live, the total
  length of the live ones, and the tokenizer that built the index, so a store
  whose tokenizer is not this version's can be re-indexed by a migration.

Only live records are indexed: a superseded record's postings leave when it
is superseded (search never returns it, and the statistics do not count it),
and a record a ``forget`` makes live again is indexed again from its text.
Terms come from :func:`roteiro_memory.lexical.document_terms`; no tokenizer
is written in SQL.  A store's :class:`~roteiro_memory.stores.sql.dialects.Dialect`
says how it binds text and many rows.  The search that reads the index is
:mod:`.lexsearch`; the integrity check is :mod:`.indexcheck`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import postings as pst
from roteiro_memory.stores.sql import segments
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory import lexical
    from roteiro_memory.stores.sql.dialects import Dialect

__all__ = [
    "RECENT_RECORDS",
    "Delta",
    "Indexed",
    "Posting",
    "Stats",
    "clear",
    "contents",
    "encode_terms",
    "forgotten",
    "indexed",
    "key_long_terms",
    "parse_terms",
    "posting",
    "read_stats",
    "rebuild",
    "reindex_if_stale",
    "tokenizer_name",
    "written",
]

RECENT_RECORDS = 256
"""How many records gather in ``memory_recent`` before a write merges them
into the segments.  A search reads them all, so fewer keeps searches quick;
more lets a merge touch each cell for more postings at once."""


@valueclass
class Posting:
    """What the index holds of one record: its term counts and length."""

    counts: Mapping[str, int]
    length: int


def posting(body: str, anchor_key: str | None, anchor_path: str | None) -> Posting:
    """The posting of a record, from the one tokenizer."""
    from roteiro_memory import lexical

    terms = lexical.document_terms(body, anchor_key, anchor_path)
    return Posting(Counter(terms), len(terms))


def tokenizer_name() -> str:
    """The name of the tokenizer this version indexes with."""
    from roteiro_memory import lexical

    return lexical.TOKENIZER.name


@valueclass
class Indexed:
    """One live record as the index holds it: its id, its cell and its posting."""

    id: int
    cell: int
    posting: Posting


def indexed(
    record_id: int,
    confidence: float | None,
    body: str,
    anchor_key: str | None,
    anchor_path: str | None,
) -> Indexed:
    p = posting(body, anchor_key, anchor_path)
    return Indexed(record_id, pst.cell_of(confidence, p.length), p)


def encode_terms(counts: Mapping[str, int]) -> str:
    """A record's term counts as ``memory_recent`` holds them: a line per
    term in code-point order, each the term, a tab and its count.  No term
    holds a tab or a line break (the tokenizer splits on white space), so a
    term's line is found by searching for it between the two."""
    return "".join(f"\n{term}\t{count}" for term, count in sorted(counts.items()))


def parse_terms(text: str) -> dict[str, int]:
    """:func:`encode_terms` read back; ValueError when it is not its output."""
    if not text:
        return {}
    if not text.startswith("\n"):
        raise ValueError("not lines of terms")
    pairs = [line.split("\t") for line in text[1:].split("\n")]
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError("a line that is not a term and a count")
    counts = {term: int(count) for term, count in pairs}
    if len(counts) != len(pairs) or min(counts.values()) < 1:
        raise ValueError("a repeated term or a count below 1")
    return counts


def terms_finder(terms: Iterable[str]) -> Callable[[str], dict[str, int]]:
    """What finds, in a text :func:`encode_terms` wrote, the counts it gave
    ``terms`` (those it holds): one pattern over every line that starts with
    one of them, at C speed, without reading the rest."""
    wanted = sorted(set(terms))
    if not wanted:
        return lambda text: {}
    lines = re.compile("\n(" + "|".join(map(re.escape, wanted)) + ")\t([^\n]*)")

    def find(text: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for term, count in lines.findall(text):
            if term not in out:
                out[term] = int(count)
        return out

    return find


@valueclass(frozen=False)
class Delta:
    """How one write changes the statistics, applied once at its end."""

    records: int = 0
    live: int = 0
    live_terms: int = 0

    def gain(self, record: Indexed) -> None:
        """A record becomes live (written, or restored by a forget)."""
        self.live += 1
        self.live_terms += record.posting.length

    def lose(self, record: Indexed) -> None:
        """A live record stops being live (superseded, or forgotten)."""
        self.live -= 1
        self.live_terms -= record.posting.length


def _apply(conn: Any, d: Dialect, delta: Delta) -> None:
    if delta.records or delta.live or delta.live_terms:
        m = d.mark
        conn.execute(
            f"UPDATE memory_stats SET records = records + {m}, live = live + {m},"
            f" live_terms = live_terms + {m} WHERE id = 0",
            (delta.records, delta.live, delta.live_terms),
        )


# --- which records are indexed --------------------------------------------------


def _recent_rows(conn: Any, d: Dialect) -> list[Indexed]:
    out = []
    for record_id, cell, length, text in conn.execute(
        "SELECT record_id, cell, length, terms FROM memory_recent ORDER BY record_id"
    ):
        try:
            counts = parse_terms(d.untext(text))
            if not pst.is_cell(cell) or sum(counts.values()) != length or length >= 1 << 32:
                raise ValueError("its cell, length and counts are not those a write makes")
        except (ValueError, TypeError) as error:
            raise pst.damaged("memory_recent", f"record {record_id}", error) from None
        out.append(Indexed(record_id, cell, Posting(counts, length)))
    return out


def _add(conn: Any, d: Dialect, records: Sequence[Indexed]) -> None:
    """Index new live ``records``: into ``memory_recent``, merging once it
    holds :data:`RECENT_RECORDS` (a batch that large is merged at once).  A
    record of no terms has no postings."""
    records = [r for r in records if r.posting.length]
    if not records:
        return
    m = d.mark
    if len(records) < RECENT_RECORDS:
        d.many(
            conn,
            cols.insert("memory_recent", cols.MEMORY_RECENT, m),
            [
                (r.id, r.cell, r.posting.length, d.text(encode_terms(r.posting.counts)))
                for r in records
            ],
        )
        count = int(conn.execute("SELECT COUNT(*) FROM memory_recent").fetchone()[0])
        if count < RECENT_RECORDS:
            return
        records = []
    _merge(conn, d, records)


def _merge(conn: Any, d: Dialect, newer: Sequence[Indexed] = ()) -> None:
    """Move the records of ``memory_recent`` (and ``newer``) into the segments
    (loaded, not merged, while the index holds none: a store's first batch)."""
    segments.append(conn, d, [*_recent_rows(conn, d), *newer], fresh=_unindexed(conn))
    conn.execute("DELETE FROM memory_recent")


def _unindexed(conn: Any) -> bool:
    """No record has been given an ordinal, and no term a posting."""
    row = conn.execute(
        "SELECT NOT EXISTS (SELECT 1 FROM memory_members)"
        " AND NOT EXISTS (SELECT 1 FROM memory_cells)"
        " AND NOT EXISTS (SELECT 1 FROM memory_segments)"
    ).fetchone()
    return bool(row[0])


def _remove(conn: Any, d: Dialect, records: Sequence[Indexed]) -> None:
    """Take records that stop being live out of the index."""
    if not records:
        return
    recent: set[int] = set()
    ids = [r.id for r in records]
    for chunk in d.chunks(ids):
        where, params = d.any_of("record_id", chunk)
        recent.update(
            row[0]
            for row in conn.execute(f"SELECT record_id FROM memory_recent WHERE {where}", params)
        )
    d.many(
        conn,
        f"DELETE FROM memory_recent WHERE record_id = {d.mark}",
        [(i,) for i in sorted(recent)],
    )
    segments.remove(conn, d, [r for r in records if r.id not in recent])


def _stored(conn: Any, d: Dialect, ids: Sequence[int]) -> list[Indexed]:
    """The stored records ``ids`` as the index holds them."""
    out: list[Indexed] = []
    for chunk in d.chunks(ids):
        where, params = d.any_of("id", chunk)
        found = conn.execute(f"SELECT {_INDEXED} FROM agent_memory WHERE {where}", params)
        out.extend(_indexed_row(d, row) for row in found)
    return out


_INDEXED = "id, confidence, body, anchor_key, anchor_path"
"""The columns of a record the index is built from, in :func:`_indexed_row`'s order."""


def _indexed_row(d: Dialect, row: Sequence[Any]) -> Indexed:
    """A record as the index holds it, from its :data:`_INDEXED` columns."""
    record_id, confidence, body, key, path = row
    return indexed(
        record_id,
        confidence,
        d.untext(body),
        None if key is None else d.untext(key),
        None if path is None else d.untext(path),
    )


def written(
    conn: Any,
    d: Dialect,
    supersedes: Sequence[int | None],
    base: int,
    records: Sequence[Indexed],
) -> None:
    """Index a batch of new records (ids above ``base``), superseding the
    records ``supersedes`` names: new records are live unless the batch
    itself supersedes them, and stored records it supersedes leave the index."""
    targets = {target for target in supersedes if target is not None}
    delta = Delta(records=len(records))
    live = [r for r in records if r.id not in targets]
    for record in live:
        delta.gain(record)
    old = _stored(conn, d, sorted(t for t in targets if t <= base))
    for record in old:
        delta.lose(record)
    _remove(conn, d, old)
    _add(conn, d, live)
    _apply(conn, d, delta)


def forgotten(conn: Any, d: Dialect, record_id: int, live: bool, restored: Sequence[int]) -> None:
    """Drop a record from the index before the record goes; the records its
    removal restores are indexed again."""
    delta = Delta(records=-1)
    if live:
        mine = _stored(conn, d, [record_id])
        for record in mine:
            delta.lose(record)
        _remove(conn, d, mine)
    back = _stored(conn, d, list(restored))
    for record in back:
        delta.gain(record)
    # Taken out first, should they be indexed still (their pointers set
    # behind the store's back): a record is indexed once, at the ordinal it
    # held before it was superseded.
    _remove(conn, d, back)
    segments.restore(conn, d, back)
    _apply(conn, d, delta)


def clear(conn: Any, d: Dialect) -> None:
    """Empty the index, as for an empty store: its counts' row made again
    if a hand deleted it (:func:`read_stats`)."""
    for table in cols.INDEX_LAYOUT:
        conn.execute(f"DELETE FROM {table}")
    conn.execute("DELETE FROM memory_stats")
    conn.execute(
        cols.insert("memory_stats", cols.MEMORY_STATS, d.mark), (0, 0, 0, 0, tokenizer_name())
    )


Imported = tuple[int, Sequence[tuple[int, float | None, str, str | None, str | None]]]
"""What an import wrote: how many records, and the live ones' :data:`_INDEXED`
columns (as text, not as the dialect binds it), by ascending id."""


def rebuild(conn: Any, d: Dialect, written: Imported | None = None) -> None:
    """Build the index again from the records (after an import, or the
    migration that introduced it).  ``written``: the records as the import
    just wrote them, so they are not read back."""
    from roteiro_memory.collector import paused

    with paused():  # a posting each per term and record, and no cycle among them
        _rebuild(conn, d, written)


def _rebuild(conn: Any, d: Dialect, written: Imported | None) -> None:
    clear(conn, d)
    if written is None:
        records = int(conn.execute("SELECT COUNT(*) FROM agent_memory").fetchone()[0])
        rows = conn.execute(
            f"SELECT {_INDEXED} FROM agent_memory WHERE superseded_by IS NULL ORDER BY id"
        ).fetchall()
        live = [_indexed_row(d, row) for row in rows]
    else:
        records = written[0]
        live = [indexed(*row) for row in written[1]]
    segments.append(conn, d, live, fresh=True)
    delta = Delta(records=records)
    for record in live:
        delta.gain(record)
    _apply(conn, d, delta)


def reindex_if_stale(conn: Any, d: Dialect) -> None:
    """Build the index again when the tokenizer that built it (the name
    ``memory_stats`` holds) is not this version's, so an older store's
    postings never meet this version's query terms; a store already indexed
    by it is left as it is."""
    row = conn.execute("SELECT tokenizer FROM memory_stats WHERE id = 0").fetchone()
    if row is None or row[0] != tokenizer_name():
        rebuild(conn, d)


def key_long_terms(conn: Any, d: Dialect) -> None:
    """Hold each term over :data:`~.postings.INDEX_TERM_BYTES` that the
    segments and cells hold as it is under its key instead
    (:func:`~.postings.index_term`), as this version writes it: a store an
    earlier version indexed may hold some, and a search would not meet them."""
    for table in ("memory_cells", "memory_segments"):
        # More than held as it is whatever its characters, counted in
        # characters (SQLite's length of text) or bytes: a longer term has more of both.
        long = f"{d.byte_length('term')} > {pst.HELD_AS_IS}"
        for (raw,) in conn.execute(f"SELECT DISTINCT term FROM {table} WHERE {long}").fetchall():
            if not (d.text_as_bytes or isinstance(raw, str)):
                continue  # damage (text is all this version writes), which the check reports
            try:
                term = d.untext(raw)
            except (UnicodeDecodeError, TypeError):
                continue  # damage, which the check reports
            key = pst.index_term(term)
            if key != term:
                conn.execute(
                    f"UPDATE {table} SET term = {d.mark} WHERE term = {d.mark}", (d.text(key), raw)
                )


# --- reading -------------------------------------------------------------------


@valueclass
class Stats:
    """What a search reads of the statistics."""

    records: int
    live: int
    live_terms: int


def read_stats(conn: Any) -> tuple[int, Stats]:
    """The generation (the largest record id, 0 in an empty store) and the
    store's counts, in one statement.  The counts' one row is made with the
    store and only a hand deletes it: without it every search would find
    nothing, so it is :class:`Corrupt` instead."""
    row = conn.execute(
        f"SELECT ({cols.GENERATION}), s.records, s.live, s.live_terms"
        " FROM (SELECT 0 AS id) one LEFT JOIN memory_stats s ON s.id = one.id"
    ).fetchone()
    if row[1] is None:
        raise pst.damaged("memory_stats", "row 0", ValueError("the row is missing"))
    if any(type(v) is not int for v in row[1:]):
        error = ValueError(f"counts {tuple(row[1:])!r}, which are not whole numbers")
        raise pst.damaged("memory_stats", "row 0", error)
    generation, records, live, live_terms = (0 if v is None else int(v) for v in row)
    if live < 0 or live_terms < 0 or (live_terms > 0 and live == 0):
        error = ValueError(f"counts {live} live records of {live_terms} terms")
        raise pst.damaged("memory_stats", "row 0", error)
    return generation, Stats(records, live, live_terms)


def contents(conn: Any, d: Dialect) -> list[dict[str, Any]]:
    """Every posting the index holds, wherever it holds it, as
    ``{record_id, term, count, length, cell}`` by record id then term, each
    term as the segments hold it (:func:`~.postings.index_term`) (what
    cannot be read, or names no member, is left out: a snapshot shows what
    it can read)."""
    held: dict[tuple[int, int], tuple[int, int]] = {}
    size = pst.MEMBER_ORDINALS
    for cell, segment, ids, lengths in conn.execute(
        "SELECT cell, segment, ids, lengths FROM memory_members"
    ):
        try:
            pst.segment_base(segment)  # a whole number, in range
            members = zip(*pst.read_members(bytes(ids), bytes(lengths)), strict=True)
        except (ValueError, TypeError):
            continue
        for at, member in enumerate(members):
            held[cell, segment * size + at] = member
    out: list[tuple[Any, ...]] = []
    for raw, cell, segment, blob in conn.execute(segments.HELD):
        try:
            rows = segments.held_postings(blob, None if segment is None else int(segment))
        except (ValueError, TypeError):
            rows = []
        term = d.plain(raw)
        for ordinal, count in rows:
            found = held.get((cell, ordinal))
            if found is not None:
                out.append((found[0], term, count, found[1], cell))
    for record_id, cell, length, text in conn.execute(
        "SELECT record_id, cell, length, terms FROM memory_recent"
    ):
        try:
            counts = parse_terms(d.untext(text))
        except (ValueError, TypeError):
            counts = {}
        out.extend(
            (record_id, pst.index_term(term), count, length, cell) for term, count in counts.items()
        )
    out.sort(key=lambda row: (row[0], repr(row[1])))
    names = ("record_id", "term", "count", "length", "cell")
    return [dict(zip(names, row, strict=True)) for row in out]


def corpus(stats: Stats, frequency: Mapping[str, int]) -> lexical.CorpusStats:
    """The statistics a search normalises by; a term some record holds in a
    store whose records hold no terms is damage, not a division by zero."""
    from roteiro_memory import lexical

    if stats.live_terms == 0 and any(frequency.values()):
        error = ValueError("counts no terms in live records, yet records hold the query's terms")
        raise pst.damaged("memory_stats", "row 0", error)
    return lexical.CorpusStats(stats.live, stats.live_terms, frequency)
