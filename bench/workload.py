"""The benchmark's data, with no backend in it.

Everything here is deterministic for a given :class:`Sizes`: the graph, the
records (with a tenth more that later writes supersede), the query and the
cache tier.  Anchors are spread so that each of the five anchor states holds
about a fifth of the records and of the cache entries:

* node ``i % 4 == 0`` keeps its blob (valid),
* ``i % 4 == 1`` gets a new blob after the writes (drifted),
* ``i % 4 == 2`` never had a blob (unverifiable),
* ``i % 4 == 3`` is removed after the writes (vanished),

and one record or entry in five has no anchor at all (unanchored).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from roteiro_memory.eviction import cache_entry_bytes
from roteiro_memory.results import GraphNode
from roteiro_memory.semantics import KIND_TOKENS
from roteiro_memory.store import MemoryWrite, Store
from roteiro_memory.valueclass import replace

__all__ = [
    "QUERY",
    "QUERY_TOKENS",
    "RARE_WORD",
    "CacheRow",
    "Sizes",
    "bodies_matching",
    "build_episodic",
    "cache_rows",
    "initial_nodes",
    "memory_writes",
    "settle_nodes",
]

MIB = 1024 * 1024


@dataclass(frozen=True)
class Sizes:
    """How big each scenario is."""

    records: int = 100_000
    """Live records in the episodic tier."""
    superseded_every: int = 11
    """One write in this many supersedes an earlier record, so about a tenth
    of the live count is superseded on top of it."""
    nodes: int = 10_000
    cache_entries: int = 65_536
    payload_bytes: int = 4096
    budget_bytes: int = 128 * MIB
    batch: int = 10_000
    """Records written by one ``record_many`` call."""
    repeat: int = 7
    """Timed runs of each measurement, interleaved with its floor."""

    @property
    def writes(self) -> int:
        """Writes needed for ``records`` live ones when every
        ``superseded_every``-th write supersedes an earlier record."""
        per = self.superseded_every
        return self.records + self.records // (per - 1)


QUICK = Sizes(
    records=20_000,
    nodes=2_000,
    cache_entries=8_192,
    budget_bytes=16 * MIB,
    batch=5_000,
    repeat=5,
)
"""Small enough for CI (seconds), big enough that fixed costs do not decide
the ratios."""

QUERY_TOKENS = ("migration", "timeout")
QUERY = " ".join(QUERY_TOKENS)
RARE_WORD = "quokka"
"""A word about ten live records hold, whatever the store's size."""
RARE_RECORDS = 10
_TOKEN_CHANCE = 0.6
"""Each query token lands in a body with this chance, so both together are in
about 36% of them."""

_VOCABULARY = """
the a an this that every each our its their when after before while because
although unless until since so but and or then also only never always often
rarely usually cache index parser worker request response handler session
token buffer queue scheduler thread lock writer reader client server socket
deadline config schema table column query planner branch commit merge rebase
review build release deploy rollback retry backoff latency throughput memory
heap stack pointer allocator encoder decoder payload header checksum hash
graph node edge anchor blob path module function method class trait crate
test fixture mock assertion benchmark profile trace log metric alert dashboard
fails breaks hangs stalls leaks races crashes panics returns blocks drops
keeps skips loads stores reads writes flushes evicts rebuilds resolves
compiles links imports exports parses renders formats validates rejects
accepts slow fast stale fresh large small empty full broken flaky stable
noisy quiet hidden visible nested shared local remote global private public
upstream downstream legacy current previous first last other same different
must should could would will may might can does did was is are were has have
because of in on at by for with from into over under through between against
without within around near about across behind beyond during except toward
CI Ubuntu Linux macOS Windows Python Rust SQLite PostgreSQL JSON YAML TOML
"""
_WORDS = _VOCABULARY.split()
_SUBJECTS = [
    "The parser",
    "Our worker pool",
    "The release job",
    "This module",
    "The cache layer",
    "A flaky test",
    "The scheduler",
    "Every nightly build",
    "The reader thread",
    "That handler",
]


def _sentence(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(6, 16))
    return f"{rng.choice(_SUBJECTS)} {' '.join(words)}."


def _body(rng: random.Random) -> str:
    """Prose of roughly 100 to 300 bytes, with each query token sometimes in it."""
    target = rng.randint(100, 300)
    extras = [token for token in QUERY_TOKENS if rng.random() < _TOKEN_CHANCE]
    parts = [f"Watch the {' and '.join(extras)} here."] if extras else []
    sentences: list[str] = []
    while sum(len(part) + 1 for part in parts + sentences) < target:
        sentences.append(_sentence(rng))
    while len(sentences) > 1 and sum(len(part) + 1 for part in parts + sentences) > 301:
        sentences.remove(max(sentences, key=len))
    for part in parts:
        sentences.insert(rng.randrange(len(sentences) + 1), part)
    return " ".join(sentences)


def _node_key(index: int) -> str:
    return f"src/pkg{index % 37}/mod{index // 37}.py::fn_{index}"


def _node_path(index: int) -> str:
    return f"src/pkg{index % 37}/mod{index // 37}.py"


def _blob(index: int, salt: str = "") -> str:
    return hashlib.sha1(f"{salt}{index}".encode()).hexdigest()


def initial_nodes(sizes: Sizes) -> list[GraphNode]:
    """The graph as records are written against it."""
    return [
        GraphNode(
            key=_node_key(i),
            kind="function",
            name=f"fn_{i}",
            path=_node_path(i),
            blob=None if i % 4 == 2 else _blob(i),
        )
        for i in range(sizes.nodes)
    ]


def settle_nodes(store: Store, sizes: Sizes) -> None:
    """Move the graph on after the writes: drift a quarter, remove a quarter."""
    store.put_nodes(
        GraphNode(_node_key(i), "function", f"fn_{i}", _node_path(i), _blob(i, "moved"))
        for i in range(1, sizes.nodes, 4)
    )
    store.remove_nodes(_node_key(i) for i in range(3, sizes.nodes, 4))


def _anchor(index: int, sizes: Sizes) -> str | None:
    if index % 5 == 0:
        return None
    return _node_key((index * 7919) % sizes.nodes)


def memory_writes(sizes: Sizes, count: int, *, seed: int = 13) -> list[MemoryWrite]:
    """``count`` plain writes (no supersession) with the usual spread of
    kinds, scopes, confidences and anchors."""
    rng = random.Random(seed)
    return [_write(rng, index, sizes, None) for index in range(count)]


def _write(rng: random.Random, index: int, sizes: Sizes, supersedes: int | None) -> MemoryWrite:
    return MemoryWrite(
        kind=KIND_TOKENS[index % len(KIND_TOKENS)],
        body=_body(rng),
        scope="repo" if index % 7 else "team",
        anchor=_anchor(index, sizes),
        confidence=None if index % 3 == 0 else round(rng.uniform(0.05, 1.0), 2),
        supersedes=supersedes,
    )


def _episodic_writes(sizes: Sizes) -> Iterator[MemoryWrite]:
    """Every write of the episodic tier, in id order (ids start at 1).

    Write ``n`` (1-based) with ``n % superseded_every == 0`` supersedes write
    ``n - 7``; those targets are distinct and are never superseders themselves.
    """
    rng = random.Random(7)
    per = sizes.superseded_every
    rare = _rare_writes(sizes)
    for n in range(1, sizes.writes + 1):
        target = n - 7 if n % per == 0 and n > 7 else None
        write = _write(rng, n, sizes, target)
        if n in rare:
            write = replace(write, body=f"{write.body} A {RARE_WORD} was seen.")
        yield write


def _rare_writes(sizes: Sizes) -> set[int]:
    """The writes holding :data:`RARE_WORD`: spread over the store, none of
    them later superseded (write ``n`` is superseded when ``n + 7`` is a
    multiple of ``superseded_every``)."""
    step = max(sizes.writes // RARE_RECORDS, 1)
    out = set()
    for n in range(1, sizes.writes + 1, step):
        while (n + 7) % sizes.superseded_every == 0:
            n += 1
        out.add(n)
    return out


def episodic_writes(sizes: Sizes) -> list[MemoryWrite]:
    """Every write :func:`build_episodic` makes, made beforehand, so a timed
    build times the store and not the making of its records."""
    return list(_episodic_writes(sizes))


def build_episodic(
    store: Store, sizes: Sizes, writes: Iterable[MemoryWrite] | None = None
) -> tuple[int, int]:
    """Fill an empty store's episodic tier and graph through the store's own
    operations (``writes`` from :func:`episodic_writes`, or made as they are
    written); returns (live bodies, live bodies matching :data:`QUERY`)."""
    store.put_nodes(initial_nodes(sizes))
    store.set_tree("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
    superseded = set()
    live_bodies: dict[int, str] = {}
    batch: list[MemoryWrite] = []
    made = _episodic_writes(sizes) if writes is None else writes
    for n, write in enumerate(made, start=1):
        batch.append(write)
        live_bodies[n] = write.body
        if write.supersedes is not None:
            superseded.add(write.supersedes)
        if len(batch) == sizes.batch:
            store.record_many(batch)
            batch = []
    if batch:
        store.record_many(batch)
    settle_nodes(store, sizes)
    for n in superseded:
        del live_bodies[n]
    return len(live_bodies), bodies_matching(live_bodies.values())


def bodies_matching(bodies: Iterable[str]) -> int:
    """How many bodies hold every query token (case-insensitively, as a
    substring, which is how recall matches)."""
    return sum(all(token in body.lower() for token in QUERY_TOKENS) for body in bodies)


@dataclass(frozen=True)
class CacheRow:
    """One cache entry as stored: ``bytes`` is what the store would compute."""

    key: str
    fingerprint: str
    bytes: int
    generation: int
    last_used: int
    anchor_key: str | None
    anchor_blob: str | None
    json: str


def cache_rows(sizes: Sizes, *, generation: int = 0) -> Iterator[CacheRow]:
    """The cache tier, one entry at a time (the whole tier is too big to hold).

    Entries are all of ``generation``; ``last_used`` is a shuffled 1..n so
    key order says nothing about recency.  Anchors follow the same spread as
    the records, blobs captured from :func:`initial_nodes`.
    """
    rng = random.Random(29)
    ticks = list(range(1, sizes.cache_entries + 1))
    rng.shuffle(ticks)
    filler = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz     ", k=sizes.payload_bytes))
    blobs = {node.key: node.blob for node in initial_nodes(sizes)}
    for i in range(sizes.cache_entries):
        key = f"context/{_node_path(i % max(sizes.nodes, 1))}/{i:06d}"
        fingerprint = _blob(i, "fp")[:16]
        head = f'{{"entry":{i},"text":"'
        body = filler[i % 64 :] + filler[: i % 64]
        payload = head + body[: sizes.payload_bytes - len(head) - 2] + '"}'
        anchor = _anchor(i, sizes)
        yield CacheRow(
            key=key,
            fingerprint=fingerprint,
            bytes=cache_entry_bytes(key, fingerprint, payload),
            generation=generation,
            last_used=ticks[i],
            anchor_key=anchor,
            anchor_blob=blobs.get(anchor) if anchor is not None else None,
            json=payload,
        )
