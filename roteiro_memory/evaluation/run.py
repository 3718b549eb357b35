"""One evaluation run: load each haystack into a fresh store, ask every arm
every query, score the ranked keys against the gold.

The result is a JSON-ready mapping whose every part but ``timing`` depends
only on the inputs, so two runs over the same dataset are byte-identical
once timing is left out (``timing=False``).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from roteiro_memory import lexical
from roteiro_memory.evaluation import metrics
from roteiro_memory.evaluation.arms import ARMS, Arm, Loaded, make_arm
from roteiro_memory.evaluation.datasets.corpus import Dataset, Haystack, Item
from roteiro_memory.evaluation.measuring import MeasuringModel
from roteiro_memory.evaluation.scoring import ScoringModel, parse_scoring
from roteiro_memory.semantics import MAX_BODY_BYTES
from roteiro_memory.store import MemoryWrite, Store
from roteiro_memory.stores.sqlite.store import SQLiteStore

__all__ = ["RESULT_SCHEMA", "MeasuringModel", "evaluate", "load", "model_only", "split_body"]

RESULT_SCHEMA = "roteiro.eval/v1"
ALL = "all"
"""The style every query is also counted under."""


STORES = ("sqlite", "memory")
"""The stores the arms can run on: the embedded SQLite store, as a user has
it, or the in-memory model (needed to measure tokenizer variants)."""
DEFAULT_STORE = "sqlite"


def model_only(store: str, tokenizer: lexical.Tokenizer, scoring: str) -> str | None:
    """Why a tokenizer or scoring variant cannot be measured on ``store``, or
    None: variants run on the model only, since the SQL stores' term index
    holds the protocol's tokenizer and they rank by its scoring."""
    if store == "memory":
        return None
    if tokenizer != lexical.TOKENIZER:
        return (
            f"--tokenizer {tokenizer.name} needs --store memory: the {store} store's term "
            f"index holds the protocol's tokenizer ({lexical.TOKENIZER.name}) only"
        )
    if scoring != "bm25":
        return (
            f"--scoring {scoring} needs --store memory: the {store} store ranks by the "
            "protocol's scoring only"
        )
    return None


def split_body(body: str, limit: int = MAX_BODY_BYTES) -> list[str]:
    """``body`` cut at whitespace into pieces of at most ``limit`` UTF-8 bytes
    (a word longer than that is cut inside), so a long session can be stored
    as consecutive records answering to one key."""
    if len(body.encode("utf-8")) <= limit:
        return [body]
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    for word in body.split():
        encoded = len(word.encode("utf-8"))
        while encoded > limit:
            cut = word[: limit // 4]
            pieces.append(cut)
            word = word[len(cut) :]
            encoded = len(word.encode("utf-8"))
        if current and size + 1 + encoded > limit:
            pieces.append(" ".join(current))
            current, size = [], 0
        size += encoded + (1 if current else 0)
        current.append(word)
    if current:
        pieces.append(" ".join(current))
    return pieces


def load(store: Store, haystack: Haystack) -> Loaded:
    """Write ``haystack`` into ``store`` (reset first) and move the graph to
    its read-time state; what each store id stands for."""
    store.reset()
    store.replace_graph(haystack.nodes_at_write, "write")
    key_of: dict[int, str] = {}
    last_id: dict[str, int] = {}
    _write(store, haystack.items, key_of, last_id)
    store.replace_graph(haystack.nodes_at_read, "read")
    _write(store, haystack.later_items, key_of, last_id)
    # A repeat answers as the item it repeats: one key for both.
    repeats = {
        item.key: item.repeats
        for item in (*haystack.items, *haystack.later_items)
        if item.repeats is not None
    }
    key_of = {store_id: repeats.get(key, key) for store_id, key in key_of.items()}
    listing = store.list(include_superseded=True)
    text_of = {
        r.id: "\n".join(
            [r.body, r.anchor.key if r.anchor else "", (r.anchor.path or "") if r.anchor else ""]
        )
        for r in listing.records
    }
    return Loaded(
        store=store,
        key_of=key_of,
        scope_of={r.id: r.scope for r in listing.records},
        text_of=text_of,
        repeated=frozenset(repeats.values()),
    )


def _write(
    store: Store, items: Iterable[Item], key_of: dict[int, str], last_id: dict[str, int]
) -> None:
    """Write ``items`` in one batch; a long body becomes consecutive records
    under one key, and ``supersedes`` names the key's last record."""
    writes: list[MemoryWrite] = []
    keys: list[str] = []
    base = max(key_of, default=0)
    pending: dict[str, int] = {}
    for item in items:
        if not item.body.strip():
            continue
        for piece in split_body(item.body):
            target = item.supersedes
            supersedes = None
            if target is not None:
                supersedes = pending.get(target, last_id.get(target))
            writes.append(
                MemoryWrite(item.kind, piece, item.scope, item.anchor, item.confidence, supersedes)
            )
            keys.append(item.key)
        # Ids follow the last one written, as nothing is forgotten while loading.
        pending[item.key] = base + len(writes)
    ids = store.record_many(writes)
    if ids != list(range(base + 1, base + 1 + len(writes))):
        raise RuntimeError(f"store {store.name!r} did not hand out consecutive ids: {ids[:5]}...")
    key_of.update(zip(ids, keys, strict=True))
    last_id.update(pending)


def _noisy(store: Store) -> dict[int, bool]:
    """Whether each stored record is noise: superseded, or not applying."""
    listing = store.list(include_superseded=True)
    return {r.id: (not r.is_live) or (not r.applies) for r in listing.records}


def evaluate(
    dataset: Dataset,
    arms: Sequence[str] = tuple(ARMS),
    store_factory: Callable[[], Store] | None = None,
    *,
    store: str = DEFAULT_STORE,
    tokenizer: lexical.Tokenizer = lexical.TOKENIZER,
    scoring: str = "bm25",
    timing: bool = True,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Score every arm on every query of ``dataset``; aggregates only.

    The store is ``store_factory()`` when given, else a fresh store of the
    kind ``store`` names (:data:`STORES`).  A tokenizer variant is measured
    on the model only: the SQL stores' term index holds the one tokenizer
    PROTOCOL fixes; so is a scoring variant
    (:mod:`roteiro_memory.evaluation.scoring`, by its name).  Both stores
    rank identically (a test compares the whole result), so which one ran is
    not part of the result.  A question a search refuses is left out of
    every arm and counted under ``excluded`` (:func:`_searchable`)."""
    if store not in STORES:
        raise ValueError(f"unknown store {store!r}: expected one of {', '.join(STORES)}")
    refusal = None if store_factory is not None else model_only(store, tokenizer, scoring)
    if refusal is not None:
        raise ValueError(refusal)
    made: list[Arm] = [make_arm(name) for name in arms]
    totals: dict[str, dict[str, metrics.Aggregate]] = {arm.name: {} for arm in made}
    if store_factory is not None:
        opened = store_factory()
    elif scoring != "bm25":
        opened = ScoringModel(parse_scoring(scoring), tokenizer)
    elif store == "memory":
        opened = MeasuringModel(tokenizer)
    else:
        opened = SQLiteStore.temporary()
    haystacks = queries = 0
    try:
        for haystack in dataset.haystacks:
            loaded = load(opened, haystack)
            noisy = _noisy(opened)
            haystacks += 1
            for query in haystack.queries:
                if not _searchable(query.text, tokenizer):
                    dataset.info.exclude(UNSEARCHABLE)
                    continue
                queries += 1
                for arm in made:
                    started = time.perf_counter()
                    ids = arm.rank(loaded, query)
                    seconds = time.perf_counter() - started
                    outcome = _outcome(ids, loaded, noisy, query.gold, seconds)
                    for style in (ALL, query.style):
                        totals[arm.name].setdefault(style, metrics.Aggregate()).add(outcome)
            if progress is not None:
                progress(haystacks)
    finally:
        opened.close()
    return _result(dataset, totals, haystacks, queries, timing, tokenizer, scoring)


UNSEARCHABLE = (
    f"question of more than {lexical.MAX_QUERY_TERMS:,} distinct terms (a search refuses it)"
)


def _searchable(question: str, tokenizer: lexical.Tokenizer) -> bool:
    """Whether a search takes ``question``.  One it refuses (more than
    :data:`~roteiro_memory.lexical.MAX_QUERY_TERMS` distinct terms) is left
    out of every arm, as an adapter leaves out what cannot be scored: the
    arms are compared over the same questions."""
    from roteiro_memory.errors import BadRequest

    try:
        lexical.query_terms(question, tokenizer)
    except BadRequest:
        return False
    return True


def _outcome(
    ids: Iterable[int],
    loaded: Loaded,
    noisy: dict[int, bool],
    gold: frozenset[str],
    seconds: float,
) -> metrics.QueryOutcome:
    keys: list[str] = []
    flags: list[bool] = []
    repeats: list[bool] = []
    for store_id in ids:
        key = loaded.key_of[store_id]
        if len(repeats) < max(metrics.KS):
            repeats.append(key in keys and key in loaded.repeated)
        if key in keys:
            continue
        keys.append(key)
        flags.append(noisy[store_id])
        if len(keys) >= max(metrics.KS):
            break
    return metrics.QueryOutcome(
        tuple(keys),
        gold,
        metrics.noise_counts(flags),
        seconds,
        duplicates=metrics.noise_counts(repeats),
        lines=len(repeats),
    )


def _result(
    dataset: Dataset,
    totals: dict[str, dict[str, metrics.Aggregate]],
    haystacks: int,
    queries: int,
    timing: bool,
    tokenizer: lexical.Tokenizer,
    scoring: str = "bm25",
) -> dict[str, Any]:
    info = dataset.info
    described: dict[str, Any] = {
        "name": info.name,
        "licence": info.licence,
        "source": None
        if info.source is None
        else {"file": info.source.file, "sha256": info.source.sha256},
        "sample": info.sample,
        "seed": info.seed,
        "options": dict(sorted(info.options.items())),
        "haystacks": haystacks,
        "queries": queries,
        "excluded": dict(sorted(info.excluded.items())),
    }
    out: dict[str, Any] = {
        "schema": RESULT_SCHEMA,
        "dataset": described,
        "search": {
            "tokenizer": tokenizer.name,
            "k1": lexical.BM25.k1,
            "b": lexical.BM25.b,
            # Named only when it is a variant, so the protocol's results read as they did.
            **({} if scoring == "bm25" else {"scoring": scoring}),
        },
        "ks": list(metrics.KS),
        "arms": {
            arm: {
                style: {
                    "queries": agg.queries,
                    **{name: metrics.exact(v) for name, v in agg.metrics().items()},
                }
                for style, agg in _ordered(styles)
            }
            for arm, styles in totals.items()
        },
    }
    if "bm25s" in totals:
        version = importlib.import_module("bm25s").__version__  # the arm imported it
        out["yardstick"] = {"library": "bm25s", "version": version}
    if timing:
        out["timing"] = {
            arm: {style: {"median_ms": agg.median_ms()} for style, agg in _ordered(styles)}
            for arm, styles in totals.items()
        }
    return out


def _ordered(styles: dict[str, metrics.Aggregate]) -> list[tuple[str, metrics.Aggregate]]:
    """``all`` first, then the styles by name."""
    return sorted(styles.items(), key=lambda pair: (pair[0] != ALL, pair[0]))
