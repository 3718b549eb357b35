"""How each SQL engine is spoken: a :class:`Dialect`, and the two there are.

The SQL store (:mod:`.store` and the modules it loads) and the term index
(:mod:`.index`) are written once over a :class:`Dialect`; nothing else in
them depends on the engine.  What a dialect says:

* how a parameter is marked, by name and by position, and how a set of
  values is tested (``IN`` a list of marks, or ``= ANY`` of one array);
* how caller text is bound and read back: SQLite keeps ``TEXT``; PostgreSQL
  keeps UTF-8 ``bytea``, since its ``text`` cannot hold U+0000 and ``bytea``
  compares in code point order (:mod:`roteiro_memory.stores.postgres.migrations`);
* how a read resolves anchors against a graph it is given, and matches a
  query's tokens, without writing to the store: a TEMP table of the
  connection, or arrays bound and unnested;
* how many rows are written at once, and the spellings of a few functions.

A third engine is one more dialect and a store class that connects, locks
and migrates (:class:`~roteiro_memory.stores.sql.store.SQLStore`).  The
semantics rendered in a dialect are :mod:`.expressions`'.
"""

from __future__ import annotations

import abc
import json
import math

from roteiro_memory.errors import Corrupt
from roteiro_memory.semantics import is_utf8
from roteiro_memory.stores.sql.columns import insert as _insert

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from typing import Any

    from roteiro_memory.store import Graph

__all__ = ["KEY_START_BYTES", "POSTGRES", "SQLITE", "Dialect"]

KEY_START_BYTES = 256
"""How many of a graph node key's first bytes PostgreSQL's range index
holds: a B-tree entry holds about 2,700 bytes, a key any number.  Keys
that share these bytes are told apart by the key itself."""


class Dialect(abc.ABC):
    """What one SQL engine spells its own way.  The defaults are standard
    SQL; a method that takes ``params`` binds what it needs there, under the
    names it was given."""

    name: str
    greatest: str
    """The larger of two values."""
    power: str
    real: str
    """The type of a double."""
    param: str
    """How a named parameter ``x`` is written, as a format with ``{name}``."""
    mark: str
    """A positional parameter."""
    now: str
    """The current UTC time, as the protocol writes timestamps."""
    traps_underflow = False
    """Whether a multiplication or ``power`` whose IEEE result is 0 raises an
    error instead (PostgreSQL does).  Such a dialect gets a score that never
    computes a zero from non-zero operands, with the same doubles."""
    text_as_bytes = False
    """Whether caller text is stored as UTF-8 bytes; when not, it is bound
    and read as the text it is."""
    chunk: int | None = None
    """The most values one set condition binds (None: any number)."""
    no_limit: object = None
    """What a ``LIMIT`` parameter is bound to for no limit."""
    confidence_hint = by_id_hint = ""
    """What follows the records' alias in recall's bound-order read, and in a read by ids."""
    counts = "SELECT COUNT(*), COUNT(superseded_by) FROM agent_memory"
    """The number of records and of superseded records, in one row."""
    damaged_cache = "0"
    """1 for a cache row holding a type this version never writes in a
    column the sweep reads; 0 always where the columns are typed."""

    def named(self, name: str) -> str:
        """The named parameter ``name``."""
        return self.param.format(name=name)

    def keyed(self, column: str) -> str:
        """The ``ON CONFLICT`` target of a table keyed by the text ``column``
        (a graph node's or a cache entry's key), which may be of any length."""
        return f"({column})"

    def typed_real(self, sql: str) -> str:
        """``sql`` (a bound double) where the engine must be told its type."""
        return sql

    def key_range(self, lo: str, hi: str | None) -> str:
        """The graph node keys from ``lo`` up to, not including, ``hi`` (both
        bound; None: no end), as a condition the keys' index serves."""
        return f"key >= {lo}" if hi is None else f"key >= {lo} AND key < {hi}"

    # --- text ------------------------------------------------------------

    def text(self, value: str) -> Any:
        """Caller text as it is bound; text UTF-8 cannot carry (which writes refuse) as its
        bytes, a blob no stored text equals, so a read finds nothing, as on every backend."""
        return value if is_utf8(value) else value.encode("utf-8", "surrogatepass")

    def texts(self, values: Sequence[str]) -> list[Any]:
        """:meth:`text` of each of ``values``: when UTF-8 carries them all
        (as one text, which it carries exactly when it carries each), each
        is bound as it is, with no call a value."""
        if is_utf8("".join(values)):
            return list(values)
        return [self.text(value) for value in values]

    def optional(self, value: str | None) -> Any:
        """:meth:`text`, or None."""
        return None if value is None else self.text(value)

    def read(self, raw: Any) -> Any:
        """A stored value as the store reads it: text as text, anything else
        as it is, so the type guards of :mod:`.columns` judge what is there."""
        return raw

    def read_row(self, names: Sequence[str], raw: Sequence[Any]) -> dict[str, Any]:
        """A row read by the select list ``names`` names, by name, its text read."""
        return dict(zip(names, raw, strict=True))

    def read_values(self, raw: Sequence[Any]) -> Sequence[Any]:
        """A row's values, its text read."""
        return raw

    def untext(self, raw: Any) -> str:
        """A stored term (or body, key, path) as the term index reads it."""
        return str(raw)

    def plain(self, value: Any) -> Any:
        """A stored value as a snapshot shows it, in JSON."""
        return value

    def whole(self, value: Any) -> Any:
        """A count or a sum as the driver hands it back, as Python's."""
        return value

    # --- sets and batches ------------------------------------------------

    def chunks(self, values: Sequence[Any]) -> Iterable[Sequence[Any]]:
        """``values`` in runs of at most :attr:`chunk`; none when empty."""
        size = self.chunk or max(len(values), 1)
        return (values[start : start + size] for start in range(0, len(values), size))

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` in ``values``, as SQL and its positional parameters."""
        return f"{column} IN ({', '.join([self.mark] * len(values))})", list(values)

    def joined(self, left: str, right: str) -> str:
        """Two byte strings, one after the other."""
        return f"{left} || {right}"

    def byte_length(self, value: str) -> str:
        """How many bytes a byte string holds."""
        return f"length({value})"

    def relation(self, rows: Sequence[tuple[Any, ...]], types: str, into: dict[str, Any]) -> str:
        """``rows`` as a relation of columns ``column1``, ... (``t``ext or ``i``nteger, as
        ``types`` says), bound in ``into`` under a name of its own: rows the planner
        joins by an index.  SQLite's: one JSON array, however many rows."""
        name = f"rows{len(into)}"
        into[name] = json.dumps(rows)
        columns = ", ".join(
            f"json_extract(value, '$[{n}]') AS column{n + 1}" for n in range(len(types))
        )
        return f"(SELECT {columns} FROM json_each({self.named(name)}))"

    def in_set(
        self, column: str, name: str, values: Sequence[Any], params: dict[str, object]
    ) -> str:
        """``column`` in ``values``, bound under ``name`` in ``params``."""
        marks = []
        for number, value in enumerate(values):
            params[f"{name}{number}"] = value
            marks.append(self.named(f"{name}{number}"))
        return f"{column} IN ({', '.join(marks)})"

    @abc.abstractmethod
    def member(
        self, column: str, name: str, values: Sequence[str], params: dict[str, object]
    ) -> str:
        """The column's text is one of ``values``, bound as the one parameter
        ``name`` in ``params`` however many there are: one expression per
        value would meet SQLite's expression-depth limit and PostgreSQL's
        parameter limit."""

    @abc.abstractmethod
    def prefixed(
        self, column: str, name: str, values: Sequence[str], params: dict[str, object]
    ) -> str:
        """The column's text starts with one of ``values``, bound as :meth:`member` binds them."""

    def many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run ``sql`` once per row of ``rows``."""
        conn.executemany(sql, rows)

    def load(
        self, conn: Any, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """Insert ``rows`` of ``columns`` into ``table`` the fastest way the
        database has; with no conflict handling, a row whose key is taken fails."""
        self.many(conn, _insert(table, columns, self.mark), rows)

    def delete_keys(self, conn: Any, table: str, column: str, keys: Sequence[Any]) -> None:
        """Delete the rows of ``table`` whose ``column`` is one of ``keys``
        (bound already)."""
        self.many(conn, f"DELETE FROM {table} WHERE {column} = {self.mark}", [(k,) for k in keys])

    def empty(self, conn: Any, tables: Sequence[str]) -> None:
        """Delete every row of ``tables``, in the order given (a table
        before those it references)."""
        for table in tables:
            conn.execute(f"DELETE FROM {table}")

    # --- relations a read is given ---------------------------------------

    def node_relation(self, conn: Any, graph: Graph | None, params: dict[str, object]) -> str:
        """The relation anchors are resolved against: ``nodes``, or
        ``graph`` (key -> blob), which the read writes nowhere."""
        return "nodes" if graph is None else self.graph_relation(conn, graph, params)

    @abc.abstractmethod
    def graph_relation(self, conn: Any, graph: Graph, params: dict[str, object]) -> str:
        """``graph`` as a relation of ``key`` and ``blob``, for one read."""

    @abc.abstractmethod
    def token_relation(self, conn: Any, tokens: Sequence[str], params: dict[str, object]) -> str:
        """A relation of one column ``token``, aliased ``t``, holding ``tokens``."""

    def position(self, needle: str, haystack: str) -> str:
        """Where ``needle`` starts in ``haystack``, from 1; 0 when it is not there."""
        return f"position({needle} IN {haystack})"


class _SQLite(Dialect):
    """SQLite: text as ``TEXT``, sets as lists of marks or JSON arrays, and
    what a read is given in TEMP tables, which live on the connection only."""

    name = "sqlite"
    greatest = "max"
    power = "pow"
    real = "REAL"
    param = ":{name}"
    mark = "?"
    now = "datetime('now')"
    chunk = 500
    no_limit = -1
    confidence_hint = " INDEXED BY idx_mem_confidence"
    """SQLite's planner prefers the narrower liveness index unless told,
    which would sort every live record."""
    by_id_hint = " NOT INDEXED"
    """By rowid alone: a liveness filter would have the planner seek its index, then the table."""
    counts = (
        "SELECT (SELECT COUNT(*) FROM agent_memory),"
        " (SELECT COUNT(*) FROM agent_memory WHERE superseded_by IS NOT NULL)"
    )
    """Two counts, not one pass: SQLite counts a table from its b-tree and the superseded
    from their index, where one pass reads every row (ten times slower at 10,000)."""
    damaged_cache = (
        "CASE WHEN typeof(c.key) = 'text' AND typeof(c.bytes) = 'integer'"
        " AND typeof(c.generation) = 'integer' AND typeof(c.last_used) = 'integer'"
        " AND (c.anchor_key IS NULL OR typeof(c.anchor_key) = 'text')"
        " AND (c.anchor_blob IS NULL OR typeof(c.anchor_blob) = 'text') THEN 0 ELSE 1 END"
    )

    GRAPH_TABLE = "temp.roteiro_graph"
    """Where a read given a ``graph`` loads it."""
    TOKEN_TABLE = "temp.roteiro_tokens"
    """Where recall puts its query's tokens, matched by one condition however many there
    are: one expression per token would exceed SQLite's expression-depth limit (1,000)."""

    def plain(self, value: Any) -> Any:
        """This version writes only text, integers and finite reals, but a
        snapshot must show whatever is there."""
        if isinstance(value, bytes):
            return {"blob": value.hex()}
        if isinstance(value, float) and not math.isfinite(value):
            return {"real": repr(value)}
        return value

    def joined(self, left: str, right: str) -> str:
        """``||`` makes text of two blobs; cast back, the bytes are kept."""
        return f"CAST({left} || {right} AS BLOB)"

    def _text_set(self, name: str, values: Sequence[str], params: dict[str, object]) -> str:
        """``values`` bound as one JSON array, and how a value of it is read.
        SQLite's JSON ends a string at ``\\u0000`` and reads two lone
        surrogates as a pair: text UTF-8 cannot carry is left out (no stored
        text equals it, or starts with it), and when a value holds U+0000 each
        goes escaped (:data:`_SET_ESCAPE`), read back by :data:`_SET_VALUE`."""
        kept = [value for value in values if is_utf8(value)]
        if not any("\0" in value for value in kept):
            params[name] = json.dumps(kept)
            return "value"
        escape = _SET_ESCAPE
        escaped = [v.replace(escape, escape + "1").replace("\0", escape + "0") for v in kept]
        params[name] = json.dumps(escaped)
        return _SET_VALUE

    def member(
        self, column: str, name: str, values: Sequence[str], params: dict[str, object]
    ) -> str:
        value = self._text_set(name, values, params)
        return f"{column} IN (SELECT {value} FROM json_each({self.named(name)}))"

    def prefixed(
        self, column: str, name: str, values: Sequence[str], params: dict[str, object]
    ) -> str:
        value = self._text_set(name, values, params)
        if value == "value":
            return (
                f"EXISTS (SELECT 1 FROM json_each({self.named(name)}) p"
                f" WHERE substr({column}, 1, length(p.value)) = p.value)"
            )
        # As UTF-8 bytes: the length() of text stops at a U+0000.
        return (
            f"EXISTS (SELECT 1 FROM (SELECT {value} AS v FROM json_each({self.named(name)})) p"
            f" WHERE substr(CAST({column} AS BLOB), 1, length(CAST(p.v AS BLOB)))"
            " = CAST(p.v AS BLOB))"
        )

    def graph_relation(self, conn: Any, graph: Graph, params: dict[str, object]) -> str:
        rows = [(self.text(key), self.optional(blob)) for key, blob in graph.items()]
        _temporary(conn, self.GRAPH_TABLE, "key TEXT PRIMARY KEY, blob TEXT")
        conn.executemany(f"INSERT INTO {self.GRAPH_TABLE} (key, blob) VALUES (?, ?)", rows)
        return self.GRAPH_TABLE

    def token_relation(self, conn: Any, tokens: Sequence[str], params: dict[str, object]) -> str:
        _temporary(conn, self.TOKEN_TABLE, "token TEXT PRIMARY KEY")
        rows = [(self.text(token),) for token in tokens]
        conn.executemany(f"INSERT OR IGNORE INTO {self.TOKEN_TABLE} (token) VALUES (?)", rows)
        return f"{self.TOKEN_TABLE} t"

    def position(self, needle: str, haystack: str) -> str:
        return f"instr({haystack}, {needle})"


_SET_ESCAPE = "\x01"
"""In a set of texts SQLite reads from JSON (:meth:`_SQLite.member`) that
holds a U+0000, U+0000 is this and ``0``, and this itself is this and ``1``."""
_SET_VALUE = "replace(replace(value, char(1) || '0', char(0)), char(1) || '1', char(1))"
"""A value of such a set as it was given: the escape's pairs read back,
U+0000's first (a ``0`` after an escape's own pair is not one)."""


def _temporary(conn: Any, table: str, columns: str) -> None:
    """The TEMP table ``table``, created if need be, and empty."""
    conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table.split('.')[1]} ({columns})")
    conn.execute(f"DELETE FROM {table}")


class _Postgres(Dialect):
    """PostgreSQL: text as UTF-8 ``bytea``, sets as one array each, what a
    read is given bound as arrays and unnested, and doubles typed."""

    name = "postgres"
    greatest = "GREATEST"
    power = "power"
    real = "double precision"
    param = "%({name})s"
    mark = "%s"
    now = "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS')"
    traps_underflow = True
    text_as_bytes = True

    def typed_real(self, sql: str) -> str:
        return f"CAST({sql} AS {self.real})"

    def keyed(self, column: str) -> str:
        """The key's SHA-256: a B-tree entry holds about 2,700 bytes, a key
        any number (:mod:`roteiro_memory.stores.postgres.migrations`, 11)."""
        return f"(sha256({column}))"

    def key_range(self, lo: str, hi: str | None) -> str:
        """The range, found by the B-tree on each key's first bytes
        (migration 13; a hash index finds no range): cutting two byte
        strings short never reverses their order, so every key in the range
        starts with bytes between ``lo``'s and ``hi``'s first ones, and the
        exact range then judges each key whole."""

        def start(text: str) -> str:
            return f"substring({text} FROM 1 FOR {KEY_START_BYTES})"

        below = "" if hi is None else f" AND {start('key')} <= {start(hi)}"
        return f"{start('key')} >= {start(lo)}{below} AND {super().key_range(lo, hi)}"

    def text(self, value: str) -> Any:
        return value.encode("utf-8", "surrogatepass")

    def texts(self, values: Sequence[str]) -> list[Any]:
        return [self.text(value) for value in values]

    def read(self, raw: Any) -> Any:
        """Stored UTF-8 as text; bytes this version never writes are Corrupt."""
        if not isinstance(raw, bytes | memoryview):
            return raw
        try:
            return self.untext(raw)
        except UnicodeDecodeError as error:
            raise Corrupt(
                f"a stored text value is not UTF-8 ({error.reason} at byte {error.start}); "
                "run `roteiro-memory check` on the store"
            ) from None

    def read_row(self, names: Sequence[str], raw: Sequence[Any]) -> dict[str, Any]:
        return dict(zip(names, self.read_values(raw), strict=True))

    def read_values(self, raw: Sequence[Any]) -> Sequence[Any]:
        return [self.read(value) for value in raw]

    def untext(self, raw: Any) -> str:
        """Stored UTF-8 as text, a lone surrogate's encoding (which
        :meth:`text` writes) read back as one; UnicodeDecodeError for bytes
        that are not UTF-8 (:meth:`read` makes that Corrupt)."""
        return bytes(raw).decode("utf-8", "surrogatepass")

    def plain(self, value: Any) -> Any:
        return self.read(value) if isinstance(value, bytes) else value

    def whole(self, value: Any) -> Any:
        """``SUM`` of a ``bigint`` is a ``numeric``, which psycopg reads as a Decimal."""
        return int(value)

    def any_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY({self.mark})", [list(values)]

    def in_set(
        self, column: str, name: str, values: Sequence[Any], params: dict[str, object]
    ) -> str:
        params[name] = list(values)
        return f"{column} = ANY({self.named(name)})"

    def relation(self, rows: Sequence[tuple[Any, ...]], types: str, into: dict[str, Any]) -> str:
        """One bound array a column, unnested side by side."""
        arrays = []
        for n, column in enumerate(zip(*rows, strict=True)):
            name = f"rows{len(into)}"
            into[name] = list(column)
            arrays.append(f"{self.named(name)}::{'bytea' if types[n] == 't' else 'bigint'}[]")
        names = ", ".join(f"column{n + 1}" for n in range(len(types)))
        return f"unnest({', '.join(arrays)}) AS p({names})"

    def member(
        self, column: str, name: str, values: Sequence[str], params: dict[str, object]
    ) -> str:
        params[name] = [self.text(value) for value in values]
        return f"{column} = ANY({self.named(name)}::bytea[])"

    def prefixed(
        self, column: str, name: str, values: Sequence[str], params: dict[str, object]
    ) -> str:
        params[name] = [self.text(value) for value in values]
        # A prefix of a string's UTF-8 is the UTF-8 of its prefix.
        return (
            f"EXISTS (SELECT 1 FROM unnest({self.named(name)}::bytea[]) AS p(v)"
            f" WHERE substring({column} FROM 1 FOR length(p.v)) = p.v)"
        )

    def many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if len(rows) == 1:
            conn.execute(sql, rows[0])
        elif rows:
            with conn.cursor() as cur:
                cur.executemany(sql, rows)

    def load(
        self, conn: Any, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]
    ) -> None:
        """``COPY``: one statement streams every row (an INSERT each is a round trip)."""
        if len(rows) == 1:
            conn.execute(_insert(table, columns, self.mark), rows[0])
        elif rows:
            with (
                conn.cursor() as cur,
                cur.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy,
            ):
                for row in rows:
                    copy.write_row(row)

    def delete_keys(self, conn: Any, table: str, column: str, keys: Sequence[Any]) -> None:
        if keys:
            conn.execute(f"DELETE FROM {table} WHERE {column} = ANY({self.mark})", (list(keys),))

    def empty(self, conn: Any, tables: Sequence[str]) -> None:
        conn.execute(f"TRUNCATE {', '.join(tables)}")

    def graph_relation(self, conn: Any, graph: Graph, params: dict[str, object]) -> str:
        """The graph bound as two arrays and joined as a derived table, so
        the read writes nothing at all."""
        params["graph_keys"] = [self.text(key) for key in graph]
        params["graph_blobs"] = [self.optional(blob) for blob in graph.values()]
        keys, blobs = self.named("graph_keys"), self.named("graph_blobs")
        return f"(SELECT key, blob FROM unnest({keys}::bytea[], {blobs}::bytea[]) AS g(key, blob))"

    def token_relation(self, conn: Any, tokens: Sequence[str], params: dict[str, object]) -> str:
        """One bound array, not one parameter per token: a statement takes
        at most 65,535 parameters."""
        params["tokens"] = [self.text(token) for token in tokens]
        return f"unnest({self.named('tokens')}::bytea[]) AS t(token)"


SQLITE: Dialect = _SQLite()
"""The embedded store's dialect (:mod:`roteiro_memory.stores.sqlite`)."""
POSTGRES: Dialect = _Postgres()
"""The shared store's dialect (:mod:`roteiro_memory.stores.postgres`)."""
