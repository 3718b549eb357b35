"""Inputs at the edges of what a value can be: refused with the right error
kind, or taken the same way by every backend -- never a crash."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from roteiro_memory import GraphNode, InvalidConfidence, SQLiteStore, Store
from roteiro_memory.errors import Corrupt
from roteiro_memory.protocol import Ops
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


def test_export_refuses_a_store_holding_values_it_never_writes(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "memory.db")
    store.record("lesson", "fine")
    store.connection.execute("UPDATE agent_memory SET body = X'ff00'")
    with pytest.raises(Corrupt, match="roteiro-memory check"):
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
