"""The in-memory model as the evaluation runs it: every ranking the
model's own, the records' terms and the corpus statistics remembered between
queries."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from roteiro_memory import lexical
from roteiro_memory.stores.model import ModelStore

__all__ = ["MeasuringModel"]


class MeasuringModel(ModelStore):
    """The model store, remembering each record's terms and the corpus
    statistics between queries.  Nothing is written while a haystack's
    queries are read, so every ranking is the model's own, many times faster
    (a test compares the two)."""

    def __init__(self, tokenizer: lexical.Tokenizer = lexical.TOKENIZER) -> None:
        super().__init__(tokenizer)
        self._known: dict[tuple[int, str, str | None, str | None], lexical.Document] = {}
        self._stats: tuple[tuple[int, ...], lexical.CorpusStats] | None = None

    def _documents(self, corpus: Iterable[Any]) -> dict[int, lexical.Document]:
        out: dict[int, lexical.Document] = {}
        for row in corpus:
            slot = (row.id, row.body, row.anchor_key, row.anchor_path)
            document = self._known.get(slot)
            if document is None:
                document = self._known[slot] = super()._documents([row])[row.id]
            out[row.id] = document
        return out

    def _statistics(
        self, documents: Iterable[lexical.Document], wanted: set[int]
    ) -> lexical.CorpusStats:
        held = tuple(documents)
        # The documents are kept alive in _known, so their identities name them.
        key = tuple(id(document) for document in held)
        if self._stats is None or self._stats[0] != key:
            self._stats = (key, super()._statistics(held, wanted))
        return self._stats[1]
