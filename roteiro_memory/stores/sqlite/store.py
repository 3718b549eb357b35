"""The embedded store on SQLite: a thin persistence layer over the semantics.

One file, WAL, foreign keys on.  Writes take the write lock up front
(``BEGIN IMMEDIATE``) and wait for it, so many processes sharing a clone's
store queue rather than fail; reads run in one transaction so their several
queries see one state.  Ranking, filtering and limits run in SQL, using the
expressions :mod:`roteiro_memory.stores.sql.expressions` renders from the semantics.
A store whose folder or file cannot be written is opened to be read only
(:mod:`.readonly`), and a write commits only while the store's path still
names the file it opened (:mod:`.identity`).
"""

from __future__ import annotations

import builtins
import json
import math
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence

from roteiro_memory import semantics as sem
from roteiro_memory.errors import Corrupt, NotFound, RoteiroError, StoreUnavailable, UsageError
from roteiro_memory.results import (
    CacheEntry,
    CacheStats,
    CacheSweep,
    GraphNode,
    MemoryAnchor,
    MemoryForgotten,
    MemoryListing,
    MemoryRecord,
    Recall,
    Recalled,
)
from roteiro_memory.semantics import DEFAULT_SCOPE, Decay, MemoryKind
from roteiro_memory.store import STORE_CAPABILITIES, Graph, MemoryWrite, Store
from roteiro_memory.stores.sql import columns as cols
from roteiro_memory.stores.sql import expressions as sqlexpr
from roteiro_memory.stores.sql import ranking
from roteiro_memory.stores.sql.shape import CACHE_APPLIES as _CACHE_APPLIES
from roteiro_memory.stores.sql.shape import CACHE_COLS as CACHE_COLS
from roteiro_memory.stores.sql.shape import CACHE_FROM as CACHE_FROM
from roteiro_memory.stores.sql.shape import (
    CACHE_NAMES,
    RECALL_BOUND,
    RECORD_NAMES,
    SNAPSHOT_TABLES,
    TextSets,
    recall_bounds_sql,
    recall_sql,
    record_filters,
    records_sql,
    search_sql,
)
from roteiro_memory.stores.sql.shape import MEMORY_ANCHOR as _MEMORY_ANCHOR
from roteiro_memory.stores.sql.shape import RECORD_COLS as RECORD_COLS
from roteiro_memory.stores.sql.shape import RECORD_FROM as RECORD_FROM
from roteiro_memory.stores.sql.shape import record_from as _record_from
from roteiro_memory.stores.sqlite import IN_MEMORY, readonly
from roteiro_memory.stores.sqlite.identity import FileIdentity
from roteiro_memory.stores.sqlite.migrations import (
    APPLICATION_ID,
    BUILDS,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_HEADER,
    recognised,
)
from roteiro_memory.stores.sqlite.transactions import (
    BUSY_TIMEOUT_ENV,
    Transaction,
    atomic,
    busy,
    enter_wal,
    reading,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    import tempfile
    from pathlib import Path
    from typing import Any

    from roteiro_memory import lexical
    from roteiro_memory.check import Finding
    from roteiro_memory.store import KindFilter
    from roteiro_memory.transfer import Export

__all__ = ["BUSY_TIMEOUT_ENV", "BUSY_TIMEOUT_MS", "IN_MEMORY", "SQLITE_HEADER", "SQLiteStore"]


SETS = TextSets(
    member=lambda column, param: f"{column} IN (SELECT value FROM json_each({param}))",
    prefixed=lambda column, param: (
        f"EXISTS (SELECT 1 FROM json_each({param}) p"
        f" WHERE substr({column}, 1, length(p.value)) = p.value)"
    ),
    bind=lambda values: json.dumps(list(values)),
)
"""Sets of text bound as one JSON array and read with ``json_each``."""


BUSY_TIMEOUT_MS = 60_000
"""How long a writer waits for another process's write to finish, unless
:data:`BUSY_TIMEOUT_ENV` or ``busy_timeout_ms`` says otherwise."""


def _busy_timeout() -> int:
    text = os.environ.get(BUSY_TIMEOUT_ENV)
    if text is None:
        return BUSY_TIMEOUT_MS
    if not (text.isascii() and text.isdigit() and int(text) < 2**31):
        raise UsageError(
            f"{BUSY_TIMEOUT_ENV} is {text!r}: expected a whole number of milliseconds "
            f"(ASCII digits, below 2**31); unset it for the default {BUSY_TIMEOUT_MS}"
        )
    return int(text)


_CHUNK = 500

GRAPH_TABLE = "temp.roteiro_graph"
"""Where a read given a ``graph`` loads it: a TEMP table lives on the
connection only, so resolving against another graph writes nothing to the
store."""

TOKEN_TABLE = "temp.roteiro_tokens"
"""Where recall puts its query's tokens, matched by one condition however
many there are: one expression per token would exceed SQLite's
expression-depth limit (1,000) on a long query.  TEMP, like
:data:`GRAPH_TABLE`, so a read writes nothing to the store."""

SWEEP_COLS = cols.select_list(cols.SWEEP_READ, "c") + ", n.key, n.blob"
"""The columns eviction is decided by, and no payload: what
:meth:`SQLiteStore.sweep_rows` reads.  The sweep itself decides in SQL over
these same columns (a traced test pins that none of its statements names a
payload column); the stored ``bytes`` is the authority for sizes, so a sweep
over a full tier costs a few integers per entry rather than the tier's
contents."""

_SWEEP_COLUMNS = {"applies": _CACHE_APPLIES, "last_used": "c.last_used", "key": "c.key"}
_SWEEP_PINNED = sqlexpr.pinned_expr(
    sqlexpr.SQLITE, applies=_CACHE_APPLIES, key="c.key", generation="c.generation"
)
_SWEEP_EVICTION_ORDER = sqlexpr.eviction_order(_SWEEP_COLUMNS)
_SWEEP_MRU_ORDER = sqlexpr.most_recently_used(_SWEEP_COLUMNS)
_SWEEP_DAMAGED = (
    "CASE WHEN typeof(c.key) = 'text' AND typeof(c.bytes) = 'integer'"
    " AND typeof(c.generation) = 'integer' AND typeof(c.last_used) = 'integer'"
    " AND (c.anchor_key IS NULL OR typeof(c.anchor_key) = 'text')"
    " AND (c.anchor_blob IS NULL OR typeof(c.anchor_blob) = 'text') THEN 0 ELSE 1 END"
)
"""1 for a row holding a type this version never writes in a column the
sweep reads; such a store is reported Corrupt rather than swept."""


_TYPE_NAMES = {str: "text", int: "an integer", float: "a real"}


def _stored(
    table: str, key: object, column: str, value: Any, kind: type, null: bool = False
) -> Any:
    """A stored value of the type this version writes.  Anything else was put
    there behind the store's back; it is reported, never served or computed on."""
    if type(value) is kind or (null and value is None):
        return value
    expected = ("null or " if null else "") + _TYPE_NAMES[kind]
    raise Corrupt(f"{table} row {key!r}: {column} holds {value!r}, expected {expected}")


def _clock(row: Sequence[Any] | None, column: str) -> int:
    """A value of the cache clock's one row, which only a hand deletes."""
    if row is None:
        raise Corrupt(
            "agent_cache_clock: the cache clock row is missing; "
            "run `roteiro-memory check` on the store"
        )
    value: int = _stored("agent_cache_clock", 0, column, cols.decode((column,), row)[column], int)
    return value


def _record_from_row(raw: Sequence[Any]) -> MemoryRecord:
    row = cols.decode(RECORD_NAMES, raw)
    for name, type_, null in cols.RECORD_READ:
        _stored("agent_memory", row["id"], name, row[name], type_, null)
    try:
        kind = sem.parse_kind(row["kind"])
    except ValueError as error:
        raise Corrupt(f"agent_memory row {row['id']}: {error}") from None
    confidence = row["confidence"]
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise Corrupt(f"agent_memory row {row['id']}: confidence {confidence!r} is outside [0, 1]")
    anchor_key, anchor_blob = row["anchor_key"], row["anchor_blob"]
    anchor = None
    if anchor_key is not None:
        anchor = MemoryAnchor(anchor_key, anchor_blob, row["anchor_path"])
    return MemoryRecord(
        id=row["id"],
        scope=row["scope"],
        kind=kind,
        anchor=anchor,
        anchor_state=sem.resolve_anchor(
            anchor_key, anchor_blob, row["node_key"] is not None, row["node_blob"]
        ),
        body=row["body"],
        confidence=confidence,
        tree=row["tree"],
        created_at=row["created_at"],
        superseded_by=row["superseded_by"],
        superseded_at=row["superseded_at"],
    )


def _checked(row: Sequence[Any], types: Sequence[cols.Column]) -> Sequence[Any]:
    """A cache row whose own columns (``types``, in select order) all hold the
    types this version writes."""
    for column, value in zip(types, row, strict=False):
        _stored("agent_cache", row[0], column.name, value, column.type, column.nullable)
    return row


def _entry_from_row(raw: Sequence[Any]) -> CacheEntry:
    _checked(raw, cols.CACHE_READ)
    row = cols.decode(CACHE_NAMES, raw)
    return CacheEntry(
        key=row["key"],
        fingerprint=row["fingerprint"],
        json=row["json"],
        bytes=row["bytes"],
        generation=row["generation"],
        last_used=row["last_used"],
        hits=row["hits"],
        anchor=row["anchor_key"],
        anchor_state=sem.resolve_anchor(
            row["anchor_key"], row["anchor_blob"], row["node_key"] is not None, row["node_blob"]
        ),
    )


class SweepRow:
    """One entry as the sweep sees it: what eviction is decided by, no payload."""

    __slots__ = ("anchor_state", "bytes", "generation", "key", "last_used")

    def __init__(self, row: Sequence[Any]) -> None:
        key, size, generation, last_used, anchor_key, anchor_blob, node_key, node_blob = row
        # Inline rather than through _checked: the sweep builds one per entry.
        if not (
            type(key) is str
            and type(size) is int
            and type(generation) is int
            and type(last_used) is int
            and (anchor_key is None or type(anchor_key) is str)
            and (anchor_blob is None or type(anchor_blob) is str)
        ):
            _checked(row, cols.SWEEP_READ)  # raises Corrupt, naming the column
        self.key: str = key
        self.bytes: int = size
        self.generation: int = generation
        self.last_used: int = last_used
        self.anchor_state = sem.resolve_anchor(
            anchor_key, anchor_blob, node_key is not None, node_blob
        )


def _search_terms(
    terms: Sequence[str], corpus: lexical.CorpusStats, params: dict[str, object]
) -> tuple[str, str]:
    """The per-posting weight and the term condition of a search over
    ``terms``, binding each term and its IDF into ``params``."""
    from roteiro_memory import lexical

    cases = []
    for number, term in enumerate(terms):
        params[f"term{number}"] = term
        params[f"idf{number}"] = lexical.idf(corpus.document_frequency[term], corpus.documents)
        cases.append(f"WHEN :term{number} THEN :idf{number}")
    params["average_length"] = corpus.average_length
    weight = sqlexpr.term_weight_expr(
        sqlexpr.SQLITE,
        tf="t.tf",
        length="t.length",
        idf=f"(CASE t.term {' '.join(cases)} END)",
        average_length=":average_length",
    )
    marks = ", ".join(f":term{number}" for number in range(len(terms)))
    return weight, f"t.term IN ({marks})"


def _existing(path: str) -> bool:
    """Whether a file is at ``path`` already (through a symlink, at its
    target); a directory, a special file, or a file that is not an SQLite
    database is refused without being touched."""
    if os.path.isdir(path):
        raise StoreUnavailable(f"{path}: is a directory, not a roteiro-memory store")
    if os.path.exists(path) and not os.path.isfile(path):
        raise StoreUnavailable(
            f"{path}: not a regular file, so not a roteiro-memory store; "
            "choose a file path with --db"
        )
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return False
    except OSError as error:
        raise StoreUnavailable(f"{path}: cannot be read ({error.strerror})") from None
    if header and header != SQLITE_HEADER:
        raise Corrupt(f"{path}: not a roteiro-memory store (not an SQLite database)")
    return True


def _plain(value: Any) -> Any:
    """A stored value as JSON can hold it: this version writes only text,
    integers and finite reals, but a snapshot must show whatever is there."""
    if isinstance(value, bytes):
        return {"blob": value.hex()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"real": repr(value)}
    return value


class SQLiteStore(Store):
    """The two-tier store in one SQLite file (or, named :data:`IN_MEMORY`,
    in memory)."""

    name = "sqlite"
    capabilities = STORE_CAPABILITIES

    def __init__(self, path: str | os.PathLike[str], *, busy_timeout_ms: int | None = None) -> None:
        self.file = os.fspath(path)
        """The store's file, as given."""
        self._busy_ms = _busy_timeout() if busy_timeout_ms is None else busy_timeout_ms
        self._scratch: tempfile.TemporaryDirectory[str] | None = None
        self.migrated: tuple[int, builtins.list[str]] | None = None
        """Set when opening migrated an existing store: the schema version it
        was at, and the names of the migrations applied."""
        self.read_only: str | None = None
        """Why nothing can be written to the store (its folder or file is
        read-only), when it was opened to be read only; None otherwise."""
        self._identity: FileIdentity | None = None
        self._conn = self._open()

    @classmethod
    def temporary(cls) -> SQLiteStore:
        """A store in a new temporary folder, which :meth:`close` removes."""
        import tempfile

        scratch = tempfile.TemporaryDirectory(prefix="roteiro-memory-")
        store = cls(os.path.join(scratch.name, "memory.db"))
        store._scratch = scratch
        return store

    @property
    def path(self) -> Path:
        """The store's file."""
        from pathlib import Path

        return Path(self.file)

    # --- connection and schema -------------------------------------------

    def _open(self) -> sqlite3.Connection:
        in_memory = self.file == IN_MEMORY
        if not in_memory and not _existing(self.file):
            from roteiro_memory import privatefile

            try:
                privatefile.create(self.file)
            except OSError as error:
                raise StoreUnavailable(
                    f"{self.file}: cannot create the store ({error.strerror})"
                ) from None
        read_only = None if in_memory else readonly.reason(self.file)
        try:
            if read_only is None:
                conn = sqlite3.connect(
                    self.file, timeout=self._busy_ms / 1000, isolation_level=None
                )
            else:
                conn = readonly.connect(self.file)
        except sqlite3.Error as error:
            raise StoreUnavailable(f"{self.file}: cannot be opened ({error})") from None
        try:
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            # Read without the write lock: a store that needs nothing opens
            # beside a writer, and one that is not ours is refused unwritten.
            with reading(conn):
                pending = self._pending(conn)
            if read_only is not None:
                if pending:
                    raise readonly.unmigratable(self.file, read_only, SCHEMA_VERSION)
            else:
                conn.execute("PRAGMA foreign_keys = ON")
                enter_wal(conn, self._busy_ms)
                conn.execute("PRAGMA synchronous = NORMAL")
                if pending:
                    self._migrate(conn)
            identity = None if in_memory else FileIdentity(self.file, self.file)
        except sqlite3.OperationalError as error:
            refusal = busy(conn, error) or readonly.unreadable(self.file, read_only, error)
            conn.close()
            if refusal is not None:
                raise refusal from None
            raise Corrupt(f"{self.file}: not a usable roteiro-memory store ({error})") from None
        except sqlite3.DatabaseError as error:
            conn.close()
            raise Corrupt(f"{self.file}: not a usable roteiro-memory store ({error})") from None
        except OSError as error:  # the file went between SQLite's open and ours
            conn.close()
            raise StoreUnavailable(f"{self.file}: cannot be opened ({error.strerror})") from None
        except BaseException:
            conn.close()
            raise
        self.read_only = read_only
        self._identity = identity
        return conn

    def _pending(self, conn: sqlite3.Connection) -> builtins.list[tuple[int, str, str]]:
        """The migrations this store still needs, having checked it is ours:
        it carries :data:`APPLICATION_ID`, or is empty, or has exactly the
        schema an earlier version (which stamped no id) left.  Anything else,
        or a schema a newer version wrote, is refused before anything is
        written."""
        why = recognised(conn)
        if why is not None:
            raise Corrupt(
                f"{self.file}: an SQLite database but not a roteiro-memory store {why}; "
                "refusing to change it: choose the path of a store, or a new one, with --db"
            )
        applied = self._applied(conn)
        newest = max(applied, default=0)
        if newest > SCHEMA_VERSION:
            raise Corrupt(
                f"{self.file}: written by a newer roteiro-memory (schema version {newest}; "
                f"this version knows up to {SCHEMA_VERSION}); upgrade roteiro-memory to open it"
            )
        return [m for m in MIGRATIONS if m[0] not in applied]

    def _applied(self, conn: sqlite3.Connection) -> set[int]:
        tables = conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
        ).fetchone()
        if tables is None:
            return set()
        versions = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        wrong = sorted(repr(v) for v in versions if type(v) is not int)
        if wrong:
            raise Corrupt(
                f"{self.file}: schema_migrations holds version {wrong[0]}, not a whole number; "
                "run `roteiro-memory check` on it"
            )
        return versions

    def _migrate(self, conn: sqlite3.Connection) -> None:
        with atomic(conn):
            pending = self._pending(conn)  # again under the lock: another may have migrated
            if not pending:
                return
            earlier = self._applied(conn)
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL,"
                " applied_at TEXT NOT NULL DEFAULT (datetime('now')))"
            )
            for version, name, sql in pending:
                for statement in sql.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                if version in BUILDS:
                    BUILDS[version](conn)
                conn.execute(
                    "INSERT INTO schema_migrations (version, name) VALUES (?, ?)", (version, name)
                )
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        if earlier:
            self.migrated = (max(earlier), [name for _, name, _ in pending])

    def _atomic(self) -> Transaction:
        """One write transaction, holding the write lock from its start
        (:func:`~roteiro_memory.stores.sqlite.transactions.atomic`), refused
        on a read-only store, and committed only while the store's path
        still names the file it was opened on (:mod:`.identity`)."""
        if self.read_only is not None:
            raise readonly.unwritable(self.file, self.read_only)
        return atomic(self._conn, None if self._identity is None else self._identity.check)

    def _reading(self) -> Transaction:
        """One read transaction, so a read's several queries see one state."""
        return reading(self._conn)

    # --- episodic tier ---------------------------------------------------

    @staticmethod
    def _counts(conn: sqlite3.Connection) -> tuple[int, int]:
        # Two counts, not COUNT(*), COUNT(superseded_by) in one pass: SQLite
        # counts a whole table from its b-tree, and the superseded from their
        # index, where one pass would read every row (ten times slower at
        # 10,000 records).
        total, superseded = conn.execute(
            "SELECT (SELECT COUNT(*) FROM agent_memory),"
            " (SELECT COUNT(*) FROM agent_memory WHERE superseded_by IS NOT NULL)"
        ).fetchone()
        return total - superseded, superseded

    @staticmethod
    def _generation(conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM agent_memory").fetchone()[0])

    def record(
        self,
        kind: MemoryKind | str,
        body: str,
        *,
        scope: str = DEFAULT_SCOPE,
        anchor: str | None = None,
        confidence: float | None = None,
        supersedes: int | None = None,
    ) -> int:
        return self.record_many([MemoryWrite(kind, body, scope, anchor, confidence, supersedes)])[0]

    def record_many(self, writes: Iterable[MemoryWrite]) -> builtins.list[int]:
        from roteiro_memory.stores.sql import index

        batch = list(writes)
        if not batch:
            return []
        with self._atomic() as conn:
            # Ids this batch will get: AUTOINCREMENT hands out one past the
            # larger of the sequence and the largest id, and the write lock is
            # ours, so they are contiguous.
            base = _stored(
                "sqlite_sequence",
                "agent_memory",
                "seq",
                conn.execute(
                    "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence"
                    " WHERE name = 'agent_memory'), 0),"
                    " COALESCE((SELECT MAX(id) FROM agent_memory), 0))"
                ).fetchone()[0],
                int,
            )
            if base > sem.INT64_MAX - len(batch):
                raise Corrupt(
                    f"agent_memory: the id sequence is at {base}, so {len(batch)} more ids would "
                    f"pass the largest 64-bit id {sem.INT64_MAX}; this store can take no more "
                    "records: record into a new store"
                )
            valid = self._check_writes(conn, batch, base)
            evidence = self._anchor_evidence(
                conn, {w.anchor for w in batch if w.anchor is not None}
            )
            tree_row = conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
            tree = _stored("sync_state", 0, "tree", tree_row[0], str, True) if tree_row else None
            rows = []
            for write, ok in zip(batch, valid, strict=True):
                blob, path = (
                    evidence.get(write.anchor, (None, None))
                    if write.anchor is not None
                    else (None, None)
                )
                rows.append(
                    (
                        ok.scope,
                        ok.kind.value,
                        write.anchor,
                        blob,
                        path,
                        ok.body,
                        ok.confidence,
                        tree,
                        sem.search_text(ok.body, write.anchor, path),
                    )
                )
            conn.executemany(
                "INSERT INTO agent_memory (scope, kind, anchor_key, anchor_blob, anchor_path,"
                " body, confidence, tree, search) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            ids = list(range(base + 1, base + len(batch) + 1))
            newest = conn.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'agent_memory'"
            ).fetchone()[0]
            if newest != ids[-1]:
                raise Corrupt(
                    f"agent_memory: ids {ids[0]}..{ids[-1]} were expected but the sequence "
                    f"reached {newest}; the store's sequence is inconsistent"
                )
            conn.executemany(
                "UPDATE agent_memory SET superseded_by = ?, superseded_at = datetime('now')"
                " WHERE id = ?",
                [
                    (new_id, write.supersedes)
                    for new_id, write in zip(ids, batch, strict=True)
                    if write.supersedes is not None
                ],
            )
            # Read back before COMMIT: a record a read would refuse is never
            # committed, so an error always means nothing was written.
            for row in conn.execute(
                f"SELECT {RECORD_COLS}{_record_from('nodes')} WHERE m.id BETWEEN ? AND ?",
                (ids[0], ids[-1]),
            ):
                _record_from_row(row)
            postings = [
                (new_id, index.posting(row[5], row[2], row[4]))
                for new_id, row in zip(ids, rows, strict=True)
            ]
            index.written(conn, index.SQLITE, [w.supersedes for w in batch], base, postings)
        return ids

    @staticmethod
    def _check_writes(
        conn: sqlite3.Connection, batch: Sequence[MemoryWrite], base: int
    ) -> builtins.list[sem.ValidWrite]:
        """:func:`~roteiro_memory.semantics.check_batch` over the stored state
        of the records the batch supersedes."""
        targets = sem.stored_targets(batch, base)
        stored: dict[int, int | None] = {}
        for start in range(0, len(targets), _CHUNK):
            chunk = targets[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            stored.update(
                conn.execute(
                    f"SELECT id, superseded_by FROM agent_memory WHERE id IN ({marks})", chunk
                ).fetchall()
            )
        return sem.check_batch(batch, base, stored)

    @staticmethod
    def _anchor_evidence(
        conn: sqlite3.Connection, keys: set[str]
    ) -> dict[str, tuple[str | None, str | None]]:
        """The blob and path each anchor key's node carries now."""
        found: dict[str, tuple[str | None, str | None]] = {}
        ordered = sorted(keys)
        for start in range(0, len(ordered), _CHUNK):
            chunk = ordered[start : start + _CHUNK]
            marks = ", ".join("?" * len(chunk))
            for key, blob, path in conn.execute(
                f"SELECT key, blob, path FROM nodes WHERE key IN ({marks})", chunk
            ):
                found[key] = (
                    _stored("nodes", key, "blob", blob, str, True),
                    _stored("nodes", key, "path", path, str, True),
                )
        return found

    @staticmethod
    def _node_table(conn: sqlite3.Connection, graph: Graph | None) -> str:
        """The table anchors are resolved against: ``nodes``, or ``graph``
        loaded into :data:`GRAPH_TABLE`."""
        if graph is None:
            return "nodes"
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {GRAPH_TABLE.split('.')[1]}"
            " (key TEXT PRIMARY KEY, blob TEXT)"
        )
        conn.execute(f"DELETE FROM {GRAPH_TABLE}")
        conn.executemany(f"INSERT INTO {GRAPH_TABLE} (key, blob) VALUES (?, ?)", graph.items())
        return GRAPH_TABLE

    @staticmethod
    def _load_tokens(conn: sqlite3.Connection, tokens: Sequence[str]) -> None:
        """Put a query's tokens in :data:`TOKEN_TABLE`, each once."""
        conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS {TOKEN_TABLE.split('.')[1]} (token TEXT PRIMARY KEY)"
        )
        conn.execute(f"DELETE FROM {TOKEN_TABLE}")
        conn.executemany(
            f"INSERT OR IGNORE INTO {TOKEN_TABLE} (token) VALUES (?)", ((t,) for t in tokens)
        )

    def get(self, id: int, *, graph: Graph | None = None) -> MemoryRecord | None:
        if not sem.fits_int64(id):
            return None
        with self._reading() as conn:
            nodes = self._node_table(conn, graph)
            row = conn.execute(
                f"SELECT {RECORD_COLS}{_record_from(nodes)} WHERE m.id = ?", (id,)
            ).fetchone()
        return _record_from_row(row) if row is not None else None

    @staticmethod
    def _filters(
        scope: str | None,
        kind: KindFilter,
        anchor_key: str | None,
        include_superseded: bool,
        anchors: sem.AnchorFilter | None = None,
    ) -> tuple[list[str], dict[str, object]]:
        return record_filters(
            scope,
            kind,
            anchor_key,
            include_superseded,
            placeholder=lambda name: f":{name}",
            text=lambda value: value,
            sets=SETS,
            anchors=anchors,
        )

    def list(
        self,
        *,
        scope: str | None = None,
        kind: KindFilter = None,
        anchor_key: str | None = None,
        include_superseded: bool = False,
        limit: int | None = None,
        graph: Graph | None = None,
        anchors: sem.AnchorFilter | None = None,
    ) -> MemoryListing:
        where, params = self._filters(scope, kind, anchor_key, include_superseded, anchors)
        with self._reading() as conn:
            sql = f"SELECT {RECORD_COLS}{_record_from(self._node_table(conn, graph))}"
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += " ORDER BY m.id DESC"
            keep = sem.effective_limit(limit)
            if keep is not None:
                sql += " LIMIT :limit"
                params["limit"] = keep
            records = [_record_from_row(row) for row in conn.execute(sql, params)]
            live, superseded = self._counts(conn)
        return MemoryListing(records=records, live=live, superseded=superseded)

    def recall(
        self,
        query: str | None = None,
        *,
        scope: str | None = None,
        kind: KindFilter = None,
        anchor_key: str | None = None,
        decay: Decay | str = "none",
        applicable_only: bool = False,
        limit: int | None = None,
        graph: Graph | None = None,
        anchors: sem.AnchorFilter | None = None,
    ) -> Recall:
        parsed = Decay.parse(decay)
        where, params = self._filters(scope, kind, anchor_key, False, anchors)
        tokens = sem.query_tokens(query)
        if tokens:
            where.append(
                f"NOT EXISTS (SELECT 1 FROM {TOKEN_TABLE} t WHERE instr(m.search, t.token) = 0)"
            )
        if applicable_only:
            where.append(f"({sqlexpr.applies_expr(**_MEMORY_ANCHOR)}) = 1")
        score, score_params = sqlexpr.score_expr(
            parsed, sqlexpr.SQLITE, confidence="m.confidence", id_column="m.id", **_MEMORY_ANCHOR
        )
        params.update(score_params)
        keep = sem.effective_limit(limit)
        with self._reading() as conn:
            if tokens:
                self._load_tokens(conn, tokens)
            nodes = self._node_table(conn, graph)
            generation = self._generation(conn)
            params["generation"] = generation

            def bounds(size: int) -> list[tuple[int, float, float]]:
                sql = recall_bounds_sql(
                    score, where, nodes, ":size", hint=" INDEXED BY idx_mem_confidence"
                )
                return conn.execute(sql, {**params, "size": size}).fetchall()

            results = None
            if keep is not None and parsed.mode == "none":
                # With decay, age decides more than confidence and the bound
                # rarely stops the read: the full pass is then the faster.
                ids = ranking.top_scored(bounds, keep, ranking.EARLY_STOP_ROWS)
                if ids is not None:
                    results = sorted(
                        (
                            Recalled.rank(record, generation, parsed)
                            for record in self._records(conn, nodes, ids)
                        ),
                        key=lambda r: sem.rank_key(r.score, r.record.id),
                    )
            if results is None:
                # No limit, or the bound did not decide: one ranked pass.
                if keep is not None:
                    params["limit"] = keep
                sql = recall_sql(score, where, nodes, None if keep is None else ":limit")
                rows = conn.execute(sql, params).fetchall()
                results = [Recalled.rank(_record_from_row(row), generation, parsed) for row in rows]
            live, superseded = self._counts(conn)
        return Recall(
            generation=generation, decay=parsed, results=results, live=live, superseded=superseded
        )

    @staticmethod
    def _records(
        conn: sqlite3.Connection, nodes: str, ids: Sequence[int]
    ) -> builtins.list[MemoryRecord]:
        """The records ``ids``, in no particular order."""
        out: builtins.list[MemoryRecord] = []
        for start in range(0, len(ids), _CHUNK):
            chunk = list(ids[start : start + _CHUNK])
            condition, chunk_params = sqlexpr.any_of_positional("m.id", chunk)
            out.extend(
                _record_from_row(row)
                for row in conn.execute(records_sql(nodes, condition), chunk_params)
            )
        return out

    def search(
        self,
        query: str,
        *,
        scope: str | None = None,
        kind: KindFilter = None,
        anchor_key: str | None = None,
        decay: Decay | str = "none",
        applicable_only: bool = False,
        limit: int | None = None,
        graph: Graph | None = None,
        anchors: sem.AnchorFilter | None = None,
    ) -> Recall:
        from roteiro_memory import lexical
        from roteiro_memory.stores.sql import index

        parsed = Decay.parse(decay)
        terms = lexical.query_terms(query)
        where, params = self._filters(scope, kind, anchor_key, False, anchors)
        if applicable_only:
            where.append(f"({sqlexpr.applies_expr(**_MEMORY_ANCHOR)}) = 1")
        keep = sem.effective_limit(limit)
        with self._reading() as conn:
            nodes = self._node_table(conn, graph)
            generation = self._generation(conn)
            params["generation"] = generation
            stats = index.read_stats(conn, index.SQLITE, terms)
            corpus = stats.corpus
            results: builtins.list[Recalled] = []
            if terms and corpus.total_terms:
                weight, term_match = _search_terms(terms, corpus, params)
                # Base confidence bounds the evidence (penalty and decay never
                # exceed 1) without joining a node per candidate.
                bound = f"max({RECALL_BOUND}, {ranking.EVIDENCE_FLOOR!r})"
                node_join = nodes if applicable_only else None

                def bounds(size: int | None) -> list[tuple[int, float]]:
                    sql = search_sql(weight, bound, term_match, where, node_join, ":size")
                    size_params = {**params, "size": -1 if size is None else size}
                    return conn.execute(sql, size_params).fetchall()

                def exact(ids: Sequence[int]) -> builtins.list[Recalled]:
                    postings = index.read_postings(conn, index.SQLITE, ids, terms)
                    return index.found(
                        self._records(conn, nodes, ids), postings, terms, corpus, generation, parsed
                    )

                results = ranking.top(
                    bounds, exact, keep, ranking.relevance_stop, ranking.SEARCH_FIRST_READ
                )
        return Recall(
            generation=generation,
            decay=parsed,
            results=results,
            live=corpus.documents,
            superseded=stats.records - corpus.documents,
            schema=lexical.SEARCH_SCHEMA,
            terms=list(terms),
        )

    def forget(self, id: int) -> MemoryForgotten:
        from roteiro_memory.stores.sql import index

        with self._atomic() as conn:
            if (
                not sem.fits_int64(id)
                or conn.execute("SELECT 1 FROM agent_memory WHERE id = ?", (id,)).fetchone() is None
            ):
                raise NotFound(f"no memory record with id {id} to forget")
            restored = [
                row[0]
                for row in conn.execute(
                    "SELECT id FROM agent_memory WHERE superseded_by = ? ORDER BY id", (id,)
                )
            ]
            live = (
                conn.execute(
                    "SELECT superseded_by FROM agent_memory WHERE id = ?", (id,)
                ).fetchone()[0]
                is None
            )
            conn.execute(
                "UPDATE agent_memory SET superseded_by = NULL, superseded_at = NULL"
                " WHERE superseded_by = ?",
                (id,),
            )
            index.forgotten(conn, index.SQLITE, id, live, restored)
            conn.execute("DELETE FROM agent_memory WHERE id = ?", (id,))
        return MemoryForgotten(id=id, restored=restored)

    # --- cache tier ------------------------------------------------------

    @staticmethod
    def _next_tick(conn: sqlite3.Connection) -> int:
        return _clock(
            conn.execute(
                "UPDATE agent_cache_clock SET ticks = ticks + 1 WHERE id = 0 RETURNING ticks"
            ).fetchone(),
            "ticks",
        )

    @staticmethod
    def _cache_generation(conn: sqlite3.Connection) -> int:
        return _clock(
            conn.execute("SELECT generation FROM agent_cache_clock WHERE id = 0").fetchone(),
            "generation",
        )

    def cache_put(self, key: str, fingerprint: str, json: str, anchor: str | None = None) -> None:
        sem.check_anchor(anchor)
        size = sem.cache_entry_bytes(key, fingerprint, json)
        with self._atomic() as conn:
            blob = None
            if anchor is not None:
                node = conn.execute("SELECT blob FROM nodes WHERE key = ?", (anchor,)).fetchone()
                blob = _stored("nodes", anchor, "blob", node[0], str, True) if node else None
            tick = self._next_tick(conn)
            conn.execute(
                "INSERT INTO agent_cache (key, fingerprint, bytes, generation, last_used, hits,"
                " anchor_key, anchor_blob, json) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET fingerprint = excluded.fingerprint,"
                " bytes = excluded.bytes, generation = excluded.generation,"
                " last_used = excluded.last_used, anchor_key = excluded.anchor_key,"
                " anchor_blob = excluded.anchor_blob, json = excluded.json",
                (key, fingerprint, size, self._cache_generation(conn), tick, anchor, blob, json),
            )
            # Read back before COMMIT, as a record write does.
            _entry_from_row(
                conn.execute(f"SELECT {CACHE_COLS}{CACHE_FROM} WHERE c.key = ?", (key,)).fetchone()
            )

    def cache_get(self, key: str) -> CacheEntry | None:
        with self._atomic() as conn:
            row = conn.execute(
                f"SELECT {CACHE_COLS}{CACHE_FROM} WHERE c.key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            entry = _entry_from_row(row)  # a damaged entry is refused before its hit is counted
            conn.execute(
                "UPDATE agent_cache SET hits = hits + 1, last_used = ? WHERE key = ?",
                (self._next_tick(conn), key),
            )
        return entry

    def cache_entries(self) -> builtins.list[CacheEntry]:
        rows = self._conn.execute(f"SELECT {CACHE_COLS}{CACHE_FROM} ORDER BY c.key")
        return [_entry_from_row(row) for row in rows]

    def sweep_rows(self) -> builtins.list[SweepRow]:
        """Every entry as the sweep reads it: same table, join and order as
        :meth:`cache_entries`, without the payload."""
        rows = self._conn.execute(f"SELECT {SWEEP_COLS}{CACHE_FROM} ORDER BY c.key")
        return [SweepRow(row) for row in rows]

    def cache_forget(self, key: str) -> bool:
        with self._atomic() as conn:
            return conn.execute("DELETE FROM agent_cache WHERE key = ?", (key,)).rowcount > 0

    def cache_stats(self, budget_bytes: int) -> CacheStats:
        with self._reading() as conn:
            entries, held = conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM agent_cache"
            ).fetchone()
            generation = self._cache_generation(conn)
        return CacheStats(
            entries=entries, bytes=held, budget_bytes=budget_bytes, generation=generation
        )

    def cache_sweep(self, budget_bytes: int) -> CacheSweep:
        """Decided in SQL from the narrow columns: one aggregate for what the
        tier holds and pins, then the candidates streamed in eviction order
        only until the tier fits.  No payload is read and no row is held."""
        with self._atomic() as conn:
            generation = self._cache_generation(conn)
            mru = conn.execute(
                f"SELECT c.key FROM agent_cache c ORDER BY {_SWEEP_MRU_ORDER} LIMIT 1"
            ).fetchone()
            params = {"mru": mru[0] if mru else None, "cache_generation": generation}
            scanned, held, pinned, damaged = conn.execute(
                f"SELECT COUNT(*), COALESCE(SUM(c.bytes), 0), COALESCE(SUM({_SWEEP_PINNED}), 0),"
                f" COALESCE(SUM({_SWEEP_DAMAGED}), 0){CACHE_FROM}",
                params,
            ).fetchone()
            if damaged:
                self.sweep_rows()  # raises Corrupt, naming the first damaged row
            candidates = conn.execute(
                f"SELECT c.key, c.bytes{CACHE_FROM} WHERE ({_SWEEP_PINNED}) = 0"
                f" ORDER BY {_SWEEP_EVICTION_ORDER}",
                params,
            )
            doomed: builtins.list[tuple[str, int]] = []

            def sizes() -> Iterator[int]:
                for key, size in candidates:
                    doomed.append((key, size))
                    yield size

            evict = sem.evictions_until_fits(sizes(), held, budget_bytes)
            candidates.close()
            del doomed[evict:]
            conn.executemany(
                "DELETE FROM agent_cache WHERE key = ?", sorted((key,) for key, _ in doomed)
            )
            freed = sum(size for _, size in doomed)
            new_generation = _clock(
                conn.execute(
                    "UPDATE agent_cache_clock SET generation = generation + 1 WHERE id = 0"
                    " RETURNING generation"
                ).fetchone(),
                "generation",
            )
        retained = held - freed
        return CacheSweep(
            budget_bytes=budget_bytes,
            scanned=scanned,
            pinned=pinned,
            evicted=evict,
            freed_bytes=freed,
            retained_bytes=retained,
            over_budget=retained > budget_bytes,
            generation=new_generation,
        )

    # --- graph -----------------------------------------------------------

    def put_nodes(self, nodes: Iterable[GraphNode]) -> None:
        rows = [(n.key, n.kind, n.name, n.path, n.blob) for n in nodes]
        with self._atomic() as conn:
            conn.executemany(
                "INSERT INTO nodes (key, kind, name, path, blob) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, name = excluded.name,"
                " path = excluded.path, blob = excluded.blob",
                rows,
            )

    def remove_nodes(self, keys: Iterable[str]) -> None:
        with self._atomic() as conn:
            conn.executemany("DELETE FROM nodes WHERE key = ?", [(key,) for key in keys])

    def set_tree(self, tree: str | None) -> None:
        with self._atomic() as conn:
            conn.execute(
                "INSERT INTO sync_state (id, tree) VALUES (0, ?)"
                " ON CONFLICT(id) DO UPDATE SET tree = excluded.tree",
                (tree,),
            )

    def tree(self) -> str | None:
        row = self._conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
        return row[0] if row else None

    def rebuild(self) -> None:
        with self._atomic() as conn:
            conn.execute("DELETE FROM nodes")

    def export_graph(self) -> builtins.list[GraphNode]:
        rows = self._conn.execute("SELECT key, kind, name, path, blob FROM nodes ORDER BY key")
        return [GraphNode(*row) for row in rows]

    def replace_graph(self, nodes: Iterable[GraphNode], tree: str | None) -> tuple[int, int]:
        # Compared and written under the write lock: a sync racing another
        # (two worktrees of one clone) never leaves a mixed graph.
        new = {n.key: (n.key, n.kind, n.name, n.path, n.blob) for n in nodes}
        with self._atomic() as conn:
            old = {
                row[0]: row for row in conn.execute("SELECT key, kind, name, path, blob FROM nodes")
            }
            changed = [row for key, row in new.items() if old.get(key) != row]
            gone = [(key,) for key in old if key not in new]
            conn.executemany(
                "INSERT INTO nodes (key, kind, name, path, blob) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, name = excluded.name,"
                " path = excluded.path, blob = excluded.blob",
                changed,
            )
            conn.executemany("DELETE FROM nodes WHERE key = ?", gone)
            witness = conn.execute("SELECT tree FROM sync_state WHERE id = 0").fetchone()
            if witness is None or witness[0] != tree:
                conn.execute(
                    "INSERT INTO sync_state (id, tree) VALUES (0, ?)"
                    " ON CONFLICT(id) DO UPDATE SET tree = excluded.tree",
                    (tree,),
                )
        return len(changed), len(gone)

    # --- store -----------------------------------------------------------

    _SNAPSHOT_TABLES = (*SNAPSHOT_TABLES, ("sqlite_sequence", "name, seq", "name"))

    def snapshot(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        with self._reading() as conn:
            for table, columns, order in self._SNAPSHOT_TABLES:
                names = [c.strip() for c in columns.split(",")]
                rows = conn.execute(f"SELECT {columns} FROM {table} ORDER BY {order}")
                out[table] = [
                    {name: _plain(value) for name, value in zip(names, row, strict=True)}
                    for row in rows
                ]
        return out

    def reopen(self) -> None:
        # Open the new connection before closing the old: a refused reopen (the
        # file replaced or upgraded meanwhile) leaves the store as it was.
        conn = self._open()
        self._conn.close()
        self._conn = conn

    def reset(self) -> None:
        from roteiro_memory.stores.sql import index

        with self._atomic() as conn:
            index.clear(conn)
            conn.execute("DELETE FROM agent_memory")
            conn.execute("DELETE FROM agent_cache")
            conn.execute("DELETE FROM nodes")
            conn.execute("DELETE FROM sync_state")
            conn.execute("UPDATE agent_cache_clock SET ticks = 0, generation = 0")
            conn.execute("DELETE FROM sqlite_sequence WHERE name = 'agent_memory'")

    def close(self) -> None:
        self._conn.close()
        if self._scratch is not None:
            self._scratch.cleanup()
            self._scratch = None

    # --- integrity and transfer -----------------------------------------

    def describe(self) -> str:
        return self.file

    def failure(self, error: Exception) -> RoteiroError:
        if isinstance(error, sqlite3.Error):
            # Loaded when something failed, not on every start-up.
            from roteiro_memory.stores.sqlite.failures import from_sqlite

            return from_sqlite(error)
        return super().failure(error)

    def check(self) -> builtins.list[Finding]:
        with self._reading() as conn:
            from roteiro_memory.stores.sqlite import check as sqlite_check

            return sqlite_check.check_connection(conn)

    def export_lines(self) -> Iterator[str]:
        with self._reading() as conn:
            from roteiro_memory.stores.sqlite import transfer as sqlite_transfer

            lines = builtins.list(sqlite_transfer.export_lines(conn))
        yield from lines

    def import_export(self, parsed: Export) -> dict[str, int]:
        with self._atomic() as conn:
            from roteiro_memory.stores.sqlite import transfer as sqlite_transfer

            return sqlite_transfer.import_export(conn, parsed)

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying connection, for maintenance and tests."""
        return self._conn
