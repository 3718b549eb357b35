"""``reanchor`` and ``confirm`` through the console script, in real git
repositories: a record follows its code through a rename, a drifted one is
confirmed by a reviewer, and every refusal writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from test_cli import RETRY, Repo
from test_cli_symbols import CASES as SYMBOL_CASES

from roteiro_memory.terminal import printable

LANGUAGES = {
    "python function": ("src/app/retry.py", RETRY, "jitter", ("value * 1.1", "value * 1.2")),
    **{
        name: (case.path, case.source, case.symbol, case.own)
        for name, case in SYMBOL_CASES.items()
        if name in ("typescript function", "go method", "rust impl method")
    },
}
"""A file, its source, an anchored symbol and an edit of that symbol's own text."""


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    files = {path: source for path, source, _, _ in LANGUAGES.values()}
    return Repo.committed(tmp_path / "repo", {**files, "README.txt": "hello\n"})


def _moved(path: str) -> str:
    folder, _, name = path.rpartition("/")
    return f"{folder}/moved_{name}" if folder else f"moved_{name}"


def _refused(repo: Repo, *args: str) -> str:
    """The one line a refused command prints; the store is as it was."""
    repo.ok("sync")
    before = repo.snapshot()
    done = repo.run(*args)
    assert done.returncode == 2, (args, done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("roteiro-memory: error: "), lines
    assert repo.snapshot() == before
    return lines[0]


def _listed(repo: Repo, *args: str) -> list[Any]:
    """The proposals ``reanchor --json`` lists: exit 0 with some, 1 with none."""
    done = repo.run("reanchor", "--json", *args)
    found: list[Any] = json.loads(done.stdout)["result"]["proposals"]
    assert done.returncode == (0 if found else 1), done.stderr
    return found


def _proposal(repo: Repo, record_id: int) -> Any:
    return next(p for p in _listed(repo) if p["record"]["id"] == record_id)


@pytest.mark.parametrize("language", LANGUAGES, ids=LANGUAGES.keys())
def test_a_record_follows_its_renamed_file_then_is_confirmed_after_drift(
    repo: Repo, language: str
) -> None:
    path, source, symbol, own = LANGUAGES[language]
    lesson = repo.add("about the symbol", f"{path}::{symbol}", "--confidence", "0.7")
    old = repo.json("show", str(lesson))
    repo.git("mv", path, _moved(path))
    repo.commit("move")
    assert repo.state(lesson) == "vanished"

    proposal = _proposal(repo, lesson)
    new_key = old["anchor"]["key"].replace(path, _moved(path))
    assert (proposal["action"], proposal["certainty"], proposal["to"]) == (
        "move",
        "certain",
        new_key,
    )
    assert proposal["blob"] == old["anchor"]["blob"], "moved unchanged: the same text"
    assert proposal["evidence"] == [
        {"kind": "blob", "key": new_key},
        {
            "kind": "rename",
            "from": path,
            "to": _moved(path),
            "similarity": 100,
            "before": old["tree"],
        },
        {"kind": "symbol", "key": new_key},
    ]

    written = repo.json("reanchor", "--apply", str(lesson))["written"]
    assert [(w["action"], w["supersedes"], w["from"]) for w in written] == [
        ("move", lesson, old["anchor"]["key"])
    ]
    moved = written[0]["record"]
    assert moved["anchor"]["key"] == new_key
    assert moved["anchor_state"] == "valid"
    for field in ("kind", "scope", "body", "confidence"):
        assert moved[field] == old[field], field
    assert repo.json("show", str(lesson))["superseded_by"] == moved["id"]

    repo.write(_moved(path), source.replace(*own))
    assert repo.state(moved["id"]) == "drifted"
    assert _proposal(repo, moved["id"])["action"] == "confirm"
    confirmed = repo.json("confirm", str(moved["id"]))["written"]
    assert [(w["action"], w["supersedes"]) for w in confirmed] == [("confirm", moved["id"])]
    again = confirmed[0]["record"]
    assert (again["anchor"]["key"], again["anchor_state"], again["body"]) == (
        new_key,
        "valid",
        "about the symbol",
    )
    assert again["anchor"]["blob"] != moved["anchor"]["blob"], "anchored at the blob now"
    chain = {r["id"]: r["superseded_by"] for r in repo.json("list", "--all")["records"]}
    assert chain == {lesson: moved["id"], moved["id"]: again["id"], again["id"]: None}


def test_a_file_renamed_with_edits_is_proposed_with_gits_similarity(repo: Repo) -> None:
    on_symbol = repo.add("jitter is linear", "src/app/retry.py::jitter")
    on_edited = repo.add("run retries OSError", "src/app/retry.py::Retry.run")
    on_file = repo.add("retry lives here", "src/app/retry.py")
    repo.git("mv", "src/app/retry.py", "src/app/backoff.py")
    repo.write("src/app/backoff.py", RETRY.replace("except OSError:", "except TimeoutError:"))
    repo.commit("rename and edit")

    found = {p["record"]["id"]: p for p in _listed(repo)}
    assert found[on_symbol]["certainty"] == "certain", "jitter itself did not change"
    edited, whole = found[on_edited], found[on_file]
    assert (edited["certainty"], edited["to"]) == ("likely", "py:src/app/backoff.py::Retry.run")
    assert (whole["certainty"], whole["to"]) == ("likely", "file:src/app/backoff.py")
    renames = [e for e in edited["evidence"] if e["kind"] == "rename"]
    assert len(renames) == 1
    assert 50 <= renames[0]["similarity"] < 100
    assert [e["kind"] for e in edited["evidence"]] == ["rename", "symbol"]

    written = repo.json("reanchor", "--all-certain")["written"]
    assert [w["supersedes"] for w in written] == [on_symbol], "only what moved unchanged"
    done = repo.json("reanchor", "--apply", str(on_edited), str(on_file))["written"]
    assert [(w["supersedes"], w["record"]["anchor_state"]) for w in done] == [
        (on_edited, "valid"),
        (on_file, "valid"),
    ]
    assert _listed(repo) == []


def test_a_witness_tree_git_never_wrote_is_stood_in_for_by_the_tree_that_held_the_file(
    repo: Repo,
) -> None:
    """A record written with an untracked file about has a witness that is no
    git object; the tree before the commit that renamed the file stands in."""
    repo.write("notes.txt", "untracked\n")
    lesson = repo.add("run retries OSError", "src/app/retry.py::Retry.run")
    witness = repo.json("show", str(lesson))["tree"]
    with pytest.raises(subprocess.CalledProcessError):
        repo.git("cat-file", "-e", witness)
    repo.git("mv", "src/app/retry.py", "src/app/backoff.py")
    repo.write("src/app/backoff.py", RETRY.replace("except OSError:", "except TimeoutError:"))
    repo.git("commit", "-q", "-am", "rename and edit")
    before = repo.git("rev-parse", "HEAD^^{tree}").strip()
    assert before != witness
    proposal = _proposal(repo, lesson)
    assert proposal["to"] == "py:src/app/backoff.py::Retry.run"
    assert [e.get("before") for e in proposal["evidence"] if e["kind"] == "rename"] == [before]


def test_a_symbol_moved_unchanged_to_another_file_is_certain(repo: Repo) -> None:
    lesson = repo.add("jitter is linear", "src/app/retry.py::jitter")
    head, _, tail = RETRY.partition("\n\ndef jitter")
    repo.write("src/app/retry.py", head + "\n")
    repo.write("src/app/util.py", "def jitter" + tail)
    proposal = _proposal(repo, lesson)
    assert (proposal["certainty"], proposal["to"]) == ("certain", "py:src/app/util.py::jitter")
    assert [e["kind"] for e in proposal["evidence"]] == ["blob"]


_ONE, _TWO = "def f():\n    return 1\n", "def f():\n    return 2\n"
_TWINS = "class A:\n    def run(self):\n        return {}\n\n\n" + (
    "class B:\n    def run(self):\n        return {}\n"
)
_DRIFTS = {
    "files swapped": (
        {"src/a.py": _ONE, "src/b.py": _TWO},
        {"src/a.py": _TWO, "src/b.py": _ONE},
        {"src/a.py": "src/b.py", "src/a.py::f": "src/b.py::f"},
    ),
    "moved, and a new file at its path": (
        {"src/a.py": _ONE},
        {"src/a.py": _TWO, "src/b.py": _ONE},
        {"src/a.py": "src/b.py", "src/a.py::f": "src/b.py::f"},
    ),
    "methods' texts swapped": (
        {"src/a.py": _TWINS.format(1, 2)},
        {"src/a.py": _TWINS.format(2, 1)},
        {"src/a.py::A.run": "src/a.py::B.run"},
    ),
}
"""Files committed, then as they are after the change, and where each
anchor's code is now, though its own node is still there: drifted."""


@pytest.mark.parametrize("change", _DRIFTS, ids=_DRIFTS.keys())
def test_a_drifted_anchor_whose_code_moved_is_proposed_a_move_not_confirm(
    tmp_path: Path, change: str
) -> None:
    """Its node is there, changed, but its very code is at another node now:
    confirming it would vouch for code it was never about.  The move is
    proposed as for a vanished anchor, the drift still listed, but as
    ``likely``: ``--all-certain`` leaves it, and ``--apply ID`` takes it; a
    reviewer may still confirm such a record instead."""
    before, after, went = _DRIFTS[change]
    repo = Repo.committed(tmp_path / "repo", before)
    lessons = {anchor: repo.add(f"about {anchor}", anchor) for anchor in went}
    kept = repo.add("still holds where it is", next(iter(went)))
    if change.startswith("moved"):
        repo.git("mv", "src/a.py", "src/b.py")
    for path, source in after.items():
        repo.write(path, source)
    repo.commit(change)
    assert {repo.state(lesson) for lesson in [*lessons.values(), kept]} == {"drifted"}

    found = {p["record"]["id"]: p for p in _listed(repo)}
    for anchor, lesson in lessons.items():
        old = repo.json("show", str(lesson))["anchor"]
        new = old["key"].replace(anchor, went[anchor])
        proposal = found[lesson]
        assert (proposal["action"], proposal["certainty"], proposal["to"]) == (
            "move",
            "likely",
            new,
        ), anchor
        assert proposal["blob"] == old["blob"], "the very code the record captured"
        drift = {"kind": "drift", "key": old["key"], "blob": proposal["evidence"][-1]["blob"]}
        assert proposal["evidence"] == [{"kind": "blob", "key": new}, drift]
    assert "confirm" not in repo.ok("reanchor")

    (confirmed,) = repo.json("confirm", str(kept))["written"]
    assert confirmed["record"]["anchor_state"] == "valid"
    assert repo.run("reanchor", "--all-certain").returncode == 1, "nothing certain"
    ids = [str(lesson) for lesson in lessons.values()]
    written = repo.json("reanchor", "--apply", *ids)["written"]
    assert sorted((w["supersedes"], w["record"]["anchor"]["key"]) for w in written) == sorted(
        (lesson, repo.json("show", str(lesson))["anchor"]["key"].replace(a, went[a]))
        for a, lesson in lessons.items()
    )
    assert {w["record"]["anchor_state"] for w in written} == {"valid"}
    assert _listed(repo) == []


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "in the working tree"])
def test_a_drifted_anchor_whose_code_a_copy_made_since_carries_is_never_certain(
    tmp_path: Path, committed: bool
) -> None:
    """A file copied after the record was written, then the original edited:
    the copy carries the captured code, and the trees are those of a file
    moved and a new one made at its path.  Which it was cannot be told, so
    the move is ``likely`` at most, and ``--all-certain`` never re-anchors
    the record to the copy."""
    repo = Repo.committed(tmp_path / "repo", {"src/a.py": _ONE, "README.txt": "hello\n"})
    lesson = repo.add("f returns one", "src/a.py::f")
    repo.write("src/b.py", _ONE)
    repo.write("src/a.py", _TWO)
    if committed:
        repo.commit("copy, then edit the original")
    assert repo.state(lesson) == "drifted"
    (proposal,) = _listed(repo)
    assert (proposal["action"], proposal["certainty"], proposal["to"]) == (
        "move",
        "likely",
        "py:src/b.py::f",
    )
    before = repo.snapshot()
    assert repo.run("reanchor", "--all-certain").returncode == 1
    assert repo.snapshot() == before
    assert repo.state(lesson) == "drifted"


def test_a_drifted_anchor_edited_where_it_is_is_still_proposed_confirm(repo: Repo) -> None:
    """An edit in place, beside a copy of the code that was there when the
    record was written: the copy is not where the code went (the rule for a
    vanished anchor's carriers), so the proposal stays ``confirm``."""
    repo.write("src/twins.py", _TWINS.format(1, 1))
    repo.commit("twins")
    lesson = repo.add("A.run returns one", "src/twins.py::A.run")
    plain = repo.add("jitter is linear", "src/app/retry.py::jitter")
    repo.write("src/twins.py", _TWINS.format(3, 1))
    repo.write("src/app/retry.py", RETRY.replace("value * 1.1", "value * 1.2"))
    repo.commit("edit")
    found = {p["record"]["id"]: p for p in _listed(repo)}
    for record_id in (lesson, plain):
        proposal = found[record_id]
        assert (proposal["action"], proposal["certainty"]) == ("confirm", None), record_id
        assert [e["kind"] for e in proposal["evidence"]] == ["drift"]
    line = _refused(repo, "reanchor", "--apply", str(lesson))
    assert "is drifted, not moved" in line
    assert "confirm the record" in line


def test_code_at_several_places_is_ambiguous_and_never_applied(repo: Repo) -> None:
    on_file = repo.add("the readme greets", "README.txt")
    repo.git("rm", "-q", "README.txt")
    repo.write("docs/a.txt", "hello\n")  # untracked: git pairs nothing with them
    repo.write("docs/b.txt", "hello\n")
    proposal = _proposal(repo, on_file)
    assert (proposal["action"], proposal["certainty"], proposal["to"]) == (
        "move",
        "ambiguous",
        None,
    )
    assert proposal["candidates"] == ["file:docs/a.txt", "file:docs/b.txt"]
    line = _refused(repo, "reanchor", "--apply", str(on_file))
    assert "several places now (docs/a.txt, docs/b.txt)" in line
    nothing = repo.run("reanchor", "--all-certain")
    assert nothing.returncode == 1
    assert nothing.stdout == "nothing re-anchored: no proposal is certain\n"


def test_a_copy_that_was_there_all_along_is_not_where_the_code_went(repo: Repo) -> None:
    """A symbol's blob is its text's: deleting one of two identical methods
    leaves the other carrying the blob, which it did when the record was
    written -- no evidence of a move, so nothing is proposed, and a copy
    made since is still followed, certain, past the old one."""
    method = "    def run(self):\n        return 1\n"
    twins = f"class A:\n{method}\n\nclass B:\n{method}"
    repo.write("src/twins.py", twins)
    repo.commit("twins")
    lesson = repo.add("A.run must stay idempotent", "src/twins.py::A.run")
    repo.write("src/twins.py", twins.partition("\n\n\n")[2])
    repo.commit("drop A")
    proposal = _proposal(repo, lesson)
    assert (proposal["action"], proposal["to"]) == ("none", None)
    assert [e["kind"] for e in proposal["evidence"]] == []
    assert repo.run("reanchor", "--all-certain").returncode == 1
    assert repo.state(lesson) == "vanished"

    repo.write(
        "src/twins.py",
        twins.partition("\n\n\n")[2] + "\n\n" + twins.partition("\n\n\n")[0].replace("A", "C"),
    )
    proposal = _proposal(repo, lesson)
    assert (proposal["certainty"], proposal["to"]) == ("certain", "py:src/twins.py::C.run")


@pytest.mark.parametrize("paired", [True, False], ids=["git pairs them", "another exists"])
def test_an_empty_file_identifies_nothing(repo: Repo, paired: bool) -> None:
    """Every empty file has the same blob, and git pairs any two as a rename
    (100%): neither says where a record about one went."""
    repo.write("old/__init__.py", "")
    repo.write("old/mod.py", "x = 1\n")
    if not paired:
        repo.write("other/__init__.py", "")
    repo.commit("old")
    lesson = repo.add("the old package is deprecated", "old/__init__.py")
    repo.git("rm", "-rq", "old")
    if paired:
        repo.write("lib/__init__.py", "")
        repo.write("lib/core.py", "def f():\n    return 2\n")
    repo.commit("new lib")
    proposal = _proposal(repo, lesson)
    assert (proposal["action"], proposal["to"], proposal["evidence"]) == ("none", None, [])


def _commit_earlier(repo: Repo, message: str) -> None:
    """Commit, dated an hour ago: well before anything written after it."""
    repo.env["GIT_COMMITTER_DATE"] = f"@{int(time.time()) - 3600} +0000"
    try:
        repo.commit(message)
    finally:
        del repo.env["GIT_COMMITTER_DATE"]


def test_history_of_another_file_at_the_path_is_no_rename_evidence(repo: Repo) -> None:
    """A record about a file never committed has a witness git never wrote;
    the history's file of that path, renamed away before the record was
    written, is another file (its node never had the record's blob), so its
    rename says nothing."""
    repo.write("util.py", 'def f():\n    return "old"\n')
    _commit_earlier(repo, "old util")
    repo.git("mv", "util.py", "legacy_util.py")
    _commit_earlier(repo, "retire util")
    repo.write("util.py", 'def f():\n    return "new, unrelated"\n')
    lesson = repo.add("the new f must not block", "util.py::f")
    (repo.root / "util.py").unlink()
    proposal = _proposal(repo, lesson)
    assert (proposal["action"], proposal["to"], proposal["evidence"]) == ("none", None, [])


def test_a_record_on_an_edit_never_committed_follows_its_file_through_a_rename(
    repo: Repo,
) -> None:
    """Written mid-edit, a record captured code no tree holds; its file's
    rename is still looked for, from the tree holding the file when it was
    written, and proposed as for a record written on the committed code."""
    path, source, symbol, (was, edit) = LANGUAGES["typescript function"]
    committed = repo.add("committed state", f"{path}::{symbol}")
    repo.write(path, source.replace(was, edit))
    mid_edit = repo.add("uncommitted state", f"{path}::{symbol}")
    repo.write(path, source.replace(was, edit + " + 1"))
    repo.commit("edit")
    repo.git("mv", path, _moved(path))
    repo.commit("move")
    found = {p["record"]["id"]: p for p in _listed(repo)}
    before = repo.git("rev-parse", "HEAD~2^{tree}").strip()
    for lesson in (committed, mid_edit):
        proposal = found[lesson]
        assert (proposal["certainty"], proposal["to"]) == (
            "likely",
            f"ts:{_moved(path)}::{symbol}",
        ), lesson
        assert [e["kind"] for e in proposal["evidence"]] == ["rename", "symbol"]
        assert [e["before"] for e in proposal["evidence"][:1]] == [before]
    assert found[committed]["evidence"] == found[mid_edit]["evidence"]
    written = repo.json("reanchor", "--apply", str(mid_edit))["written"]
    assert [(w["supersedes"], w["record"]["anchor_state"]) for w in written] == [
        (mid_edit, "valid")
    ]


@pytest.mark.parametrize("change", ["edited then renamed", "moved to another file"])
def test_a_witness_git_never_wrote_stands_in_for_the_tree_before_later_edits(
    repo: Repo, change: str
) -> None:
    """With an untracked file beside it, a record's witness is no git object;
    the tree standing in is the newest that holds its code as captured,
    before the commits that edited or moved it since -- so the edit and
    rename, or the unchanged move, are still followed."""
    two = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    repo.write("src/two.py", two)
    repo.commit("two")
    repo.write("notes.txt", "untracked\n")
    lesson = repo.add("f must stay pure", "src/two.py::f")
    if change == "edited then renamed":
        repo.write("src/two.py", two.replace("return 1", "return 10"))
        repo.commit("edit f")
        repo.git("mv", "src/two.py", "src/three.py")
        repo.commit("rename")
        want = ("likely", "py:src/three.py::f", ["rename", "symbol"])
    else:
        repo.write("src/two.py", two.partition("\n\n\n")[2])
        repo.write("src/one.py", two.partition("\n\n\n")[0] + "\n")
        repo.commit("move f")
        # Likely, not certain: a copy untracked when the record was written
        # would be in no tree, so a tree standing in cannot rule one out.
        want = ("likely", "py:src/one.py::f", ["blob"])
    proposal = _proposal(repo, lesson)
    kinds = [e["kind"] for e in proposal["evidence"]]
    assert (proposal["certainty"], proposal["to"], kinds) == want


_F = "def f():\n    return 1\n"


def _certainties(repo: Repo, lesson: int) -> tuple[str | None, str | None]:
    proposal = _proposal(repo, lesson)
    return proposal["certainty"], proposal["to"]


def test_a_twin_that_moved_under_its_own_key_is_never_certain(repo: Repo) -> None:
    """Two files held the same function when the record was written; the
    record's is deleted while its twin moves with its renamed file.  The
    twin now carries the blob under a new key: where the record's code went
    or not, nothing says, so it is never applied by ``--all-certain``."""
    repo.write("src/a.py", _F + "\n\ndef h():\n    return 3\n")
    repo.write("src/b.py", _F + "\n\ndef g():\n    return 2\n")
    repo.commit("twins")
    lesson = repo.add("about b.f", "src/b.py::f")
    repo.git("mv", "src/a.py", "src/c.py")
    repo.write("src/b.py", "def g():\n    return 2\n")
    repo.commit("a is c, and b loses f")
    assert _certainties(repo, lesson) == ("likely", "py:src/c.py::f")
    assert repo.run("reanchor", "--all-certain").returncode == 1


def test_a_copy_untracked_when_the_record_was_written_is_never_certain(repo: Repo) -> None:
    """The record's witness is no git object (the copy was untracked then),
    so no tree can show the copy was already there: proposed, not certain."""
    repo.write("src/a.py", _F + "\n\ndef g():\n    return 2\n")
    repo.commit("a")
    repo.write("src/b.py", _F)
    lesson = repo.add("about a.f", "src/a.py::f")
    repo.write("src/a.py", "def g():\n    return 2\n")
    repo.git("add", "-A")
    repo.commit("f goes, b comes in")
    assert _certainties(repo, lesson) == ("likely", "py:src/b.py::f")
    assert repo.run("reanchor", "--all-certain").returncode == 1


def test_the_tree_before_a_change_is_its_own_parent_not_the_last_to_touch_the_file(
    repo: Repo,
) -> None:
    """A copy of the file committed between the record's file's changes was
    there before the rename: the rename is compared from the tree just
    before it (git rev-list --parents with a path rewrites parents to the
    previous commit touching it, which missed the copy), and the code is
    followed to the renamed file, not the copy."""
    two = _F + "\n\ndef g():\n    return 2\n"
    repo.write("src/a.py", two)
    repo.commit("a")
    repo.write("src/b.py", two)
    repo.commit("copy a to b, a untouched")
    repo.write("notes.txt", "untracked\n")
    lesson = repo.add("about a.f", "src/a.py::f")
    repo.git("mv", "src/a.py", "src/c.py")
    repo.write("src/c.py", two.replace("return 2", "return 3"))
    repo.git("commit", "-q", "-am", "a is c")
    assert _certainties(repo, lesson) == ("certain", "py:src/c.py::f")


def test_listing_changes_nothing(repo: Repo) -> None:
    """``reanchor`` reads: after the sync every read does, the store is byte
    for byte as it was, with or without ``--json``, and ``--no-sync`` reads
    the graph as last synced."""
    lesson = repo.add("jitter is linear", "src/app/retry.py::jitter")
    repo.add("run retries OSError", "src/app/retry.py::Retry.run")
    repo.git("mv", "src/app/retry.py", "src/app/backoff.py")
    repo.ok("sync")
    before = repo.snapshot()
    assert _listed(repo)
    assert "reanchor --apply" in repo.ok("reanchor")
    assert repo.snapshot() == before
    repo.write("src/app/backoff.py", RETRY.replace("value * 1.1", "value"))
    stale = _listed(repo, "--no-sync")
    assert repo.snapshot() == before, "not even the graph: nothing synced"
    assert _proposal(repo, lesson)["certainty"] == "likely", "synced: jitter changed"
    assert [p["certainty"] for p in stale] == ["certain", "certain"]


def test_applying_several_is_all_or_nothing(repo: Repo) -> None:
    moved = repo.add("jitter is linear", "src/app/retry.py::jitter")
    valid = repo.add("the readme greets", "README.txt")
    repo.git("mv", "src/app/retry.py", "src/app/backoff.py")
    line = _refused(repo, "reanchor", "--apply", str(moved), str(valid))
    assert line.endswith(
        f"record {valid} cannot be re-anchored: its anchor README.txt is valid, "
        "the code unchanged where it was"
    )
    assert repo.state(moved) == "vanished"
    assert repo.json("show", str(moved))["superseded_by"] is None
    line = _refused(repo, "confirm", str(moved), str(valid))
    assert f"record {moved} cannot be confirmed" in line


def test_every_refusal_names_why_and_writes_nothing(repo: Repo) -> None:
    gone = repo.add("jitter is linear", "src/app/retry.py::jitter")
    drifted = repo.add("run retries OSError", "src/app/retry.py::Retry.run")
    valid = repo.add("the readme greets", "README.txt")
    unanchored = repo.add("CI runs on Ubuntu")
    replaced = repo.add("an old note", "README.txt")
    newer = repo.add("a newer note", "README.txt", "--supersedes", str(replaced))
    repo.write(
        "src/app/retry.py",
        RETRY.split("\n\ndef jitter")[0].replace("except OSError:", "except TimeoutError:") + "\n",
    )
    reanchor_refusals = {
        (str(gone),): "no node now carries its code and git finds no rename of its file",
        (str(drifted),): "is drifted, not moved",
        (str(valid),): "is valid",
        (str(unanchored),): "has no anchor",
        (str(replaced),): f"already superseded by {newer}; reanchor {newer} instead",
        ("99",): "no memory record with id 99",
        ("0",): "invalid ID '0': expected a positive whole number",
        (str(gone), str(gone)): f"ID {gone} given twice",
        (): "name the records to re-anchor (ID...), or give --all-certain",
        (str(gone), "--all-certain"): "give record ids or --all-certain, not both",
    }
    for ids, says in reanchor_refusals.items():
        line = _refused(repo, "reanchor", "--apply", *ids)
        assert says in line, (ids, line)
    confirm_refusals = {
        str(gone): "is vanished, the code gone from there; re-anchor it instead",
        str(valid): "is valid, the code unchanged since it was written",
        str(unanchored): "has no anchor",
        str(replaced): f"already superseded by {newer}; confirm {newer} instead",
        "99": "no memory record with id 99",
    }
    for record_id, says in confirm_refusals.items():
        line = _refused(repo, "confirm", record_id)
        assert says in line, (record_id, line)
    repo.write("src/app/retry.py", RETRY + "\ndef broken(:\n")
    repo.run("sync")
    line = _refused(repo, "confirm", str(drifted))
    assert "is unverifiable" in line
    done = repo.run("confirm", "--json", "99")
    envelope = json.loads(done.stdout)
    assert (done.returncode, envelope["ok"], envelope["error"]["kind"]) == (2, False, "NotFound")


def _store_bytes(repo: Repo) -> dict[str, bytes]:
    """The store file and whichever of its side files are there, byte for byte."""
    files = [repo.db, *(repo.db.with_name(repo.db.name + s) for s in ("-wal", "-shm", "-journal"))]
    return {path.name: path.read_bytes() for path in files if path.exists()}


def test_a_refused_reanchor_or_confirm_writes_nothing_not_even_its_sync(repo: Repo) -> None:
    """The working tree changed since the last sync: the refusal is decided
    against the graph a sync would write, and that graph is not written --
    the store's rows and bytes are as they were, its witness the old tree."""
    gone = repo.add("jitter is linear", "src/app/retry.py::jitter")
    valid = repo.add("the readme greets", "README.txt")
    repo.ok("sync")
    repo.git("mv", "src/app/retry.py", "src/app/backoff.py")
    repo.write("README.txt", "hello again\n")  # drifted now, never synced
    rows, files = repo.snapshot(), _store_bytes(repo)
    refusals = {
        ("reanchor", "--apply", str(valid)): f"record {valid} cannot be re-anchored",
        ("reanchor", "--apply", str(gone), "99"): "no memory record with id 99",
        ("confirm", str(gone)): f"record {gone} cannot be confirmed",
        ("confirm", str(gone), str(valid)): f"record {gone} cannot be confirmed",
    }
    for args, says in refusals.items():
        done = repo.run(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.splitlines() == [done.stderr.strip()], done.stderr
        assert says in done.stderr, (args, done.stderr)
        assert repo.snapshot() == rows, args
        assert _store_bytes(repo) == files, args


def test_an_accepted_reanchor_writes_its_sync_with_the_records(repo: Repo) -> None:
    """Not synced since the move: the apply writes the graph it decided
    against with the superseding record, so the record reads back valid at
    its new node and a sync after it has nothing to write."""
    lesson = repo.add("jitter is linear", "src/app/retry.py::jitter")
    drifted = repo.add("the readme greets", "README.txt")
    repo.ok("sync")
    repo.git("mv", "src/app/retry.py", "src/app/backoff.py")
    (written,) = repo.json("reanchor", "--apply", str(lesson))["written"]
    assert written["record"]["anchor"]["key"] == "py:src/app/backoff.py::jitter"
    assert written["record"]["anchor_state"] == "valid"
    assert repo.json("sync")["up_to_date"] is True
    repo.write("README.txt", "hello again\n")
    (confirmed,) = repo.json("confirm", str(drifted))["written"]
    assert confirmed["record"]["anchor_state"] == "valid"
    assert repo.json("sync")["up_to_date"] is True


def test_reanchor_with_nothing_stale_answers_nothing(repo: Repo) -> None:
    repo.add("the readme greets", "README.txt")
    done = repo.run("reanchor")
    assert (done.returncode, done.stdout) == (
        1,
        "0 records: no live record's anchor drifted or vanished\n",
    )
    assert _listed(repo) == []


def test_reanchor_json_shows_a_name_that_is_not_utf8_as_valid_utf8(tmp_path: Path) -> None:
    """A rename to a name that is not UTF-8 shows it as sync's notices do,
    U+FFFD for each byte UTF-8 cannot take: no lone surrogate, which a strict
    JSON parser rejects."""
    repo = Repo.committed(tmp_path / "r", {"a.py": "def f():\n    return 1\n"})
    repo.add("f stays pure", "a.py")
    os.rename(repo.root / "a.py", os.path.join(os.fsencode(repo.root), b"b\xff.py"))
    repo.commit("move")
    out = repo.run("reanchor", "--json").stdout
    (evidence,) = json.loads(out)["result"]["proposals"][0]["evidence"]
    assert (evidence["from"], evidence["to"]) == ("a.py", "b\ufffd.py")
    assert "\\udcff" not in out


def test_every_cell_of_the_reanchor_table_is_one_line(tmp_path: Path) -> None:
    """A path holding a newline, renamed: git's rename in the evidence shows
    it escaped, as the command line shows control characters, and every row
    stays one line."""
    weird = "weird\nname.py"
    repo = Repo.committed(tmp_path / "r", {weird: "def f():\n    return 1\n"})
    on_file = repo.add("the weird file", weird)
    on_symbol = repo.add("f stays pure", f"{weird}::f")
    repo.git("mv", weird, "w2.py")
    repo.commit("move")
    done = repo.run("reanchor")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 4, lines  # the header, a row a record, the summary
    rows = {int(line.split()[0]): line for line in lines[1:3]}
    assert set(rows) == {on_file, on_symbol}
    shown = printable(weird, one_line=True)
    assert shown == "weird\\x0aname.py"
    for row in rows.values():
        assert f"git: {shown} -> w2.py (100%)" in row, row


def test_a_refused_confirm_still_says_which_files_did_not_parse(repo: Repo) -> None:
    """The sync a refusal leaves unwritten still tells why a file's symbols
    were not read: a file that no longer parses is the reason its record
    cannot be confirmed, and the refusal alone would not say so: its one
    line carries the warning."""
    lesson = repo.add("jitter is linear", "src/app/retry.py::jitter")
    repo.ok("sync")
    rows = repo.snapshot()
    repo.write("src/app/retry.py", "def jitter(:\n")
    done = repo.run("confirm", str(lesson))
    assert done.returncode == 2, done.stderr
    (error,) = done.stderr.splitlines()
    assert error.startswith("roteiro-memory: error: "), error
    assert f"record {lesson} cannot be confirmed" in error
    assert "; warning: src/app/retry.py does not parse (" in error
    assert repo.snapshot() == rows


def test_a_rename_to_a_file_that_does_not_parse_is_not_called_deleted_code(
    tmp_path: Path,
) -> None:
    """Its symbols are not known, so where the code went in it cannot be
    told: the refusal says so, and to fix the file, never that the code was
    deleted -- and writes nothing."""
    source = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"
    repo = Repo.committed(tmp_path / "repo", {"a.py": source})
    lesson = repo.add("f returns one", "a.py::f")
    repo.git("mv", "a.py", "b.py")
    repo.write("b.py", source.replace("def g():", "def g(:"))
    repo.commit("renamed, and broken")
    repo.ok("sync")
    before = repo.snapshot()
    done = repo.run("reanchor", "--apply", str(lesson))
    assert done.returncode == 2
    assert done.stderr == (
        f"roteiro-memory: error: record {lesson} cannot be re-anchored: git finds its file "
        "renamed to b.py (80% alike), but it does not parse (line 5: invalid syntax), so "
        "where its code is in that file cannot be told; fix it, then reanchor again\n"
    )
    assert repo.snapshot() == before
