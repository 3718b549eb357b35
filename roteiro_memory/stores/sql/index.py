"""The term index ``memory.search`` ranks by, kept by both database stores.

Three tables, derived from the records and written in the same transaction
as the record writes that change them (:mod:`.columns` lists their columns):

* ``memory_terms`` -- one posting per (record, term): the term's count in the
  record and the record's length, for every record, live or superseded, so a
  record ``forget`` restores needs no re-tokenizing;
* ``memory_term_df`` -- for each term, how many *live* records hold it (rows
  are dropped when that reaches 0);
* ``memory_stats`` -- one row: how many records, how many live, and the total
  length of the live ones.

So a search reads its statistics (N, total length, n(t)) from a handful of
rows, never by scanning the records.  Terms come from
:func:`roteiro_memory.lexical.document_terms`; no tokenizer is written in SQL.
A store's :class:`~roteiro_memory.stores.sql.expressions.Dialect` says how it
binds text and many rows.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from roteiro_memory.results import Recalled
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.valueclass import field, valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from roteiro_memory import lexical
    from roteiro_memory.check import Finding
    from roteiro_memory.results import MemoryRecord
    from roteiro_memory.semantics import Decay
    from roteiro_memory.stores.sql.expressions import Dialect

__all__ = [
    "Delta",
    "Posting",
    "apply",
    "check",
    "clear",
    "delete_postings",
    "forgotten",
    "insert_postings",
    "posting",
    "read_postings",
    "read_stats",
    "rebuild",
    "term_weights",
    "written",
]

_CHUNK = 500
_POSTED = cols.pick(cols.MEMORY_TERMS, "term", "record_id", "tf", "length")
"""A posting as it is inserted: in the key's order, by which the rows are sorted."""


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


@valueclass(frozen=False)
class Delta:
    """How one write changes the statistics, applied once at its end."""

    records: int = 0
    live: int = 0
    live_terms: int = 0
    frequency: Counter[str] = field(default_factory=Counter)

    def gain(self, posting: Posting) -> None:
        """A record becomes live (written, or restored by a forget)."""
        self.live += 1
        self.live_terms += posting.length
        self.frequency.update(posting.counts.keys())

    def lose(self, posting: Posting) -> None:
        """A live record stops being live (superseded, or forgotten)."""
        self.live -= 1
        self.live_terms -= posting.length
        self.frequency.subtract(posting.counts.keys())


def insert_postings(conn: Any, d: Dialect, postings: Iterable[tuple[int, Posting]]) -> None:
    """Write the postings of new records."""
    rows = [
        (term, record_id, count, p.length)
        for record_id, p in postings
        for term, count in p.counts.items()
    ]
    # In key order, so each insert lands beside the last: far fewer pages
    # touched than in record order.
    rows.sort()
    if d.text_as_bytes:
        rows = [(d.text(term), record_id, count, length) for term, record_id, count, length in rows]
    d.many(conn, cols.insert("memory_terms", _POSTED, d.mark), rows)


def read_postings(
    conn: Any, d: Dialect, ids: Sequence[int], terms: Sequence[str] | None = None
) -> dict[int, Posting]:
    """The stored postings of ``ids`` (only of ``terms`` when given); a
    record holding no term has none and is absent."""
    counts: dict[int, dict[str, int]] = {}
    lengths: dict[int, int] = {}
    for start in range(0, len(ids), _CHUNK):
        where, params = d.any_of("record_id", ids[start : start + _CHUNK])
        if terms is not None:
            term_where, term_params = d.any_of("term", [d.text(t) for t in terms])
            where += f" AND {term_where}"
            params += term_params
        for record_id, term, count, length in conn.execute(
            f"SELECT record_id, term, tf, length FROM memory_terms WHERE {where}", params
        ):
            counts.setdefault(record_id, {})[d.untext(term)] = count
            lengths[record_id] = length
    return {record_id: Posting(counts[record_id], lengths[record_id]) for record_id in counts}


def found(
    records: Iterable[MemoryRecord],
    postings: Mapping[int, Posting],
    terms: Sequence[str],
    corpus: lexical.CorpusStats,
    generation: int,
    decay: Decay,
) -> list[Recalled]:
    """The search results of ``records`` (each a candidate, so holding one of
    ``terms``), scored from their stored postings exactly as the model scores
    them (:meth:`~roteiro_memory.results.Recalled.found`)."""
    from roteiro_memory import lexical

    out = []
    for record in records:
        posting = postings[record.id]
        relevance = lexical.weigh(terms, posting.counts, posting.length, corpus)
        out.append(Recalled.found(record, generation, decay, relevance))
    return out


def term_weights(
    d: Dialect, terms: Sequence[str], corpus: lexical.CorpusStats, params: dict[str, object]
) -> tuple[str, str]:
    """The per-posting weight of a search over ``terms`` (the BM25 term
    weight of a posting ``t``) and the condition that ``t`` is of one of
    them, binding each term and its IDF into ``params``."""
    from roteiro_memory import lexical

    cases = []
    bound = []
    for number, term in enumerate(terms):
        bound.append(d.text(term))
        params[f"term{number}"] = bound[-1]
        params[f"idf{number}"] = lexical.idf(corpus.document_frequency[term], corpus.documents)
        idf = d.typed_real(d.named(f"idf{number}"))
        cases.append(f"WHEN {d.named(f'term{number}')} THEN {idf}")
    params["average_length"] = corpus.average_length
    weight = sqlexpr.term_weight_expr(
        d,
        tf="t.tf",
        length="t.length",
        idf=f"(CASE t.term {' '.join(cases)} END)",
        average_length=d.typed_real(d.named("average_length")),
    )
    # Bound under the names the weights bind them by (SQLite's marks read
    # the same parameters; PostgreSQL binds one array besides).
    return weight, d.in_set("t.term", "term", bound, params)


def delete_postings(conn: Any, d: Dialect, record_id: int) -> None:
    conn.execute(f"DELETE FROM memory_terms WHERE record_id = {d.mark}", (record_id,))


def apply(conn: Any, d: Dialect, delta: Delta) -> None:
    """Add ``delta`` to the statistics; a term no live record holds any
    more loses its row."""
    m = d.mark
    changed = sorted((term, n) for term, n in delta.frequency.items() if n)
    d.many(
        conn,
        cols.insert("memory_term_df", cols.MEMORY_TERM_DF, m)
        + " ON CONFLICT (term) DO UPDATE SET live = memory_term_df.live + excluded.live",
        [(d.text(term), n) for term, n in changed],
    )
    d.many(
        conn,
        f"DELETE FROM memory_term_df WHERE term = {m} AND live <= 0",
        [(d.text(term),) for term, n in changed if n < 0],
    )
    if delta.records or delta.live or delta.live_terms:
        conn.execute(
            f"UPDATE memory_stats SET records = records + {m}, live = live + {m},"
            f" live_terms = live_terms + {m} WHERE id = 0",
            (delta.records, delta.live, delta.live_terms),
        )


def clear(conn: Any) -> None:
    """Empty the index, as for an empty store."""
    conn.execute("DELETE FROM memory_terms")
    conn.execute("DELETE FROM memory_term_df")
    conn.execute("UPDATE memory_stats SET records = 0, live = 0, live_terms = 0 WHERE id = 0")


def rebuild(conn: Any, d: Dialect) -> None:
    """Build the index again from the records (after an import, or the
    migration that introduced it)."""
    clear(conn)
    delta = Delta()
    batch: list[tuple[int, Posting]] = []
    rows = conn.execute(
        "SELECT id, body, anchor_key, anchor_path, superseded_by FROM agent_memory ORDER BY id"
    ).fetchall()
    for record_id, body, key, path, superseded_by in rows:
        p = posting(
            d.untext(body),
            None if key is None else d.untext(key),
            None if path is None else d.untext(path),
        )
        delta.records += 1
        if superseded_by is None:
            delta.gain(p)
        batch.append((record_id, p))
        if len(batch) >= 10_000:
            insert_postings(conn, d, batch)
            batch = []
    insert_postings(conn, d, batch)
    apply(conn, d, delta)


@valueclass
class Stats:
    """What a search reads of the statistics."""

    records: int
    corpus: lexical.CorpusStats


def read_stats(conn: Any, d: Dialect, terms: Sequence[str]) -> Stats:
    """The store's counts and the corpus statistics of ``terms``."""
    from roteiro_memory import lexical

    row = conn.execute("SELECT records, live, live_terms FROM memory_stats WHERE id = 0").fetchone()
    records, live, live_terms = (int(v) for v in row) if row else (0, 0, 0)
    frequency: dict[str, int] = dict.fromkeys(terms, 0)
    if terms:
        where, params = d.any_of("term", [d.text(t) for t in terms])
        for term, n in conn.execute(f"SELECT term, live FROM memory_term_df WHERE {where}", params):
            frequency[d.untext(term)] = int(n)
    return Stats(records, lexical.CorpusStats(live, live_terms, frequency))


_EMPTY = Posting({}, 0)
"""The posting of a record holding no term (it has no rows)."""


def written(
    conn: Any,
    d: Dialect,
    supersedes: Sequence[int | None],
    base: int,
    postings: Sequence[tuple[int, Posting]],
) -> None:
    """Index a batch of new records (ids above ``base``), superseding the
    records ``supersedes`` names: new records are live unless the batch
    itself supersedes them, and stored records it supersedes stop being live."""
    targets = {target for target in supersedes if target is not None}
    delta = Delta(records=len(postings))
    for record_id, p in postings:
        if record_id not in targets:
            delta.gain(p)
    insert_postings(conn, d, postings)
    stored = sorted(target for target in targets if target <= base)
    old = read_postings(conn, d, stored)
    for target in stored:
        delta.lose(old.get(target, _EMPTY))
    apply(conn, d, delta)


def forgotten(conn: Any, d: Dialect, record_id: int, live: bool, restored: Sequence[int]) -> None:
    """Drop a record from the index before the record goes; the records its
    removal restores become live again."""
    mine = read_postings(conn, d, [record_id]).get(record_id, _EMPTY)
    back = read_postings(conn, d, list(restored))
    delta = Delta(records=-1)
    if live:
        delta.lose(mine)
    for restored_id in restored:
        delta.gain(back.get(restored_id, _EMPTY))
    delete_postings(conn, d, record_id)
    apply(conn, d, delta)


def check(conn: Any, d: Dialect) -> list[Finding]:
    """The index's findings (:func:`roteiro_memory.check.index_findings`);
    records whose text cannot be read are left to the record rules."""
    from roteiro_memory.check import IndexedRecord, index_findings

    records: list[IndexedRecord] = []
    for record_id, body, key, path, superseded_by in conn.execute(
        "SELECT id, body, anchor_key, anchor_path, superseded_by FROM agent_memory ORDER BY id"
    ):
        try:
            text = [None if value is None else d.untext(value) for value in (body, key, path)]
        except (UnicodeDecodeError, TypeError):
            continue
        if not isinstance(text[0], str):
            continue
        records.append(IndexedRecord(record_id, text[0], text[1], text[2], superseded_by is None))
    # Where terms are read back as text, read as they are stored: a term that
    # is not text (a damaged store) then equals no term a record gives.
    postings = conn.execute("SELECT record_id, term, tf, length FROM memory_terms")
    if d.text_as_bytes:
        postings = (
            (record_id, d.untext(term), count, length)
            for record_id, term, count, length in postings
        )
    frequencies = [
        (d.untext(term), live)
        for term, live in conn.execute("SELECT term, live FROM memory_term_df")
    ]
    row = conn.execute("SELECT records, live, live_terms FROM memory_stats WHERE id = 0").fetchone()
    # As stored: a count held as a fraction or as bytes is found, not rounded.
    stats = None if row is None else tuple(row)
    return index_findings(records, postings, frequencies, stats)
