"""The re-anchoring decision and git's rename output, pure: which proposal
each combination of evidence makes, and why a record is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from roteiro_memory.app import reanchor as ra
from roteiro_memory.repo.renames import Rename, parse_renames
from roteiro_memory.results import MemoryAnchor, MemoryRecord
from roteiro_memory.semantics import AnchorState, MemoryKind
from roteiro_memory.valueclass import replace as _replace

OLD = "py:a.py::f"
NEW = "py:b.py::f"
COPY = "py:c.py::f"
BLOB = "1" * 40


def _record(
    state: AnchorState = AnchorState.VANISHED,
    key: str | None = OLD,
    *,
    superseded_by: int | None = None,
) -> MemoryRecord:
    anchor = None if key is None else MemoryAnchor(key, BLOB, "a.py")
    return MemoryRecord(
        7,
        "repo",
        MemoryKind.LESSON,
        anchor,
        state,
        "f returns one",
        0.8,
        "2" * 40,
        "2026-03-01 12:00:05",
        superseded_by,
        None,
    )


RENAMED = Rename("a.py", "b.py", 100)


def test_parse_renames_keeps_renames_by_old_path_and_passes_over_the_rest() -> None:
    output = b"M\0x.py\0R087\0a.py\0b.py\0C100\0c.py\0d.py\0D\0gone.py\0A\0new.py\0"
    assert parse_renames(output) == {"a.py": Rename("a.py", "b.py", 87)}
    assert parse_renames(b"") == {}


def test_one_blob_carrier_is_certain_without_a_rename() -> None:
    found = ra.propose(_record(), {NEW: BLOB}, [NEW])
    assert (found.action, found.certainty, found.to, found.blob) == (ra.MOVE, ra.CERTAIN, NEW, BLOB)
    assert [e.kind for e in found.evidence] == ["blob"]
    assert found.movable
    assert ra.move_refusal(found) is None


def test_a_lone_carrier_unchecked_against_the_written_tree_is_only_likely() -> None:
    """With no tree of the record's code to look in, a carrier may be a copy
    that was there all along: proposed, never certain (so never applied by
    ``--all-certain``)."""
    found = ra.propose(_record(), {NEW: BLOB}, [NEW], checked=False)
    assert (found.action, found.certainty, found.to) == (ra.MOVE, ra.LIKELY, NEW)
    assert found.movable


def test_a_rename_that_agrees_with_the_carrier_adds_its_evidence() -> None:
    found = ra.propose(_record(), {NEW: BLOB}, [NEW], RENAMED, "3" * 40)
    assert (found.certainty, found.to, found.candidates) == (ra.CERTAIN, NEW, (NEW,))
    assert [e.to_json() for e in found.evidence] == [
        {"kind": "blob", "key": NEW},
        {"kind": "rename", "from": "a.py", "to": "b.py", "similarity": 100, "before": "3" * 40},
        {"kind": "symbol", "key": NEW},
    ]


def test_several_carriers_are_certain_only_when_the_rename_picks_one() -> None:
    graph = {NEW: BLOB, COPY: BLOB}
    picked = ra.propose(_record(), graph, [NEW, COPY], RENAMED, "3" * 40)
    assert (picked.certainty, picked.to) == (ra.CERTAIN, NEW)
    unpicked = ra.propose(_record(), graph, [NEW, COPY])
    assert (unpicked.action, unpicked.certainty, unpicked.to) == (ra.MOVE, ra.AMBIGUOUS, None)
    assert unpicked.candidates == (NEW, COPY)
    assert not unpicked.movable
    reason = ra.move_refusal(unpicked)
    assert reason is not None
    assert "b.py::f, c.py::f" in reason
    assert "superseding 7" in reason


def test_a_rename_among_identical_copies_picks_nothing_and_is_ambiguous() -> None:
    """``c.py`` moved and copied in one commit: ``d.py`` and ``e.py`` hold the
    same bytes, and git pairs ``c.py`` with one of them by name alone, so
    neither is certain -- for the file or for a symbol in it."""
    renamed = Rename("c.py", "d.py", 100)
    files = {"file:d.py": BLOB, "file:e.py": BLOB}
    on_file = _replace(_record(key="file:c.py"), anchor=MemoryAnchor("file:c.py", BLOB, "c.py"))
    found = ra.propose(on_file, files, ["file:d.py", "file:e.py"], renamed, "3" * 40)
    assert (found.certainty, found.to) == (ra.AMBIGUOUS, None)
    assert found.candidates == ("file:d.py", "file:e.py")
    symbols = {"py:d.py::f": "8" * 40, "py:e.py::f": "8" * 40, **files}
    on_symbol = _replace(
        _record(key="py:c.py::f"), anchor=MemoryAnchor("py:c.py::f", "8" * 40, "c.py")
    )
    found = ra.propose(on_symbol, symbols, ["py:d.py::f", "py:e.py::f"], renamed, "3" * 40)
    assert (found.certainty, found.to) == (ra.AMBIGUOUS, None)
    other = {**symbols, "file:e.py": "6" * 40}
    found = ra.propose(on_symbol, other, ["py:d.py::f", "py:e.py::f"], renamed, "3" * 40)
    assert (found.certainty, found.to) == (ra.CERTAIN, "py:d.py::f"), (
        "files that differ: git's pick"
    )


def test_a_carrier_and_a_renamed_node_that_disagree_are_ambiguous() -> None:
    found = ra.propose(_record(), {NEW: "9" * 40, COPY: BLOB}, [COPY], RENAMED, "3" * 40)
    assert (found.certainty, found.to, found.candidates) == (ra.AMBIGUOUS, None, (COPY, NEW))


def test_no_carrier_and_the_renamed_files_symbol_is_likely() -> None:
    found = ra.propose(_record(), {NEW: "9" * 40}, [], Rename("a.py", "b.py", 72), "3" * 40)
    assert (found.certainty, found.to, found.blob) == (ra.LIKELY, NEW, "9" * 40)
    assert [e.kind for e in found.evidence] == ["rename", "symbol"]


def test_a_renamed_file_without_the_symbol_proposes_nothing_and_says_so() -> None:
    found = ra.propose(_record(), {"py:b.py::g": "9" * 40}, [], RENAMED, "3" * 40)
    assert (found.action, found.to) == (ra.NONE, None)
    assert [e.kind for e in found.evidence] == ["rename"]
    reason = ra.move_refusal(found)
    assert reason is not None
    assert "renamed to b.py (100% alike)" in reason


def test_a_file_renamed_to_one_whose_symbols_are_not_read_is_not_called_deleted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the Go parser the renamed file has no symbols in the graph:
    the refusal says so, and how to read them, never that the code is gone."""
    import sys

    from roteiro_memory.repo import treesitter

    monkeypatch.setitem(sys.modules, "tree_sitter", None)
    monkeypatch.setattr(treesitter, "_parsers", {})
    record = _replace(_record(), anchor=MemoryAnchor("go:m.go::Total", BLOB, "m.go"))
    found = ra.propose(record, {"file:n.go": "9" * 40}, [], Rename("m.go", "n.go", 100), "3" * 40)
    assert (found.action, found.to) == (ra.NONE, None)
    reason = ra.move_refusal(found)
    assert reason is not None
    assert "renamed to n.go (100% alike), but the symbols of Go files are not read" in reason
    assert "pip install 'roteiro-memory[symbols]'" in reason
    assert "deleted" not in reason
    on_file = ra.move_refusal(ra.propose(_record(), {}, [], RENAMED, "3" * 40))
    assert on_file is not None
    assert "which holds no such node" in on_file, "Python is always read"


def test_a_node_whose_key_no_anchor_may_be_is_never_proposed() -> None:
    """A method of a class renamed to a name of 5,000 characters carries the
    code, but its key is over the 4,096 bytes an anchor may be: proposing it
    (certain, so ``--all-certain`` too) would only make every apply fail."""
    long = "py:a.py::" + "B" * 5000 + ".m"
    found = ra.propose(_record(), {long: BLOB}, [long])
    assert (found.action, found.to) == (ra.NONE, None)
    assert not found.movable
    assert [e.kind for e in found.evidence] == ["blob"], "the code was found, and is said"
    reason = ra.move_refusal(found)
    assert reason is not None
    assert "whose key is 5,011 bytes, over the 4,096 an anchor may be" in reason
    assert "superseding 7" in reason
    short = "py:a.py::" + "B" * 4000 + ".m"
    assert ra.propose(_record(), {short: BLOB}, [short]).to == short


def test_a_node_without_a_blob_is_never_proposed() -> None:
    """Re-anchoring captures the node's blob: a file that does not parse has none."""
    found = ra.propose(_record(), {NEW: None}, [], RENAMED, "3" * 40)
    assert found.action == ra.NONE


def test_a_file_anchor_follows_its_renamed_file() -> None:
    record = _record(key="file:a.py")
    found = ra.propose(record, {"file:b.py": "9" * 40}, [], RENAMED, "3" * 40)
    assert (found.certainty, found.to) == (ra.LIKELY, "file:b.py")
    assert [e.kind for e in found.evidence] == ["rename"]


def test_a_drifted_anchor_no_other_node_carries_is_proposed_for_confirmation() -> None:
    found = ra.propose(_record(AnchorState.DRIFTED), {OLD: "9" * 40, NEW: "8" * 40})
    assert (found.action, found.to, found.blob) == (ra.CONFIRM, OLD, "9" * 40)
    assert [e.to_json() for e in found.evidence] == [
        {"kind": "drift", "key": OLD, "blob": "9" * 40}
    ]
    assert not found.movable
    reason = ra.move_refusal(found)
    assert reason is not None
    assert "drifted, not moved" in reason
    assert "confirm" in reason
    assert ra.remedy(found) == "roteiro-memory confirm 7"


def test_a_drifted_anchor_whose_code_another_node_carries_is_proposed_a_move() -> None:
    """Its code is elsewhere now (two files swapped, a file moved and another
    made at its path): confirming would vouch for code it was never about.
    The move is decided as for a vanished anchor, the drift listed last, and
    a refusal never says to confirm where the code was found elsewhere.  It
    is never certain: its own node is still there, so the carrier may be a
    copy made since, the original edited after."""
    drifted = _record(AnchorState.DRIFTED)
    graph = {OLD: "9" * 40, NEW: BLOB, COPY: BLOB}
    found = ra.propose(drifted, graph, [NEW])
    assert (found.action, found.certainty, found.to, found.blob) == (ra.MOVE, ra.LIKELY, NEW, BLOB)
    assert [e.to_json() for e in found.evidence] == [
        {"kind": "blob", "key": NEW},
        {"kind": "drift", "key": OLD, "blob": "9" * 40},
    ]
    assert found.movable
    assert ra.move_refusal(found) is None
    assert ra.remedy(found) == "roteiro-memory reanchor --apply 7"
    assert ra.confirm_refusal(drifted) is None, "a reviewer may still confirm it"
    unchecked = ra.propose(drifted, graph, [NEW], checked=False)
    assert (unchecked.certainty, unchecked.to) == (ra.LIKELY, NEW)
    several = ra.propose(drifted, graph, [NEW, COPY])
    assert (several.action, several.certainty, several.to) == (ra.MOVE, ra.AMBIGUOUS, None)
    reason = ra.move_refusal(several)
    assert reason is not None
    assert "several places now (b.py::f, c.py::f)" in reason
    assert "confirm" not in reason


@pytest.mark.parametrize(
    "record",
    [
        _record(AnchorState.VALID),
        _record(AnchorState.UNVERIFIABLE),
        _record(AnchorState.UNANCHORED, None),
        _record(superseded_by=9),
    ],
    ids=["valid", "unverifiable", "unanchored", "superseded"],
)
def test_only_a_live_stale_record_has_a_proposal(record: MemoryRecord) -> None:
    found = ra.propose(record, {NEW: BLOB}, [NEW], RENAMED, "3" * 40)
    assert (found.action, found.evidence, ra.remedy(found)) == (ra.NONE, (), None)


@pytest.mark.parametrize(
    ("state", "key", "says"),
    [
        (AnchorState.VALID, OLD, "is valid"),
        (AnchorState.VANISHED, OLD, "re-anchor it instead"),
        (AnchorState.UNVERIFIABLE, OLD, "fix the file"),
        (AnchorState.UNANCHORED, None, "has no anchor"),
    ],
)
def test_confirm_takes_a_drifted_anchor_only(
    state: AnchorState, key: str | None, says: str
) -> None:
    assert ra.confirm_refusal(_record(AnchorState.DRIFTED)) is None
    reason = ra.confirm_refusal(_record(state, key))
    assert reason is not None
    assert reason.startswith("record 7 cannot be confirmed: ")
    assert says in reason
    assert "\n" not in reason


def test_remedy_names_the_command_a_movable_proposal_takes() -> None:
    assert ra.remedy(ra.propose(_record(), {NEW: BLOB}, [NEW])) == (
        "roteiro-memory reanchor --apply 7"
    )
    assert ra.remedy(ra.propose(_record(), {NEW: BLOB, COPY: BLOB}, [NEW, COPY])) is None


def test_remedies_name_a_command_for_each_record_that_has_one() -> None:
    moved = ra.propose(_record(), {NEW: BLOB}, [NEW])
    drifted = ra.propose(_replace(_record(AnchorState.DRIFTED), id=8), {OLD: "9" * 40})
    nothing = ra.propose(_replace(_record(), id=9), {})
    found = ra.Proposals("4" * 40, (moved, drifted, nothing))
    assert found.remedies() == {
        7: "roteiro-memory reanchor --apply 7",
        8: "roteiro-memory confirm 8",
    }


def test_the_use_cases_take_json_ids_and_name_inputs_as_a_tool_call_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the MCP tools will call: ids as JSON numbers, refusals naming the
    tool's arguments, the same proposal and records as on the command line."""
    from test_cli import use_cases_in

    from roteiro_memory.app import records
    from roteiro_memory.app.session import Session
    from roteiro_memory.errors import UsageError

    repo = use_cases_in(tmp_path, monkeypatch)

    def session() -> Session:
        return Session(spell=lambda name: f"argument {name!r}")

    lesson = records.remember(session(), "lesson", "f returns one", anchor="a.py::f").record
    repo.git("mv", "a.py", "b.py")
    repo.commit("move")
    found = ra.proposals(session(), [lesson.id])
    assert [p.to for p in found.proposals] == ["py:b.py::f"]
    assert found.remedies() == {lesson.id: f"roteiro-memory reanchor --apply {lesson.id}"}
    with pytest.raises(UsageError, match="argument 'ids'"):
        ra.confirm(session(), [True])
    with pytest.raises(UsageError, match="or give argument 'all_certain'"):
        ra.apply(session(), [])
    written = ra.apply(session(), [float(lesson.id)]).written
    assert [(w.supersedes, w.record.anchor_state) for w in written] == [
        (lesson.id, AnchorState.VALID)
    ]


class _Chain:
    """A store's ``get`` over records superseding each other as ``links`` say."""

    def __init__(self, links: dict[int, int | None]) -> None:
        self.links = links

    def get(self, record_id: int, *, graph: object = None) -> MemoryRecord | None:
        if record_id not in self.links:
            return None
        return _replace(_record(), id=record_id, superseded_by=self.links[record_id])


def test_a_superseded_record_is_refused_naming_the_newest_of_its_chain() -> None:
    from roteiro_memory.errors import AlreadySuperseded

    with pytest.raises(
        AlreadySuperseded, match=r"by 2; confirm 3, the newest of its chain, instead$"
    ):
        ra._named(_Chain({1: 2, 2: 3, 3: None}), [1], "confirm")  # type: ignore[arg-type]
    with pytest.raises(AlreadySuperseded, match=r"by 2; reanchor 2 instead$"):
        ra._named(_Chain({1: 2, 2: None}), [1], "reanchor")  # type: ignore[arg-type]


def test_a_supersession_cycle_in_a_damaged_store_ends_the_walk() -> None:
    """A cycle ``check`` reports must not hang the refusal that meets it."""
    from roteiro_memory.errors import AlreadySuperseded

    with pytest.raises(AlreadySuperseded, match="chain ends in no live record"):
        ra._named(_Chain({1: 2, 2: 1}), [1], "confirm")  # type: ignore[arg-type]
