"""The arms compared, each ranking the same loaded records for a query.

* ``filter`` -- ``store.recall(query)``: the conjunctive substring filter.
* ``search`` -- ``store.search(query)``: the lexical ranking arm.
* ``bm25s`` -- the independent yardstick: the ``bm25s`` library's own
  tokenizer (lower-cased, English stop words) and Lucene BM25 (k1 1.5,
  b 0.75) over the same record texts in the query's scope.  It knows nothing
  of supersession or anchors, which is what it is a yardstick for.  Its ties
  are broken by the newest id, and records scoring 0 are not returned.

An arm returns store ids, best first.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from roteiro_memory.evaluation.datasets.corpus import Query
from roteiro_memory.store import Store

__all__ = ["ARMS", "Arm", "Loaded", "make_arm", "missing_package"]

YARDSTICK_INSTALL = "pip install 'roteiro-memory[eval]'"
NEEDS_BM25S = f"the bm25s yardstick needs the optional 'bm25s' package: {YARDSTICK_INSTALL}"


@dataclass(frozen=True)
class Loaded:
    """A haystack as written into ``store``: each store id's key and text."""

    store: Store
    key_of: dict[int, str]
    scope_of: dict[int, str]
    text_of: dict[int, str]
    repeated: frozenset[str] = frozenset()
    """The keys some other item nearly repeats."""


class Arm(Protocol):
    name: str

    def rank(self, loaded: Loaded, query: Query) -> list[int]: ...


class FilterArm:
    name = "filter"

    def rank(self, loaded: Loaded, query: Query) -> list[int]:
        found = loaded.store.recall(query.text, scope=query.scope)
        return [item.record.id for item in found.results]


class SearchArm:
    name = "search"

    def rank(self, loaded: Loaded, query: Query) -> list[int]:
        found = loaded.store.search(query.text, scope=query.scope)
        return [item.record.id for item in found.results]


class Bm25sArm:
    """The ``bm25s`` yardstick, one index per (haystack, scope), built lazily."""

    name = "bm25s"

    def __init__(self) -> None:
        try:
            self._bm25s: Any = importlib.import_module("bm25s")
        except ImportError:
            raise SystemExit(NEEDS_BM25S) from None
        self._index: dict[tuple[int, str | None], tuple[Any, list[int]]] = {}

    def _tokens(self, texts: Sequence[str]) -> Any:
        return self._bm25s.tokenize(texts, stopwords="en", show_progress=False)

    def _indexed(self, loaded: Loaded, scope: str | None) -> tuple[Any, list[int]]:
        slot = (id(loaded), scope)
        if slot not in self._index:
            self._index.clear()  # one haystack at a time
            ids = sorted(i for i in loaded.text_of if scope is None or loaded.scope_of[i] == scope)
            retriever = self._bm25s.BM25()
            tokens = self._tokens([loaded.text_of[i] for i in ids])
            if tokens.vocab:
                retriever.index(tokens, show_progress=False)
            else:  # no record holds a word: bm25s cannot index that, and nothing matches
                ids = []
            self._index[slot] = (retriever, ids)
        return self._index[slot]

    def rank(self, loaded: Loaded, query: Query) -> list[int]:
        retriever, ids = self._indexed(loaded, query.scope)
        if not ids:
            return []
        words = self._bm25s.tokenize([query.text], stopwords="en", return_ids=False)[0]
        known = [w for w in words if w in retriever.vocab_dict]
        if not known:
            return []
        scores = retriever.get_scores(known)
        ranked = sorted(
            ((float(s), i) for s, i in zip(scores, ids, strict=True) if s > 0),
            key=lambda pair: (-pair[0], -pair[1]),
        )
        return [i for _, i in ranked]


ARMS: dict[str, Callable[[], Arm]] = {
    "filter": FilterArm,
    "search": SearchArm,
    "bm25s": Bm25sArm,
}
"""Every arm by name, in report order."""


def make_arm(name: str) -> Arm:
    """The arm called ``name``; a specific error naming the choices otherwise."""
    try:
        return ARMS[name]()
    except KeyError:
        raise ValueError(f"unknown arm {name!r}: expected one of {', '.join(ARMS)}") from None


def missing_package(arms: Sequence[str]) -> str | None:
    """Why ``arms`` cannot run here -- the bm25s arm without its optional
    package -- said before anything runs; None when they can."""
    import importlib.util

    if "bm25s" in arms and importlib.util.find_spec("bm25s") is None:
        others = ",".join(arm for arm in arms if arm != "bm25s")
        instead = f"; or leave it out: --arms {others}" if others else ""
        return f"{NEEDS_BM25S}{instead}"
    return None
