"""``check_store``: each kind of planted corruption is found and names its row;
a healthy store passes."""

from __future__ import annotations

import datetime
import gc
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from damaged_stores import scribble_on_migrations
from hypothesis import given
from hypothesis import strategies as st

from roteiro_memory.check import Finding, check_store, is_timestamp
from roteiro_memory.fields import TIMESTAMP_FORMAT
from roteiro_memory.results import GraphNode
from roteiro_memory.stores.sqlite.check import check_connection
from roteiro_memory.stores.sqlite.checkfile import check_file
from roteiro_memory.stores.sqlite.store import SQLiteStore


def _healthy(path: Path) -> None:
    with SQLiteStore(path) as store:
        store.put_nodes([GraphNode("file:a.py", "file", "a.py", "a.py", "b1")])
        store.set_tree("t1")
        first = store.record("lesson", "one", anchor="file:a.py", confidence=0.5)
        store.record("decision", "two", supersedes=first)
        store.record("pattern", "three")
        store.cache_put("k1", "fp", '{"a": 1}')
        store.cache_put("k2", "fp", "[]", anchor="file:a.py")
        store.cache_get("k1")
        store.cache_sweep(1 << 30)


@pytest.fixture
def healthy(tmp_path: Path) -> Path:
    path = tmp_path / "memory.db"
    _healthy(path)
    return path


def _plant(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA ignore_check_constraints = ON")
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


def test_a_healthy_store_has_no_findings(healthy: Path) -> None:
    assert check_file(healthy) == []


def test_an_open_store_can_be_checked(healthy: Path) -> None:
    with SQLiteStore(healthy) as store:
        assert check_store(store) == []


def test_check_does_not_change_the_store(healthy: Path) -> None:
    before = healthy.read_bytes()
    check_file(healthy)
    assert healthy.read_bytes() == before


PLANTS: list[tuple[str, list[str], Callable[[Finding], bool]]] = [
    (
        "dangling supersession pointer",
        ["UPDATE agent_memory SET superseded_by = 77, superseded_at = 'x' WHERE id = 3"],
        lambda f: f.row == "id 3" and "does not exist" in f.problem,
    ),
    (
        "forked supersession",
        ["UPDATE agent_memory SET superseded_by = 2, superseded_at = 'x' WHERE id = 3"],
        lambda f: f.row == "id 2" and "fork" in f.problem,
    ),
    (
        "supersession cycle",
        [
            "UPDATE agent_memory SET superseded_by = 3, superseded_at = 'x' WHERE id = 2",
            "UPDATE agent_memory SET superseded_by = 2, superseded_at = 'x' WHERE id = 3",
        ],
        lambda f: f.row == "id 2" and "cycle" in f.problem,
    ),
    (
        "record superseding itself",
        ["UPDATE agent_memory SET superseded_by = 3, superseded_at = 'x' WHERE id = 3"],
        lambda f: f.row == "id 3" and "cycle: 3 -> 3" in f.problem,
    ),
    (
        "unknown kind",
        ["UPDATE agent_memory SET kind = 'rumour' WHERE id = 3"],
        lambda f: f.row == "id 3" and "unknown kind 'rumour'" in f.problem,
    ),
    (
        "confidence above one",
        ["UPDATE agent_memory SET confidence = 1.5 WHERE id = 1"],
        lambda f: f.row == "id 1" and "outside [0, 1]" in f.problem,
    ),
    (
        "negative confidence",
        ["UPDATE agent_memory SET confidence = -0.1 WHERE id = 3"],
        lambda f: f.row == "id 3" and "outside [0, 1]" in f.problem,
    ),
    (
        "cache size disagreeing with its payload",
        ["UPDATE agent_cache SET json = '{\"a\": 12345}' WHERE key = 'k1'"],
        lambda f: f.table == "agent_cache" and f.row == "key 'k1'" and "bytes" in f.problem,
    ),
    (
        "tick clock behind an entry",
        ["UPDATE agent_cache_clock SET ticks = 1"],
        lambda f: f.row == "key 'k1'" and "clock is behind" in f.problem,
    ),
    (
        "generation clock behind an entry",
        ["UPDATE agent_cache SET generation = 5 WHERE key = 'k2'"],
        lambda f: f.row == "key 'k2'" and "generation 5" in f.problem,
    ),
    (
        "schema newer than known",
        ["INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future')"],
        lambda f: f.row == "version 999" and "newer" in f.problem,
    ),
    (
        "migrations no version records",
        [
            "DELETE FROM schema_migrations WHERE version = 3",
            "INSERT INTO schema_migrations (version, name) VALUES (56, 'next')",
        ],
        lambda f: f.table == "schema_migrations" and "the table is damaged" in f.problem,
    ),
    (
        "sequence behind the largest id",
        ["UPDATE sqlite_sequence SET seq = 1 WHERE name = 'agent_memory'"],
        lambda f: f.table == "sqlite_sequence" and "reused" in f.problem,
    ),
    (
        "search text out of step with the body",
        ["UPDATE agent_memory SET body = 'changed behind its back' WHERE id = 3"],
        lambda f: f.row == "id 3" and "search text" in f.problem,
    ),
    (
        "blank body",
        ["UPDATE agent_memory SET body = '   ', search = '   \n\n' WHERE id = 3"],
        lambda f: f.row == "id 3" and "body" in f.problem,
    ),
    (
        "pointer without its timestamp",
        ["UPDATE agent_memory SET superseded_at = NULL WHERE id = 1"],
        lambda f: f.row == "id 1" and "disagree" in f.problem,
    ),
    (
        "two entries sharing a tick",
        [
            "UPDATE agent_cache SET last_used ="
            " (SELECT last_used FROM agent_cache WHERE key = 'k1') WHERE key = 'k2'"
        ],
        lambda f: f.row == "key 'k2'" and "shares tick" in f.problem,
    ),
    (
        "a pointer that is not an id",
        ["UPDATE agent_memory SET superseded_by = 'two', superseded_at = 'x' WHERE id = 3"],
        lambda f: f.row == "id 3" and "not an id" in f.problem,
    ),
    (
        "a counter that is not a number",
        ["UPDATE agent_cache SET last_used = 'late' WHERE key = 'k1'"],
        lambda f: f.row == "key 'k1'" and "last_used" in f.problem,
    ),
    (
        "a clock that is not a number",
        ["UPDATE agent_cache_clock SET ticks = 'soon'"],
        lambda f: f.table == "agent_cache_clock" and "ticks" in f.problem,
    ),
    (
        "a missing table",
        ["DROP TABLE agent_cache"],
        lambda f: f.table == "agent_cache" and "missing" in f.problem,
    ),
    (
        "a missing index",
        ["DROP INDEX idx_mem_live"],
        lambda f: (
            f.table == "agent_memory" and f.problem.startswith("index idx_mem_live is missing")
        ),
    ),
    (
        "a missing trigger",
        ["DROP TRIGGER memory_segments_term_keyed_update"],
        lambda f: (
            f.table == "memory_segments"
            and f.problem.startswith("trigger memory_segments_term_keyed_update is missing")
        ),
    ),
]


@pytest.mark.parametrize(("name", "statements", "expected"), PLANTS, ids=[p[0] for p in PLANTS])
def test_each_planted_corruption_is_found(
    healthy: Path, name: str, statements: list[str], expected: Callable[[Finding], bool]
) -> None:
    _plant(healthy, *statements)
    findings = check_file(healthy)
    assert any(expected(f) for f in findings), (name, findings)


def test_every_index_and_trigger_a_store_is_made_with_is_one_the_check_requires(
    healthy: Path,
) -> None:
    """The indexes and triggers the check requires are exactly those a new
    store has (a key's own index aside), and a store missing any of them is
    a finding naming it; a healthy store has none."""
    from roteiro_memory.stores.sqlite.migrations import created_objects

    conn = sqlite3.connect(healthy)
    try:
        made = {
            name: (kind, table)
            for kind, name, table in conn.execute(
                "SELECT type, name, tbl_name FROM sqlite_master"
                " WHERE type IN ('index', 'trigger') AND name NOT LIKE 'sqlite_autoindex_%'"
            )
        }
    finally:
        conn.close()
    assert made == created_objects()
    assert check_file(healthy) == []
    _plant(healthy, *(f"DROP {kind.upper()} {name}" for name, (kind, _) in made.items()))
    missing = {f.problem.split(" is missing")[0] for f in check_file(healthy)}
    assert missing == {f"{kind} {name}" for name, (kind, _) in made.items()}


def test_a_dropped_column_is_a_finding_naming_it_and_the_other_tables_are_still_judged(
    healthy: Path,
) -> None:
    """A column dropped by hand made every read of its table fail, and the
    check said only "cannot be read as a store (no such column: hits)" --
    not which table -- and judged nothing else.  The column is named with
    its table, and a fault in another table is still found."""
    _plant(
        healthy,
        "ALTER TABLE agent_cache DROP COLUMN hits",
        "UPDATE agent_memory SET confidence = 1.5 WHERE id = 1",
    )
    findings = check_file(healthy)
    assert (
        Finding(
            "agent_cache",
            None,
            "column hits is missing: commands that read its rows fail, and the check judges "
            "none of them",
        )
        in findings
    )
    assert any(f.row == "id 1" and "outside [0, 1]" in f.problem for f in findings), findings
    assert not any(f.table == "store" for f in findings), findings


def test_a_file_that_is_not_a_database_is_one_finding(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    findings = check_file(path)
    assert [f.table for f in findings] == ["store"]
    assert "not an SQLite database" in findings[0].problem


def test_a_damaged_page_is_reported_by_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with SQLiteStore(path) as store:
        for index in range(400):
            store.record("lesson", f"lesson number {index} " + "x" * 200)
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range(page * 6, page * 6 + 200):
        data[offset] = 0xA5
    path.write_bytes(bytes(data))
    findings = check_file(path)
    assert findings
    assert findings[0].table in {"store", "agent_memory"}


def test_a_schema_name_that_is_not_utf8_is_damage_on_check_and_on_open(tmp_path: Path) -> None:
    """Python's sqlite3 decodes SQLite's message, which quotes the name, as
    strict UTF-8: check and open ended in UnicodeDecodeError."""
    from precommit_plants import plant_store, plant_undecodable_name

    from roteiro_memory.errors import Corrupt

    path = plant_undecodable_name(plant_store(tmp_path / "memory.db"))
    before = path.read_bytes()
    [finding] = check_file(path)
    assert "malformed database schema (\\xe9t)" in finding.problem
    with pytest.raises(Corrupt, match=r"not a usable roteiro-memory store \(malformed database"):
        SQLiteStore(path)
    assert path.read_bytes() == before


def test_a_damaged_migrations_table_is_reported_as_damage_never_as_a_schema_to_migrate(
    healthy: Path,
) -> None:
    """What SQLite finds is kept, and no garbage the page reads as is taken
    for a newer schema or for migrations never applied."""
    scribble_on_migrations(healthy)
    findings = check_file(healthy)
    assert any("SQLite integrity check" in f.problem for f in findings), findings
    said = [f for f in findings if "newer" in f.problem or "never applied" in f.problem]
    assert said == []


def test_finding_renders_as_one_line_naming_table_and_row() -> None:
    finding = Finding("agent_memory", "id 4", "unknown kind 'rumour'")
    assert str(finding) == "agent_memory id 4: unknown kind 'rumour'"
    assert finding.to_json() == {
        "table": "agent_memory",
        "row": "id 4",
        "problem": "unknown kind 'rumour'",
    }


# --- check finds everything export or import would trip on --------------------

UNEXPORTABLE = [
    ("record id -5", "UPDATE agent_memory SET id = -5 WHERE id = 3", "agent_memory", "id -5"),
    ("blob tree witness", "UPDATE sync_state SET tree = X'00ff'", "sync_state", None),
    ("blob node", "UPDATE nodes SET blob = X'00ff'", "nodes", "key 'file:a.py'"),
    (
        "blob record tree",
        "UPDATE agent_memory SET tree = X'01' WHERE id = 3",
        "agent_memory",
        "id 3",
    ),
    (
        "a clock before its start",
        "UPDATE agent_cache_clock SET generation = -1",
        "agent_cache_clock",
        "id 0",
    ),
    (
        "a sequence that is text",
        "UPDATE sqlite_sequence SET seq = 'many'",
        "sqlite_sequence",
        "agent_memory",
    ),
    (
        "sequence at its end",
        "UPDATE sqlite_sequence SET seq = 9223372036854775807",
        "sqlite_sequence",
        None,
    ),
]


@pytest.mark.parametrize(
    ("name", "statement", "table", "row"), UNEXPORTABLE, ids=[u[0] for u in UNEXPORTABLE]
)
def test_check_finds_what_export_or_import_would_trip_on(
    healthy: Path, tmp_path: Path, name: str, statement: str, table: str, row: str | None
) -> None:
    """Each plant breaks ``export`` or a re-``import``; check names it."""
    from roteiro_memory.errors import RoteiroError
    from roteiro_memory.transfer import import_lines, read_export

    _plant(healthy, statement)
    with (
        pytest.raises(RoteiroError),
        SQLiteStore(healthy) as store,
        SQLiteStore(tmp_path / "copy.db") as copy,
    ):
        import_lines(copy, read_export(list(store.export_lines())))
    findings = check_file(healthy)
    assert any(f.table == table and (row is None or f.row == row) for f in findings), (
        name,
        findings,
    )


def test_check_of_an_empty_file_agrees_with_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Zero bytes is a store not yet written, as a missing file is: ``list``
    answers it like a new store, and ``check`` says there is nothing to check
    (as for a missing file), never that it is not a database."""
    from roteiro_memory.cli.main import main
    from roteiro_memory.exitcodes import ExitCode

    monkeypatch.chdir(tmp_path)
    empty, missing = tmp_path / "empty.db", tmp_path / "missing.db"
    empty.touch()
    assert main(["check", "--db", str(missing)]) == main(["check", "--db", str(empty)])
    _, err = capsys.readouterr()
    assert "not an SQLite database" not in err
    assert "nothing to check" in err
    assert "empty" in err
    assert empty.stat().st_size == 0, "check changed the empty file"
    assert main(["list", "--db", str(empty), "--no-sync"]) == ExitCode.NOTHING
    assert capsys.readouterr().err == ""
    assert main(["check", "--db", str(empty)]) == ExitCode.OK, "list made it a store"


@pytest.mark.parametrize("through", ["fifo", "symlink"])
def test_check_refuses_a_fifo_as_list_does_without_opening_it(tmp_path: Path, through: str) -> None:
    """A FIFO holds no store, and opening one waits for a writer for ever:
    ``check`` refuses it in the line ``list`` gives, with the same status,
    and ``check_file`` makes it its one finding."""
    import subprocess
    import sys

    from precommit_plants import plant_fifo

    from roteiro_memory.exitcodes import ExitCode

    fifo = plant_fifo(tmp_path / "pipe.db", through)

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "roteiro_memory", *argv, "--db", str(fifo)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=30,
            check=False,
        )
        assert done.returncode == ExitCode.STORE, done.stderr
        return done

    listed, checked = run("list", "--no-sync"), run("check")
    assert (
        checked.stderr
        == listed.stderr
        == (
            f"roteiro-memory: error: {fifo}: not a regular file, so not a roteiro-memory store; "
            "choose a file path with --db\n"
        )
    )
    assert json.loads(run("--json", "check").stdout)["error"]["kind"] == "Unavailable"
    (finding,) = check_file(fifo)
    assert finding.problem in checked.stderr


@pytest.mark.skipif(os.name != "posix", reason="symbolic links as POSIX makes them")
@pytest.mark.parametrize("where", ["the file", "a folder of its path"])
def test_check_refuses_a_symlink_loop_as_a_fifo_is_refused(tmp_path: Path, where: str) -> None:
    """A path whose symbolic links lead round in a loop names no file: it
    was one finding ("cannot be read", exit 1), as if a store there were
    damaged, where a FIFO or a folder there is refused, exit 3."""
    import subprocess
    import sys

    from roteiro_memory.exitcodes import ExitCode

    os.symlink(tmp_path / "two", tmp_path / "one")
    os.symlink(tmp_path / "one", tmp_path / "two")
    path = tmp_path / "one" if where == "the file" else tmp_path / "one" / "m.db"

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "roteiro_memory", *argv, "--db", str(path)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=30,
            check=False,
        )

    checked = run("check")
    assert checked.returncode == ExitCode.STORE, checked.stderr
    assert checked.stdout == ""
    assert checked.stderr == (
        f"roteiro-memory: error: {path}: its symbolic links lead round in a loop (Too many "
        "levels of symbolic links), so it names no file, and no roteiro-memory store; "
        "choose a file path with --db\n"
    )
    as_json = run("--json", "check")
    assert as_json.returncode == ExitCode.STORE
    assert json.loads(as_json.stdout)["error"]["kind"] == "Unavailable"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one", "two"]


def test_check_of_a_foreign_database_with_schema_migrations_is_one_finding(
    tmp_path: Path,
) -> None:
    """Recognised by the same rule as opening: a Rails-shaped database (text
    versions) is one finding saying it is not a store, never a traceback."""
    path = tmp_path / "rails.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE schema_migrations (version varchar PRIMARY KEY)")
    conn.execute("INSERT INTO schema_migrations VALUES ('20240101120000')")
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    findings = check_file(path)
    assert len(findings) == 1, findings
    assert "not a roteiro-memory store" in findings[0].problem
    assert path.read_bytes() == before


def _writing_during_the_check(
    path: Path, monkeypatch: pytest.MonkeyPatch, writes: int
) -> list[int]:
    """Have another connection write to the store at ``path`` (and close,
    checkpointing into the file) while each of the first ``writes`` checks
    reads it; the ids written, one per check begun."""
    from roteiro_memory.stores.sqlite import checkfile

    part = checkfile.integrity_findings
    checks: list[int] = []

    def writing(conn: sqlite3.Connection) -> list[Finding]:
        found = part(conn)
        if len(checks) < writes:
            with SQLiteStore(path) as store:
                checks.append(store.record("lesson", f"written during check {len(checks)}"))
        else:
            checks.append(0)
        return found

    monkeypatch.setattr(checkfile, "integrity_findings", writing)
    return checks


def test_a_check_believes_only_a_read_of_one_state_of_the_file(
    healthy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file with no log is read as immutable, which takes no lock: a
    writer starting meanwhile changes pages under the read, which then
    mixes two states and may look damaged.  The check sees the change and
    checks the file again."""
    checks = _writing_during_the_check(healthy, monkeypatch, writes=1)
    assert check_file(healthy) == []
    assert len(checks) == 2
    with SQLiteStore(healthy) as store:
        assert store.get(checks[0]) is not None


def test_a_check_that_writers_never_leave_alone_is_unavailable_not_a_finding(
    healthy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roteiro_memory.errors import StoreUnavailable
    from roteiro_memory.stores.sqlite.checkfile import ATTEMPTS

    checks = _writing_during_the_check(healthy, monkeypatch, writes=ATTEMPTS)
    with pytest.raises(StoreUnavailable, match="written to while it was checked"):
        check_file(healthy)
    assert len(checks) == ATTEMPTS


def test_a_check_runs_with_the_collector_paused_and_leaves_it_as_it_was(
    healthy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each part of the check runs with the collector off (checked where it
    runs: counting collections would count other threads' too), and the
    collector is left on or off as it was."""
    from roteiro_memory.stores.sqlite import check as sqlite_check

    enabled_in: list[bool] = []
    for name in ("integrity_findings", "judge"):
        part = getattr(sqlite_check, name)

        def watched(*args: Any, _part: Any = part) -> Any:
            enabled_in.append(gc.isenabled())
            return _part(*args)

        monkeypatch.setattr(sqlite_check, name, watched)
    conn = sqlite3.connect(healthy)
    try:
        for enabled in (True, False):
            (gc.enable if enabled else gc.disable)()
            enabled_in.clear()
            assert check_connection(conn) == []
            assert enabled_in == [False, False]
            assert gc.isenabled() is enabled
    finally:
        gc.enable()
        conn.close()


@given(
    moment=st.datetimes(
        min_value=datetime.datetime(1000, 1, 1), max_value=datetime.datetime(9999, 12, 31)
    )
)
def test_every_time_the_writer_writes_is_a_timestamp(moment: datetime.datetime) -> None:
    """The check reads a time's shape by pattern and its calendar by
    ``fromisoformat``: what a store writes (``strftime`` of
    :data:`TIMESTAMP_FORMAT`) passes it, and the same instant with a fraction
    of a second, an offset or a ``T`` does not."""
    written = moment.strftime(TIMESTAMP_FORMAT)
    assert is_timestamp(written)
    assert not is_timestamp(moment.replace(microsecond=1).isoformat(" "))
    assert not is_timestamp(moment.replace(tzinfo=datetime.UTC).isoformat(" "))
    assert not is_timestamp(moment.isoformat("T", "seconds"))


@pytest.mark.parametrize("as_json", [False, True], ids=["lines", "json"])
def test_a_check_whose_reader_goes_away_still_fails_with_its_findings(
    healthy: Path, as_json: bool
) -> None:
    """``roteiro-memory check | head -1`` (or a reader that reads nothing):
    the findings no one reads are not printed, nothing is said on stderr,
    and the status is still that of findings -- a pipeline under ``set -o
    pipefail`` must not read a damaged store as healthy."""
    import os
    import shutil
    import subprocess

    from roteiro_memory.exitcodes import ExitCode

    _plant(healthy, "UPDATE agent_memory SET body = 'changed behind its back' WHERE id = 3")
    script = shutil.which("roteiro-memory")
    assert script is not None
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(
            [script, *(["--json"] if as_json else []), "check", "--db", str(healthy)],
            stdout=write,
            stderr=subprocess.PIPE,
            cwd=healthy.parent,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write)
    assert done.stderr == b""
    assert done.returncode == ExitCode.NOTHING


@pytest.mark.parametrize(
    ("suffix", "made", "kind"),
    [
        ("-journal", "fifo", "a FIFO"),
        ("-journal", "folder", "a directory"),
        ("-wal", "folder", "a directory"),
    ],
)
def test_a_companion_that_is_no_file_is_named_never_waited_on_nor_blamed_on_tmpdir(
    healthy: Path, suffix: str, made: str, kind: str
) -> None:
    """A FIFO where a store's rollback journal goes was opened to read its
    header, which waits for a writer for ever: check hung.  A folder there,
    or where its log goes, was blamed on TMPDIR ("set TMPDIR to a folder with
    room for a copy").  Either is now one line naming what is there, for
    check (exit 3) and for the hook (a finding: nothing was checked), and
    the files are left as they were."""
    import shutil
    import subprocess

    from roteiro_memory.exitcodes import ExitCode

    companion = Path(f"{healthy}{suffix}")
    if made == "fifo":
        os.mkfifo(companion)
    else:
        companion.mkdir()
    before = sorted(p.name for p in healthy.parent.iterdir()), healthy.read_bytes()
    said = f"{companion} is {kind}, where SQLite keeps the store's"

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        script = shutil.which(argv[0])
        assert script is not None
        return subprocess.run(
            [script, *argv[1:]],
            capture_output=True,
            text=True,
            cwd=healthy.parent,
            timeout=30,
            check=False,
        )

    checked = run("roteiro-memory", "check", "--db", str(healthy))
    assert checked.returncode == ExitCode.STORE, checked.stderr
    assert said in checked.stderr
    assert "TMPDIR" not in checked.stderr
    hooked = run("roteiro-check-store", str(healthy))
    assert hooked.returncode == ExitCode.NOTHING, hooked.stderr
    assert said in hooked.stdout
    assert "nothing was checked" in hooked.stdout
    assert (sorted(p.name for p in healthy.parent.iterdir()), healthy.read_bytes()) == before


def test_check_prints_a_store_path_with_control_characters_escaped_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path of the store is in ``check``'s summary line ("PATH: ok",
    "PATH: 2 problems") and in a finding that names the file: a path holding
    a line break split that line in two, and an escape sequence in it
    reached the terminal.  Both are escaped, one line each."""
    from roteiro_memory.cli.main import main
    from roteiro_memory.exitcodes import ExitCode

    monkeypatch.chdir(tmp_path)
    store = tmp_path / "new\nline\x1b[31m.db"
    _healthy(store)
    assert main(["check", "--db", str(store)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out == f"{tmp_path}/new\\x0aline\\x1b[31m.db: ok\n"
    _plant(store, "UPDATE agent_memory SET confidence = 1.5 WHERE id = 1")
    assert main(["check", "--db", str(store)]) == ExitCode.NOTHING
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == f"{tmp_path}/new\\x0aline\\x1b[31m.db: 1 problem"
    assert len(lines) == 2, lines
    text = tmp_path / "not\na store.db"
    text.write_text("hello\n")
    assert main(["check", "--db", str(text)]) == ExitCode.NOTHING
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"store: {tmp_path}/not\\x0aa store.db is not an SQLite database"
    assert len(lines) == 2, lines


def test_an_unanchored_record_holding_a_path_is_a_finding_and_no_import_makes_one(
    healthy: Path, tmp_path: Path
) -> None:
    """No write gives a record without an anchor key a path; one planted so
    (or in an edited export) is found by words no one is shown, so check
    names it and import refuses the export that would make it."""
    from roteiro_memory.errors import RoteiroError
    from roteiro_memory.transfer import import_lines, read_export

    _plant(
        healthy,
        "UPDATE agent_memory SET anchor_path = 'secret/zzz.py',"
        " search = search || 'secret/zzz.py' WHERE id = 3",
    )
    findings = check_file(healthy)
    assert [f.row for f in findings if "anchor_path" in f.problem] == ["id 3"], findings
    with SQLiteStore(healthy) as store:
        lines = list(store.export_lines())
    copy = tmp_path / "copy.db"
    with SQLiteStore(copy) as target:
        refused = r"anchor_path 'secret/zzz\.py' without an anchor_key"
        with pytest.raises(RoteiroError, match=refused):
            import_lines(target, read_export(lines))
        assert target.list().records == []
