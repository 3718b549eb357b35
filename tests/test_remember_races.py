"""``remember`` (``add``, the MCP ``remember`` tool) racing other writers of
the same store: another process adding the same lesson, or forgetting the
record it answers with.

Each race is made deterministic by running the other writer, on its own
connection, at the exact step where it would slip in; on a store that
serialises the duplicate check with the write, the other writer waits for
the lock, so it is given a moment (:data:`WINDOW_S`) and then let go.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pg_server
import pytest

from roteiro_memory.app import records
from roteiro_memory.app.session import Session
from roteiro_memory.errors import Absent, StoreUnavailable
from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.store import Store

WINDOW_S = 1.0
"""How long the other writer is given to slip in between two steps."""

PROCESSES = 6
"""How many ``add`` processes race in the test that starts them together."""

BODY = "the retry loop double counts the first attempt"


@pytest.fixture(params=["sqlite", "postgres"])
def db(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """What ``--db`` names: an SQLite file, or a fresh PostgreSQL schema."""
    monkeypatch.chdir(tmp_path)  # no repository: nothing syncs
    for name in ("ROTEIRO_MEMORY_DB", "ROTEIRO_MEMORY_BUSY_TIMEOUT_MS"):
        monkeypatch.delenv(name, raising=False)
    if request.param == "sqlite":
        yield str(tmp_path / "m.db")
        return
    dsn = pg_server.fresh_store_dsn()
    try:
        yield dsn
    finally:
        pg_server.drop_schema(dsn)


def _session(db: str) -> Session:
    return Session(db, sync=False)


def _closing(db: str, work: Callable[[Session], Any]) -> Any:
    """What ``work`` does in a session of its own, closed after."""
    session = _session(db)
    try:
        return work(session)
    finally:
        session.close()


def _elsewhere(work: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Run ``work`` on another thread (its own connection), given
    :data:`WINDOW_S` to finish; what it returned or raised, once it has."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(work())
        except BaseException as error:  # reported through out
            out.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(WINDOW_S)
    return thread, out


def _live(db: str) -> list[int]:
    return _closing(db, lambda s: [r.id for r in s.store().list().records])


def test_the_same_lesson_added_at_once_by_two_writers_is_one_record(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other writer adds the same body right after this one looked for
    an equal record and found none: one of the two must see the other's."""
    looked = records._existing
    other: list[threading.Thread] = []
    answers: list[Any] = []
    asked = threading.get_ident()

    def existing(*args: Any, **kw: Any) -> Any:
        found = looked(*args, **kw)
        if not other and threading.get_ident() == asked:
            thread, out = _elsewhere(
                lambda: _closing(db, lambda s: records.remember(s, "lesson", BODY))
            )
            other.append(thread)
            answers.append(out)
        return found

    monkeypatch.setattr(records, "_existing", existing)
    mine = _closing(db, lambda s: records.remember(s, "lesson", BODY))
    other[0].join()
    theirs = answers[0][0]
    assert not isinstance(theirs, BaseException), theirs
    assert _live(db) == [mine.record.id]
    assert theirs.record.id == mine.record.id
    assert sorted([mine.existing, theirs.existing]) == [False, True]


def test_a_duplicate_forgotten_while_add_runs_is_never_reported_corrupt(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The equal record this add found is forgotten by another writer
    before the add answers: the add answers it as existing (it was, when
    looked at under the lock) or writes anew, never fails."""
    first = _closing(db, lambda s: records.remember(s, "lesson", BODY)).record
    looked = records._existing
    other: list[threading.Thread] = []

    def existing(*args: Any, **kw: Any) -> Any:
        found = looked(*args, **kw)
        if not other:
            other.append(_elsewhere(lambda: _closing(db, lambda s: records.forget(s, first.id)))[0])
        return found

    monkeypatch.setattr(records, "_existing", existing)
    answer = _closing(db, lambda s: records.remember(s, "lesson", BODY))
    other[0].join()
    assert answer.record.body == BODY
    assert answer.existing == (answer.record.id == first.id)


def _forgotten_before_read_back(
    db: str, monkeypatch: pytest.MonkeyPatch, session: Session, newest: int
) -> None:
    """Make ``session``'s store, when it first reads a record newer than
    ``newest`` (one it has just written and committed), find it forgotten
    by another writer first."""
    store = session.writable_store()
    read = store.get

    def get(id: int, **kw: Any) -> Any:
        if id <= newest:
            return read(id, **kw)
        monkeypatch.setattr(store, "get", read)
        other = _session(db)
        try:
            records.forget(other, id)
        finally:
            other.close()
        return read(id, **kw)

    monkeypatch.setattr(store, "get", get)
    return store


def test_a_lesson_forgotten_before_add_read_it_back_is_said_so_not_corrupt(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _closing(db, lambda s: records.remember(s, "lesson", "an unrelated lesson"))
    session = _session(db)
    _forgotten_before_read_back(db, monkeypatch, session, newest=1)
    try:
        with pytest.raises(Absent) as refused:
            records.remember(session, "lesson", BODY)
    finally:
        session.close()
    assert refused.value.exit_status == ExitCode.NOTHING
    assert str(refused.value) == (
        "recorded as 2, but another process has forgotten memory record 2 since: "
        "it is not in the store"
    )
    assert _live(db) == [1]


def test_a_confirmed_record_forgotten_before_it_was_read_back_is_said_so_not_corrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_cli import use_cases_in

    from roteiro_memory.app import reanchor

    repo = use_cases_in(tmp_path, monkeypatch)
    lesson = records.remember(Session(), "lesson", "f returns one", anchor="a.py::f").record
    repo.write("a.py", "def f():\n    return 2\n")
    repo.commit("drift")
    session = Session()
    _forgotten_before_read_back(session.store().describe(), monkeypatch, session, lesson.id)
    with pytest.raises(Absent, match=r"recorded as 2, but another process has forgotten"):
        reanchor.confirm(session, [lesson.id])


def test_a_block_run_atomically_that_raises_leaves_the_store_as_it_was(store: Store) -> None:
    store.record("lesson", "kept")
    before = store.snapshot()

    def rolled_back() -> None:
        with store.atomically():
            store.record("lesson", "written, then rolled back")
            store.forget(1)
            assert [r.body for r in store.list().records] == ["written, then rolled back"]
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError, match="stop"):
        rolled_back()
    assert store.snapshot() == before


def test_what_a_block_run_atomically_writes_is_there_once_it_returns(store: Store) -> None:
    with store.atomically():
        first = store.record("lesson", "one")
        store.record("lesson", "two", supersedes=first)
        assert [r.body for r in store.list(include_superseded=True).records] == ["two", "one"]
    store.reopen()
    assert [r.body for r in store.list(include_superseded=True).records] == ["two", "one"]
    assert store.recall().live == 1


def test_a_block_inside_a_block_is_the_one_block(store: Store) -> None:
    """What the inner block wrote stays when it raises and the outer block
    goes on: the model rolled it back to its own copy; SQL kept it."""
    store.record("lesson", "before")

    def inner() -> None:
        with store.atomically():
            store.record("lesson", "inner")
            raise RuntimeError("inner")

    with store.atomically():
        store.record("lesson", "outer")
        with pytest.raises(RuntimeError, match="inner"):
            inner()
    assert [r.body for r in store.list().records] == ["inner", "outer", "before"]


def test_the_outer_block_rolls_back_what_the_inner_one_wrote(store: Store) -> None:
    store.record("lesson", "before")
    before = store.snapshot()

    def outer() -> None:
        with store.atomically():
            with store.atomically():
                store.record("lesson", "inner")
            raise RuntimeError("outer")

    with pytest.raises(RuntimeError, match="outer"):
        outer()
    assert store.snapshot() == before


def test_processes_adding_the_same_lesson_at_once_write_it_once(db: str) -> None:
    """The race as it happens: several ``add`` processes, started together."""
    import json
    import subprocess
    import sys

    argv = [sys.executable, "-m", "roteiro_memory", "--db", db, "--no-sync", "--json", "add", BODY]
    running = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(PROCESSES)
    ]
    answers = [json.loads(p.communicate(timeout=120)[0])["result"] for p in running]
    assert len(_live(db)) == 1
    assert {a["id"] for a in answers} == set(_live(db))
    assert sorted(a["existing"] for a in answers) == [False] + [True] * (PROCESSES - 1)


def test_an_add_answered_as_existing_leaves_the_store_unchanged(db: str) -> None:
    """Its look and its answer run under the write lock, yet nothing is
    written: the command says so (a report lost then is status 2, not 4)."""
    _closing(db, lambda s: records.remember(s, "lesson", BODY))
    session = _session(db)
    try:
        assert records.remember(session, "lesson", BODY).existing
        assert not session.changed()
    finally:
        session.close()


def _failing_after_commit(session: Session, db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the first read of ``session``'s store fail as its backend fails
    when the connection goes (PostgreSQL) or another process holds the file's
    lock past the wait (SQLite)."""
    store = session.writable_store()
    read = store.get

    def get(id: int, **kw: Any) -> Any:
        monkeypatch.setattr(store, "get", read)
        if db.endswith(".db"):
            import sqlite3

            from roteiro_memory.stores.sqlite.transactions import busy

            locked = sqlite3.OperationalError("database is locked")
            locked.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
            refusal = busy(sqlite3.connect(":memory:"), locked)
            assert refusal is not None
            raise refusal
        from roteiro_memory.stores.postgres import link

        raise link.lost(OSError("server closed the connection unexpectedly"))

    monkeypatch.setattr(store, "get", get)


def test_a_read_back_failing_after_the_commit_says_the_record_is_stored(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write committed; reading it back failed: the answer must not
    say nothing was changed (a retry with --allow-duplicate would write it
    twice), but that the record is stored, under its id."""
    session = _session(db)
    _failing_after_commit(session, db, monkeypatch)
    try:
        with pytest.raises(StoreUnavailable) as failed:
            records.remember(session, "lesson", BODY)
    finally:
        session.close()
    said = str(failed.value)
    assert said.startswith("recorded as memory record 1, stored; reading it back then failed: ")
    assert "nothing was changed" not in said
    assert "retry" not in said
    assert said.endswith("look it up by id once the store can serve, rather than recording again")
    assert _live(db) == [1]
