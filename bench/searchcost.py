"""What a search's words cost, and what checking a searchable store costs.

Over the search store of 100,000 live records (``bench/search.py``), CPU
medians, runs interleaved:

* a query's cost is bounded by its distinct terms that records hold: 300
  distinct words no record holds, the 2-token shape's 2 words among 298 such
  words, the 2 repeated to 10,000 words, and 10,000 distinct words (refused
  whole, in one line naming the cap,
  :data:`roteiro_memory.lexical.MAX_QUERY_TERMS`) each within 2x the 2 words
  alone (reading a long query's words is most of what the last two cost);
* ``roteiro-check-store``'s checking (SQLite's integrity check, the record
  rules and the term index against the records) at most 2x SQLite's own
  ``PRAGMA integrity_check`` on the same file; beside it, what tokenizing
  every live record alone costs, which the check does too.
"""

from __future__ import annotations

import sqlite3
import statistics
from collections.abc import Callable
from typing import Any

from measure import Check
from targets import RECALL_LIMIT, Report
from workload import QUERY

from roteiro_memory import lexical
from roteiro_memory.errors import BadRequest

__all__ = ["CHECK_BOUND", "WORDS_BOUND", "check_store_check", "word_checks"]

WORDS_BOUND = 2.0
CHECK_BOUND = 2.0
CHECK_RUNS = 3
"""Timed runs of each side of the check-store target (it reads every record)."""


def _unknown(count: int) -> list[str]:
    """``count`` distinct words no record of the workload holds."""
    return [f"qz{n:05d}vx" for n in range(count)]


def word_checks(
    store: Any,
    report: Report,
    interleaved: Callable[[dict[str, Callable[[], float]], int], dict[str, list[float]]],
    cpu: Callable[[Callable[[], object]], Callable[[], float]],
    repeat: int,
) -> list[Check]:
    """Issue 22's query lengths over ``store``, against the 2 words alone."""
    words = QUERY.split()
    queries = {
        "300 words no record holds": " ".join(_unknown(300)),
        "the 2 among 298 words no record holds": " ".join([*words, *_unknown(298)]),
        "the 2 repeated to 10,000 words": " ".join(words * 5_000),
    }
    many = " ".join(_unknown(10_000))
    for query in queries.values():
        held = {r.record.id for r in store.search(query, limit=RECALL_LIMIT).results}
        if not held and words[0] in query:
            raise RuntimeError("a query holding the 2 words found nothing")
    refusal = ""

    def refused() -> None:
        nonlocal refusal
        try:
            store.search(many, limit=RECALL_LIMIT)
        except BadRequest as error:
            refusal = str(error)
        else:
            raise RuntimeError("a search of 10,000 distinct words was not refused")

    runs = {"2 words": cpu(lambda: store.search(QUERY, limit=RECALL_LIMIT))}
    runs.update(
        {
            name: cpu(lambda q=query: store.search(q, limit=RECALL_LIMIT))
            for name, query in queries.items()
        }
    )
    runs["10,000 distinct words"] = cpu(refused)
    times = interleaved(runs, repeat)
    base = statistics.median(times["2 words"])
    if "\n" in refusal or str(lexical.MAX_QUERY_TERMS) not in refusal.replace(",", ""):
        raise RuntimeError(f"the refusal is not one line naming the cap: {refusal!r}")
    checks = []
    for name in [*queries, "10,000 distinct words"]:
        mid = statistics.median(times[name])
        more = f"; refused: {refusal}" if name == "10,000 distinct words" else ""
        checks.append(
            Check(
                f"search {name} vs 2 words, 100,000",
                mid / base,
                WORDS_BOUND,
                "x",
                f"{mid * 1000:8.2f} vs {base * 1000:8.2f} ms{more}",
            )
        )
        report(checks[-1].line())
    return checks


def check_store_check(path: str, report: Report) -> Check:
    """``roteiro-check-store``'s checking of the file at ``path`` against
    ``PRAGMA integrity_check`` on it, CPU medians of :data:`CHECK_RUNS`
    interleaved runs in this process (after one untimed run of each)."""
    import time

    from roteiro_memory.precommit import check_store

    def ours() -> float:
        start = time.process_time()
        found = list(check_store.check([path]))
        spent = time.process_time() - start
        if found:
            raise RuntimeError(f"roteiro-check-store found problems: {found[:3]}")
        return spent

    def theirs() -> float:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            start = time.process_time()
            rows = conn.execute("PRAGMA integrity_check").fetchall()
            spent = time.process_time() - start
        finally:
            conn.close()
        if rows != [("ok",)]:
            raise RuntimeError(f"integrity_check: {rows[:3]}")
        return spent

    ours()
    theirs()
    mine: list[float] = []
    floor: list[float] = []
    for round_ in range(CHECK_RUNS):
        for run, into in ((ours, mine), (theirs, floor))[:: 1 if round_ % 2 == 0 else -1]:
            into.append(run())
    mid_o, mid_t = statistics.median(mine), statistics.median(floor)
    check = Check(
        "check-store vs PRAGMA integrity_check, 100,000",
        mid_o / mid_t,
        CHECK_BOUND,
        "x",
        f"CPU {mid_o:.2f} vs {mid_t:.2f} s; medians of {CHECK_RUNS}",
    )
    report(check.line())
    tokenizing = statistics.median(_tokenizing(path) for _ in range(CHECK_RUNS))
    report(
        f"  floor: tokenizing every live record again, which the check does to compare the"
        f" index with the records, costs CPU {tokenizing:.2f} s alone; the bound allows"
        f" {CHECK_BOUND * mid_t:.2f} s for the whole check"
    )
    return check


def _tokenizing(path: str) -> float:
    """CPU seconds of the one tokenizer over every live record of the store
    at ``path`` (read first, untimed): what the check spends working out the
    terms each record holds, to compare the index with them."""
    import time

    from roteiro_memory.stores.sql import index

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            "SELECT body, anchor_key, anchor_path FROM agent_memory WHERE superseded_by IS NULL"
        ).fetchall()
    finally:
        conn.close()
    start = time.process_time()
    for body, key, anchor_path in rows:
        index.posting(body, key, anchor_path)
    return time.process_time() - start
