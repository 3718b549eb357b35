"""``roteiro-forbid-store``: stores, companions and exports are refused by content."""

from __future__ import annotations

import contextlib
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from precommit_plants import (
    LEAKED_FORMS,
    open_store,
    plant_companions,
    plant_export,
    plant_foreign_migrations,
    plant_foreign_sqlite,
    plant_hidden_by_a_hot_journal,
    plant_leaked,
    plant_store,
    plant_undecodable_name,
)

from roteiro_memory.precommit import sniff
from roteiro_memory.precommit.forbid_store import main
from roteiro_memory.stores.sqlite.migrations import SCHEMA_VERSION
from roteiro_memory.transfer import EXPORT_FORMAT


def _run(capsys: pytest.CaptureFixture[str], *files: Path) -> tuple[int, list[str]]:
    status = main([str(f) for f in files])
    out, err = capsys.readouterr()
    assert err == ""
    return status, out.splitlines()


def _good_files(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    text = folder / "memory.db"  # a store's usual name, but text
    text.write_text("not a database\n")
    empty = folder / "empty.db"
    empty.write_bytes(b"")
    jsonl = folder / "events.jsonl"
    jsonl.write_text('{"format": "someone-else/v1"}\n{"id": 1}\n')
    foreign = plant_foreign_sqlite(folder / "notes.db")
    migrated = plant_foreign_migrations(folder / "app.sqlite3")
    # A WAL-named file beside a database that is not a store.
    beside_foreign = folder / "notes.db-wal"
    beside_foreign.write_bytes(b"\x00" * 64)
    binary = folder / "image.png"
    binary.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    return [text, empty, jsonl, foreign, migrated, beside_foreign, binary]


def test_forbid_store_is_silent_on_files_that_are_not_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(capsys, *_good_files(tmp_path)) == (0, [])


def test_forbid_store_is_silent_with_no_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(capsys) == (0, [])


def test_forbid_store_refuses_a_store_whatever_its_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = plant_store(tmp_path / "fixture.bin")
    status, lines = _run(capsys, store)
    assert status == 1
    assert lines == [
        f"{store}: a roteiro-memory store (schema version {SCHEMA_VERSION}) must not be committed "
        "(memory is per-clone, unredacted prose); "
        f"unstage it with: git rm --cached -- {store}"
    ]


def test_forbid_store_refuses_a_store_in_use_and_its_companions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Copied while open, the database alone may not show the schema (it is
    still in the log); the log and the index are recognised too."""
    database, wal, shm = plant_companions(tmp_path)
    status, lines = _run(capsys, database, wal, shm)
    assert status == 1
    assert len(lines) == 3
    assert lines[0].startswith(f"{database}: a roteiro-memory store")
    assert lines[1].startswith(f"{wal}: the write-ahead log of a roteiro-memory store")
    assert lines[2].startswith(f"{shm}: the shared-memory index of a roteiro-memory store")
    assert all("git rm --cached -- " in line for line in lines)


def test_forbid_store_recognises_a_log_alone_by_its_schema(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, wal, _ = plant_companions(tmp_path / "copies")
    alone = tmp_path / "journal.bin"
    wal.rename(alone)
    status, lines = _run(capsys, alone)
    assert status == 1
    assert lines[0].startswith(f"{alone}: the write-ahead log of a roteiro-memory store")


def test_forbid_store_quotes_a_path_that_needs_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = plant_store(tmp_path / "my memory.db")
    _, lines = _run(capsys, store)
    assert lines[0].endswith(f"git rm --cached -- '{store}'")


def test_forbid_store_changes_nothing_it_reads(tmp_path: Path) -> None:
    """Opening a WAL-mode database read-only would leave -wal and -shm files
    beside it; recognition opens it immutable and leaves the folder as found."""
    store = plant_store(tmp_path / "memory.db")
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    assert main([str(store)]) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.db"]
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


def test_forbid_store_sees_a_schema_only_in_the_log(tmp_path: Path) -> None:
    with open_store(tmp_path / "memory.db") as store:
        store.record("lesson", "another")
        info = sniff.store_info(tmp_path / "memory.db")
    assert info is not None


def test_forbid_store_knows_the_application_id() -> None:
    """The hook keeps its own copy of the stamp so it need not import the store."""
    from roteiro_memory.stores.sqlite.migrations import APPLICATION_ID

    assert int.from_bytes(sniff.APPLICATION_ID_BYTES, "big") == APPLICATION_ID


def test_forbid_store_knows_a_stamped_store_whatever_its_tables(tmp_path: Path) -> None:
    """A file carrying the application id is a store even with its tables gone."""
    import sqlite3

    path = plant_store(tmp_path / "memory.db")
    with open_store(path):
        pass
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA foreign_keys = OFF")
    for (table,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    ).fetchall():
        conn.execute(f'DROP TABLE "{table}"')
    conn.commit()
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()
    assert sniff.is_stamped(path)
    info = sniff.store_info(path)
    assert info is not None
    assert info.readable
    assert not sniff.is_stamped(plant_foreign_sqlite(tmp_path / "notes.db"))


def test_forbid_store_knows_the_export_format() -> None:
    """The hook keeps its own copy of the tag so it need not import the exporter."""
    assert EXPORT_FORMAT.startswith(sniff.EXPORT_TAG_PREFIX)


def test_forbid_store_refuses_an_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    export = plant_export(tmp_path / "backup.jsonl", plant_store(tmp_path / "source.db"))
    status, lines = _run(capsys, export)
    assert status == 1
    assert lines == [
        f"{export}: a roteiro-memory export must not be committed "
        "(memory is per-clone, unredacted prose); "
        f"unstage it with: git rm --cached -- {export}"
    ]


def test_forbid_store_refuses_an_export_of_a_later_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    later = tmp_path / "later.jsonl"
    later.write_text(json.dumps({"format": sniff.EXPORT_TAG_PREFIX + "v9"}) + "\n")
    assert _run(capsys, later)[0] == 1


def test_forbid_store_usage_error_is_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--no-such-option"])
    assert exit_info.value.code == 2
    assert "--no-such-option" in capsys.readouterr().err


def test_forbid_store_refuses_any_companion_beside_a_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty log names no database; beside a store it is still the store's."""
    plant_store(tmp_path / "memory.db")
    empty_wal = tmp_path / "memory.db-wal"
    empty_wal.write_bytes(b"")
    journal = tmp_path / "memory.db-journal"
    journal.write_bytes(b"\x00" * 512)
    status, lines = _run(capsys, empty_wal, journal)
    assert status == 1
    assert lines[0].startswith(
        f"{empty_wal}: the write-ahead log of a roteiro-memory store (beside memory.db) "
    )
    assert lines[1].startswith(
        f"{journal}: the rollback journal of a roteiro-memory store (beside memory.db) "
    )


@pytest.mark.parametrize("how", LEAKED_FORMS)
def test_forbid_store_recognises_memory_in_every_leaked_form(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """A log without its database, a store or export inside gzip or tar, an
    SQL dump, an export without its header, in UTF-16, as a JSON array or
    behind 64 KiB of blanks: each is recognised by a bounded read of it."""
    leaked = plant_leaked(tmp_path / "plant", how)
    status, lines = _run(capsys, leaked)
    assert status == 1
    assert len(lines) == 1
    assert lines[0].startswith(f"{leaked}: ")
    assert "must not be committed" in lines[0]


def test_forbid_store_is_silent_on_source_that_names_the_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The project's own migrations and plants name the tables; they are source."""
    import roteiro_memory.stores.sqlite.migrations as migrations

    assert _run(capsys, Path(migrations.__file__), Path(__file__)) == (0, [])


def test_forbid_store_knows_how_export_lines_begin(tmp_path: Path) -> None:
    """The hook keeps its own copy of the line openings; they match the exporter's."""
    text = plant_export(tmp_path / "e.jsonl", plant_store(tmp_path / "s.db")).read_text()
    lines = text.splitlines()[1:]
    kinds = {json.loads(line).get("type") for line in lines}
    assert kinds == {"record", "cache", "end"}
    assert all(line.startswith(sniff.EXPORT_LINE_PREFIXES) for line in lines)


def _wal_without_schema(folder: Path) -> Path:
    """The log of a ``forget`` and an update on a store whose schema was
    checkpointed, copied while another connection keeps it: record bodies,
    no schema text, no table name."""
    import shutil
    import sqlite3

    live = folder / "live"
    live.mkdir(parents=True)
    source = plant_store(live / "memory.db")
    keeper = sqlite3.connect(source, isolation_level=None)
    try:
        keeper.execute("PRAGMA wal_autocheckpoint = 0")
        keeper.execute("SELECT 1 FROM agent_memory").fetchall()
        keeper.execute("UPDATE agent_memory SET body = 'a secret pasted into memory' WHERE id = 2")
        keeper.execute("DELETE FROM agent_memory WHERE id = 3")
        copy = folder / "x.db-wal"
        shutil.copyfile(source.with_name("memory.db-wal"), copy)
    finally:
        keeper.close()
    shutil.rmtree(live)
    data = copy.read_bytes()
    assert b"a secret pasted" in data
    assert not any(s in data for s in (*sniff.SCHEMA_SIGNATURES, b"agent_memory"))
    return copy


def test_forbid_store_refuses_any_write_ahead_log_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22, item 11: a log's frames are pages, which need not name
    their tables; every SQLite log is refused, named as SQLite's."""
    wal = _wal_without_schema(tmp_path)
    renamed = tmp_path / "blob.bin"
    renamed.write_bytes(wal.read_bytes())
    status, lines = _run(capsys, wal, renamed)
    assert status == 1
    assert lines[0].startswith(f"{wal}: an SQLite write-ahead log")
    assert lines[1].startswith(f"{renamed}: an SQLite write-ahead log")


def test_forbid_store_knows_a_log_by_its_header_not_its_magic_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = _wal_without_schema(tmp_path).read_bytes()[:32]
    assert sniff.wal_header(header)
    damaged = bytearray(header)
    damaged[31] ^= 1  # the header's checksum no longer holds
    assert not sniff.wal_header(bytes(damaged))
    magic_only = tmp_path / "looks.bin"
    magic_only.write_bytes(header[:4] + b"\xff" * 60)
    assert _run(capsys, magic_only) == (0, [])


def test_forbid_store_keeps_a_finding_on_one_line_whatever_the_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 22, item 20: a newline in a file name is escaped, and the
    command to unstage it still names that file."""
    import subprocess

    store = plant_store(tmp_path / "two\nlines.db")
    status, lines = _run(capsys, store)
    assert status == 1
    assert len(lines) == 1
    escaped = str(store).replace("\n", "\\x0a")
    assert lines[0].startswith(f"{escaped}: a roteiro-memory store")
    command = lines[0].split("unstage it with: ", 1)[1]
    assert command == f"git rm --cached -- $'{escaped}'"
    shown = subprocess.run(
        ["bash", "-c", f"printf %s {command.removeprefix('git rm --cached -- ')}"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout == str(store)


def test_forbid_store_passes_json_nested_past_any_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON nested deeper than the decoder goes is no export, not a crash."""
    array = tmp_path / "deep.json"
    array.write_text("[" * 200_000 + "]" * 200_000)
    lines = tmp_path / "deep.jsonl"
    lines.write_text('{"a":' * 100_000 + "1" + "}" * 100_000 + "\n")
    assert _run(capsys, array, lines) == (0, [])
    # Items the decoder just reads, which writing again goes deeper than:
    # found at a fresh process's depth, so run as pre-commit runs it.
    items = []
    for depth in range(960, 1_000):
        item = tmp_path / f"item-{depth}.json"
        item.write_text("[" + '{"a":' * depth + "1" + "}" * depth + "]")
        items.append(item.name)
    script = Path(sys.executable).parent / "roteiro-forbid-store"
    done = subprocess.run(
        [str(script), *items], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_a_store_whose_schema_names_are_not_utf8_is_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reading its schema raised UnicodeDecodeError, a traceback."""
    store = plant_undecodable_name(plant_store(tmp_path / "memory.db"))
    status, lines = _run(capsys, store)
    assert status == 1
    assert len(lines) == 1
    assert "a roteiro-memory store must not be committed" in lines[0]


@pytest.mark.parametrize("name", ["-h", "--help", "-notes.txt"])
def test_a_staged_file_named_like_an_option_is_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """pre-commit passes names with no ``--`` before them: a staged ``-h``
    printed the help and passed the store beside it; ``-notes.txt`` was an
    unrecognized argument that blocked every commit."""
    monkeypatch.chdir(tmp_path)
    plant_store(tmp_path / "memory.db")
    (tmp_path / name).write_text("plain text\n")
    assert main([name]) == 0
    assert capsys.readouterr() == ("", "")
    status, lines = _run(capsys, Path(name), Path("memory.db"))
    assert status == 1
    assert [line.split(":")[0] for line in lines] == ["memory.db"]


def test_an_option_that_names_no_file_is_still_an_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as ended:
        main(["--nonsense", "memory.db"])
    assert ended.value.code == 2
    assert "unrecognized arguments: --nonsense" in capsys.readouterr().err


def _agent_memory_of_another_tool(path: Path) -> None:
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE agent_memory (id INTEGER PRIMARY KEY, content TEXT)")
        conn.execute("INSERT INTO agent_memory (content) VALUES ('hello')")
        conn.commit()


def _database_quoting_the_schema(path: Path) -> None:
    import sqlite3

    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("CREATE TABLE snippets (path TEXT, body TEXT)")
        conn.execute("INSERT INTO snippets VALUES ('m.py', 'CREATE TABLE agent_memory (id)')")
        conn.commit()


OTHER_TOOLS_FILES = {
    "another tool's agent_memory table": ("other.db", _agent_memory_of_another_tool),
    "a database whose rows quote the schema": ("docs.db", _database_quoting_the_schema),
    "a graph as JSON Lines": (
        "graph.jsonl",
        '{"type": "node", "key": "n1", "label": "Alice"}\n{"type": "edge", "from": "n1"}\n',
    ),
    "records of another kind": ("records.json", '[{"type": "record", "id": 7, "value": 3.2}]\n'),
    "a schema with no rows": (
        "schema.sql",
        "BEGIN TRANSACTION;\nCREATE TABLE agent_memory (\n  id INTEGER PRIMARY KEY\n);\nCOMMIT;\n",
    ),
}


@pytest.mark.parametrize("case", sorted(OTHER_TOOLS_FILES))
def test_files_of_other_tools_that_share_a_name_or_shape_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    """Each was refused as a store, an export or a dump: a table named
    agent_memory, schema text in a row, a line starting {"type": "node",
    "key": or a CREATE TABLE with nothing inserted proves nothing."""
    from roteiro_memory.precommit.check_store import main as check_store

    name, made = OTHER_TOOLS_FILES[case]
    path = tmp_path / name
    if isinstance(made, str):
        path.write_text(made)
    else:
        made(path)
    assert _run(capsys, path) == (0, [])
    assert check_store([str(path)]) == 0
    assert capsys.readouterr() == ("", "")


def test_an_export_pretty_printed_is_still_an_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``jq . export.jsonl``: each object over several lines was passed."""
    export = plant_export(tmp_path / "export.jsonl", plant_store(tmp_path / "memory.db"))
    pretty = tmp_path / "pretty.json"
    pretty.write_text(
        "\n".join(
            json.dumps(json.loads(line), indent=2) for line in export.read_text().splitlines()
        )
    )
    status, lines = _run(capsys, pretty)
    assert status == 1
    assert len(lines) == 1
    assert lines[0].startswith(f"{pretty}: a roteiro-memory export must not be committed")


def test_a_socket_is_passed_over_as_a_special_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It was 'cannot be read (No such device or address)', a finding."""
    import socket

    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind(str(tmp_path / "sock"))
        assert _run(capsys, tmp_path / "sock") == (0, [])


def test_forbid_store_judges_a_file_beside_a_hot_journal_by_its_last_commit_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A writer died mid-transaction, and the file as found records none of
    this project's migrations, though its last commit -- what SQLite reads
    once the journal is rolled back -- is a store: the store and its journal
    are refused as such, and both are left byte for byte, time for time, as
    they were."""
    import shutil

    folder = tmp_path / "crashed"
    folder.mkdir()
    path = plant_hidden_by_a_hot_journal(folder)
    journal = folder / "memory.db-journal"
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()}
    status, lines = _run(capsys, path, journal)
    assert status == 1
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{path}: a roteiro-memory store (schema version {SCHEMA_VERSION})")
    assert lines[1].startswith(
        f"{journal}: the rollback journal of a roteiro-memory store (beside memory.db) "
    )
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in folder.iterdir()} == before

    torn = tmp_path / "torn"
    torn.mkdir()
    shutil.copyfile(path, torn / "memory.db")  # without its journal: the file as found
    assert _run(capsys, torn / "memory.db") == (0, []), "the plant hides nothing as found"


def test_forbid_store_never_passes_a_file_beside_a_hot_journal_it_could_not_examine(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no room for the private copy its last commit is read on, the
    file is one finding saying why, not a pass and not a traceback."""
    import tempfile

    folder = tmp_path / "crashed"
    folder.mkdir()
    path = plant_hidden_by_a_hot_journal(folder)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    status, lines = _run(capsys, path)
    assert status == 1
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"roteiro-forbid-store: {path}: a store beside a hot rollback")
    assert lines[0].endswith("; it was not examined")
