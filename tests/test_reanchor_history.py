"""What following a record's code back through its file's history costs and
finds, in real git repositories, called in-process: each version of a file
is parsed once, no more of them than :data:`~roteiro_memory.app.moves.HISTORY_READ`
bytes, a file anchor's by its blob alone, a hook reads no history, and a
witness is built again only where it differs from the synced graph."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_cli import Repo, use_cases_in

from roteiro_memory.app import hooks, moves, records
from roteiro_memory.app import reanchor as ra
from roteiro_memory.app.hookstate import SessionState
from roteiro_memory.app.session import Session
from roteiro_memory.repo import nodes, renames

PATH = "big.py"


def _source(version: int, *, f: str | None = "return 'f'") -> str:
    """The file at one of its versions: ``f`` (whose body is ``f``, unless
    None) and a few others, one of which says which version it is."""
    head = f"def f():\n    {f}\n\n\n" if f is not None else ""
    rest = "".join(f"def g{i}():\n    return {i}\n\n\n" for i in range(40))
    return f"{head}{rest}def version():\n    return {version}\n"


def _parsed(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The sources of :data:`PATH` parsed from now on, in order."""
    seen: list[bytes] = []
    parse = nodes.file_symbols

    def counted(path: str, source: bytes, object_format: str = "sha1") -> object:
        if path == PATH:
            seen.append(source)
        return parse(path, source, object_format)

    monkeypatch.setattr(nodes, "file_symbols", counted)
    return seen


def _written_mid_edit(repo: Repo, versions: list[int], anchor: str) -> int:
    """A record on ``anchor`` written on an edit of ``f`` never committed,
    after the file was committed at each of ``versions``; then ``f`` (or,
    for the file's anchor, the file) is removed and that committed."""
    for step, version in enumerate(versions):
        repo.write(PATH, _source(version))
        repo.write("step.txt", f"{step}\n")  # each tree another, whatever the file holds
        repo.commit(f"version {version}")
    repo.write(PATH, _source(versions[-1], f="return 100"))
    record = records.remember(Session(), "lesson", "f noted mid-edit", anchor=anchor).record
    if anchor == PATH:
        (repo.root / PATH).unlink()
    else:
        repo.write(PATH, _source(versions[-1], f=None))
    repo.commit("drop it")
    Session().sync()  # the file as it is now is parsed here, once
    return record.id


def test_each_version_of_a_file_is_parsed_once_looking_back_for_code_never_committed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file went back and forth between two versions: the trees before
    each change hold one of the two, and each is parsed once, not once a tree."""
    repo = use_cases_in(tmp_path, monkeypatch)
    lesson = _written_mid_edit(repo, [1, 2] * 5, f"{PATH}::f")
    parsed = _parsed(monkeypatch)
    (proposal,) = ra.proposals(Session(), [lesson]).proposals
    assert proposal.action == ra.NONE
    assert len(parsed) == len(set(parsed)) <= 2
    assert set(parsed) <= {_source(1).encode(), _source(2).encode()}


def test_a_files_past_versions_are_read_no_further_than_the_history_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten versions of the file, none holding the record's code: only the
    newest that fit in the budget are parsed, whatever the history holds."""
    repo = use_cases_in(tmp_path, monkeypatch)
    lesson = _written_mid_edit(repo, list(range(10)), f"{PATH}::f")
    size = len(_source(1).encode())
    monkeypatch.setattr(moves, "HISTORY_READ", 3 * size, raising=False)
    parsed = _parsed(monkeypatch)
    (proposal,) = ra.proposals(Session(), [lesson]).proposals
    assert proposal.action == ra.NONE
    assert sum(len(source) for source in parsed) <= 3 * size
    assert parsed == [_source(9).encode(), _source(8).encode(), _source(7).encode()]


def test_a_file_anchor_is_looked_for_in_history_by_its_blob_without_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = use_cases_in(tmp_path, monkeypatch)
    lesson = _written_mid_edit(repo, list(range(10)), PATH)
    parsed = _parsed(monkeypatch)
    (proposal,) = ra.proposals(Session(), [lesson]).proposals
    assert proposal.action == ra.NONE
    assert parsed == []


def test_a_stand_in_within_the_budget_is_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code the record captured was committed, then edited and renamed:
    the tree holding it is found, and the rename followed from it."""
    repo = use_cases_in(tmp_path, monkeypatch)
    repo.write(PATH, _source(1))
    repo.commit("version 1")
    repo.write("notes.txt", "untracked\n")  # the witness is no git object
    lesson = records.remember(Session(), "lesson", "about f", anchor=f"{PATH}::f").record
    repo.write(PATH, _source(1, f="return 2"))
    repo.commit("f")
    for version in range(2, 6):
        repo.write(PATH, _source(version, f="return 2"))
        repo.commit(f"version {version}")
    repo.git("mv", PATH, "moved.py")
    repo.commit("move")
    (proposal,) = ra.proposals(Session(), [lesson.id]).proposals
    assert (proposal.certainty, proposal.to) == ("likely", "py:moved.py::f")


def _hook_read(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], str]:
    """The files whose history a hook's read of :data:`PATH` looked back
    through, and the notice it gave."""
    looked: list[str] = []
    holding = renames.trees_holding

    def counted(repo: object, path: str) -> object:
        looked.append(path)
        return holding(repo, path)  # type: ignore[arg-type]

    monkeypatch.setattr(renames, "trees_holding", counted)
    event = hooks.Event(
        "PreToolUse", "s1", cwd=str(repo.root), tool="Read", path=str(repo.root / PATH)
    )
    answer = hooks.respond(Session(), event, SessionState(), None)
    return looked, answer["hookSpecificOutput"]["additionalContext"]


def test_a_hook_reads_no_files_history_and_points_to_reanchor_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent waits on the hook: a record whose witness git does not have
    is not followed back through its file's history there; the notice names
    the ``reanchor`` that does, and ``reanchor`` still follows it."""
    repo = use_cases_in(tmp_path, monkeypatch)
    lesson = _written_mid_edit(repo, [1, 2], f"{PATH}::f")
    looked, text = _hook_read(repo, monkeypatch)
    assert looked == []
    assert text.splitlines()[2].endswith(
        f"-- see where its code went with `roteiro-memory reanchor {lesson}`"
    )
    ra.proposals(Session(), [lesson])
    assert looked == [PATH]


@pytest.mark.parametrize("copied", [False, True], ids=["edited", "edited and copied"])
def test_a_hook_follows_a_drifted_anchor_only_when_another_node_carries_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copied: bool
) -> None:
    """A drifted record written mid-edit: with no other node carrying its
    code, nothing is followed (no history read) and the hook says to
    confirm it; with one, where the code went is for ``reanchor`` to say,
    as for a vanished record -- the hook never steers to confirming code
    the record may never have been about."""
    repo = use_cases_in(tmp_path, monkeypatch)
    lesson = _written_mid_edit(repo, [1], f"{PATH}::f")
    repo.write(PATH, _source(1, f="return 200"))
    if copied:
        repo.write("other.py", "def f():\n    return 100\n")
    repo.commit("edit f again")
    Session().sync()
    looked, text = _hook_read(repo, monkeypatch)
    assert looked == []
    said = (
        f"see where its code went with `roteiro-memory reanchor {lesson}`"
        if copied
        else f"settle it with `roteiro-memory confirm {lesson}`"
    )
    assert text.splitlines()[2].endswith(f"-- {said}"), text
    (proposal,) = ra.proposals(Session(), [lesson]).proposals
    want = ("move", "likely", "py:other.py::f") if copied else ("confirm", None, f"py:{PATH}::f")
    assert (proposal.action, proposal.certainty, proposal.to) == want


def test_following_moved_code_builds_only_the_files_changed_since_it_was_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checking a carrier against the tree the record was written on (the
    hook does, before every read of a file with a stale record): the nodes
    of a file the synced graph holds as that tree does are the graph's own,
    so only the files changed since are built again -- not the whole
    repository -- and the proposal is what the whole tree gives."""
    from roteiro_memory.repo import graph

    repo = use_cases_in(tmp_path, monkeypatch)
    for n in range(30):
        repo.write(f"s/m{n}.py", f"def h{n}():\n    return {n}\n")
    repo.write(PATH, "def f():\n    return 'f'\n\n\ndef g():\n    return 'g'\n")
    repo.commit("many files")
    lesson = records.remember(Session(), "lesson", "about f", anchor=f"{PATH}::f").record
    repo.write(PATH, "def g():\n    return 'g'\n")
    repo.write("moved.py", "def f():\n    return 'f'\n")
    repo.write("s/m3.py", "def h3():\n    return -3\n")
    repo.commit("move f")
    Session().sync()
    built: list[str] = []
    whole = graph.tree_graph

    def counted(*args: object, **kwargs: object) -> dict[str, str | None]:
        found = whole(*args, **kwargs)  # type: ignore[arg-type]
        built.extend(key for key in found if key.startswith("file:"))
        return found

    monkeypatch.setattr(graph, "tree_graph", counted)
    (proposal,) = ra.proposals(Session(), [lesson.id]).proposals
    assert (proposal.certainty, proposal.to) == ("certain", "py:moved.py::f")
    assert sorted(built) == [f"file:{PATH}", "file:s/m3.py"]


def test_an_anchor_path_no_file_may_have_is_held_by_no_tree_and_fails_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record whose anchor names a path with a NUL byte (imported, or sent
    by a tool as a raw key) with a blob: looking back for its code finds no
    tree, rather than failing every record's proposals."""
    from roteiro_memory.results import MemoryAnchor, MemoryRecord
    from roteiro_memory.semantics import AnchorState, MemoryKind

    use_cases_in(tmp_path, monkeypatch)
    session = Session()
    session.sync()
    assert renames.trees_holding(session.require_repo("reanchor"), "a\0.py") == []
    blob = "1" * 40
    for key, path in [("file:a\0.py", None), ("py:a.py::f", "a\0.py")]:
        record = MemoryRecord(
            9,
            "repo",
            MemoryKind.LESSON,
            MemoryAnchor(key, blob, path),
            AnchorState.VANISHED,
            "b",
            None,
            "f" * 40,
            "2026-03-01 12:00:05",
            None,
            None,
        )
        _, _, (facts,) = moves.read_facts(
            session.require_repo("reanchor"), session.store(), [record]
        )
        assert (facts.carriers, facts.moved) == ((), None)
