"""Search and limited recall give the model's results on SQLite and
PostgreSQL, to the last bit, on random corpora.

Search: the same random writes, supersessions and forgets go to the model and
both database stores; every search (random query, filters, decay, limit) must
give the same JSON -- relevance and score doubles included -- and the term
index must pass ``check`` afterwards.  Recall: the top-k that stops early
(:mod:`roteiro_memory.stores.sql.ranking`) must give the first k of the full
ranking, on corpora full of ties.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pg_server
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from older_stores import indexed_by_previous_tokenizer, postgres_back_to, sqlite_back_to

from roteiro_memory.errors import RoteiroError
from roteiro_memory.results import GraphNode
from roteiro_memory.semantics import AnchorFilter
from roteiro_memory.store import MemoryWrite, Store
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.stores.postgres.store import PostgresStore
from roteiro_memory.stores.sql import index, lexsearch, postings
from roteiro_memory.stores.sqlite.store import SQLiteStore

HUMAN_ONLY = frozenset({"created_at", "superseded_at"})

VOCABULARY = [
    "cache",
    "caches",
    "caching",
    "migration",
    "migrations",
    "timeout",
    "the",
    "lock",
    "Parser::parse",
    "src/db.py",
    "retry",
    "\u00e9cole",
    "flaky",
]
NODES = [
    GraphNode("sym:a", "fn", "a", "src/cache.py", "b1"),
    GraphNode("sym:b", "fn", "b", "src/migration/run.py", None),
]

bodies = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=8).map(" ".join)
confidences = st.none() | st.sampled_from([0.0, 0.25, 0.5, 1.0])
anchors = st.none() | st.sampled_from(["sym:a", "sym:b", "sym:gone"])
scopes = st.sampled_from(["repo", "team"])
operations = st.lists(
    st.one_of(
        st.tuples(st.just("write"), bodies, scopes, anchors, confidences, st.none()),
        st.tuples(st.just("write"), bodies, scopes, anchors, confidences, st.integers(1, 20)),
        st.tuples(st.just("forget"), st.integers(1, 20)),
    ),
    min_size=1,
    max_size=24,
)
queries = st.lists(st.sampled_from([*VOCABULARY, "nothing", "cached"]), max_size=3).map(" ".join)
decays = st.sampled_from(["none", "linear:4", "exponential:2"])
limits = st.none() | st.integers(min_value=0, max_value=5)


def comparable(value: Any) -> Any:
    if hasattr(value, "to_json"):
        value = value.to_json()
    if isinstance(value, dict):
        return {k: comparable(v) for k, v in value.items() if k not in HUMAN_ONLY}
    if isinstance(value, list):
        return [comparable(item) for item in value]
    return value


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Store]]:
    folder: Path = tmp_path_factory.mktemp("search-equivalence")
    opened: list[Store] = [ModelStore(), SQLiteStore(folder / "memory.db")]
    opened.append(pg_server.throwaway_store())
    try:
        yield opened
    finally:
        for store in opened:
            store.close()


def _load(stores: list[Store], ops: list[tuple[Any, ...]]) -> None:
    for store in stores:
        store.reset()
        store.put_nodes(NODES)
    for op in ops:
        outcomes = []
        for store in stores:
            try:
                if op[0] == "write":
                    _, body, scope, anchor, confidence, supersedes = op
                    kind = "decision" if len(body) % 3 == 0 else "lesson"
                    write = MemoryWrite(kind, body, scope, anchor, confidence, supersedes)
                    outcomes.append(comparable(store.record_many([write])))
                else:
                    outcomes.append(comparable(store.forget(op[1])))
            except RoteiroError as error:
                outcomes.append(error.kind)
        assert all(outcome == outcomes[0] for outcome in outcomes), op


def _same_search(stores: list[Store], ops: list[tuple[Any, ...]], **search: Any) -> None:
    _load(stores, ops)
    found = [comparable(store.search(**search)) for store in stores]
    assert found[1] == found[0]
    assert found[2] == found[0]
    for store in stores[1:]:
        assert store.check() == []


@settings(max_examples=40)
@given(
    ops=operations,
    query=queries,
    scope=st.none() | scopes,
    anchor_key=anchors,
    decay=decays,
    applicable_only=st.booleans(),
    limit=limits,
)
def test_search_gives_the_models_doubles_on_every_store(
    stores: list[Store],
    ops: list[tuple[Any, ...]],
    query: str,
    scope: str | None,
    anchor_key: str | None,
    decay: str,
    applicable_only: bool,
    limit: int | None,
) -> None:
    _same_search(
        stores,
        ops,
        query=query,
        scope=scope,
        anchor_key=anchor_key,
        decay=decay,
        applicable_only=applicable_only,
        limit=limit,
    )


graphs = st.none() | st.dictionaries(
    st.sampled_from(["sym:a", "sym:b", "sym:gone"]), st.none() | st.sampled_from(["b1", "b2"])
)
anchor_filters = st.none() | st.builds(
    AnchorFilter,
    keys=st.frozensets(st.sampled_from(["sym:a", "sym:gone"])),
    prefixes=st.lists(st.sampled_from(["sym:", "sym:b"]), max_size=2).map(tuple),
)


@settings(max_examples=60)
@given(
    ops=operations,
    query=queries,
    kind=st.none() | st.sampled_from(["lesson", "decision"]),
    decay=decays,
    applicable_only=st.booleans(),
    limit=limits,
    graph=graphs,
    anchors=anchor_filters,
    recent=st.integers(1, 3),
    tail=st.integers(1, 3),
    segment=st.sampled_from([8, 16]),
)
def test_search_gives_the_models_doubles_from_merged_segments(
    stores: list[Store],
    ops: list[tuple[Any, ...]],
    query: str,
    kind: str | None,
    decay: str,
    applicable_only: bool,
    limit: int | None,
    graph: dict[str, str | None] | None,
    anchors: AnchorFilter | None,
    recent: int,
    tail: int,
    segment: int,
) -> None:
    """With a recent tier of a record or three, tails of as few postings and
    segments of a few ordinals, every write merges, tails fold into cells of
    several segments, supersessions and forgets take postings out of tails
    and segments, and restored records are indexed again: what a large store
    does, on a small one (and with a graph given, and anchor filters)."""
    with (
        patch.object(index, "RECENT_RECORDS", recent),
        patch.object(postings, "TAIL_POSTINGS", tail),
        patch.object(postings, "SEGMENT_ORDINALS", segment),
        patch.object(postings, "MEMBER_ORDINALS", segment // 4),
    ):
        _same_search(
            stores,
            ops,
            query=query,
            kind=kind,
            decay=decay,
            applicable_only=applicable_only,
            limit=limit,
            graph=graph,
            anchors=anchors,
        )


@pytest.mark.parametrize("tail", [2, 64])
def test_a_record_a_forget_restores_is_indexed_again_among_older_and_newer(
    stores: list[Store], tail: int
) -> None:
    """A forget makes live again a record older than some indexed ones while
    a record older still may wait in the recent tier: the restored record
    takes its ordinal back, and every record keeps its postings through the merges,
    folds and forgets that follow."""
    write = ("write", "cache", "repo", None, None, None)
    ops = [
        write,  # 1 waits in the recent tier
        write,  # 2 too
        ("write", "lock", "repo", None, None, 2),  # 2 leaves the index
        ("forget", 3),  # 2 is restored, among the indexed records
        *[("write", "filler", "repo", None, None, None)] * 3,  # the recent tier merges
        ("forget", 1),
        *[write] * 3,  # cache's postings in that cell fold into its segments
    ]
    with (
        patch.object(index, "RECENT_RECORDS", 3),
        patch.object(postings, "TAIL_POSTINGS", tail),
        patch.object(postings, "SEGMENT_ORDINALS", 8),
    ):
        _same_search(stores, ops, query="cache", limit=None)


@settings(max_examples=40)
@given(
    ops=operations,
    query=st.none() | st.sampled_from(["cache", "migration timeout", "zzz"]),
    applicable_only=st.booleans(),
    decay=decays,
    limit=st.integers(min_value=1, max_value=6),
)
def test_limited_recall_is_the_head_of_the_full_ranking(
    stores: list[Store],
    ops: list[tuple[Any, ...]],
    query: str | None,
    applicable_only: bool,
    decay: str,
    limit: int,
) -> None:
    _load(stores, ops)
    for store in stores:
        full = comparable(store.recall(query, decay=decay, applicable_only=applicable_only))
        top = comparable(
            store.recall(query, decay=decay, applicable_only=applicable_only, limit=limit)
        )
        assert top["results"] == full["results"][:limit], store.name
        assert {k: v for k, v in top.items() if k != "results"} == {
            k: v for k, v in full.items() if k != "results"
        }


def test_limited_recall_stops_early_on_sqlite(tmp_path: Path) -> None:
    """With the strongest records first in the index's order, the top-k reads
    a few dozen candidates, not the store."""
    with SQLiteStore(tmp_path / "m.db") as store:
        store.record_many(
            MemoryWrite("lesson", f"lesson {i}", confidence=(i % 90) / 100) for i in range(3000)
        )
        statements: list[str] = []
        store.connection.set_trace_callback(statements.append)
        found = store.recall(limit=5)
        store.connection.set_trace_callback(None)
        assert [r.record.id for r in found.results] == [2970, 2880, 2790, 2700, 2610]
        reads = [s for s in statements if "ORDER BY COALESCE" in s]
        assert 1 <= len(reads) <= 3, statements
        assert not any("WITH ranked" in s for s in statements), "fell back to the full pass"


def test_search_reads_statistics_without_scanning_records(tmp_path: Path) -> None:
    """N, the total length and n(t) come from the index's own rows."""
    with SQLiteStore(tmp_path / "m.db") as store:
        store.record_many(MemoryWrite("lesson", f"cache lesson {i}") for i in range(50))
        statements: list[str] = []
        store.connection.set_trace_callback(statements.append)
        store.search("cache", limit=3)
        store.connection.set_trace_callback(None)
        assert not any("COUNT(" in s.upper() for s in statements), statements


def test_search_and_recall_fetch_records_by_rowid(tmp_path: Path) -> None:
    """A search's candidates, and the records a limited recall keeps, are
    read by their rowids, never through the liveness index and back."""
    with SQLiteStore(tmp_path / "m.db") as store:
        store.record_many(MemoryWrite("lesson", f"cache lesson {i}") for i in range(200))
        store.record("lesson", "cache lesson again", supersedes=3)
        statements: list[str] = []
        store.connection.set_trace_callback(statements.append)
        store.search("cache lesson", limit=3)
        store.recall("cache", limit=3)
        store.connection.set_trace_callback(None)
        by_id = [s for s in statements if "m.id IN (" in s]
        assert len(by_id) >= 2, statements
        for sql in by_id:
            plan = [row[3] for row in store.connection.execute(f"EXPLAIN QUERY PLAN {sql}")]
            reads = [step for step in plan if step.startswith(("SEARCH m ", "SCAN m"))]
            assert reads == ["SEARCH m USING INTEGER PRIMARY KEY (rowid=?)"], (sql, plan)


@pytest.mark.parametrize("version", [3, 5, 6, 7])
def test_migration_builds_the_index_of_an_older_store(tmp_path: Path, version: int) -> None:
    path = tmp_path / "m.db"
    model = ModelStore()
    with SQLiteStore(path) as store:
        for target in (store, model):
            target.record("lesson", "cache migrations time out")
            target.record("lesson", "retry the flaky cache", supersedes=1)
            target.record("lesson", "the lock times out")
            target.record("lesson", "PluginManager caches get_hookimpls per HookCaller")
        sqlite_back_to(store.connection, version)
    with SQLiteStore(path) as store:
        assert store.migrated is not None
        assert store.migrated[0] == version
        assert store.check() == []
        for query in ("cache timeout", "hook caller", "plugin manager"):
            assert comparable(store.search(query)) == comparable(model.search(query)), query
        assert [r.record.id for r in store.search("hook caller").results] == [4]


def test_an_index_the_previous_tokenizer_built_is_found_by_check(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "PluginManager caches get_hookimpls per HookCaller")
        indexed_by_previous_tokenizer(store.connection, store.dialect)
    with SQLiteStore(path) as store:
        assert store.migrated is None
        assert any(f.table == "memory_stats" for f in store.check())


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_search_without_the_index_counts_is_corrupt_not_empty(
    tmp_path: Path, backend: str
) -> None:
    """Without ``memory_stats``' row every search would find nothing, as if
    no record held the words: the store is damaged and says so."""
    from roteiro_memory.errors import Corrupt

    store: SQLiteStore | PostgresStore = (
        SQLiteStore(tmp_path / "m.db") if backend == "sqlite" else pg_server.throwaway_store()
    )
    try:
        store.record("lesson", "cache migrations time out")
        assert [r.record.id for r in store.search("cache").results] == [1]
        store.connection.execute("DELETE FROM memory_stats")
        with pytest.raises(Corrupt, match=r"^memory_stats row 0: the row is missing; the term"):
            store.search("cache")
        assert [r.record.id for r in store.recall().results] == [1]  # a read without words
    finally:
        store.close()


def test_rebuilding_the_index_makes_its_counts_row_again(tmp_path: Path) -> None:
    """The migration that rebuilds an older store's index makes the counts'
    row again if a hand deleted it, so the store it leaves searches."""
    path = tmp_path / "m.db"
    with SQLiteStore(path) as store:
        store.record("lesson", "cache migrations time out")
        sqlite_back_to(store.connection, 6)
        store.connection.execute("DELETE FROM memory_stats")
    with SQLiteStore(path) as store:
        assert store.migrated is not None
        assert store.check() == []
        assert [r.record.id for r in store.search("cache").results] == [1]


@pytest.mark.parametrize("version", [3, 5, 6, 7])
def test_migration_builds_the_index_of_an_older_postgres_store(version: int) -> None:
    model = ModelStore()
    store = pg_server.throwaway_store()
    try:
        for target in (store, model):
            target.record("lesson", "cache migrations time out")
            target.record("lesson", "retry the flaky cache", supersedes=1)
            target.record("lesson", "PluginManager caches get_hookimpls per HookCaller")
        postgres_back_to(store.connection, version)
        reopened = PostgresStore(store.dsn, store.schema)
        try:
            assert reopened.check() == []
            for query in ("cache", "hook caller", "plugin manager"):
                assert comparable(reopened.search(query)) == comparable(model.search(query))
            assert [r.record.id for r in reopened.search("hook caller").results] == [3]
        finally:
            reopened.close()
    finally:
        store.close()


_LONG_WORD = random.Random(7).randbytes(1_500).hex()
"""A word of 3,000 bytes that does not compress: a PostgreSQL index entry
holds at most about 2,700."""


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "memory"])
def test_a_term_of_thousands_of_bytes_is_indexed_and_found_by_every_backend(
    tmp_path: Path, backend: str
) -> None:
    """A pasted hash or dump is one word as long as a body lets it be.  Held
    as it is, PostgreSQL refused its index entry at the merge after it, and
    every write after that failed too; the index holds such a term under a
    key (:func:`~roteiro_memory.stores.sql.postings.index_term`)."""
    store: Store = (
        SQLiteStore(tmp_path / "m.db")
        if backend == "sqlite"
        else pg_server.throwaway_store()
        if backend == "postgres"
        else ModelStore()
    )
    try:
        first = store.record("lesson", f"core dump {_LONG_WORD}")
        for n in range(index.RECENT_RECORDS):
            store.record("lesson", f"ordinary note {n}")
        [again] = store.record_many([MemoryWrite("lesson", f"again {_LONG_WORD} {_LONG_WORD}")])
        assert [r.record.id for r in store.search(_LONG_WORD).results] == [again, first]
        assert [r.record.id for r in store.search(f"core {_LONG_WORD[:99]}").results] == [first]
        if backend != "memory":
            assert store.check() == []
        store.forget(first)
        assert [r.record.id for r in store.search(_LONG_WORD).results] == [again]
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_migration_holds_the_long_terms_of_an_older_index_under_their_keys(
    tmp_path: Path, backend: str
) -> None:
    """A store the previous version indexed holds a long term as it is (one
    PostgreSQL could take, as it compresses); opened, its rows are keyed,
    and its search and check agree with a store written now."""
    word = "a1" * 700
    key = postings.index_term(word)
    assert key != word
    store: SQLiteStore | PostgresStore = (
        SQLiteStore(tmp_path / "m.db") if backend == "sqlite" else pg_server.throwaway_store()
    )
    try:
        d = store.dialect
        store.record_many([MemoryWrite("lesson", f"dump {word} {n}") for n in range(300)])
        conn = store.connection
        plant = f"UPDATE memory_segments SET term = {d.mark} WHERE term = {d.mark}"
        refused = r"term_keyed|held under its key"  # 9 refuses a long term held as it is
        with pytest.raises(Exception, match=refused):
            conn.execute(plant, (d.text(word), d.text(key)))
        if backend == "postgres":
            conn.rollback()
        (sqlite_back_to if backend == "sqlite" else postgres_back_to)(conn, 8)
        for table in ("memory_cells", "memory_segments"):
            conn.execute(
                f"UPDATE {table} SET term = {d.mark} WHERE term = {d.mark}",
                (d.text(word), d.text(key)),
            )
        assert store.check() != []
        reopened = (
            SQLiteStore(tmp_path / "m.db")
            if isinstance(store, SQLiteStore)
            else PostgresStore(store.dsn, store.schema)
        )
        try:
            if isinstance(reopened, SQLiteStore):
                assert reopened.migrated is not None
            assert reopened.check() == []
            assert len(reopened.search(word, limit=None).results) == 300
            held = {
                d.untext(row[0])
                for row in reopened.connection.execute("SELECT term FROM memory_segments")
            }
            assert key in held
            assert word not in held
        finally:
            reopened.close()
    finally:
        store.close()


def _tails(store: SQLiteStore) -> int:
    """How many cells of a term have a tail."""
    return int(
        store.connection.execute("SELECT COUNT(*) FROM memory_cells WHERE length(tail)").fetchone()[
            0
        ]
    )


def _first_segment(conn: Any) -> tuple[Any, int, int, list[tuple[int, int]]]:
    term, cell, segment, blob = conn.execute(
        "SELECT term, cell, segment, postings FROM memory_segments ORDER BY term LIMIT 1"
    ).fetchone()
    return term, cell, segment, postings.segment_rows(blob)


def _rewrite(conn: Any, term: Any, cell: int, segment: int, rows: list[tuple[int, int]]) -> None:
    conn.execute(
        "UPDATE memory_segments SET postings = ? WHERE term = ? AND cell = ? AND segment = ?",
        (postings.encode_segment(*zip(*rows, strict=True)), term, cell, segment),
    )


def _recount(conn: Any) -> None:
    """The first segment with one count one higher."""
    term, cell, segment, rows = _first_segment(conn)
    (offset, count), *rest = rows
    _rewrite(conn, term, cell, segment, [(offset, count + 1), *rest])


def _stray(conn: Any) -> None:
    """The first segment with a posting more, at an ordinal no record holds."""
    term, cell, segment, rows = _first_segment(conn)
    free = max(offset for offset, _ in rows) + 1
    assert free < postings.SEGMENT_ORDINALS
    _rewrite(conn, term, cell, segment, [*rows, (free, 1)])


def _swapped_member(conn: Any) -> None:
    """A live record's member, its ordinal, handed to a superseded record."""
    from array import array

    dead = conn.execute("SELECT MIN(id) FROM agent_memory WHERE superseded_by IS NOT NULL")
    cell, segment, blob = conn.execute(
        "SELECT cell, segment, ids FROM memory_members ORDER BY cell DESC LIMIT 1"
    ).fetchone()
    ids = array("Q", blob)
    ids[-1] = dead.fetchone()[0]
    conn.execute(
        "UPDATE memory_members SET ids = ? WHERE cell = ? AND segment = ?",
        (ids.tobytes(), cell, segment),
    )


@pytest.mark.parametrize(
    ("damage", "table"),
    [
        (_recount, "memory_segments"),
        (_stray, "memory_segments"),
        (_swapped_member, "memory_members"),
        ("UPDATE memory_segments SET postings = substr(postings, 2)", "memory_segments"),
        ("UPDATE memory_segments SET postings = 'text'", "memory_segments"),
        ("UPDATE memory_segments SET term = CAST(term AS BLOB)", "memory_segments"),
        ("UPDATE memory_segments SET segment = segment + 1", "memory_segments"),
        ("UPDATE memory_segments SET segment = 'x'", "memory_segments"),
        ("DELETE FROM memory_segments WHERE term = 'cach'", "memory_segments"),
        ("DELETE FROM memory_recent", "memory_members"),
        ("DELETE FROM memory_members WHERE segment = 0", "memory_members"),
        ("UPDATE memory_members SET lengths = substr(lengths, 1, 4)", "memory_members"),
        ("UPDATE memory_members SET segment = segment + 1", "memory_members"),
        ("UPDATE memory_cells SET tail = substr(tail, 2) WHERE length(tail)", "memory_cells"),
        ("UPDATE memory_cells SET tail = x'' WHERE term = 'migration'", "memory_segments"),
        ("UPDATE memory_cells SET postings = postings + 1 WHERE term = 'cach'", "memory_cells"),
        ("UPDATE memory_cells SET postings = postings + 0.5", "memory_cells"),
        ("DELETE FROM memory_cells WHERE term = 'migration'", "memory_cells"),
        ("UPDATE memory_cells SET max_tf = 1 WHERE term = 'cach'", "memory_cells"),
        ("UPDATE memory_recent SET terms = 'cach 9'", "memory_recent"),
        ("UPDATE memory_recent SET length = length + 1", "memory_recent"),
        ("UPDATE memory_recent SET cell = cell + 1", "memory_recent"),
        ("UPDATE memory_stats SET live = live + 1", "memory_stats"),
        ("UPDATE memory_stats SET records = records + 0.5", "memory_stats"),
        (
            "UPDATE memory_stats SET live_terms = CAST(CAST(live_terms AS TEXT) AS BLOB)",
            "memory_stats",
        ),
        ("UPDATE memory_stats SET tokenizer = 'raw'", "memory_stats"),
    ],
)
def test_check_reports_an_index_that_disagrees_with_the_records(
    tmp_path: Path, damage: Any, table: str
) -> None:
    with SQLiteStore(tmp_path / "m.db") as store, patch.object(postings, "TAIL_POSTINGS", 4):
        # Enough at once to be loaded into segments (and tails, for the cells
        # of a few), then as many again spread over cells of a record or two
        # (merged into tails), then two left recent.
        store.record_many(
            MemoryWrite("lesson", f"cache cache migrations {n} time out", confidence=n % 10 / 10)
            for n in range(index.RECENT_RECORDS)
        )
        store.record_many(
            MemoryWrite(
                "lesson",
                " ".join(["migrations", *(f"w{n}x{k}" for k in range(n % 13))]),
                confidence=n % 20 / 20,
            )
            for n in range(index.RECENT_RECORDS)
        )
        assert _tails(store) > 0
        store.record("lesson", "retry the flaky cache", supersedes=1)
        store.record("lesson", "the flaky lock")
        conn = store.connection
        assert conn.execute("SELECT COUNT(*) FROM memory_recent").fetchone() == (2,)
        assert store.check() == []
        if callable(damage):
            damage(conn)
        else:
            conn.execute(damage)
        found = store.check()
        assert table in {finding.table for finding in found}, found
        # The index's tables are no export's: what they hold is judged against
        # the records, never as a value an export would refuse.
        assert not [f for f in found if "export would refuse" in f.problem]


def test_import_rebuilds_the_index(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source, SQLiteStore(tmp_path / "b.db") as target:
        source.record("lesson", "cache migrations time out")
        source.record("lesson", "retry the flaky cache", supersedes=1)
        from roteiro_memory.transfer import read_export

        target.import_export(read_export(source.export_lines()))
        assert target.check() == []
        assert comparable(target.search("cache")) == comparable(source.search("cache"))
        # The same postings, merged into segments where the source keeps them recent.
        assert _postings(target) == _postings(source) != set()
        assert target.snapshot()["memory_stats"] == source.snapshot()["memory_stats"]


def test_a_first_batch_loaded_into_an_empty_index_is_indexed_as_one_merged(
    tmp_path: Path,
) -> None:
    """A store's first batch is loaded into the empty index (no cell read,
    small cells straight to their tails); the same records written one batch
    after another are merged into it.  Both hold the same postings, pass the
    check and rank alike, and the loaded index takes later writes."""
    words = ["cache", "cache", "migration", "timeout", "lock", "retry", "flaky", "parser"]
    writes = [
        MemoryWrite("lesson", " ".join(words[(n * k) % len(words)] for k in range(1, 2 + n % 5)))
        for n in range(3 * index.RECENT_RECORDS)
    ]
    writes[5] = writes[-5] = MemoryWrite("lesson", "quokka quokka cache")  # in a tail, twice
    with (
        SQLiteStore(tmp_path / "loaded.db") as loaded,
        SQLiteStore(tmp_path / "merged.db") as merged,
        patch.object(postings, "SEGMENT_ORDINALS", 64),
    ):
        loaded.record_many(writes)
        merged.record_many(writes[: index.RECENT_RECORDS])
        merged.record_many(writes[index.RECENT_RECORDS :])
        for later in (loaded, merged):
            later.record_many(writes[: index.RECENT_RECORDS])
            assert later.check() == []
        assert _postings(loaded) == _postings(merged) != set()
        for query in ("cache", "cache migration", "parser flaky lock", "quokka"):
            assert comparable(loaded.search(query)) == comparable(merged.search(query))


def _postings(store: SQLiteStore) -> set[tuple[str, int, int, int]]:
    """Every ``(term, id, count, length)`` the index holds, wherever it holds it."""
    return {
        (row["term"], row["record_id"], row["count"], row["length"])
        for row in index.contents(store.connection, store.dialect)
    }


_TERM = st.text(st.characters(blacklist_characters="\t\n", blacklist_categories=["Cs"]), min_size=1)


@given(
    counts=st.dictionaries(_TERM, st.integers(1, 10**6), max_size=8),
    asked=st.lists(_TERM, max_size=6),
    prefixes=st.booleans(),
)
def test_a_recent_rows_terms_are_found_as_encode_terms_wrote_them(
    counts: dict[str, int], asked: list[str], prefixes: bool
) -> None:
    """A search finds a recent record's query terms with one pattern over its
    text: each held term with its count, however the terms share prefixes,
    hold pattern syntax, or repeat in the query."""
    if prefixes:  # a query term that begins, or is begun by, one held
        asked += [term[:-1] for term in counts if len(term) > 1] + [t + "x" for t in counts]
    asked += list(counts)[:2]
    text = index.encode_terms(counts)
    found = index.terms_finder(asked)(text)
    assert found == {term: counts[term] for term in asked if term in counts}


_WORDS = ["alpha", "bravo", "delta", "kilo", "lima", "oscar", "papa", "romeo", "sierra", "tango"]


def _many_cells(seed: int) -> list[MemoryWrite]:
    """Records of every length and confidence, their words drawn unevenly
    so some repeat in a record and some are rare, three in five anchored."""
    rng = random.Random(seed)
    weights = [2**n for n in range(len(_WORDS), 0, -1)]
    writes = []
    for n in range(600):
        words = rng.choices(_WORDS, weights, k=rng.choice([2, 3, 5, 8, 13, 21, 34]))
        anchor = rng.choice([None, None, "sym:a", "sym:b", "sym:gone"])
        confidence = rng.choice([None, 0.1, 0.3, 0.55, 0.8, 0.95, 1.0])
        writes.append(MemoryWrite("lesson", f"{' '.join(words)} {n}", "repo", anchor, confidence))
    return writes


@pytest.mark.parametrize("early", [False, True])
@pytest.mark.parametrize("subsets", [1, lexsearch.SUBSETS_UP_TO])
def test_records_a_bound_cuts_are_never_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, subsets: int, early: bool
) -> None:
    """Over many cells, the records the bitmaps keep and those bounded one by
    one at their own counts (``subsets`` at 1: every cell of two query terms
    or more) give the model's results: a bound never cuts a record the top k
    holds.  Cells are read one at a time, so most are bounded by a k-th
    score, and both ways of bounding are taken; ``early``, candidates are
    fetched a few at a time, before the cells that could beat them are read,
    and those the k-th score passes are dropped unfetched."""
    monkeypatch.setattr(lexsearch, "SUBSETS_UP_TO", subsets)
    monkeypatch.setattr(lexsearch, "READ_POSTINGS", 0)
    if early:
        monkeypatch.setattr(lexsearch, "CONFIRM_BATCH", 4)
        monkeypatch.setattr(lexsearch, "BACKLOG", 1)
    beaten: list[int] = []
    original = lexsearch._beating

    def spy(*args: Any) -> list[int]:
        kept = original(*args)
        beaten.append(len(kept))
        return kept

    monkeypatch.setattr(lexsearch, "_beating", spy)
    model = ModelStore()
    with SQLiteStore(tmp_path / "m.db") as store:
        for target in (store, model):
            target.put_nodes(NODES)
            target.record_many(_many_cells(7))
        rng = random.Random(11)
        for _ in range(40):
            query = " ".join(rng.sample(_WORDS, rng.randint(1, 6)))
            for limit in (1, 3, 10):
                found = store.search(query, limit=limit)
                assert comparable(found) == comparable(model.search(query, limit=limit)), query
    assert any(beaten), "no record was bounded one by one"


def test_a_candidate_the_kth_score_has_passed_is_never_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once k results are known, each candidate a cell gives that is
    fetched is bounded at or above the k-th score so far: one below it could
    never enter, and would cost its fetch.  Cells are read one at a time and candidates fetched a
    few at a time, early and often."""
    monkeypatch.setattr(lexsearch, "READ_POSTINGS", 0)
    monkeypatch.setattr(lexsearch, "CONFIRM_BATCH", 4)
    monkeypatch.setattr(lexsearch, "BACKLOG", 1)
    bounds: dict[int, float] = {}
    made = lexsearch._candidates

    def candidates(*args: Any) -> Any:
        for candidate in made(*args):
            bounds[-candidate[1]] = -candidate[0]
            yield candidate

    fetched: list[tuple[float, float]] = []
    """``(bound, k-th score so far)`` of each candidate fetched after k results."""
    top = lexsearch.top

    def spied(plan: Any, keep: Any, read: Any, members: Any, confirm: Any, batch: int) -> Any:
        scores: list[float] = []

        def confirming(found: Any, whole: bool) -> Any:
            if keep and len(scores) >= keep:
                kth = sorted(scores, reverse=True)[keep - 1]
                fetched.extend((bounds[i], kth) for i, _ in found if i in bounds)
            out = confirm(found, whole)
            scores.extend(score for score, _, _ in out)
            return out

        return top(plan, keep, read, members, confirming, batch)

    monkeypatch.setattr(lexsearch, "_candidates", candidates)
    monkeypatch.setattr(lexsearch, "top", spied)
    with SQLiteStore(tmp_path / "m.db") as store:
        store.put_nodes(NODES)
        store.record_many(_many_cells(7))
        rng = random.Random(13)
        for _ in range(40):
            store.search(" ".join(rng.sample(_WORDS, rng.randint(2, 6))), limit=3)
    assert len(fetched) > 100, "few candidates were fetched after the first k results"
    assert [pair for pair in fetched if pair[0] < pair[1]] == []


def test_a_query_whose_postings_fit_one_fetch_is_scored_without_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A query whose terms hold no more postings than one fetch of
    candidates scores every record holding one, the bounds never
    worked out, and answers as the model does; one whose terms hold more
    is bounded a cell at a time, as before."""
    bounded: list[int] = []
    original = lexsearch._bounded

    def spy(*args: Any) -> Any:
        bounded.append(1)
        return original(*args)

    monkeypatch.setattr(lexsearch, "_bounded", spy)
    model = ModelStore()
    writes = _many_cells(7)
    rare = [
        MemoryWrite("lesson", f"quokka {w.body}", "repo", w.anchor, w.confidence)
        for w in writes[::40]
    ]
    with SQLiteStore(tmp_path / "m.db") as store:
        for target in (store, model):
            target.put_nodes(NODES)
            target.record_many(writes + rare)
        for query in ("quokka", "zebra quokka"):
            for limit in (1, 10, None):
                found = store.search(query, limit=limit)
                assert comparable(found) == comparable(model.search(query, limit=limit))
        assert len(store.search("quokka").results) == len(rare)
        assert bounded == []
        query = "alpha quokka"
        assert comparable(store.search(query, limit=3)) == comparable(model.search(query, limit=3))
        assert bounded
