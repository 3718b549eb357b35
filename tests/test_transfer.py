"""Export and import: a round trip reproduces the store exactly; a bad line or
a non-empty target is refused and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roteiro_memory.results import GraphNode
from roteiro_memory.stores.sqlite.store import SQLiteStore
from roteiro_memory.transfer import ImportRefused, export_lines, import_lines, read_export


def _round_trip(source: SQLiteStore, target_path: Path) -> SQLiteStore:
    lines = list(export_lines(source))
    target = SQLiteStore(target_path)
    import_lines(target, read_export(lines))
    return target


def _busy(store: SQLiteStore) -> None:
    store.put_nodes([GraphNode("file:a.py", "file", "a.py", "a.py", "b1")])
    store.set_tree("t1")
    first = store.record("lesson", "one", anchor="file:a.py", confidence=0.25)
    store.record("decision", "two \u00e9\u00e8 \U0001f600", supersedes=first, scope="team")
    newest = store.record("outcome", "forgotten soon")
    store.forget(newest)
    store.cache_put("k1", "fp", '{"a": 1}', anchor="file:a.py")
    store.cache_put("k2", "fp", "[]")
    store.cache_get("k1")
    store.cache_sweep(1 << 20)
    store.put_nodes([GraphNode("file:a.py", "file", "a.py", "a.py", "b2")])


def test_round_trip_reproduces_the_snapshot(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source:
        _busy(source)
        with _round_trip(source, tmp_path / "b.db") as target:
            assert target.snapshot() == source.snapshot()
            assert target.record("lesson", "next") == 4  # ids are never reused
            assert target.recall().results[0].record.id == 4


def test_round_trip_of_an_empty_store(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source, _round_trip(source, tmp_path / "b.db") as target:
        assert target.snapshot() == source.snapshot()


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["lesson", "attempt", "decision", "pattern", "outcome"]),
            st.text(min_size=1, max_size=30).filter(lambda s: s.strip()),
            st.one_of(st.none(), st.floats(0, 1)),
            st.booleans(),
        ),
        max_size=8,
    )
)
def test_round_trip_of_any_records(
    tmp_path_factory: pytest.TempPathFactory,
    writes: list[tuple[str, str, float | None, bool]],
) -> None:
    folder = tmp_path_factory.mktemp("rt")
    with SQLiteStore(folder / "a.db") as source:
        previous: int | None = None
        for kind, body, confidence, supersede in writes:
            try:
                new = source.record(
                    kind,
                    body,
                    confidence=confidence,
                    supersedes=previous if supersede else None,
                )
            except ValueError:
                continue  # a body the store refuses is not part of this property
            previous = new
        with _round_trip(source, folder / "b.db") as target:
            assert target.snapshot() == source.snapshot()


def test_import_into_a_non_empty_store_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    with SQLiteStore(tmp_path / "a.db") as source, SQLiteStore(tmp_path / "b.db") as target:
        _busy(source)
        target.record("lesson", "already here")
        before = target.snapshot()
        with pytest.raises(ImportRefused, match="not empty"):
            import_lines(target, read_export(export_lines(source)))
        assert target.snapshot() == before


def _lines(tmp_path: Path) -> list[str]:
    with SQLiteStore(tmp_path / "src.db") as source:
        _busy(source)
        return list(export_lines(source))


def _edit(lines: list[str], index: int, **changes: object) -> list[str]:
    item = json.loads(lines[index])
    item.update(changes)
    return [*lines[:index], json.dumps(item), *lines[index + 1 :]]


def _index(lines: list[str], type_: str) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line).get("type") == type_)


def _resealed(lines: list[str]) -> list[str]:
    """``lines`` with a trailer that matches them again, so what is refused
    is the content, not the digest."""
    from roteiro_memory.transfer import export_trailer

    try:
        body = [line for line in lines if json.loads(line).get("type") != "end"]
    except ValueError:
        return lines  # refused at that line, before any trailer is read
    return [*body, export_trailer(body)] if body else body


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda ls: ["not json", *ls[1:]], "line 1: not JSON"),
        (lambda ls: [json.dumps({"format": "other"}), *ls[1:]], "not a roteiro-memory export"),
        (lambda ls: _edit(ls, 0, schema_version=999), "newer"),
        (lambda ls: [*ls, json.dumps({"type": "gadget"})], "unknown line type"),
        (lambda ls: _edit(ls, _index(ls, "record"), kind="rumour"), "rumour"),
        (lambda ls: _edit(ls, _index(ls, "record"), confidence=3), "confidence"),
        (lambda ls: _edit(ls, _index(ls, "record"), id="7"), "'id'"),
        (lambda ls: _edit(ls, _index(ls, "record"), extra=1), "unknown field 'extra'"),
        (
            lambda ls: _edit(
                ls, _index(ls, "record"), superseded_by=99, superseded_at="2026-03-01 12:00:05"
            ),
            "99",
        ),
        (lambda ls: _edit(ls, _index(ls, "cache"), bytes=1), "bytes"),
        (lambda ls: _edit(ls, 0, sequence=1), "sequence"),
        (lambda ls: [], "empty input"),
    ],
)
def test_a_bad_export_is_refused_by_line(tmp_path: Path, mangle: object, message: str) -> None:
    assert callable(mangle)
    lines = _resealed(mangle(_lines(tmp_path)))
    with SQLiteStore(tmp_path / "target.db") as target:
        before = target.snapshot()
        with pytest.raises(ImportRefused, match=message):
            import_lines(target, read_export(lines))
        assert target.snapshot() == before


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (
            lambda ls: _edit(ls, _index(ls, "record"), id=2**70),
            r"'id' is 1180591620717411303424, beyond 64 bits; expected a whole number from "
            r"-2\*\*63 to 2\*\*63 - 1$",
        ),
        (
            lambda ls: _edit(ls, _index(ls, "record"), body="a\ud800b"),
            r"'body' holds a lone surrogate \(U\+D800 at character 1\), which UTF-8 cannot",
        ),
        (lambda ls: ["\ufeff" + ls[0], *ls[1:]], r"line 1: starts with a byte-order mark"),
        (lambda ls: ["{,", *ls[1:]], r"line 1: not JSON \(Expecting property name .* column 2\)"),
        (lambda ls: _edit(ls, 0, sequence=2**70), r"header sequence is 1180591620717411303424"),
        (
            lambda ls: [ls[0], ls[1][: ls[1].index('"key": "') + 9]],
            r"^line 2: not JSON \(Unterminated string starting at column 25\)$",
        ),
        (
            lambda ls: [ls[0], ls[1].replace('"key": "', '"key": "\t', 1), *ls[2:]],
            r"^line 2: not JSON \(Invalid control character at column 26\)$",
        ),
    ],
    ids=[
        "huge-id",
        "lone-surrogate",
        "byte-order-mark",
        "broken-json",
        "huge-sequence",
        "cut-inside-a-string",
        "control-character",
    ],
)
def test_a_bad_export_says_what_is_wrong(tmp_path: Path, mangle: object, message: str) -> None:
    """Issue 22, item 18: not "expected int" for an integer, "expected str"
    for a string, or "not JSON" for a JSON line behind a byte-order mark; and
    the JSON reader's own words read as a sentence with the column (a line
    cut inside a string, as a truncated export ends, is not "starting at at")."""
    assert callable(mangle)
    lines = _resealed(mangle(_lines(tmp_path)))
    with pytest.raises(ImportRefused, match=message):
        read_export(lines)


# --- the integrity trailer -----------------------------------------------------


def _import_refused(tmp_path: Path, lines: list[str], message: str) -> None:
    with SQLiteStore(tmp_path / "target.db") as target:
        before = target.snapshot()
        with pytest.raises(ImportRefused, match=message):
            import_lines(target, read_export(lines))
        assert target.snapshot() == before


@pytest.mark.parametrize("keep", [-1, -2, 3, 1], ids=lambda n: f"cut-at-{n}")
def test_truncated_export_refused(tmp_path: Path, keep: int) -> None:
    """Cut at a line boundary anywhere, an export is refused, not imported short."""
    lines = _lines(tmp_path)
    _import_refused(tmp_path, lines[:keep], "truncated|end line|trailer")


def test_export_with_records_removed_from_the_middle_refused(tmp_path: Path) -> None:
    lines = _lines(tmp_path)
    record = _index(lines, "record")
    _import_refused(tmp_path, [*lines[:record], *lines[record + 1 :]], "records|digest")


def test_export_with_a_line_changed_refused_by_its_digest(tmp_path: Path) -> None:
    lines = _lines(tmp_path)
    record = _index(lines, "record")
    _import_refused(tmp_path, _edit(lines, record, body="rewritten"), "digest")


def test_export_with_lines_after_its_trailer_refused(tmp_path: Path) -> None:
    lines = _lines(tmp_path)
    _import_refused(tmp_path, [*lines, lines[1]], "after the end line")


def _counts_replaced(lines: list[str], counts: object) -> list[str]:
    """``lines`` with the end line's counts made by ``counts`` from the true ones."""
    assert callable(counts)
    trailer = json.loads(lines[-1])
    return [*lines[:-1], json.dumps({**trailer, "counts": counts(trailer["counts"])})]


@pytest.mark.parametrize(
    "counts",
    [
        lambda held: list(held.values()),
        lambda held: "3",
        lambda held: None,
        lambda held: {name: bool(count) for name, count in held.items()},
        lambda held: {name: float(count) for name, count in held.items()},
        lambda held: {**held, "extra": 0},
    ],
    ids=["list", "text", "null", "booleans", "floats", "extra-count"],
)
def test_an_end_line_whose_counts_are_not_three_whole_numbers_is_refused_by_line(
    tmp_path: Path, counts: object
) -> None:
    """The end line's counts are refused by their shape, naming what is
    allowed -- never an unexpected failure (a list), never taken for the
    counts they resemble (``true`` for 1, ``1.0``), never refused with an
    empty list of what disagrees (a count more)."""
    lines = _lines(tmp_path)
    message = (
        rf"^line {len(lines)}: the end line's counts are .*, expected "
        r'\{"nodes": N, "records": N, "cache": N\}, each a whole number'
    )
    _import_refused(tmp_path, _counts_replaced(lines, counts), message)


def test_an_end_line_whose_counts_are_refused_is_quoted_as_json(tmp_path: Path) -> None:
    """The sender of an export wrote JSON: its counts are quoted as it wrote
    them (``true``, ``null``), not as Python would show them."""
    lines = _lines(tmp_path)
    made = _counts_replaced(lines, lambda held: {**dict.fromkeys(held, True), "x": None})
    _import_refused(
        tmp_path, made, r'are \{"nodes": true, "records": true, "cache": true, "x": null\}'
    )


def test_export_ends_with_a_trailer_of_counts_and_digest(tmp_path: Path) -> None:
    lines = _lines(tmp_path)
    header, trailer = json.loads(lines[0]), json.loads(lines[-1])
    assert header["format"] == "roteiro-memory.export/v2"
    assert trailer["type"] == "end"
    assert trailer["counts"] == {
        "nodes": sum('"type": "node"' in line for line in lines),
        "records": sum('"type": "record"' in line for line in lines),
        "cache": sum('"type": "cache"' in line for line in lines),
    }
    assert len(trailer["sha256"]) == 64


def test_old_export_without_trailer_imports_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A v1 export never had a trailer: it is still read, with a warning that
    a truncated one could not be told apart."""
    from roteiro_memory.cli.main import main

    lines = _lines(tmp_path)
    if json.loads(lines[-1]).get("type") == "end":
        lines = lines[:-1]
    lines = _edit(lines, 0, format="roteiro-memory.export/v1")
    parsed = read_export(lines)
    assert parsed.warnings
    assert "trailer" in parsed.warnings[0]
    source = tmp_path / "old.jsonl"
    source.write_text("\n".join(lines) + "\n")
    status = main(["import", str(source), "--db", str(tmp_path / "new.db")])
    _out, err = capsys.readouterr()
    assert status == 0
    assert "trailer" in err
    assert "v1" in err
    assert len(err.splitlines()) == 1


_FULL_DISK_EXPORT = r"""
import resource, signal, sys
from roteiro_memory.cli.main import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.exit(main(["export", "--db", sys.argv[1], "--output", sys.argv[2]]))
"""


def test_export_failing_half_way_removes_its_partial_file(tmp_path: Path) -> None:
    """A disk that fills during an export (here a file size limit) leaves no
    partial export behind, and an earlier export at that path as it was."""
    import subprocess
    import sys

    db = tmp_path / "memory.db"
    with SQLiteStore(db) as store:
        for index in range(300):
            store.record("lesson", f"lesson {index} " + "x" * 500)
        store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    limit = db.stat().st_size + 64 * 1024  # room for the store's side files only
    out = tmp_path / "backup.jsonl"
    # An earlier export's first line: export replaces nothing that is no export.
    for earlier in (None, '{"format": "roteiro-memory.export/v2"}\n'):
        if earlier is not None:
            out.write_text(earlier)
        done = subprocess.run(
            [sys.executable, "-c", _FULL_DISK_EXPORT, str(db), str(out), str(64 * 1024)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode != 0, done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert str(out) in done.stderr
        if earlier is None:
            assert not out.exists(), "a partial export was left behind"
        else:
            assert out.read_text() == earlier
        assert sorted(p.name for p in tmp_path.iterdir() if "backup" in p.name) == (
            [] if earlier is None else ["backup.jsonl"]
        )
    assert limit > 0


# --- import validates what check validates --------------------------------------


def _with_cache(lines: list[str], index: int, **changes: object) -> list[str]:
    return _edit(lines, _index(lines, "cache") + index, **changes)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda ls: _edit(ls, 0, sequence=2**63 - 1), "sequence"),
        (lambda ls: _edit(ls, 0, clock={"ticks": 0, "generation": 9}), "clock is behind"),
        (lambda ls: _with_cache(ls, 0, generation=99), "clock is behind"),
        (lambda ls: _with_cache(ls, 0, hits=-1), "hits -1 is negative"),
        (
            lambda ls: _with_cache(
                ls, 1, last_used=json.loads(ls[_index(ls, "cache")])["last_used"]
            ),
            "shares tick",
        ),
        (
            lambda ls: _edit(
                ls, _index(ls, "record"), id=-5, superseded_by=None, superseded_at=None
            ),
            "-5",
        ),
    ],
    ids=[
        "sequence-at-max",
        "ticks-behind",
        "generation-behind",
        "negative-hits",
        "shared-tick",
        "negative-id",
    ],
)
def test_import_refuses_what_check_refuses(tmp_path: Path, mangle: object, message: str) -> None:
    """Import runs check's own judgements over the parsed export before
    writing: an export that imports is one ``check`` passes."""
    assert callable(mangle)
    _import_refused(tmp_path, _resealed(mangle(_lines(tmp_path))), message)


@pytest.mark.parametrize("version", [True, 0, -7, "3", 3.0, None])
def test_import_refuses_a_schema_version_that_is_not_a_known_one(
    tmp_path: Path, version: object
) -> None:
    lines = _edit(_lines(tmp_path), 0, schema_version=version)
    with pytest.raises(ImportRefused, match=r"line 1: schema_version .* expected a whole number"):
        read_export(lines)


def test_import_refuses_a_line_nested_too_deeply(tmp_path: Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    lines = _lines(tmp_path)
    with pytest.raises(ImportRefused, match=r"line 2: .*nested"):
        read_export([lines[0], deep, *lines[1:]])


# --- import refuses what no store writes ------------------------------------------

_LARGEST = 2**63 - 1


@pytest.mark.parametrize(("field", "stops"), [("ticks", "tick"), ("generation", "sweep")])
def test_import_refuses_a_clock_with_no_room_for_its_next_step(
    tmp_path: Path, field: str, stops: str
) -> None:
    """As the id sequence at the largest 64-bit id is refused (check's rule,
    which the import applies): the next tick (or generation) would overflow,
    and SQLite would store it as a real number that every later cache
    operation trips on."""
    lines = _lines(tmp_path)
    clock = json.loads(lines[0])["clock"]
    clock[field] = _LARGEST
    _import_refused(
        tmp_path,
        _resealed(_edit(lines, 0, clock=clock)),
        rf"^agent_cache_clock id 0: {field} 9223372036854775807 is at the largest 64-bit "
        rf"integer: .*{stops}.*`roteiro-memory check` would refuse the store",
    )


@pytest.mark.parametrize("operation", ["get", "put", "sweep"])
def test_a_clock_one_step_short_of_64_bits_imports_and_its_next_step_works(
    tmp_path: Path, operation: str
) -> None:
    """The bound is the largest clock whose next step fits: at it, the
    import goes through and each cache operation works; after it, ``check``
    says the clock has no step left."""
    edge = {"ticks": _LARGEST - 1, "generation": _LARGEST - 1}
    lines = _resealed(_edit(_lines(tmp_path), 0, clock=edge))
    with SQLiteStore(tmp_path / "target.db") as target:
        import_lines(target, read_export(lines))
        if operation == "get":
            assert target.cache_get("k1") is not None
        elif operation == "put":
            target.cache_put("k9", "fp", "[]")
        else:
            assert target.cache_sweep(1 << 20).generation == _LARGEST
        (finding,) = target.check()
        assert "is at the largest 64-bit integer" in str(finding)


def test_cli_import_of_a_clock_at_64_bits_is_refused_in_one_line_changing_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from roteiro_memory.cli.main import main

    full = {"ticks": _LARGEST, "generation": _LARGEST}
    source = tmp_path / "clock.jsonl"
    source.write_text("\n".join(_resealed(_edit(_lines(tmp_path), 0, clock=full))) + "\n")
    db = tmp_path / "new.db"
    with SQLiteStore(db) as target:
        before = target.snapshot()
    status = main(["import", str(source), "--db", str(db)])
    _out, err = capsys.readouterr()
    assert status != 0
    assert len(err.splitlines()) == 1, err
    assert "ticks 9223372036854775807 is at the largest 64-bit integer" in err
    with SQLiteStore(db) as target:
        assert target.snapshot() == before


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("created_at", "not a date"),
        ("created_at", "2026-13-45 99:99:99"),
        ("created_at", "2023-02-29 12:00:05"),
        ("created_at", "2026-03-01T12:00:05Z"),
        ("created_at", "2026-3-1 1:2:3"),
        ("created_at", "2026-03-01 12:00:05.5"),
        ("created_at", "2026-03-01 12:00:05.000000"),
        ("created_at", "2026-03-01 12:00:05+00:00"),
        ("created_at", "2026-03-01 120005"),
        ("created_at", "20260301 12:00:05"),
        ("created_at", "2026-03-01 12:00"),
        ("created_at", "2026-03-01 24:00:00"),
        ("created_at", "\uff12026-03-01 12:00:05"),
        ("superseded_at", "zzz"),
    ],
)
def test_import_refuses_a_timestamp_in_a_form_the_store_never_writes(
    tmp_path: Path, field: str, value: str
) -> None:
    import re

    lines = _lines(tmp_path)
    record = _index(lines, "record")
    assert json.loads(lines[record])["superseded_at"] is not None  # the superseded one
    _import_refused(
        tmp_path,
        _resealed(_edit(lines, record, **{field: value})),
        rf"^line \d+: agent_memory id \d+: {field} '{re.escape(value)}' is not a UTC time as "
        r"YYYY-MM-DD HH:MM:SS",
    )


@pytest.mark.parametrize(
    "witness", [{"a": 1}, {"tree": "t1", "extra": 1}, {}, "t1", ["t1"]], ids=repr
)
def test_import_refuses_a_witness_but_null_or_a_tree(tmp_path: Path, witness: object) -> None:
    _import_refused(
        tmp_path,
        _resealed(_edit(_lines(tmp_path), 0, witness=witness)),
        r'^line 1: header witness is .*, expected null \(no tree recorded\) or \{"tree": TEXT '
        r"or null\}$",
    )


def test_import_refuses_a_witness_tree_that_is_not_text(tmp_path: Path) -> None:
    _import_refused(
        tmp_path,
        _resealed(_edit(_lines(tmp_path), 0, witness={"tree": 5})),
        r"^line 1: header witness tree is 5, expected text \(or null\)$",
    )


def test_a_witness_of_a_null_tree_imports_as_it_was(tmp_path: Path) -> None:
    """An earlier version wrote "no tree" as a witness row holding NULL (this
    one writes no row): such a store exports it, and imports as it was."""
    import sqlite3

    SQLiteStore(tmp_path / "a.db").close()
    with sqlite3.connect(tmp_path / "a.db") as conn:
        conn.execute("INSERT INTO sync_state (id, tree) VALUES (0, NULL)")
    conn.close()
    with SQLiteStore(tmp_path / "a.db") as source:
        assert json.loads(next(iter(export_lines(source))))["witness"] == {"tree": None}
        with _round_trip(source, tmp_path / "b.db") as target:
            assert target.snapshot() == source.snapshot()
        source.set_tree(None)
        assert json.loads(next(iter(export_lines(source))))["witness"] is None


def _without(line: str, name: str) -> str:
    return json.dumps({k: v for k, v in json.loads(line).items() if k != name})


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (
            lambda ls: _edit(ls, 0, extra=1),
            r"^line 1: unknown field 'extra' in the header: expected format, schema_version, "
            r"sequence, clock, witness$",
        ),
        (lambda ls: [_without(ls[0], "witness"), *ls[1:]], r"^line 1: the header lacks 'witness'$"),
        (
            lambda ls: [_without(ls[0], "sequence"), *ls[1:]],
            r"^line 1: the header lacks 'sequence'$",
        ),
        (
            lambda ls: _edit(ls, 0, clock={"ticks": 9, "generation": 1, "extra": 0}),
            r'^line 1: header clock is .*, expected \{"ticks": N, "generation": N\}$',
        ),
    ],
    ids=["unknown-field", "no-witness", "no-sequence", "unknown-clock-field"],
)
def test_import_refuses_header_fields_as_it_refuses_line_fields(
    tmp_path: Path, mangle: object, message: str
) -> None:
    """A field this version does not know would be dropped, one it expects
    would be guessed: either way the store made is not the one described."""
    assert callable(mangle)
    _import_refused(tmp_path, _resealed(mangle(_lines(tmp_path))), message)


@pytest.mark.parametrize(("type_", "key"), [("node", "key"), ("record", "id"), ("cache", "key")])
def test_import_refuses_two_lines_naming_one_row(tmp_path: Path, type_: str, key: str) -> None:
    """A table's key names one row: of two lines with one key, a store would
    keep one, and so not be the store the export describes."""
    lines = _lines(tmp_path)
    at = _index(lines, type_)
    twice = [*lines[: at + 1], lines[at], *lines[at + 1 :]]
    _import_refused(
        tmp_path,
        _resealed(twice),
        rf"^line {at + 2}: {type_} {key} .* appears again \(first at line {at + 1}\)",
    )


@pytest.mark.parametrize("field", ["generation", "last_used"])
def test_import_refuses_a_cache_stamp_from_before_the_clock_started(
    tmp_path: Path, field: str
) -> None:
    lines = _lines(tmp_path)
    at = _index(lines, "cache")
    _import_refused(
        tmp_path,
        _resealed(_edit(lines, at, **{field: -1})),
        r"^line \d+: agent_cache key .*: an entry is stamped by the cache clock, which starts "
        r"at 0",
    )


def test_import_accepts_the_empty_keys_the_write_paths_accept(tmp_path: Path) -> None:
    """The stores' write paths (and PROTOCOL's graph.put_nodes, memory.record
    and cache.put) take an empty node key, cache key and anchor, and
    ``check`` passes such a store: its export imports, reproducing it."""
    with SQLiteStore(tmp_path / "a.db") as source:
        source.put_nodes([GraphNode("", "file", "a.py", "a.py", "b1")])
        source.record("lesson", "anchored to the empty key", anchor="")
        source.cache_put("", "fp", "[]", anchor="")
        assert source.check() == []
        with _round_trip(source, tmp_path / "b.db") as target:
            assert target.snapshot() == source.snapshot()


def test_cli_import_splits_lines_at_newlines_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """JSON may hold U+2028, U+2029 and U+0085 unescaped inside a string,
    so an export written that way (``ensure_ascii=False``) imports whole;
    ``\n``, ``\r\n`` and ``\r`` end lines, which a JSON string never holds."""
    from roteiro_memory.cli.main import main

    lines = _lines(tmp_path)
    at = _index(lines, "record")
    item = json.loads(lines[at])
    item["body"] = "before\u2028between\u2029and\x85after"
    lines[at] = json.dumps(item, ensure_ascii=False)
    for n, end in enumerate(["\n", "\r\n", "\r", "\r\r\n"]):
        source = tmp_path / f"raw{n}.jsonl"
        source.write_bytes(end.join(_resealed(lines)).encode("utf-8"))  # no end at the end
        db = tmp_path / f"new{n}.db"
        assert main(["import", str(source), "--db", str(db)]) == 0, (end, capsys.readouterr())
        with SQLiteStore(db) as target:
            assert target.get(item["id"]).body == item["body"]


def test_cli_import_reads_no_line_past_its_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An input with no line end (``/dev/zero``) is refused once a line's
    limit is read, in one line, and makes no store."""
    import importlib

    from roteiro_memory.cli.main import main

    monkeypatch.setattr(
        importlib.import_module("roteiro_memory.cli.commands.import_"), "MAX_LINE_CHARS", 1_000
    )
    source = tmp_path / "zeros"
    source.write_bytes(b"\0" * 5_000)
    db = tmp_path / "new.db"
    assert main(["import", str(source), "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"roteiro-memory: error: line 1 of {source} is over 1,000 characters, the most a line"
        " may be; nothing was read past that\n"
    )
    assert not db.exists()
    # The limit is the line's, its end not counted, whether it has one or not.
    for ending in (b"\r\n", b"\n", b"\r"):
        source.write_bytes(b"\n" + b" " * 1_000 + ending + b"[" * 1_001)
        assert main(["import", str(source), "--db", str(db)]) == 2
        assert "line 3 of" in capsys.readouterr().err, ending
    source.write_bytes(b" " * 1_000)
    assert main(["import", str(source), "--db", str(db)]) == 2
    assert "empty input" in capsys.readouterr().err


@pytest.mark.parametrize("white", ["\x0c", "\x0b", "\x1c", "\x85", "\xa0", "\u2028", " \u3000\t"])
def test_an_export_line_of_white_space_json_does_not_take_is_refused_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], white: str
) -> None:
    """A line holding only white space that is not JSON's (a form feed, a
    no-break space, U+2028) is no JSON and no empty line: it is refused by
    its number, naming what it holds, never passed over, and no store is
    made."""
    from roteiro_memory.cli.main import main

    lines = _lines(tmp_path)
    source = tmp_path / "junk.jsonl"
    source.write_text("\n".join([*lines[:2], white, *lines[2:]]) + "\n", encoding="utf-8")
    db = tmp_path / "new.db"
    assert main(["import", str(source), "--db", str(db)]) == 2
    assert capsys.readouterr().err == (
        f"roteiro-memory: error: line 3 of {source}: {white!r} is white space JSON does not "
        "take as such; "
        "expected a JSON object, as an export's lines are, or an empty line (spaces and tabs "
        "at most), which is passed over\n"
    )
    assert not db.exists()


def test_an_export_line_empty_but_for_spaces_and_tabs_is_passed_over(tmp_path: Path) -> None:
    """An empty line holds nothing, and the trailer vouches for every line
    that holds something, so a file that gained empty lines (its line ends
    converted twice, a newline appended) imports as it was exported."""
    lines = _lines(tmp_path)
    padded = ["", *lines[:2], " \t", "", *lines[2:], "", "  "]
    with SQLiteStore(tmp_path / "src.db") as source, SQLiteStore(tmp_path / "new.db") as target:
        import_lines(target, read_export(padded))
        assert target.snapshot() == source.snapshot()


def test_an_import_refusal_names_the_file_and_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal said "line 3:" alone: which file it was in is named too,
    as given -- quoted with escapes when its name holds a line break, so the
    refusal stays one line -- or standard input for -."""
    import io
    import sys

    from roteiro_memory.cli.main import main

    lines = _lines(tmp_path)
    bad = "\n".join([*lines[:2], json.dumps({"type": "bogus"}), *lines[2:]]) + "\n"
    refusal = "unknown line type 'bogus': expected node, record, cache or end"
    db = tmp_path / "new.db"
    for name in ("dump.jsonl", "two\nlines.jsonl"):
        source = tmp_path / name
        source.write_text(bad, encoding="utf-8")
        shown = str(source) if "\n" not in name else repr(str(source))
        assert main(["import", str(source), "--db", str(db)]) == 2
        assert capsys.readouterr().err == f"roteiro-memory: error: line 3 of {shown}: {refusal}\n"
        assert not db.exists()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(bad.encode())))
    assert main(["import", "-", "--db", str(db)]) == 2
    assert capsys.readouterr().err == (
        f"roteiro-memory: error: line 3 of the export from standard input: {refusal}\n"
    )
    source = tmp_path / "dump.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["import", str(source), "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["import", str(source), "--db", str(db)]) == 2
    assert capsys.readouterr().err.startswith(
        f"roteiro-memory: error: cannot import {source}: the store is not empty ("
    )
