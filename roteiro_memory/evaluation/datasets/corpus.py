"""What a dataset hands the harness: records to load, queries with gold keys.

A dataset is a stream of :class:`Haystack` objects, each loaded into a fresh
store on its own (LongMemEval gives every question its own haystack; LoCoMo
one per conversation; ``coding`` one repository).  Gold is named by record
*keys*, the dataset's own ids, never by store ids, so several stored records
(the chunks of one long session) may answer to one key.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from roteiro_memory.results import GraphNode
from roteiro_memory.semantics import DEFAULT_SCOPE

__all__ = ["Dataset", "DatasetInfo", "Haystack", "Item", "Query", "Source"]


@dataclass(frozen=True)
class Item:
    """One record to write, under the dataset's ``key``."""

    key: str
    body: str
    kind: str = "outcome"
    scope: str = DEFAULT_SCOPE
    anchor: str | None = None
    confidence: float | None = None
    supersedes: str | None = None
    """The key of an earlier item this one supersedes (its last chunk)."""
    repeats: str | None = None
    """The key of an earlier item this one nearly repeats: it answers as that
    item does, and shown below it, it is a duplicate (``duplicates@k``)."""


@dataclass(frozen=True)
class Query:
    """One question, the keys that answer it, and the style it is reported under."""

    id: str
    text: str
    gold: frozenset[str]
    style: str
    scope: str | None = None


@dataclass(frozen=True)
class Haystack:
    """``items`` written against ``nodes_at_write``; then the graph moves to
    ``nodes_at_read`` -- which is how anchors come to drift or vanish -- and
    ``later_items`` are written against it, before any query is read."""

    items: tuple[Item, ...]
    queries: tuple[Query, ...]
    nodes_at_write: tuple[GraphNode, ...] = ()
    nodes_at_read: tuple[GraphNode, ...] = ()
    later_items: tuple[Item, ...] = ()


@dataclass(frozen=True)
class Source:
    """Where a public dataset was read from: its file name and sha256 only."""

    file: str
    sha256: str


@dataclass
class DatasetInfo:
    """What a result names about its dataset.  ``excluded`` counts what the
    adapter left out and why, filled in while the haystacks stream."""

    name: str
    licence: str
    sample: int | None
    seed: int | None
    source: Source | None = None
    options: dict[str, str] = field(default_factory=dict)
    excluded: dict[str, int] = field(default_factory=dict)

    def exclude(self, reason: str, count: int = 1) -> None:
        self.excluded[reason] = self.excluded.get(reason, 0) + count


@dataclass
class Dataset:
    """A dataset's description and its haystacks (a one-shot stream)."""

    info: DatasetInfo
    haystacks: Iterator[Haystack]
