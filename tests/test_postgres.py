"""The PostgreSQL backend beneath the contract: naming, schema, SQL arithmetic.

Every test here runs against a real server the suite starts itself
(:mod:`pg_server`); under ``CI`` they never skip.
"""

from __future__ import annotations

import math
import random
import select
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pg_server
import pytest
from older_stores import postgres_back_to

from roteiro_memory import eviction
from roteiro_memory import semantics as sem
from roteiro_memory.errors import (
    AlreadySuperseded,
    Corrupt,
    InvalidStoreName,
    NotFound,
    StoreUnavailable,
)
from roteiro_memory.results import GraphNode
from roteiro_memory.semantics import Decay
from roteiro_memory.store import MemoryWrite
from roteiro_memory.stores.naming import open_store
from roteiro_memory.stores.postgres.migrations import MIGRATIONS, SCHEMA_VERSION
from roteiro_memory.stores.postgres.store import PostgresStore, split_schema
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sql.dialects import POSTGRES


@pytest.fixture
def pg() -> Iterator[PostgresStore]:
    """A fresh store in a schema of its own on the test server."""
    store = pg_server.throwaway_store()
    try:
        yield store
    finally:
        store.close()


@pytest.fixture
def dsn() -> str:
    """A DSN naming a fresh schema on the test server."""
    return pg_server.fresh_store_dsn()


# --- naming a store ---------------------------------------------------------


@pytest.mark.parametrize(
    ("dsn", "rest", "schema"),
    [
        ("postgresql://h/db", "postgresql://h/db", None),
        ("postgresql://h/db?schema=team_a", "postgresql://h/db", "team_a"),
        (
            "postgresql://u@h:5433/db?sslmode=disable&schema=s1",
            "postgresql://u@h:5433/db?sslmode=disable",
            "s1",
        ),
        ("host=/tmp dbname=x schema=abc", "host=/tmp dbname=x", "abc"),
        ("schema=abc host=/tmp", "host=/tmp", "abc"),
        ("host=/tmp dbname=x", "host=/tmp dbname=x", None),
    ],
)
def test_split_schema_takes_the_schema_out_of_either_dsn_form(
    dsn: str, rest: str, schema: str | None
) -> None:
    assert split_schema(dsn) == (rest, schema)


def test_schema_name_is_checked_before_connecting() -> None:
    with pytest.raises(InvalidStoreName, match="invalid PostgreSQL schema name"):
        PostgresStore("postgresql://nowhere.invalid/db", schema="a; DROP TABLE x")


def test_open_store_selects_postgres_by_every_spelling(dsn: str) -> None:
    for backend, db in (("postgres:" + dsn, None), ("postgres", dsn), ("sqlite", dsn), (dsn, None)):
        store = open_store(backend, db)
        try:
            assert isinstance(store, PostgresStore), (backend, db)
            assert store.schema == split_schema(dsn)[1]
        finally:
            store.close()


def test_open_store_postgres_without_a_dsn_names_the_fix() -> None:
    with pytest.raises(InvalidStoreName, match="needs a DSN"):
        open_store("postgres", None)


def test_unreachable_server_is_store_unavailable_without_the_password() -> None:
    pg_server.require_server()
    with pytest.raises(StoreUnavailable, match="cannot connect") as caught:
        PostgresStore("postgresql://someone:s3cret@127.0.0.1:1/nothing?connect_timeout=2")
    assert "s3cret" not in str(caught.value)


def test_missing_driver_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(StoreUnavailable, match=r"pip install 'roteiro-memory\[postgres\]'"):
        PostgresStore("postgresql://localhost/db")


def test_importing_the_library_does_not_import_the_driver() -> None:
    import subprocess

    code = (
        "import sys, roteiro_memory, roteiro_memory.stores.naming;"
        "import roteiro_memory.stores.postgres.store;"
        "print('psycopg' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- schemas and migrations ---------------------------------------------------


def test_store_connections_compile_no_query_just_in_time(pg: PostgresStore) -> None:
    """Recall's one long ranking expression is estimated past the JIT
    thresholds: compiling it took seconds where running it took
    milliseconds, so the store's connections run without JIT."""
    assert pg.connection.execute("SHOW jit").fetchone() == ("off",)


def test_migrations_are_recorded_in_the_store_schema(pg: PostgresStore) -> None:
    versions = [row["version"] for row in pg.snapshot()["schema_migrations"]]
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    schema = pg.connection.execute(
        "SELECT table_schema FROM information_schema.tables WHERE table_name = 'agent_memory'"
        " AND table_schema = %s",
        (pg.schema,),
    ).fetchall()
    assert schema == [(pg.schema,)]


def test_concurrent_first_opens_of_one_schema_all_succeed(dsn: str) -> None:
    errors: list[BaseException] = []
    stores: list[PostgresStore] = []
    gate = threading.Barrier(8)

    def open_one() -> None:
        gate.wait()
        try:
            stores.append(PostgresStore(dsn))
        except BaseException as error:  # collected and asserted empty below
            errors.append(error)

    threads = [threading.Thread(target=open_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert errors == []
        assert len(stores) == 8
        snapshot = stores[0].snapshot()
        assert [r["version"] for r in snapshot["schema_migrations"]] == [
            v for v, _, _ in MIGRATIONS
        ]
        assert snapshot["agent_cache_clock"] == [{"id": 0, "ticks": 0, "generation": 0}]
    finally:
        for store in stores[1:]:
            store.close()
        if stores:
            stores[0].drop()


def test_schema_written_by_a_newer_version_is_refused(pg: PostgresStore) -> None:
    pg.connection.execute(
        "INSERT INTO schema_migrations (version, name) VALUES (%s, 'from the future')",
        (SCHEMA_VERSION + 1,),
    )
    with pytest.raises(Corrupt, match="newer roteiro-memory"):
        PostgresStore(pg.dsn, schema=pg.schema)


def test_migrations_no_version_records_are_refused_as_damage_never_as_a_newer_schema(
    pg: PostgresStore,
) -> None:
    """A gap, then a higher version: no version records its migrations so."""
    pg.connection.execute("UPDATE schema_migrations SET version = 99 WHERE version = 3")
    with pytest.raises(Corrupt, match="not a usable roteiro-memory store") as refused:
        PostgresStore(pg.dsn, schema=pg.schema)
    assert "newer" not in str(refused.value)


def test_schema_holding_foreign_tables_is_refused(dsn: str) -> None:
    rest, schema = split_schema(dsn)
    assert schema is not None
    import psycopg

    with psycopg.connect(rest, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'CREATE TABLE "{schema}".payroll (id integer)')
        try:
            with pytest.raises(Corrupt, match="not a roteiro-memory store"):
                PostgresStore(dsn)
            tables = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (schema,),
            ).fetchall()
            assert tables == [("payroll",)]
        finally:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


def test_reset_empties_only_its_own_schema(pg: PostgresStore) -> None:
    other = pg_server.throwaway_store()
    try:
        pg.record("lesson", "mine")
        other.record("lesson", "theirs")
        other.cache_put("k", "f", "{}")
        pg.reset()
        assert pg.list().records == []
        assert pg.record("lesson", "again") == 1
        assert [r.body for r in other.list().records] == ["theirs"]
        assert other.cache_stats(0).entries == 1
    finally:
        other.close()


def test_ids_are_never_reused_after_the_newest_is_forgotten_and_reopened(
    pg: PostgresStore,
) -> None:
    first = pg.record("lesson", "one")
    second = pg.record("lesson", "two")
    pg.forget(second)
    pg.reopen()
    assert pg.record("lesson", "three") == second + 1
    assert pg.get(first) is not None


def test_refused_supersession_writes_nothing(pg: PostgresStore) -> None:
    target = pg.record("lesson", "old")
    pg.record("lesson", "new", supersedes=target)
    before = pg.snapshot()
    with pytest.raises(AlreadySuperseded):
        pg.record("lesson", "newer", supersedes=target)
    with pytest.raises(NotFound):
        pg.record("lesson", "orphan", supersedes=2**63 + 5)
    assert pg.snapshot() == before


# --- text: anything the contract allows ---------------------------------------


def test_text_with_nul_and_astral_characters_round_trips(pg: PostgresStore) -> None:
    body = "nul \x00 here, then \U0001f600 and \u00e9"
    rid = pg.record("lesson", body, anchor="k\x00ey")
    pg.put_nodes([GraphNode("n\x00", "fn", "na\x00me", "p\x00", "b\x00")])
    pg.cache_put("c\x00", "f\x00", '"\x00"')
    record = pg.get(rid)
    assert record is not None
    assert (record.body, record.anchor.key if record.anchor else None) == (body, "k\x00ey")
    assert pg.export_graph() == [GraphNode("n\x00", "fn", "na\x00me", "p\x00", "b\x00")]
    assert [(e.key, e.fingerprint, e.json) for e in pg.cache_entries()] == [
        ("c\x00", "f\x00", '"\x00"')
    ]
    assert [r.record.id for r in pg.recall("\x00 HERE \U0001f600").results] == [rid]


def test_keys_sort_in_code_point_order_whatever_the_collation(pg: PostgresStore) -> None:
    keys = ["b", "B", "a", "\u00e9", "\U0001f600", "\uffff", "Z", "_", "a b", "ab"]
    pg.put_nodes([GraphNode(key) for key in keys])
    for key in keys:
        pg.cache_put(key, "f", "{}")
    assert [n.key for n in pg.export_graph()] == sorted(keys)
    assert [e.key for e in pg.cache_entries()] == sorted(keys)


def test_query_matching_uses_the_semantics_lower_casing(pg: PostgresStore) -> None:
    """PostgreSQL's lower() differs from Python's on some letters; the search
    column is written by semantics.search_text, so recall agrees with it."""
    body = "STRASSE \u0130stanbul \u03a3\u039f\u03a6\u0399\u0391"
    rid = pg.record("lesson", body)
    for token in sem.query_tokens(body):
        assert sem.matches_query(sem.search_text(body, None, None), [token])
        assert [r.record.id for r in pg.recall(token).results] == [rid], token


# --- SQL arithmetic gives Python's doubles -------------------------------------


@pytest.mark.parametrize(
    "decay",
    [
        "none",
        "linear:1",
        "linear:7",
        "linear:200",
        "exponential:1",
        "exponential:3",
        "exponential:50",
    ],
)
def test_scores_computed_in_sql_equal_the_semantics_bit_for_bit(
    pg: PostgresStore, decay: str
) -> None:
    confidences = [None, 0.0, 0.1, 1 / 3, 0.5, 0.7, 0.9, 1.0, math.nextafter(1.0, 0.0)]
    pg.put_nodes([GraphNode("same", blob="b1"), GraphNode("moved", blob="b2")])
    anchors = [None, "same", "moved", "gone"]
    for i in range(120):
        pg.record(
            "lesson",
            f"body {i}",
            confidence=confidences[i % len(confidences)],
            anchor=anchors[i % 4],
        )
    pg.put_nodes([GraphNode("moved", blob="b3")])
    pg.remove_nodes(["gone"])
    parsed = Decay.parse(decay)
    score, params = sqlexpr.score_expr(
        parsed,
        POSTGRES,
        confidence="m.confidence",
        id_column="m.id",
        anchor_key="m.anchor_key",
        anchor_blob="m.anchor_blob",
        node_key="n.key",
        node_blob="n.blob",
    )
    generation = 120
    rows = pg.connection.execute(
        f"SELECT m.id, {score} FROM agent_memory m LEFT JOIN nodes n ON n.key = m.anchor_key"
        " ORDER BY m.id",
        {**params, "generation": generation},
    ).fetchall()
    recalled = {r.record.id: r for r in pg.recall(decay=decay).results}
    assert len(rows) == len(recalled) == 120
    for rid, sql_score in rows:
        python = recalled[rid]
        expected = sem.score(
            python.base_confidence,
            sem.anchor_penalty(python.record.anchor_state),
            parsed.factor(sem.record_age(generation, rid)),
        )
        assert sql_score == expected, (rid, sql_score, expected)
        assert python.score == expected


def test_power_in_sql_equals_python_pow_over_many_ratios(pg: PostgresStore) -> None:
    ratios = [a / b for a in range(0, 400, 7) for b in (1, 3, 7, 50, 123)]
    rows = pg.connection.execute(
        "SELECT r, power(0.5, r) FROM unnest(%s::double precision[]) AS t(r)", (ratios,)
    ).fetchall()
    assert len(rows) == len(ratios)
    for ratio, value in rows:
        assert value == math.pow(0.5, ratio), ratio


def test_recall_ranks_and_limits_in_sql_like_the_model(pg: PostgresStore) -> None:
    from roteiro_memory.stores.model import ModelStore

    model = ModelStore()
    for store in (pg, model):
        for i in range(40):
            store.record("lesson", f"alpha {i % 3}", confidence=(i % 5) / 4, scope=f"s{i % 2}")
    for kwargs in (
        {"query": "alpha", "limit": 7, "decay": "exponential:4"},
        {"query": "alpha 1", "scope": "s1", "decay": "linear:10"},
        {"limit": 3},
    ):
        got = pg.recall(**kwargs)
        want = model.recall(**kwargs)
        assert [(r.record.id, r.score) for r in got.results] == [
            (r.record.id, r.score) for r in want.results
        ]


def test_keys_of_any_length_are_kept_once_migration_11_keys_them_by_sha256(
    dsn: str,
) -> None:
    """PostgreSQL's B-tree entry holds about 2,700 bytes; a node and a cache
    entry are unique by their key's SHA-256 and found through a hash index
    (migration 11), so a key of any length that does not compress is kept,
    replaced by key, and matched by an anchor -- also in a store written
    before 11, which takes the migration on open with its rows as they were."""
    first = PostgresStore(dsn)
    try:
        first.put_nodes([GraphNode("fn:a", blob="b")])
        first.cache_put("k", "f", "{}")
        postgres_back_to(first.connection, 10)
        primary = first.connection.execute(
            "SELECT COUNT(*) FROM pg_constraint WHERE contype = 'p'"
            " AND conrelid IN ('nodes'::regclass, 'agent_cache'::regclass)"
        ).fetchone()
        assert primary == (2,)
    finally:
        first.close()
    pg = PostgresStore(dsn)
    try:
        assert [r["version"] for r in pg.snapshot()["schema_migrations"]][-1] == SCHEMA_VERSION
        assert [n["key"] for n in pg.snapshot()["nodes"]] == ["fn:a"]
        long = random.Random(3).randbytes(10_000).hex()
        anchor = long[: sem.MAX_ANCHOR_BYTES]
        pg.put_nodes([GraphNode(long, blob="b1"), GraphNode(anchor, blob="a1")])
        pg.put_nodes([GraphNode(long, blob="b2")])
        rid = pg.record("lesson", "x", anchor=anchor)
        for key in (long, "k"):
            pg.cache_put(key, "f1", "{}")
            pg.cache_put(key, "f2", "[]")
        snapshot = pg.snapshot()
        assert [(n["key"], n["blob"]) for n in snapshot["nodes"]] == sorted(
            [(long, "b2"), (anchor, "a1"), ("fn:a", "b")]
        )
        assert sorted((c["key"], c["fingerprint"]) for c in snapshot["agent_cache"]) == sorted(
            [("k", "f2"), (long, "f2")]
        )
        record = pg.get(rid)
        assert record is not None
        assert record.anchor_state is sem.AnchorState.VALID
        pg.remove_nodes([long, anchor])
        assert [n["key"] for n in pg.snapshot()["nodes"]] == ["fn:a"]
        assert pg.check() == []
    finally:
        pg.drop()


def test_nodes_under_a_prefix_are_read_through_an_index_not_a_scan(pg: PostgresStore) -> None:
    """A key is found by a hash index since migration 11, which finds no
    range: a file's or a folder's nodes (a prefix) were read, and counted,
    by scanning every node.  Migration 13's B-tree on each key's first bytes
    serves both reads, whatever the planner would pick for a table this small."""
    from roteiro_memory.stores.sql import graph
    from roteiro_memory.stores.sql.dialects import KEY_START_BYTES

    # The index a store was given is the one the reads must match.
    assert f"FOR {KEY_START_BYTES})" in dict((v, sql) for v, _, sql in MIGRATIONS)[13]
    pg.put_nodes(GraphNode(f"py:m{n}.py::f", blob="b") for n in range(50))
    conn = pg.connection
    conn.execute("SET enable_seqscan = off")
    try:
        params: dict[str, object] = {}
        where = graph._range(POSTGRES, "py:m4", params)
        for read in ("key", "count(*)"):
            plan = conn.execute(f"EXPLAIN SELECT {read} FROM nodes WHERE {where}", params)
            shown = "\n".join(row[0] for row in plan)
            assert "idx_nodes_key_start" in shown, shown
            assert "Seq Scan" not in shown, shown
    finally:
        conn.execute("RESET enable_seqscan")
    assert pg.count_nodes(("py:m4",)) == 11


# --- check ------------------------------------------------------------------


def test_check_of_a_healthy_store_is_clean(pg: PostgresStore) -> None:
    from roteiro_memory.check import check_store

    first = pg.record("lesson", "one \x00", anchor="k")
    pg.record("lesson", "two", supersedes=first)
    pg.cache_put("a", "f", "{}")
    pg.cache_get("a")
    pg.cache_sweep(0)
    assert check_store(pg) == []


@pytest.mark.parametrize(
    ("damage", "finding"),
    [
        ("UPDATE agent_memory SET search = 'nothing' WHERE id = 1", "search text disagrees"),
        ("UPDATE agent_memory_ids SET last_id = 1", "id counter 1 is behind the largest id 3"),
        ("UPDATE agent_memory SET superseded_by = 3, superseded_at = 'x' WHERE id < 3", "a fork"),
        ("UPDATE agent_memory SET superseded_at = NULL WHERE id = 1", "disagree"),
        ("UPDATE agent_memory SET body = '\\xff'::bytea WHERE id = 3", "not UTF-8"),
        ("UPDATE agent_cache SET bytes = 1", "bytes is 1 but"),
        # U+D800 as surrogatepass writes it, which no version writes now.
        (
            "UPDATE agent_cache SET key = '\\x61eda080'::bytea WHERE key = '\\x61'::bytea",
            "a write would refuse it: invalid cache key",
        ),
        ("UPDATE agent_cache SET last_used = 1", "shares tick 1"),
        ("UPDATE agent_cache_clock SET ticks = 0", "the clock is behind it at 0"),
        ("INSERT INTO schema_migrations (version, name) VALUES (99, 'next')", "newer than this"),
        # A gap no version leaves: damage, not the evidence of a newer version.
        ("UPDATE schema_migrations SET version = 99 WHERE version = 3", "the table is damaged"),
        ("DROP FUNCTION roteiro_product", "function roteiro_product: is missing"),
        (
            "CREATE OR REPLACE FUNCTION roteiro_product(a double precision, b double precision)"
            " RETURNS double precision LANGUAGE sql AS 'SELECT a * b'",
            "function roteiro_product: is not the one migration 12 made",
        ),
    ],
)
def test_check_reports_each_planted_fault(pg: PostgresStore, damage: str, finding: str) -> None:
    from roteiro_memory.check import check_store

    first = pg.record("lesson", "one")
    pg.record("lesson", "two", supersedes=first)
    pg.record("lesson", "three")
    pg.cache_put("a", "f", "{}")
    pg.cache_put("b", "f", "{}")
    assert check_store(pg) == []
    pg.connection.execute(damage)
    found = [str(f) for f in check_store(pg)]
    assert any(finding in line for line in found), found


_TINY = [
    None,
    0.0,
    5e-324,
    2.0**-1073,
    2.0**-1000,
    2.0**-501,
    2.0**-500,
    math.nextafter(2.0**-500, 1.0),
    1e-300,
    1e-10,
    1 / 3,
    1.0,
]


@pytest.mark.parametrize("decay", ["none", "linear:3", "exponential:1", "exponential:3"])
@pytest.mark.parametrize("generation", [60, 520, 1020, 1070, 1090, 3300, 10**6])
def test_scores_equal_the_semantics_where_postgres_would_trap_underflow(
    pg: PostgresStore, decay: str, generation: int
) -> None:
    """PostgreSQL raises on a product or power that rounds to zero; the
    rendering must avoid that and still give Python's doubles, down to the
    subnormals, for ages around where 0.5 ** ratio leaves the normal range."""
    pg.put_nodes([GraphNode("same", blob="b1"), GraphNode("moved", blob="b2")])
    anchors = [None, "same", "moved", "gone"]
    pg.record_many(
        [
            MemoryWrite(
                "lesson", f"body {i}", confidence=_TINY[i % len(_TINY)], anchor=anchors[i % 4]
            )
            for i in range(48)
        ]
    )
    pg.put_nodes([GraphNode("moved", blob="b3")])
    parsed = Decay.parse(decay)
    score, params = sqlexpr.score_expr(
        parsed,
        POSTGRES,
        confidence="m.confidence",
        id_column="m.id",
        anchor_key="m.anchor_key",
        anchor_blob="m.anchor_blob",
        node_key="n.key",
        node_blob="n.blob",
    )
    rows = pg.connection.execute(
        f"SELECT m.id, m.confidence, {score} FROM agent_memory m"
        " LEFT JOIN nodes n ON n.key = m.anchor_key ORDER BY m.id",
        {**params, "generation": generation},
    ).fetchall()
    states = {r.id: r.anchor_state for r in pg.list().records}
    assert len(rows) == 48
    for rid, confidence, sql_score in rows:
        expected = sem.score(
            sem.base_confidence(confidence),
            sem.anchor_penalty(states[rid]),
            parsed.factor(sem.record_age(generation, rid)),
        )
        assert sql_score == expected, (rid, confidence, sql_score, expected)


def _near_half_the_smallest_subnormal() -> list[tuple[float, float]]:
    """Pairs whose product is at, just above or just below 2**-1075, where
    rounding decides between 0 and 5e-324: ``a`` a few ulps either side of
    ``1 / (2 * k)`` and ``b`` ``k`` times the smallest subnormal, and both
    the other way round; with pairs from a seeded generator nearby."""
    pairs = []
    for k in (1, 2, 3, 5, 6, 7, 12, 100, 2**20 + 1):
        centre = 1 / (2 * k)
        for steps in range(-3, 4):
            a = centre
            for _ in range(abs(steps)):
                a = math.nextafter(a, 1.0 if steps > 0 else 0.0)
            pairs += [(a, k * 5e-324), (k * 5e-324, a)]
    chosen = random.Random(11)
    for _ in range(400):
        k = chosen.randint(1, 4_000)
        a = 1 / (2 * k) * (1 + chosen.uniform(-1e-15, 1e-15))
        pairs.append((min(a, 1.0), k * 5e-324))
    return pairs


def test_a_product_at_half_the_smallest_subnormal_rounds_as_python_rounds_it(
    pg: PostgresStore,
) -> None:
    """The guarded product (PostgreSQL refuses a product that rounds to 0)
    used to take a true product just above 2**-1075 for 0, where IEEE
    rounding (and Python) gives 5e-324: recall then ranked a record of that
    score below one of 0, and a limit could drop it."""
    pairs = _near_half_the_smallest_subnormal()
    for product in (sqlexpr._times("t.a", "t.b", POSTGRES), f"{sqlexpr.PRODUCT}(t.a, t.b)"):
        rows = pg.connection.execute(
            f"SELECT t.a, t.b, {product} FROM unnest(%s::float8[], %s::float8[]) AS t(a, b)",
            ([a for a, _ in pairs], [b for _, b in pairs]),
        ).fetchall()
        assert len(rows) == len(pairs)
        wrong = [(a, b, got) for a, b, got in rows if got != a * b]
        assert wrong == [], product
    assert {a * b for a, b in pairs} >= {0.0, 5e-324}  # both sides of the boundary were tried


def test_recall_ranks_a_score_of_the_smallest_subnormal_above_one_of_zero(
    pg: PostgresStore,
) -> None:
    """A drifted record decayed over 1072.5 half-lives scores 5e-324 (its
    product is just above 2**-1075): ranked above a newer record scoring
    0, and kept by a limit of 1, as the model ranks them."""
    from roteiro_memory.stores.model import ModelStore

    model = ModelStore()
    for store in (pg, model):
        store.put_nodes([GraphNode("sym:a", blob="b1")])
        confidence = math.nextafter(2 / 3, 1.0)  # a quarter of it, decayed, just above 2**-1075
        store.record("lesson", "A", scope="x", anchor="sym:a", confidence=confidence)
        store.record("lesson", "B", scope="x", confidence=0.0)
        store.record_many([MemoryWrite("lesson", "filler")] * 2144)
        store.put_nodes([GraphNode("sym:a", blob="b2")])
    for limit in (None, 1):
        got = pg.recall(scope="x", decay="exponential:2", limit=limit)
        want = model.recall(scope="x", decay="exponential:2", limit=limit)
        assert [(r.record.id, r.score) for r in got.results] == [
            (r.record.id, r.score) for r in want.results
        ]
        assert got.results[0].score == 5e-324


def test_recall_over_records_older_than_the_double_range_of_decay(pg: PostgresStore) -> None:
    """Exponential decay over more than 1075 half-lives used to make the
    server refuse the whole recall with an underflow error."""
    from roteiro_memory.stores.model import ModelStore

    model = ModelStore()
    writes = [MemoryWrite("lesson", f"old {i}", confidence=(i % 10) / 9) for i in range(1500)]
    pg.record_many(writes)
    model.record_many(writes)
    got = pg.recall(decay="exponential:1")
    want = model.recall(decay="exponential:1")
    assert [(r.record.id, r.score) for r in got.results] == [
        (r.record.id, r.score) for r in want.results
    ]
    assert got.results[-1].score == 0.0


# --- failures are reported, not crashes -------------------------------------


def test_stored_bytes_that_are_not_utf8_read_as_corrupt(pg: PostgresStore) -> None:
    rid = pg.record("lesson", "fine")
    pg.connection.execute("UPDATE agent_memory SET body = '\\xfffe'::bytea")
    with pytest.raises(Corrupt, match="not UTF-8"):
        pg.get(rid)


def test_a_connection_the_server_ended_is_replaced_at_the_next_call(pg: PostgresStore) -> None:
    """Ended while idle, as a restart ends it: the next call connects again,
    with nothing lost and nothing written twice (issue 22, item 6)."""
    import psycopg

    pg.record("lesson", "before")
    pid = pg.connection.info.backend_pid
    with psycopg.connect(pg.dsn, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    # The server says why and hangs up once the backend has gone.
    assert select.select([pg.connection.fileno()], [], [], 30)[0]
    assert pg.record("lesson", "after") == 2
    assert pg.connection.info.backend_pid != pid
    assert [r.body for r in pg.list().records] == ["after", "before"]


def test_protocol_server_serves_postgres_named_by_db(tmp_path: Path) -> None:
    import json
    import subprocess

    dsn = pg_server.fresh_store_dsn()
    requests = [
        {"id": 1, "op": "hello"},
        {"id": 2, "op": "memory.record", "args": {"kind": "lesson", "body": "over the wire"}},
        {"id": 3, "op": "memory.list"},
    ]
    try:
        done = subprocess.run(
            [sys.executable, "-m", "roteiro_memory", "protocol", "--db", dsn],
            input="".join(json.dumps(r) + "\n" for r in requests),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=tmp_path,
        )
    finally:
        pg_server.drop_schema(dsn)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert answers[0]["result"]["implementation"]["name"] == "roteiro-memory (postgres)"
    assert answers[1]["result"] == {"id": 1}
    assert [r["body"] for r in answers[2]["result"]["records"]] == ["over the wire"]


def test_a_role_with_only_table_rights_can_use_an_existing_store(pg: PostgresStore) -> None:
    """On a shared server, agents need not be allowed to create anything."""
    import psycopg
    from psycopg import sql

    role = f"agent_{pg.schema}"
    pg.record("lesson", "written by the owner")
    with psycopg.connect(pg.dsn, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        admin.execute(
            sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                sql.Identifier(pg.schema), sql.Identifier(role)
            )
        )
        admin.execute(
            sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {} TO {}").format(
                sql.Identifier(pg.schema), sql.Identifier(role)
            )
        )
        try:
            agent_dsn = psycopg.conninfo.make_conninfo(pg.dsn, user=role)
            agent = PostgresStore(agent_dsn, schema=pg.schema)
            try:
                agent.record("lesson", "written by an agent", supersedes=1)
                agent.cache_put("k", "f", "{}")
                assert agent.cache_get("k") is not None
                assert agent.cache_sweep(0).scanned == 1
                assert [r.body for r in agent.list().records] == ["written by an agent"]
            finally:
                agent.close()
        finally:
            admin.execute(sql.SQL("DROP OWNED BY {}").format(sql.Identifier(role)))
            admin.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def test_sweep_reads_entries_in_the_semantics_eviction_order(pg: PostgresStore) -> None:
    """The server orders the sweep's candidates (byte keys); that order must
    be eviction_key's, and the anchor rule it applies the semantics', for
    every entry."""
    import random

    from roteiro_memory.stores.sql.cache import APPLIES, EVICTION_ORDER
    from roteiro_memory.stores.sql.columns import CACHE_FROM

    rng = random.Random(5)
    pg.put_nodes([GraphNode("same", blob="b"), GraphNode("moved", blob="b1")])
    keys = [f"k{i}" for i in range(60)] + ["\u00e9", "\U0001f600", "Z", "a b", "\x00"]
    rng.shuffle(keys)
    for key in keys:
        pg.cache_put(key, "f", "{}", anchor=rng.choice([None, "same", "moved", "gone"]))
    pg.put_nodes([GraphNode("moved", blob="b2")])
    for key in rng.sample(keys, 30):
        pg.cache_get(key)
    entries = {e.key: e for e in pg.cache_entries()}
    rows = pg.connection.execute(
        f"SELECT c.key, ({APPLIES}){CACHE_FROM} ORDER BY {EVICTION_ORDER}"
    ).fetchall()
    got = [(bytes(row[0]).decode(), row[1] == 1) for row in rows]
    assert [(r.key, r.anchor_state) for r in pg.sweep_rows()] == [
        (e.key, e.anchor_state) for e in pg.cache_entries()
    ]
    assert {key: applies for key, applies in got} == {
        key: e.anchor_state.applies for key, e in entries.items()
    }
    want = sorted(
        entries,
        key=lambda k: eviction.eviction_key(
            entries[k].anchor_state.applies, entries[k].last_used, k
        ),
    )
    assert [key for key, _ in got] == want


@pytest.mark.parametrize(
    "dsn",
    ["postgresql://localhost/db?schema=", "postgresql://u:%zz@[::1"],
    ids=["empty-schema", "malformed"],
)
def test_a_dsn_with_an_empty_schema_or_malformed_is_refused_in_one_line(dsn: str) -> None:
    """An empty ``schema=`` no longer means the default silently; a DSN that
    does not parse is a one-line error that does not echo its password (libpq
    quotes the escape it cannot decode)."""
    with pytest.raises(InvalidStoreName) as raised:
        PostgresStore(dsn)
    message = str(raised.value)
    assert "\n" not in message
    assert "%zz" not in message
    assert ("schema" in message) if "schema=" in dsn else ("malformed" in message)


def test_sequence_overflow_reports_the_exhausted_sequence_on_postgres(pg: PostgresStore) -> None:
    """As on SQLite: an id counter at the end of 64 bits is named, and the
    refused write leaves the store as it was."""
    from roteiro_memory.check import check_store
    from roteiro_memory.errors import Corrupt

    pg.record("lesson", "one")
    pg.connection.execute("UPDATE agent_memory_ids SET last_id = %s WHERE id = 0", (2**63 - 1,))
    before = pg.snapshot()
    with pytest.raises(Corrupt, match=f"id counter is at {2**63 - 1}"):
        pg.record("lesson", "two")
    assert pg.snapshot() == before
    assert any("largest 64-bit id" in str(f) for f in check_store(pg))


def test_a_dsn_keeps_every_byte_but_its_schema_parameter_on_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An empty host (``postgresql:///DB``, the server named by PG*
    variables) and an ``options`` parameter holding a percent-encoded space
    reach libpq as written once ``schema=`` is taken out: the store connects
    to that database, in the schema named, with the options set."""
    import urllib.parse

    import psycopg.conninfo

    info = psycopg.conninfo.conninfo_to_dict(pg_server.shared_server_dsn())
    for name, variable in (("host", "PGHOST"), ("port", "PGPORT"), ("user", "PGUSER")):
        if name in info:
            monkeypatch.setenv(variable, str(info[name]))
    if "password" in info:
        monkeypatch.setenv("PGPASSWORD", str(info["password"]))
    database = urllib.parse.quote(str(info.get("dbname", "postgres")), safe="")
    schema = pg_server.fresh_schema()
    options = "options=-c%20statement_timeout%3D4321"
    store = PostgresStore(f"postgresql:///{database}?{options}&schema={schema}")
    try:
        assert store.schema == schema
        assert store.connection.execute("SHOW statement_timeout").fetchone() == ("4321ms",)
        assert store.connection.execute("SELECT current_schema()").fetchone() == (schema,)
    finally:
        store.drop()


def test_a_store_opens_again_as_itself_whatever_client_encoding_is_named(dsn: str) -> None:
    """A database of encoding SQL_ASCII, or a DSN or PGCLIENTENCODING naming
    it, made the driver read text as bytes: the store's own tables, read so,
    matched none of their names, and every open after the first refused the
    store as a schema of strangers' tables -- its writes out of reach."""
    named = f"{dsn}&client_encoding=SQL_ASCII"
    try:
        with PostgresStore(named) as store:
            first = store.record("lesson", "written once \u00e9 \U0001f600")
        with PostgresStore(named) as store:
            record = store.get(first)
            assert record is not None
            assert record.body == "written once \u00e9 \U0001f600"
            assert store.check() == []
    finally:
        pg_server.drop_schema(dsn)
