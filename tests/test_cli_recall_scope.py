"""A read's ``--scope`` (recall, list, conflicts) refuses a scope no record
can have, with the rule and the words a write refuses it with, and changes
nothing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from test_cli import Repo

from roteiro_memory.semantics import MAX_SCOPE_BYTES

NO_RECORD_HAS = {
    "too-long": "s" * 200,
    "one-byte-over": "é" * (MAX_SCOPE_BYTES // 2) + "s",
    "padded": " repo",
    "trailing-newline": "repo\n",
    "control-character": "re\x01po",
}
"""Scopes every write refuses, so no record has."""


def _snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@pytest.mark.parametrize("read_command", ["recall", "list", "conflicts"])
@pytest.mark.parametrize("scope", sorted(NO_RECORD_HAS))
def test_a_read_refuses_a_scope_no_write_accepts_in_the_writes_words(
    tmp_path: Path, scope: str, read_command: str
) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    store = str(folder / "memory.db")
    repo = Repo(tmp_path)
    repo.ok("add", "retry twice", "--db", store)
    before = _snapshot(folder)
    wrote = repo.run("add", "x", "--scope", NO_RECORD_HAS[scope], "--db", store)
    read = repo.run(read_command, "--scope", NO_RECORD_HAS[scope], "--db", store)
    assert wrote.returncode == read.returncode == 2, (wrote, read)
    assert (read.stdout, len(read.stderr.splitlines())) == ("", 1), read
    assert "invalid scope" in read.stderr
    assert read.stderr == wrote.stderr
    enveloped = repo.run(read_command, "--scope", NO_RECORD_HAS[scope], "--db", store, "--json")
    assert enveloped.returncode == 2
    assert json.loads(enveloped.stdout)["error"] == {
        "kind": "InvalidScope",
        "message": wrote.stderr.strip().removeprefix("roteiro-memory: error: "),
    }
    assert _snapshot(folder) == before


def test_recall_still_takes_every_scope_a_write_takes(tmp_path: Path) -> None:
    store = str(tmp_path / "memory.db")
    repo = Repo(tmp_path)
    longest = "é" * (MAX_SCOPE_BYTES // 2)
    repo.ok("add", "retry twice", "--scope", longest, "--db", store)
    found = repo.json("recall", "--scope", longest, "--db", store, "--json")
    assert [r["record"]["scope"] for r in found["results"]] == [longest]
    other = repo.run("recall", "--scope", "elsewhere", "--db", store)
    assert other.returncode == 1, other  # a scope a record could have: nothing matched
