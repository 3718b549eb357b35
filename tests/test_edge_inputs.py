"""Inputs at the edges of what a value can be: refused with the right error
kind, or taken the same way by every backend -- never a crash."""

from __future__ import annotations

import json
import math
import os
import random
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from roteiro_memory import GraphNode, InvalidConfidence, SQLiteStore, Store
from roteiro_memory.errors import BadRequest, Corrupt, RoteiroError
from roteiro_memory.protocol import Ops
from roteiro_memory.semantics import AnchorFilter
from roteiro_memory.stores.model import ModelStore
from roteiro_memory.transfer import ImportRefused, export_lines, read_export


def test_an_integer_beyond_any_double_is_an_invalid_confidence(store: Store) -> None:
    before = store.snapshot()
    with pytest.raises(InvalidConfidence, match="beyond any double"):
        Ops(store).call("memory.record", {"kind": "lesson", "body": "x", "confidence": 10**400})
    assert store.snapshot() == before


def test_an_empty_anchor_key_is_an_anchor_like_any_other(store: Store) -> None:
    """Only None means "no anchor": an empty key resolves against the node
    keyed by the empty string, on every backend alike."""
    store.put_nodes([GraphNode("", blob="b1")])
    record = store.get(store.record("lesson", "x", anchor=""))
    assert record is not None
    assert record.anchor is not None
    assert (record.anchor.key, record.anchor.blob) == ("", "b1")
    assert record.anchor_state.value == "valid"


def test_command_line_arguments_that_are_not_utf8_are_a_usage_error(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    db = str(tmp_path / "memory.db")
    done = subprocess.run(
        [b"roteiro-memory", b"list", b"--scope", b"s\xff", b"--db", db.encode()],
        capture_output=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    lines = done.stderr.decode("utf-8", "replace").splitlines()
    assert len(lines) == 1, lines
    assert "not valid UTF-8" in lines[0]


def _export(**header: object) -> list[str]:
    head = {
        "format": "roteiro-memory.export/v1",
        "schema_version": 1,
        "clock": {"ticks": 0, "generation": 0},
        "sequence": None,
        "witness": None,
        **header,
    }
    return [json.dumps(head)]


@pytest.mark.parametrize(
    "header",
    [
        {"sequence": 2**64},
        {"clock": {"ticks": 2**63, "generation": 0}},
        {"witness": {"tree": "t\ud800"}},
    ],
    ids=["sequence", "ticks", "surrogate"],
)
def test_import_refuses_values_no_store_can_hold(header: dict[str, object]) -> None:
    with pytest.raises(ImportRefused, match="line 1"):
        read_export(_export(**header))


def test_a_cache_clock_with_no_next_step_refuses_the_write_on_every_backend(
    store: Store,
) -> None:
    """An import may set the clock one step short of the largest 64-bit
    integer; the step after the last is Corrupt naming the clock, with
    nothing written (SQLite stored a real number and then misread it, and
    PostgreSQL failed in the driver)."""
    from roteiro_memory.semantics import INT64_MAX

    last = INT64_MAX - 1
    if isinstance(store, ModelStore):  # it takes no import
        store._state.ticks = store._state.generation = last
    else:
        store.import_export(read_export(_export(clock={"ticks": last, "generation": last})))
    store.cache_put("k", "fp", "{}")
    store.cache_sweep(1 << 20)
    before = store.snapshot()
    for step, name in (
        (lambda: store.cache_get("k"), "ticks"),
        (lambda: store.cache_put("k2", "fp", "{}"), "ticks"),
        (lambda: store.cache_sweep(0), "generation"),
    ):
        with pytest.raises(Corrupt, match=f"^agent_cache_clock: {name} is at the largest 64-bit"):
            step()
        assert store.snapshot() == before


def test_export_refuses_a_store_holding_values_it_never_writes(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    store.record("lesson", "fine")
    store.connection.execute("UPDATE agent_memory SET body = X'ff00'")
    with pytest.raises(Corrupt, match="roteiro-memory check"):
        list(export_lines(store))
    store.close()


@pytest.mark.parametrize(
    ("damage", "row", "column"),
    [
        ("UPDATE agent_memory SET confidence = 'high'", "agent_memory id 1", "confidence"),
        (
            "UPDATE agent_memory SET superseded_by = 'x', superseded_at = '2026-03-01 12:00:05'",
            "agent_memory id 1",
            "superseded_by",
        ),
        ("UPDATE agent_cache SET bytes = 'many'", "agent_cache key 'k'", "bytes"),
        ("UPDATE agent_cache SET hits = 1.5", "agent_cache key 'k'", "hits"),
    ],
    ids=["text-confidence", "text-pointer", "text-bytes", "real-hits"],
)
def test_export_refuses_a_value_of_another_type_than_its_column_as_check_says_it_would(
    tmp_path: Path, damage: str, row: str, column: str
) -> None:
    """A value of another type than its column's (planted by another tool,
    past the constraints) is one check reports as "export would refuse
    it": so export refuses it, naming the row and the column, rather than
    write an export that no import takes."""
    store = SQLiteStore(tmp_path / "memory.db")
    store.record("lesson", "fine")
    store.cache_put("k", "fp", "{}")
    store.connection.execute("PRAGMA ignore_check_constraints = ON")
    store.connection.execute("PRAGMA foreign_keys = OFF")
    store.connection.execute(damage)
    assert any(
        f.table == row.split()[0]
        and f.problem.startswith(f"{column} holds")
        and f.problem.endswith("export would refuse it")
        for f in store.check()
    )
    with pytest.raises(Corrupt, match=f"^{re.escape(row)}: {column} holds .*roteiro-memory check"):
        list(export_lines(store))
    store.close()


@pytest.mark.parametrize("payload", ["NaN", "Infinity", "[1e999, -Infinity]"])
def test_cache_put_refuses_payloads_json_does_not_have(tmp_path: Path, payload: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    db = tmp_path / "memory.db"
    argv = ["roteiro-memory", "cache", "put", "k", "fp", payload, "--db", str(db)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 2
    assert "not JSON" in done.stderr
    store = SQLiteStore(db)
    assert store.cache_entries() == []
    store.close()


def test_recall_answers_a_query_of_thousands_of_words(store: Store) -> None:
    """Every backend answers a long query alike: SQLite once built one
    expression per token and hit its expression-tree limit at ~1,000 words,
    PostgreSQL one parameter per token and hit the 65,535-parameter limit."""
    words = [f"w{i}" for i in range(70_000)]
    matching = store.record("lesson", " ".join(words[:1_200]))
    store.record("lesson", " ".join(words[:999]))
    assert [r.record.id for r in store.recall(" ".join(words[:1_200])).results] == [matching]
    assert store.recall(" ".join(words)).results == []
    both = store.recall("W1 w2", limit=None).results
    assert len(both) == 2


def test_anchor_over_the_size_limit_is_refused_by_every_backend(store: Store) -> None:
    """A record's and a cache entry's anchor have a limit like a body's, the
    one rule of semantics every backend applies; nothing is written."""
    from roteiro_memory.errors import InvalidAnchor
    from roteiro_memory.semantics import MAX_ANCHOR_BYTES

    before = store.snapshot()
    huge = "file:" + "a" * (10 * 1024 * 1024)
    with pytest.raises(InvalidAnchor, match=f"over the {MAX_ANCHOR_BYTES}-byte limit") as raised:
        store.record("lesson", "x", anchor=huge)
    assert len(str(raised.value)) < 300
    with pytest.raises(InvalidAnchor):
        store.cache_put("k", "fp", "1", anchor="é" * (MAX_ANCHOR_BYTES // 2 + 1))
    assert store.snapshot() == before
    # The longest, of bytes that do not compress (PostgreSQL's B-tree entry
    # holds about 2,700): kept, and found by it, on every backend.
    longest = random.Random(4).randbytes(MAX_ANCHOR_BYTES // 2).hex()
    rid = store.record("lesson", "x", anchor=longest)
    record = store.get(rid)
    assert record is not None
    assert record.anchor is not None
    assert record.anchor.key == longest
    for found in (
        store.list(anchor_key=longest),
        store.list(anchors=AnchorFilter(keys=frozenset([longest]))),
        store.list(anchors=AnchorFilter(prefixes=(longest[:3_000],))),
    ):
        assert [r.id for r in found.records] == [rid]
    store.cache_put("k", "fp", "1", anchor=longest)


_LONE_REFUSAL = (
    r"a lone surrogate \(U\+D[89A-F][0-9A-F]{2} at character \d+\), which is not Unicode text"
)
"""How a write refuses text holding a lone surrogate: naming it and where."""


@pytest.mark.parametrize("anchor", ["file:src/\ud800.py", "py:a.py::\udfff", "file:\udcff"])
def test_an_anchor_holding_a_lone_surrogate_is_refused_by_every_backend(
    store: Store, anchor: str
) -> None:
    """No node key holds one (a file whose name is not UTF-8 has no node),
    and SQLite's text could not store it: refused, naming it, as a body
    holding one is, with nothing written."""
    from roteiro_memory.errors import InvalidAnchor

    before = store.snapshot()
    with pytest.raises(InvalidAnchor, match=_LONE_REFUSAL):
        store.record("lesson", "x", anchor=anchor)
    with pytest.raises(InvalidAnchor, match="a lone surrogate"):
        store.cache_put("k", "fp", "1", anchor=anchor)
    assert store.snapshot() == before


_LONE = "x\ud800"
"""Text holding a lone surrogate, which no store can keep as text."""

_WRITES_OF_A_LONE_SURROGATE: dict[str, tuple[str, Callable[[Store], object]]] = {
    "cache key": ("cache key", lambda s: s.cache_put(_LONE, "fp", "{}")),
    "cache fingerprint": ("cache fingerprint", lambda s: s.cache_put("k", _LONE, "{}")),
    "cache json": ("cache json", lambda s: s.cache_put("k", "fp", f'"{_LONE}"')),
    "node key": ("node key", lambda s: s.put_nodes([GraphNode("ok"), GraphNode(_LONE)])),
    "node kind": ("node kind", lambda s: s.put_nodes([GraphNode("ok", kind=_LONE)])),
    "node name": ("node name", lambda s: s.put_nodes([GraphNode("ok", name=_LONE)])),
    "node path": ("node path", lambda s: s.put_nodes([GraphNode("ok", path=_LONE)])),
    "node blob": (
        "node blob",
        lambda s: s.put_nodes([GraphNode("ok"), GraphNode("b", blob=_LONE)]),
    ),
    "tree": ("tree", lambda s: s.set_tree(_LONE)),
    "synced node": ("node blob", lambda s: s.replace_graph([GraphNode("ok", blob=_LONE)], "t")),
    "synced tree": ("tree", lambda s: s.replace_graph([GraphNode("new")], _LONE)),
}


@pytest.mark.parametrize("write", list(_WRITES_OF_A_LONE_SURROGATE))
def test_a_write_of_text_holding_a_lone_surrogate_is_refused_by_every_backend(
    store: Store, write: str
) -> None:
    """Every text a store keeps, not only a record's: SQLite's text cannot
    hold it and an import refuses it, so a backend that kept it would hold
    what it could not export.  Refused naming the field, before anything of
    the write is kept (a node before the bad one included)."""
    field, call = _WRITES_OF_A_LONE_SURROGATE[write]
    store.put_nodes([GraphNode("old", blob="b0")])
    store.set_tree("t0")
    before = store.snapshot()
    with pytest.raises(BadRequest, match=f"invalid {field} .*{_LONE_REFUSAL}"):
        call(store)
    assert store.snapshot() == before


def test_a_read_given_a_lone_surrogate_finds_nothing_on_every_backend(store: Store) -> None:
    """No stored text holds one, so a filter or key holding one matches
    nothing and a graph's key or blob holding one is one no anchor meets --
    answered alike by every backend, never a driver's encoding error."""
    store.put_nodes([GraphNode("file:a.py", blob="b1")])
    kept = store.record("lesson", "the lock file is stale", scope="s", anchor="file:a.py")
    store.cache_put("k", "fp", "{}")
    before = store.snapshot()
    assert store.list(scope=_LONE).records == []
    assert store.list(anchor_key=_LONE).records == []
    assert store.recall("lock", scope=_LONE).results == []
    assert store.recall("lock " + _LONE).results == []
    assert store.search("lock", anchor_key=_LONE).results == []
    assert [r.record.id for r in store.search("lock " + _LONE).results] == [kept]
    assert store.cache_get(_LONE) is None
    assert store.cache_forget(_LONE) is False
    store.remove_nodes([_LONE])
    assert store.snapshot() == before
    states = {blob: store.get(kept, graph={"file:a.py": blob}) for blob in ("b1", _LONE)} | {
        "other key": store.get(kept, graph={_LONE: "b1"})
    }
    assert {name: r.anchor_state.value for name, r in states.items() if r is not None} == {
        "b1": "valid",
        _LONE: "drifted",
        "other key": "vanished",
    }


@pytest.mark.parametrize(
    ("keys", "prefixes", "kept"),
    [
        ({"a\x00b"}, (), ["a\x00b"]),
        ((), ("a\x00",), ["a\x00b"]),
        ((), ("a",), ["a\x00b", "ab"]),
        ({"x\x01y", "x\x010", "a\x00b", "a\x01\x00b"}, (), ["a\x00b", "x\x01y"]),
        ((), ("x\x01", "\x00", "a\x01"), ["x\x01y"]),
        ({"\ud800\udc00abc"}, ("\ud800\udc00",), []),
        ({"\ud800"}, ("\U00010000",), ["\U00010000abc"]),
    ],
    ids=["nul key", "nul prefix", "prefix", "escape key", "escape prefix", "lone pair", "mixed"],
)
def test_an_anchor_filter_keeps_the_same_records_whatever_its_text_on_every_backend(
    store: Store, keys: set[str], prefixes: tuple[str, ...], kept: list[str]
) -> None:
    """SQLite reads a filter's texts from JSON, which ended a string at a
    U+0000 and read two lone surrogates as the character they would pair
    into: a key or prefix holding either matched what no other backend did."""
    from roteiro_memory.semantics import AnchorFilter

    for anchor in ("ab", "a\x00b", "\U00010000abc", "x\x01y"):
        store.record("lesson", f"lock {anchor}", anchor=anchor)
    anchors = AnchorFilter(keys=frozenset(keys), prefixes=prefixes)
    found = {
        "list": store.list(anchors=anchors).records,
        "recall": [r.record for r in store.recall(anchors=anchors).results],
        "search": [r.record for r in store.search("lock", anchors=anchors).results],
    }
    for name, records in found.items():
        assert sorted(r.anchor.key for r in records if r.anchor) == kept, name
        assert len(records) == len(kept), name


def test_a_bool_is_no_record_id_on_every_backend(store: Store) -> None:
    """PROTOCOL: a boolean is never an integer.  ``bool`` is an ``int`` to
    Python, and ``forget(True)`` deleted record 1: an id, a supersession or a
    limit given as a bool is BadRequest naming it, and nothing changes."""
    from roteiro_memory.store import MemoryWrite

    store.record("lesson", "one")
    store.record("lesson", "two")
    before = store.snapshot()
    refused = {
        "id": [lambda: store.get(True), lambda: store.forget(True), lambda: store.forget(False)],
        "limit": [
            lambda: store.list(limit=True),
            lambda: store.recall(limit=True, decay="linear:5"),
            lambda: store.search("one two", limit=True),
        ],
        "supersedes": [
            lambda: store.record("lesson", "three", supersedes=True),
            lambda: store.record_many([MemoryWrite("lesson", "four", supersedes=True)]),
        ],
    }
    for name, calls in refused.items():
        for call in calls:
            with pytest.raises(BadRequest, match=f"invalid {name} (True|False): expected an int"):
                call()
    assert store.snapshot() == before


def test_a_whole_number_of_thousands_of_digits_is_refused_as_too_large() -> None:
    """int() refuses more than 4,300 digits with an error of its own; the
    rule says "too large" first, for any count of digits."""
    from roteiro_memory.semantics import U64_MAX, parse_whole_number

    assert parse_whole_number("9" * 5_000) is None
    assert parse_whole_number("0" * 5_000 + "7") == 7
    assert parse_whole_number(str(U64_MAX)) == U64_MAX
    assert parse_whole_number(str(U64_MAX + 1)) is None


def test_anchor_over_the_size_limit_is_a_bad_request_on_the_wire(store: Store) -> None:
    before = store.snapshot()
    with pytest.raises(BadRequest, match="anchor"):
        Ops(store).call("memory.record", {"kind": "bogus", "body": "x", "anchor": "a" * 5000})
    assert store.snapshot() == before


def test_negative_zero_confidence_is_stored_as_zero_by_every_backend(store: Store) -> None:
    record = store.get(store.record("lesson", "x", confidence=-0.0))
    assert record is not None
    assert math.copysign(1.0, record.confidence or 0.0) == 1.0
    assert record.to_json()["confidence"] == 0.0
    assert json.dumps(record.to_json()["confidence"]) == "0.0"


def test_error_messages_quote_a_bounded_excerpt_of_a_body(tmp_path: Path) -> None:
    """A 60 KB body with one byte that is not UTF-8 (and a secret after it)
    is refused in one short line that quotes neither all of it nor the secret."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    body = b"x" * 60_000 + b"\xff" + b" SECRET-TOKEN-123"
    db = str(tmp_path / "memory.db").encode()
    done = subprocess.run(
        [b"roteiro-memory", b"add", body, b"--db", db], capture_output=True, env=env, timeout=60
    )
    assert done.returncode == 2
    assert len(done.stderr) < 400, len(done.stderr)
    assert b"SECRET" not in done.stderr
    assert len(done.stderr.splitlines()) == 1
    wire = Ops(SQLiteStore.temporary())
    for args in (
        {"kind": "lesson", "body": "y" * 60_000 + "\ud800 SECRET"},
        {"kind": "lesson", "body": "ok", "scope": "s" * 60_000 + " SECRET"},
        {"kind": "l" * 60_000 + " SECRET", "body": "ok"},
    ):
        with pytest.raises(RoteiroError) as raised:
            wire.call("memory.record", args)
        assert len(str(raised.value)) < 400
        assert "SECRET" not in str(raised.value)
    wire.store.close()


def test_import_refusals_quote_a_bounded_excerpt() -> None:
    """An export line with a 60 KB value of the wrong type is refused without
    echoing the value (it may hold a secret)."""
    lines = _export()
    lines.append(
        json.dumps(
            {
                "type": "node",
                "key": "k",
                "kind": None,
                "name": None,
                "path": None,
                "blob": ["b" * 60_000, "SECRET"],
            }
        )
    )
    with pytest.raises(ImportRefused) as raised:
        read_export(lines)
    assert "line 2" in str(raised.value)
    assert len(str(raised.value)) < 500
    assert "SECRET" not in str(raised.value)


def test_no_tree_witness_is_the_same_state_however_it_came_about(store: Store) -> None:
    """``set_tree(None)`` on a fresh store changes nothing, and clearing a
    witness leaves the store as one that never had one: the snapshot, like
    the model's, holds no witness either way."""
    fresh = store.snapshot()
    store.set_tree(None)
    assert store.snapshot() == fresh
    store.set_tree("4b825dc642cb6eb9a060e54bf8d69288fbee4904")
    assert store.snapshot() != fresh
    assert store.tree() == "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    store.set_tree(None)
    assert store.snapshot() == fresh
    assert store.tree() is None
