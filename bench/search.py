"""The search arm beside the engines people pick, and the early-stop recall.

5. ``search`` limit 10 of four query shapes -- 2 tokens (about 60% of the
   records each), 5 tokens, 1 rare token (about 10 records), 1 common token
   (about 84%) -- over N live records (100,000 and 1,000,000 by default),
   CPU medians, every engine's runs interleaved:

   * at most 10x tantivy's (bench extra), and at most 0.25x the search of
     :data:`previous.PREVIOUS` (that version's code, in a child process, on
     its own store of the same records); SQLite's FTS5 ``bm25()`` and bm25s
     (bench extra) beside them;
   * each run checks the results equal an exhaustive scorer's (every live
     record scored by the model's own functions, to the bit) and the previous
     version's, and that the search stopped early: it read fewer postings
     than its terms hold (shapes whose terms hold more than 1,000);
   * the term index at most 2x FTS5's index of the same records, and the
     store's bytes per record beside the previous version's.

   At 100,000 records also: one ``record()`` at most 3x one FTS5 insert of
   the same record (each its own transaction, on copies of the stores), and
   building the store at most 3x building FTS5's over the same records (ten
   thousand a transaction, each given its records already made; FTS5 writes
   a plain table beside it, the store validates, reads back and tokenizes in
   Python).  Then ``add`` and
   ``search`` latency at 10,000, 100,000 and 1,000,000 records: add flat
   (at most 2x from the smallest to the largest), search sub-linear (each
   shape at most 5x for 10x the records); a supersession's and a
   ``forget``'s beside them, unbounded.  A write's latency is the median of
   three runs, each the mean of a few hundred on a fresh copy.
6. ``recall`` limit 10 that stops early, over the largest N: at most 0.25x
   the full-scan ranking it replaced, with the same ids in the same order.

A store of N records is built once through ``record_many`` and kept by the
backend (``keep``), as are the peers' indexes, so later runs reuse them.
``search_checks`` (target 6, and the shapes against the previous version and
an exhaustive scorer) is written for any backend; the SQLite peers are
SQLite's (``shape_checks``); PostgreSQL's floors are in ``postgres.py``.
"""

from __future__ import annotations

import itertools
import random
import shutil
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from measure import Check, Timing, cpu_ratio_check, measure_runs
from targets import RECALL_LIMIT, Backend, Report, _steady
from workload import QUERY, RARE_WORD, Sizes, build_episodic, episodic_writes, memory_writes

from roteiro_memory import lexical
from roteiro_memory.results import Recalled
from roteiro_memory.semantics import Decay
from roteiro_memory.stores.sql import cellpostings, lexsearch

__all__ = [
    "EARLY_RECALL_BOUND",
    "SHAPES",
    "SearchBackend",
    "exhaustive",
    "postings_read",
    "search_checks",
    "shape_checks",
]

SHAPES = {
    "2 tokens": QUERY,
    "5 tokens": f"{QUERY} cache scheduler release",
    "1 rare token": RARE_WORD,
    "1 common token": "watch",
}
"""The query shapes, by name."""
WRITES = ("add", "supersede", "forget")
"""The writes whose latency is quoted (:func:`_write_latency`); only ``add``'s
growth has a bound."""
TANTIVY_BOUND = 10.0
PREVIOUS_BOUND = 0.25
INDEX_BOUND = 2.0
RECORD_BOUND = 3.0
BUILD_BOUND = 3.0
ADD_FLAT_BOUND = 2.0
SEARCH_GROWTH_BOUND = 5.0
EARLY_RECALL_BOUND = 0.25
WRITE_RUNS = 3
"""Runs of :func:`_write_run` a write's latency is the median of."""
LATENCY_RECORDS = 10_000
"""The smallest store the latencies are quoted at, besides ``counts``."""
EARLY_STOP_POSTINGS = 1_000
"""Shapes whose terms hold more postings than this must read fewer than all."""

Ratio = Callable[[str, Timing, Timing, float], Check]


class SearchBackend(Backend, Protocol):
    """What the search targets need beyond :class:`targets.Backend`."""

    def keep(self, label: str, build: Callable[[Any], object]) -> tuple[str, bool]: ...
    def recall_full_scan(self, store: Any) -> list[int]: ...
    def index_bytes(self, store: Any) -> int: ...


def kept_store(backend: SearchBackend, records: int, sizes: Sizes, report: Report) -> Any:
    """A store holding ``records`` live records, built once and kept."""
    start = time.perf_counter()
    locator, built = backend.keep(
        f"search-{records}", lambda store: build_episodic(store, replace(sizes, records=records))
    )
    took = f"built in {time.perf_counter() - start:.0f} s" if built else f"reused {locator}"
    report(f"search store: {records:,} live records, {took}")
    return backend.open(locator)


# --- what every run checks ------------------------------------------------------


def exhaustive(store: Any) -> Callable[[str], list[tuple[int, float]]]:
    """The top 10 of a query by scoring every live record with the model's
    own functions (its terms, the statistics over all of them, BM25, the
    evidence, the order), with no index: ``(id, score)`` each."""
    records = store.list().records
    documents = [
        lexical.Document(
            r.id,
            lexical.document_terms(
                r.body,
                None if r.anchor is None else r.anchor.key,
                None if r.anchor is None else r.anchor.path,
            ),
        )
        for r in records
    ]
    stats = lexical.CorpusStats.of(documents)
    generation = max((r.id for r in store.list(include_superseded=True).records), default=0)
    decay = Decay.parse("none")

    def top(query: str) -> list[tuple[int, float]]:
        terms = lexical.query_terms(query)
        wanted = set(terms)
        found = []
        for record, document in zip(records, documents, strict=True):
            if wanted.isdisjoint(document.terms):
                continue
            value = lexical.relevance(terms, document, stats)
            found.append(Recalled.found(record, generation, decay, value))
        found.sort(key=lambda r: lexical.search_key(r.score, r.record.id))
        return [(r.record.id, r.score) for r in found[:RECALL_LIMIT]]

    return top


def postings_read(store: Any, query: str) -> tuple[int, int]:
    """How many postings a search of ``query`` decoded, and how many its
    terms hold (their live document frequencies)."""
    before = cellpostings.decoded[0]
    found = store.search(query, limit=RECALL_LIMIT)
    read = cellpostings.decoded[0] - before
    frequency = store_frequencies(store, found.terms or [])
    return read, sum(frequency.values())


def store_frequencies(store: Any, terms: Sequence[str]) -> dict[str, int]:
    """Each term's live document frequency, as a search reads it."""
    from roteiro_memory.stores.sql import index

    with store._reading() as conn:
        planned = lexsearch.plan(conn, store.dialect, list(terms), index.read_stats(conn)[1])
    return dict(planned.corpus.document_frequency)


def verify(store: Any, report: Report, scorer: Any, previous: Any = None) -> None:
    """Each shape's results are the exhaustive scorer's (and the previous
    version's, while it tokenizes as this one does), and a search of many
    postings stopped early."""
    from previous import PREVIOUS_TOKENIZER

    if previous is not None and lexical.TOKENIZER.name != PREVIOUS_TOKENIZER:
        report(
            f"  the previous version tokenizes as {PREVIOUS_TOKENIZER}, this one as"
            f" {lexical.TOKENIZER.name}: its results are not compared, its times are"
        )
        previous = None
    for name, query in SHAPES.items():
        ours = [(r.record.id, r.score) for r in store.search(query, limit=RECALL_LIMIT).results]
        if ours != scorer(query):
            raise RuntimeError(f"search {name}: the results differ from the exhaustive scorer's")
        if previous is not None:
            theirs = [tuple(pair) for pair in previous.ask(op="search", query=query)["results"]]
            if ours != theirs:
                raise RuntimeError(f"search {name}: the results differ from the previous version's")
        read, held = postings_read(store, query)
        report(
            f"  {name} {query!r}: top 10 equal the exhaustive scorer"
            f"{'s and the previous version' if previous is not None else ''}'s;"
            f" read {read:,} of its terms' {held:,} postings ({100 * read / max(held, 1):.1f}%)"
        )
        if held > EARLY_STOP_POSTINGS and read >= held:
            raise RuntimeError(f"search {name}: read every posting, so it did not stop early")


# --- target 6, on any backend ---------------------------------------------------


def search_checks(
    backend: SearchBackend,
    sizes: Sizes,
    report: Report,
    debug: Report | None,
    counts: list[int],
    *,
    ratio: Ratio = cpu_ratio_check,
    prefix: str = "",
    verified: bool = False,
) -> list[Check]:
    """Target 6 over the largest of ``counts``, after checking the shapes'
    results at each unless ``verified`` (the shapes' timings are the
    backend's: ``shape_checks``)."""
    checks: list[Check] = []
    for records in counts:
        if verified and records != max(counts):
            continue
        store = kept_store(backend, records, sizes, report)
        try:
            if not verified:
                verify(store, report, exhaustive(store))
            if records != max(counts):
                continue
            trials = {
                "full scan": _steady(lambda: backend.recall_full_scan(store)),  # noqa: B023
                "early stop": _steady(lambda: store.recall(limit=RECALL_LIMIT)),  # noqa: B023
            }
            early = store.recall(limit=RECALL_LIMIT)
            if backend.recall_full_scan(store) != [r.record.id for r in early.results]:
                raise RuntimeError("the early-stop recall differs from the full scan")
            times = measure_runs(trials, sizes.repeat, warmup=True)
        finally:
            store.close()
        checks.append(
            ratio(
                f"{prefix}recall early stop vs full, {records:,}",
                times["early stop"],
                times["full scan"],
                EARLY_RECALL_BOUND,
            )
        )
    return checks


# --- target 5 on SQLite ------------------------------------------------------------


def _interleaved(runs: dict[str, Callable[[], float]], repeat: int) -> dict[str, list[float]]:
    """``repeat`` CPU seconds of each run, after one untimed run of each; each
    run returns its own CPU time (a child reports its own)."""
    import gc

    for run in runs.values():
        run()
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for round_ in range(repeat):
        for name in names if round_ % 2 == 0 else reversed(names):
            gc.collect()
            times[name].append(runs[name]())
    return times


def _cpu(action: Callable[[], object]) -> Callable[[], float]:
    def run() -> float:
        start = time.process_time()
        action()
        return time.process_time() - start

    return run


NO_POSTING = "no posting"
ABSENT_WORD = "qzabsentvx"
"""A word no record of the workload holds: a search of it reads the
statistics and finds no cell, the least any search of this store does."""


def _no_posting_line(times: dict[str, list[float]], previous: str) -> str:
    """What a search that reads no posting costs beside the previous
    version's rare-token search and the bound it sets: the path every search
    takes (a transaction, the statistics, the query's cells, the recent
    records), before any posting is read."""
    least = statistics.median(times[NO_POSTING])
    theirs = statistics.median(times[previous])
    return (
        f"  floor: a search of a word no record holds costs {least * 1000:.2f} ms,"
        f" {least / theirs:.2f}x {previous}'s rare-token search; the bound allows"
        f" {PREVIOUS_BOUND * theirs * 1000:.2f} ms"
    )


def _ratio(name: str, subject: list[float], floor: list[float], bound: float, more: str) -> Check:
    mid_s, mid_f = statistics.median(subject), statistics.median(floor)
    return Check(
        name, mid_s / mid_f, bound, "x", f"{mid_s * 1000:8.2f} vs {mid_f * 1000:8.2f} ms{more}"
    )


def shape_checks(
    backend: SearchBackend, sizes: Sizes, report: Report, counts: list[int], scratch: Path
) -> list[Check]:
    """Target 5 on SQLite: the shapes against the peers and the previous
    version, sizes, record(), the build and the latencies."""
    import peers
    import previous as prior
    import searchcost

    checks: list[Check] = []
    latency: dict[int, dict[str, float]] = {}
    for records in sorted({LATENCY_RECORDS} - set(counts)) if max(counts) > LATENCY_RECORDS else ():
        store = kept_store(backend, records, sizes, report)
        try:
            latency[records] = {
                name: statistics.median(
                    _interleaved(
                        {"ours": _cpu(lambda q=q, s=store: s.search(q, limit=RECALL_LIMIT))},
                        sizes.repeat,
                    )["ours"]
                )
                for name, q in SHAPES.items()
            }
            latency[records].update(_write_latency(store, scratch, backend))
        finally:
            store.close()
    child = prior.Previous({"batch": sizes.batch})
    try:
        for records in counts:
            store = kept_store(backend, records, sizes, report)
            try:
                old = child.ask(op="open", records=records)
                report(
                    f"  {prior.PREVIOUS} store: {'built' if old['built'] else 'reused'}"
                    f" {old['path']} ({old['seconds']:.0f} s)"
                )
                verify(store, report, exhaustive(store), child)
                texts = peers.live_texts(store.connection)
                engines = [
                    peers.Fts5(f"{records}"),
                    peers.Tantivy(f"{records}"),
                    peers.Bm25s(f"{records}"),
                ]
                for engine in engines:
                    spent = engine.build(texts)
                    if spent is not None:
                        report(
                            f"  {engine.name}: {len(texts):,} records indexed, CPU {spent:.1f} s"
                        )
                checks += _size_checks(backend, store, engines[0], records, old, report)
                latency[records] = {}
                for name, query in SHAPES.items():
                    runs = {"ours": _cpu(lambda q=query, s=store: s.search(q, limit=RECALL_LIMIT))}
                    runs.update({e.name: _cpu(lambda e=e, q=query: e.search(q)) for e in engines})
                    runs[prior.PREVIOUS] = lambda q=query: child.ask(op="search", query=q)["cpu"]
                    if query == RARE_WORD:
                        if store.search(ABSENT_WORD, limit=RECALL_LIMIT).results:
                            raise RuntimeError(f"a record holds {ABSENT_WORD!r}")
                        runs[NO_POSTING] = _cpu(
                            lambda s=store: s.search(ABSENT_WORD, limit=RECALL_LIMIT)
                        )
                    times = _interleaved(runs, sizes.repeat)
                    ours = times["ours"]
                    latency[records][name] = statistics.median(ours)
                    beside = "".join(
                        f"; {e.name} {statistics.median(times[e.name]) * 1000:.2f} ms"
                        f" ({statistics.median(ours) / statistics.median(times[e.name]):.1f}x)"
                        for e in engines
                        if e.name != "tantivy"
                    )
                    checks.append(
                        _ratio(
                            f"search {name} vs tantivy, {records:,}",
                            ours,
                            times["tantivy"],
                            TANTIVY_BOUND,
                            beside,
                        )
                    )
                    checks.append(
                        _ratio(
                            f"search {name} vs {prior.PREVIOUS}, {records:,}",
                            ours,
                            times[prior.PREVIOUS],
                            PREVIOUS_BOUND,
                            f"; CPU medians of {sizes.repeat}",
                        )
                    )
                    for check in checks[-2:]:
                        report(check.line())
                    if NO_POSTING in times:
                        report(_no_posting_line(times, prior.PREVIOUS))
                latency[records].update(_write_latency(store, scratch, backend))
                if records == 100_000:
                    checks += _write_checks(backend, store, engines[0], sizes, scratch, report)
                    checks += searchcost.word_checks(
                        store, report, _interleaved, _cpu, sizes.repeat
                    )
                    checks.append(searchcost.check_store_check(str(store.path), report))
            finally:
                store.close()
    finally:
        child.close()
    return checks + _latency_checks(latency, report)


def _size_checks(
    backend: SearchBackend, store: Any, fts5: Any, records: int, old: dict[str, Any], report: Report
) -> list[Check]:
    ours, theirs = backend.index_bytes(store), fts5.index_bytes()
    whole = backend.size_bytes(str(store.path))
    report(
        f"  store file {whole / records:,.0f} bytes a record ({whole / 2**20:.1f} MiB);"
        f" {prior_name()}'s {old['bytes'] / records:,.0f} ({old['bytes'] / 2**20:.1f} MiB)"
    )
    check = Check(
        f"index size vs FTS5's, {records:,}",
        ours / theirs,
        INDEX_BOUND,
        "x",
        f"{ours / 2**20:.1f} MiB vs {theirs / 2**20:.1f} MiB",
    )
    report(check.line())
    return [check]


def prior_name() -> str:
    import previous as prior

    return prior.PREVIOUS


def _copy(backend: SearchBackend, store: Any, scratch: Path, label: str) -> Any:
    target = scratch / f"{label}.db"
    shutil.copyfile(store.path, target)
    return backend.open(str(target))


def _write_latency(store: Any, scratch: Path, backend: SearchBackend) -> dict[str, float]:
    """Each write's :func:`_write_run`, the median of :data:`WRITE_RUNS`
    (each on a fresh copy, its page cache cold): one run's mean moves with
    what else the machine does, as the search times' single runs would."""
    runs = [_write_run(store, scratch, backend) for _ in range(WRITE_RUNS)]
    return {name: statistics.median(run[name] for run in runs) for name in WRITES}


def _write_run(
    store: Any, scratch: Path, backend: SearchBackend, count: int = 300
) -> dict[str, float]:
    """Mean CPU seconds of one ``record()``, one supersession and one
    ``forget`` on a copy of ``store``, merges included: ``count`` adds, then
    a third as many supersessions and forgets of live records picked at
    random (most of them long merged into the segments)."""
    copy = _copy(backend, store, scratch, "add-latency")
    try:
        writes = memory_writes(Sizes(), count, seed=41)
        start = time.process_time()
        for w in writes:
            copy.record(w.kind, w.body, scope=w.scope, anchor=w.anchor, confidence=w.confidence)
        spent = {"add": (time.process_time() - start) / count}
        live = copy.connection.execute(
            "SELECT id FROM agent_memory WHERE superseded_by IS NULL ORDER BY id"
        )
        each = count // 3
        picked = random.Random(41).sample([row[0] for row in live], 2 * each)
        start = time.process_time()
        for w, old in zip(writes, picked[:each], strict=False):
            copy.record(
                w.kind,
                w.body,
                scope=w.scope,
                anchor=w.anchor,
                confidence=w.confidence,
                supersedes=old,
            )
        spent["supersede"] = (time.process_time() - start) / each
        start = time.process_time()
        for old in picked[each:]:
            copy.forget(old)
        spent["forget"] = (time.process_time() - start) / each
        return spent
    finally:
        copy.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{scratch / 'add-latency.db'}{suffix}").unlink(missing_ok=True)


def _write_checks(
    backend: SearchBackend, store: Any, fts5: Any, sizes: Sizes, scratch: Path, report: Report
) -> list[Check]:
    """record() against an FTS5 insert, and the build against FTS5's."""
    import peers

    copy = _copy(backend, store, scratch, "record")
    fts_copy = scratch / "record-fts5.db"
    shutil.copyfile(fts5.path, fts_copy)
    conn = peers.sqlite3.connect(fts_copy, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    writes = memory_writes(Sizes(), 600, seed=43)
    ours: list[float] = []
    theirs: list[float] = []
    next_id = int(conn.execute("SELECT MAX(id) FROM docs").fetchone()[0]) + 1
    try:
        for n, w in enumerate(writes):
            start = time.process_time()
            copy.record(w.kind, w.body, scope=w.scope, anchor=w.anchor, confidence=w.confidence)
            ours.append(time.process_time() - start)
            start = time.process_time()
            peers.fts5_insert(conn, [(next_id + n, " ".join(t for t in (w.body, w.anchor) if t))])
            theirs.append(time.process_time() - start)
    finally:
        copy.close()
        conn.close()
    mean_o, mean_t = statistics.mean(ours), statistics.mean(theirs)
    checks = [
        Check(
            "record() vs an FTS5 insert, 100,000",
            mean_o / mean_t,
            RECORD_BOUND,
            "x",
            f"mean {mean_o * 1000:.3f} vs {mean_t * 1000:.3f} ms (merges and FTS5's own"
            f" included); medians {statistics.median(ours) * 1000:.3f} vs"
            f" {statistics.median(theirs) * 1000:.3f} ms",
        )
    ]
    report(checks[-1].line())
    fresh = backend.create("build-100000")
    try:
        built_sizes = replace(sizes, records=100_000)
        writes = episodic_writes(built_sizes)  # FTS5 is given its texts made, too
        start = time.process_time()
        build_episodic(fresh, built_sizes, writes)
        built = time.process_time() - start
        texts = peers.live_texts(fresh.connection)
    finally:
        fresh.close()
        backend.discard("build-100000")
    target = scratch / "build-fts5.db"
    start = time.process_time()
    peers.fts5_build(target, texts).close()
    fts_built = time.process_time() - start
    checks.append(
        Check(
            "build 100,000 vs FTS5's build",
            built / fts_built,
            BUILD_BOUND,
            "x",
            f"CPU {built:.1f} s vs {fts_built:.1f} s",
        )
    )
    report(checks[-1].line())
    return checks


def _latency_checks(latency: dict[int, dict[str, float]], report: Report) -> list[Check]:
    sizes = sorted(latency)
    for name in [*WRITES, *SHAPES]:
        shown = "  ".join(f"{n:>9,}: {latency[n][name] * 1000:7.2f} ms" for n in sizes)
        report(f"  latency {name:<15} {shown}")
    if len(sizes) < 2:
        return []
    small, large = sizes[0], sizes[-1]
    checks = [
        Check(
            f"add latency {large:,} / {small:,}",
            latency[large]["add"] / latency[small]["add"],
            ADD_FLAT_BOUND,
            "x",
            "flat: the same cost whatever the store's size",
        )
    ]
    for name in SHAPES:
        for below, above in itertools.pairwise(sizes):
            growth = latency[above][name] / latency[below][name]
            checks.append(
                Check(
                    f"search {name} {above:,} / {below:,}",
                    growth,
                    SEARCH_GROWTH_BOUND * (above / below) / 10,
                    "x",
                    f"sub-linear: {above / below:.0f}x the records",
                )
            )
    for check in checks:
        report(check.line())
    return checks
