"""The history checks: what one serial order explains, and what a crash may leave."""

from __future__ import annotations

from typing import Any

import pytest

from roteiro_memory.suite.histories import (
    Event,
    Violation,
    Write,
    check_crash_state,
    check_history,
)
from roteiro_memory.suite.sequences import reference_backend


def _record(id: int, body: str, superseded_by: int | None = None) -> dict[str, Any]:
    return {
        "id": id,
        "kind": "lesson",
        "scope": "repo",
        "body": body,
        "superseded_by": superseded_by,
    }


def _listing(*records: dict[str, Any], include_superseded: bool = True) -> dict[str, Any]:
    superseded = sum(1 for r in records if r["superseded_by"] is not None)
    shown = [r for r in records if include_superseded or r["superseded_by"] is None]
    return {
        "schema": "roteiro.memory/v1",
        "records": sorted(shown, key=lambda r: -r["id"]),
        "live": len(records) - superseded,
        "superseded": superseded,
    }


def _write(at: float, until: float, body: str, id: int, supersedes: int | None = None) -> Event:
    args: dict[str, Any] = {"kind": "lesson", "body": body}
    if supersedes is not None:
        args["supersedes"] = supersedes
    return Event("w", "memory.record", args, at, until, {"id": id})


def _list(at: float, until: float, result: dict[str, Any], *, everything: bool = True) -> Event:
    return Event("r", "memory.list", {"include_superseded": everything}, at, until, result)


def test_check_history_sequential_writes_and_reads_pass() -> None:
    check_history(
        [
            _write(0, 1, "a", 1),
            _list(2, 3, _listing(_record(1, "a"))),
            _write(4, 5, "b", 2, supersedes=1),
            _list(6, 7, _listing(_record(1, "a", 2), _record(2, "b"))),
            _list(
                6,
                7,
                _listing(_record(1, "a", 2), _record(2, "b"), include_superseded=False),
                everything=False,
            ),
        ],
        reference_backend(),
    )


def test_check_history_stale_read_fails() -> None:
    """A read sent after a write was acknowledged must see it."""
    with pytest.raises(Violation, match="no serial order"):
        check_history([_write(0, 1, "a", 1), _list(2, 3, _listing())], reference_backend())


@pytest.mark.parametrize("seen", [(), ("a",)])
def test_check_history_read_overlapping_a_write_may_see_either_state(seen: tuple[str, ...]) -> None:
    records = [_record(1, body) for body in seen]
    check_history([_write(0, 4, "a", 1), _list(1, 2, _listing(*records))], reference_backend())


def test_check_history_reads_never_go_back_in_time() -> None:
    """Both reads overlap the write, but the second started after the first
    saw it: it may not see the store without it."""
    with pytest.raises(Violation, match="not fewer than 1"):
        check_history(
            [
                _write(0, 10, "a", 1),
                _list(1, 2, _listing(_record(1, "a"))),
                _list(3, 4, _listing()),
            ],
            reference_backend(),
        )


def test_check_history_id_handed_out_twice_fails() -> None:
    with pytest.raises(Violation, match="id 1 was handed out twice"):
        check_history([_write(0, 1, "a", 1), _write(0, 1, "b", 1)], reference_backend())


def test_check_history_ids_against_real_time_fail() -> None:
    with pytest.raises(Violation, match="got the larger id"):
        check_history([_write(0, 1, "a", 2), _write(2, 3, "b", 1)], reference_backend())


def test_check_history_two_successors_of_one_record_fail() -> None:
    with pytest.raises(Violation, match="model refuses it"):
        check_history(
            [
                _write(0, 1, "a", 1),
                _write(2, 5, "b", 2, supersedes=1),
                _write(2, 5, "c", 3, supersedes=1),
            ],
            reference_backend(),
        )


def test_check_history_refusal_needs_a_successor_it_could_follow() -> None:
    refused = Event(
        "w",
        "memory.record",
        {"kind": "lesson", "body": "c", "supersedes": 1},
        2,
        3,
        error="AlreadySuperseded",
    )
    check_history(
        [_write(0, 1, "a", 1), _write(2, 4, "b", 2, supersedes=1), refused], reference_backend()
    )
    with pytest.raises(Violation, match="no serial order"):
        check_history([_write(0, 1, "a", 1), refused], reference_backend())


def test_check_history_ids_with_gaps_are_judged_by_their_order() -> None:
    check_history(
        [
            _write(0, 1, "a", 5),
            _write(2, 3, "b", 9, supersedes=5),
            _list(4, 5, _listing(_record(5, "a", 9), _record(9, "b"))),
        ],
        reference_backend(),
    )


# --- crash states ------------------------------------------------------------------


def _w(body: str, id: int | None, supersedes: int | None = None) -> Write:
    args: dict[str, Any] = {"kind": "lesson", "body": body}
    if supersedes is not None:
        args["supersedes"] = supersedes
    return Write(args, id)


def test_check_crash_state_everything_there_passes() -> None:
    acked = [_w("a", 1), _w("b", 2, supersedes=1)]
    listing = _listing(_record(1, "a", 2), _record(2, "b"))
    assert check_crash_state(listing, acked, None, reference_backend()) is None


def test_check_crash_state_lost_write_fails() -> None:
    with pytest.raises(Violation, match="1 of 2 acknowledged writes are not there"):
        check_crash_state(
            _listing(_record(1, "a")), [_w("a", 1), _w("b", 2)], None, reference_backend()
        )


def test_check_crash_state_unanswered_write_there_whole_is_returned() -> None:
    listing = _listing(_record(1, "a", 2), _record(2, "b"))
    landed = check_crash_state(listing, [_w("a", 1)], _w("b", None, 1), reference_backend())
    assert landed == _w("b", 2, 1)


def test_check_crash_state_unanswered_write_absent_passes() -> None:
    listing = _listing(_record(1, "a"))
    assert check_crash_state(listing, [_w("a", 1)], _w("b", None, 1), reference_backend()) is None


def test_check_crash_state_successor_without_its_pointer_fails() -> None:
    listing = _listing(_record(1, "a"), _record(2, "b"))
    with pytest.raises(Violation, match="half applied"):
        check_crash_state(listing, [_w("a", 1)], _w("b", None, 1), reference_backend())


def test_check_crash_state_pointer_without_its_successor_fails() -> None:
    listing = _listing(_record(1, "a", 2))
    with pytest.raises(Violation, match="superseded by 2, which is not there"):
        check_crash_state(listing, [_w("a", 1)], _w("b", None, 1), reference_backend())


def test_check_crash_state_record_no_write_made_fails() -> None:
    listing = _listing(_record(1, "a"), _record(2, "ghost"))
    with pytest.raises(Violation, match="no write made"):
        check_crash_state(listing, [_w("a", 1)], None, reference_backend())
