"""The engines a user would pick instead, each over the same live records:
SQLite's FTS5 with ``bm25()``, tantivy, and bm25s (``pip install
'roteiro-memory[bench]'`` brings the last two).

Each indexes what the store searches -- a record's body, anchor key and
anchor path -- with its own tokenizer, answers a query with any of its words
(``OR``), and gives its top 10 ids.  An index is built once per store size
and kept beside the bench's stores (:data:`KEPT`); :meth:`Engine.build`
returns the seconds of CPU it took when it was built now.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["KEPT", "Bm25s", "Engine", "Fts5", "Tantivy", "fts5_build", "live_texts"]

KEPT = Path(tempfile.gettempdir()) / "roteiro-bench-search"
LIMIT = 10
_BATCH = 10_000


def live_texts(conn: sqlite3.Connection) -> list[tuple[int, str]]:
    """Each live record's id and searched text, in id order."""
    rows = conn.execute(
        "SELECT id, body, anchor_key, anchor_path FROM agent_memory"
        " WHERE superseded_by IS NULL ORDER BY id"
    )
    return [(i, " ".join(t for t in (body, key, path) if t)) for i, body, key, path in rows]


def _words(query: str) -> list[str]:
    return re.findall(r"\w+", query)


def _size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class Engine:
    """One engine's index of one store's records."""

    name = ""

    def __init__(self, label: str) -> None:
        self.path = KEPT / f"{self.name}-{label}"

    def build(self, texts: Sequence[tuple[int, str]]) -> float | None:
        """Open the kept index, building it first if there is none; the CPU
        seconds the build took, or None when it was kept."""
        if self.path.exists():
            self.open()
            return None
        partial = self.path.with_name(self.path.name + ".partial")
        if partial.is_dir():
            shutil.rmtree(partial)
        partial.unlink(missing_ok=True)
        start = time.process_time()
        self.make(partial, texts)
        spent = time.process_time() - start
        partial.rename(self.path)
        self.open()
        return spent

    def make(self, path: Path, texts: Sequence[tuple[int, str]]) -> None:
        raise NotImplementedError

    def open(self) -> None:
        raise NotImplementedError

    def search(self, query: str) -> list[int]:
        raise NotImplementedError

    def index_bytes(self) -> int:
        return _size(self.path) if self.path.is_dir() else self.path.stat().st_size


def fts5_build(path: Path, texts: Iterable[tuple[int, str]]) -> sqlite3.Connection:
    """An FTS5 index (Porter stemmer) over ``texts``, its content in a table
    of its own, written ten thousand records a transaction like the store."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE docs (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
    conn.execute(
        "CREATE VIRTUAL TABLE fts USING fts5(body, content='docs', content_rowid='id',"
        " tokenize='porter unicode61')"
    )
    batch: list[tuple[int, str]] = []
    for row in texts:
        batch.append(row)
        if len(batch) == _BATCH:
            fts5_insert(conn, batch)
            batch = []
    fts5_insert(conn, batch)
    return conn


def fts5_insert(conn: sqlite3.Connection, rows: Sequence[tuple[int, str]]) -> None:
    """Rows into the content table and the index, in one transaction."""
    conn.execute("BEGIN IMMEDIATE")
    conn.executemany("INSERT INTO docs (id, body) VALUES (?, ?)", rows)
    conn.executemany("INSERT INTO fts (rowid, body) VALUES (?, ?)", rows)
    conn.execute("COMMIT")


class Fts5(Engine):
    name = "fts5"

    def make(self, path: Path, texts: Sequence[tuple[int, str]]) -> None:
        fts5_build(path.with_suffix(".db"), texts).close()
        path.with_suffix(".db").rename(path)
        for suffix in ("-wal", "-shm"):
            Path(f"{path.with_suffix('.db')}{suffix}").unlink(missing_ok=True)

    def open(self) -> None:
        self.conn = sqlite3.connect(self.path)

    def search(self, query: str) -> list[int]:
        match = " OR ".join(f'"{word}"' for word in _words(query))
        rows = self.conn.execute(
            "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT ?", (match, LIMIT)
        )
        return [row[0] for row in rows]

    def index_bytes(self) -> int:
        row = self.conn.execute("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'fts%'").fetchone()
        return int(row[0])


class Tantivy(Engine):
    name = "tantivy"

    def _schema(self) -> Any:
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        builder.add_integer_field("rid", stored=True, indexed=False)
        return builder.build()

    def make(self, path: Path, texts: Sequence[tuple[int, str]]) -> None:
        import tantivy

        path.mkdir()
        index = tantivy.Index(self._schema(), path=str(path))
        writer = index.writer(heap_size=200_000_000, num_threads=1)
        for record_id, text in texts:
            writer.add_document(tantivy.Document(body=text, rid=record_id))
        writer.commit()
        writer.wait_merging_threads()

    def open(self) -> None:
        import tantivy

        self.index = tantivy.Index.open(str(self.path))
        self.index.reload()
        self.searcher = self.index.searcher()

    def search(self, query: str) -> list[int]:
        parsed = self.index.parse_query(" ".join(_words(query)), ["body"])
        hits = self.searcher.search(parsed, LIMIT).hits
        return [self.searcher.doc(address)["rid"][0] for _, address in hits]


class Bm25s(Engine):
    name = "bm25s"

    def make(self, path: Path, texts: Sequence[tuple[int, str]]) -> None:
        import bm25s

        tokens = bm25s.tokenize([t for _, t in texts], stopwords="en", show_progress=False)
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        retriever.save(str(path))
        (path / "ids.txt").write_text("\n".join(str(i) for i, _ in texts))

    def open(self) -> None:
        import bm25s

        self.retriever = bm25s.BM25.load(str(self.path))
        self.ids = [int(line) for line in (self.path / "ids.txt").read_text().split()]
        os.environ.setdefault("TQDM_DISABLE", "1")

    def search(self, query: str) -> list[int]:
        import bm25s

        tokens = bm25s.tokenize([query], stopwords="en", show_progress=False)
        found, _ = self.retriever.retrieve(tokens, k=LIMIT, show_progress=False)
        return [self.ids[int(n)] for n in found[0]]
