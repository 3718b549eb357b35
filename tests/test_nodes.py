"""Symbol nodes beyond Python, through a real sync: parsed only where a
file's blob changed; without a parser, file-level and said once; read once
the parser is installed, though nothing in the tree changed."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from test_graph import committed, spy_parses

from roteiro_memory.repo import nodes as graphnodes
from roteiro_memory.repo import statcache, symbols, treesitter, unread
from roteiro_memory.repo.graph import Repo, sync
from roteiro_memory.stores.sqlite.store import SQLiteStore

SOURCES = {
    "web/app.ts": "export function render(n: number) {\n  return n;\n}\n",
    "web/util.js": "export function clamp(v) {\n  return v;\n}\n",
    "svc/cart.go": "package svc\n\ntype Cart struct{}\n\nfunc (c *Cart) Add() {}\n",
    "core/src/lib.rs": "pub struct Cart;\n\nimpl Cart {\n    pub fn add(&self) {}\n}\n",
    "api/Cart.java": "class Cart {\n  void add() {}\n}\n",
    "tool.py": "def main():\n    pass\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return committed(tmp_path / "r", SOURCES)


@pytest.fixture
def db(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "m.db")


@pytest.fixture
def no_parser(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """tree-sitter as if it were not installed: ``import tree_sitter`` fails,
    and no grammar is found on the import path."""
    monkeypatch.setitem(sys.modules, "tree_sitter", None)
    monkeypatch.setattr(treesitter, "_parsers", {})
    monkeypatch.setattr(unread, "installed", lambda names: False)
    return monkeypatch


def _symbols(db: SQLiteStore) -> dict[str, str | None]:
    return {n.key: n.blob for n in db.export_graph() if not n.key.startswith("file:")}


def test_sync_writes_symbol_nodes_of_every_language(repo: Repo, db: SQLiteStore) -> None:
    report = sync(db, repo)
    assert set(_symbols(db)) == {
        "ts:web/app.ts::render",
        "js:web/util.js::clamp",
        "go:svc/cart.go::Cart",
        "go:svc/cart.go::Cart.Add",
        "rs:core/src/lib.rs::Cart",
        "rs:core/src/lib.rs::Cart.add",
        "java:api/Cart.java::Cart",
        "java:api/Cart.java::Cart.add",
        "py:tool.py::main",
    }
    assert report.symbols == 9
    assert sorted(report.parsed) == sorted(SOURCES)
    assert report.notices == []


def test_sync_parses_only_the_source_files_whose_blob_changed(
    repo: Repo, db: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync(db, repo)
    before = _symbols(db)
    (repo.root / "svc/cart.go").write_text(
        SOURCES["svc/cart.go"] + "\nfunc New() *Cart { return nil }\n"
    )
    (repo.root / "notes.txt").write_text("not source\n")
    parsed = spy_parses(monkeypatch)
    report = sync(db, repo)
    assert parsed == ["svc/cart.go"]
    assert report.parsed == ["svc/cart.go"]
    after = _symbols(db)
    assert {k for k in after if after[k] != before.get(k)} == {"go:svc/cart.go::New"}
    assert sync(db, repo).up_to_date
    assert parsed == ["svc/cart.go"], "nothing changed: nothing parsed"


def test_a_source_file_that_does_not_parse_keeps_its_symbols_unverifiable(
    repo: Repo, db: SQLiteStore
) -> None:
    sync(db, repo)
    (repo.root / "core/src/lib.rs").write_text(SOURCES["core/src/lib.rs"] + "fn broken( {\n")
    report = sync(db, repo)
    (problem,) = [p for path, p in report.unparsable if path == "core/src/lib.rs"]
    assert problem.startswith("does not parse (line 6: ")
    assert "read unverifiable until it does" in problem
    symbols = _symbols(db)
    assert symbols["rs:core/src/lib.rs::Cart.add"] is None
    assert symbols["rs:core/src/lib.rs::Cart"] is None
    assert "file:core/src/lib.rs" in {n.key for n in db.export_graph()}
    (repo.root / "core/src/lib.rs").write_text(SOURCES["core/src/lib.rs"])
    assert sync(db, repo).unparsable == []
    assert _symbols(db)["rs:core/src/lib.rs::Cart.add"] is not None


def test_a_source_file_over_the_parse_limit_is_not_parsed_and_its_symbols_read_unverifiable(
    repo: Repo, db: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    grown = SOURCES["web/app.ts"] + "// generated\n"
    monkeypatch.setattr(symbols, "MAX_PARSED_BYTES", len(grown.encode()))
    sync(db, repo)
    (repo.root / "web/app.ts").write_text(grown)
    assert sync(db, repo).unparsable == [], "at the limit: parsed"
    assert _symbols(db)["ts:web/app.ts::render"] is not None

    monkeypatch.setattr(symbols, "MAX_PARSED_BYTES", len(grown.encode()) - 1)
    (repo.root / "web/app.ts").write_text(grown.replace("generated", "generatec"))
    (repo.root / "web/new.ts").write_text(grown)

    def no_parse(*args: object) -> object:
        raise AssertionError("a file over the limit was parsed")

    monkeypatch.setattr(treesitter, "definitions", no_parse)
    report = sync(db, repo)
    over = f"is {len(grown):,} bytes, over the {len(grown) - 1:,} bytes whose symbols are read"
    assert {path: problem.split(" (")[0] for path, problem in report.unparsable} == {
        "web/app.ts": over,
        "web/new.ts": over,
    }
    assert "anchors on its symbols read unverifiable" in report.unparsable[0][1]
    after = _symbols(db)
    assert after["ts:web/app.ts::render"] is None, "kept, with no blob: unverifiable"
    assert not [key for key in after if key.startswith("ts:web/new.ts")]
    assert {"file:web/app.ts", "file:web/new.ts"} <= {n.key for n in db.export_graph()}


def test_without_a_parser_anchors_are_file_level_and_said_once(
    repo: Repo, db: SQLiteStore, no_parser: pytest.MonkeyPatch
) -> None:
    report = sync(db, repo)
    assert set(_symbols(db)) == {"py:tool.py::main"}
    kinds = {n.path: n.kind for n in db.export_graph() if n.key.startswith("file:")}
    assert kinds["web/app.ts"] == graphnodes.UNREAD
    assert kinds["tool.py"] == graphnodes.FILE
    (notice,) = report.notices
    assert "the symbols of 5 files are not read" in notice
    assert "Go 1, Java 1, JavaScript 1, Rust 1, TypeScript 1" in notice
    assert "pip install -e '.[symbols]'" in notice
    assert report.parsed == ["tool.py"]
    assert unread.languages(repo.git_dir) == ["Go", "Java", "JavaScript", "Rust", "TypeScript"]
    (repo.root / "web/app.ts").write_text(SOURCES["web/app.ts"] + "export const x = 1;\n")
    (repo.root / "web/more.ts").write_text("export function more() {}\n")
    again = sync(db, repo)
    assert again.notices == [], "said by the sync that first met them, not again"
    assert again.parsed == []


def test_installing_the_parser_reads_the_unread_files_though_nothing_changed(
    repo: Repo, db: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as hidden:
        hidden.setitem(sys.modules, "tree_sitter", None)
        hidden.setattr(treesitter, "_parsers", {})
        hidden.setattr(unread, "installed", lambda names: False)
        sync(db, repo)
        assert sync(db, repo).up_to_date
    assert unread.installed(["TypeScript"])
    report = sync(db, repo)
    assert not report.up_to_date
    assert sorted(report.parsed) == sorted(p for p in SOURCES if p != "tool.py")
    assert len(_symbols(db)) == 9
    assert all(n.kind == graphnodes.FILE for n in db.export_graph() if n.key.startswith("file:"))
    assert unread.languages(repo.git_dir) == []
    assert sync(db, repo).up_to_date


def test_symbols_read_before_and_unreadable_now_read_unverifiable(
    repo: Repo, db: SQLiteStore, no_parser: pytest.MonkeyPatch
) -> None:
    no_parser.undo()
    sync(db, repo)
    no_parser.setitem(sys.modules, "tree_sitter", None)
    no_parser.setattr(treesitter, "_parsers", {})
    (repo.root / "web/app.ts").write_text(SOURCES["web/app.ts"] + "// edited\n")
    report = sync(db, repo)
    assert _symbols(db)["ts:web/app.ts::render"] is None
    assert _symbols(db)["go:svc/cart.go::Cart.Add"] is not None, "unchanged: kept as read"
    (notice,) = report.notices
    assert "TypeScript 1" in notice


def test_the_stat_cache_stops_vouching_once_the_parser_can_be_found(
    repo: Repo, db: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statcache, "RACY_NS", 0)
    place = statcache.Place(
        str(repo.root), str(repo.git_dir), str(repo.common_dir), repo.object_format
    )
    with monkeypatch.context() as hidden:
        hidden.setitem(sys.modules, "tree_sitter", None)
        hidden.setattr(treesitter, "_parsers", {})
        hidden.setattr(unread, "installed", lambda names: False)
        report = sync(db, repo)
        cache = statcache.record(
            repo, place, "m", report.tree, time.time_ns() + 1, report.listed, report.submodules, {}
        )
        assert cache is not None
        assert cache.unchanged("m", report.tree, {})
    assert not cache.unchanged("m", report.tree, {})


def test_the_notice_for_one_unread_file_says_its_symbols_are_not_read() -> None:
    notice = graphnodes._notice({"Go": ["a.go"]}, graphnodes.Stored.of([]))
    assert notice is not None
    assert notice.startswith("the symbols of 1 file are not read (Go 1): ")


@pytest.mark.parametrize("made", [0, "not a language"])
def test_a_grammar_that_does_not_load_leaves_its_files_unread_not_a_crash(
    repo: Repo, db: SQLiteStore, monkeypatch: pytest.MonkeyPatch, made: object
) -> None:
    """A grammar built for another tree-sitter (which refuses it with
    "Incompatible Language version") is a parser that cannot be had: its
    files keep their file node, their symbols unverifiable, and an anchor
    into one is refused saying why -- never an unexpected failure."""
    from types import SimpleNamespace

    from roteiro_memory.errors import SymbolsUnavailable

    sync(db, repo)
    monkeypatch.setitem(sys.modules, "tree_sitter_go", SimpleNamespace(language=lambda: made))
    monkeypatch.setattr(treesitter, "_parsers", {})
    (repo.root / "svc/cart.go").write_text(SOURCES["svc/cart.go"] + "// edited\n")
    report = sync(db, repo)
    assert _symbols(db)["go:svc/cart.go::Cart.Add"] is None
    assert _symbols(db)["ts:web/app.ts::render"] is not None, "other grammars still load"
    (notice,) = report.notices
    assert "(Go 1): their parsers are not installed or do not load" in notice
    with pytest.raises(SymbolsUnavailable, match="cannot be loaded by the installed tree-sitter"):
        symbols.file_symbols("svc/cart.go", b"package svc\n", repo.object_format)


def test_an_anchor_into_a_file_whose_parser_is_missing_has_a_node_without_a_blob(
    no_parser: pytest.MonkeyPatch,
) -> None:
    """Whether the symbol is there cannot be told, so it reads unverifiable,
    never vanished; a file whose symbols are read keeps only its own, and
    the anchors are asked for only when some file's parser is missing."""
    asked: list[str] = []

    def anchored() -> list[str]:
        asked.append("asked")
        return ["ts:web/app.ts::render", "py:tool.py::gone", "ts:web/other.ts::x", "file:tool.py"]

    def read(paths: Sequence[str]) -> dict[str, bytes]:
        return {path: SOURCES[path].encode() for path in paths}

    files = {p: graphnodes.FileEntry(p, "100644", str(i) * 40) for i, p in enumerate(SOURCES)}
    built = graphnodes.build(files, graphnodes.Stored.of([]), read, "sha1", None, anchored)
    symbols = {n.key: n for n in built.nodes if not n.key.startswith("file:")}
    assert set(symbols) == {"ts:web/app.ts::render", "py:tool.py::main"}
    unknown = symbols["ts:web/app.ts::render"]
    assert (unknown.kind, unknown.name, unknown.path, unknown.blob) == (
        graphnodes.UNKNOWN,
        "render",
        "web/app.ts",
        None,
    )
    assert asked == ["asked"]
    only_python = {"tool.py": files["tool.py"]}
    graphnodes.build(only_python, graphnodes.Stored.of([]), read, "sha1", None, anchored)
    assert asked == ["asked"], "every file read: no anchor asked for"


def test_a_sync_left_pending_holds_the_node_of_a_symbol_anchored_since_in_an_unread_file(
    repo: Repo, db: SQLiteStore, no_parser: pytest.MonkeyPatch
) -> None:
    """The tree unchanged, a sync that writes adds the node a record written
    since needs; one that leaves its graph pending (a use case deciding
    whether to write) holds it there, the store untouched until written."""
    sync(db, repo)
    db.record("lesson", "render sizes in px", anchor="ts:web/app.ts::render")
    before = db.export_graph()
    pending = sync(db, repo, write=False)
    assert not pending.up_to_date
    assert pending.pending is not None
    added = [n for n in pending.pending if n not in before]
    assert [(n.key, n.kind, n.blob) for n in added] == [
        ("ts:web/app.ts::render", graphnodes.UNKNOWN, None)
    ]
    assert db.export_graph() == before
    assert pending.write(db).written == 1
    assert sync(db, repo).up_to_date
    db.record("lesson", "layout", anchor="ts:web/app.ts::layout")
    written = sync(db, repo)
    assert (written.up_to_date, written.written) == (True, 1)
    assert db.find_nodes(keys=["ts:web/app.ts::layout"])[0].kind == graphnodes.UNKNOWN


def test_unknown_nodes_pass_check_round_trip_and_give_way_to_the_parsed_graph(
    repo: Repo, db: SQLiteStore, no_parser: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A graph holding nodes of symbols not read is a sound store: ``check``
    finds nothing, an export imports exactly; and once the parser is there,
    a sync replaces them by the symbols read: one the file defines keeps
    its node (unverifiable still, as its record captured no blob to compare),
    one it does not define goes, and its anchor reads vanished."""
    from roteiro_memory.semantics import AnchorState
    from roteiro_memory.transfer import read_export

    sync(db, repo)
    there = db.record("lesson", "render sizes in px", anchor="ts:web/app.ts::render")
    gone = db.record("lesson", "never defined", anchor="ts:web/app.ts::nothing")
    sync(db, repo)
    unknown = [n.key for n in db.export_graph() if n.kind == graphnodes.UNKNOWN]
    assert unknown == ["ts:web/app.ts::nothing", "ts:web/app.ts::render"]
    assert db.check() == []
    with SQLiteStore(tmp_path / "copy.db") as copy:
        copy.import_export(read_export(list(db.export_lines())))
        assert copy.snapshot() == db.snapshot()
        assert copy.check() == []

    no_parser.undo()
    report = sync(db, repo)
    assert not report.up_to_date, "the parser is found: the files left unread are read"
    kinds = {n.key: n.kind for n in db.export_graph() if n.key.startswith("ts:")}
    assert kinds == {"ts:web/app.ts::render": "function"}
    states = {}
    for record in (there, gone):
        got = db.get(record)
        assert got is not None
        states[record] = got.anchor_state
    assert states == {there: AnchorState.UNVERIFIABLE, gone: AnchorState.VANISHED}
