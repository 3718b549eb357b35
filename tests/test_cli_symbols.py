"""Anchors on symbols beyond Python, through the console script in real git
repositories: a neighbour's edit leaves an anchor valid, the symbol's own
edit drifts it, its removal vanishes it, and an enclosing type follows its
members as a Python class does (a Go type excepted: its methods are not in
its text)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import NamedTuple

import pytest
from test_cli import Repo


class Case(NamedTuple):
    path: str
    source: str
    symbol: str
    """The anchored symbol's qualified name."""
    enclosing: str | None
    follows: bool
    """Whether the enclosing type's anchor drifts with the symbol's edit."""
    neighbour: tuple[str, str]
    own: tuple[str, str]
    removal: tuple[str, str]


TYPESCRIPT = """\
export function render(size: number): string {
  return `${size}px`;
}

export function layout(width: number): number {
  return width * 2;
}
"""

GO = """\
package cart

type Cart struct {
	items []string
}

func (c *Cart) Add(item string) {
	c.items = append(c.items, item)
}

func (c Cart) Len() int {
	return len(c.items)
}
"""

RUST = """\
pub struct Cart {
    items: Vec<String>,
}

impl Cart {
    pub fn add(&mut self, item: String) {
        self.items.push(item);
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }
}
"""

JAVA = """\
package shop;

public class Cart {
    private int count;

    public void add(int n) {
        count += n;
    }

    public int size() {
        return count;
    }
}
"""

JAVASCRIPT = """\
export class Cart {
  constructor() { this.items = []; }

  total() {
    return this.items.length;
  }

  clear() {
    this.items = [];
  }
}
"""

CASES = {
    "typescript function": Case(
        "web/app.ts",
        TYPESCRIPT,
        "render",
        None,
        False,
        ("width * 2", "width * 3"),
        ("`${size}px`", "`${size}em`"),
        (TYPESCRIPT.split("export function layout")[0], ""),
    ),
    "go method": Case(
        "cart/cart.go",
        GO,
        "Cart.Add",
        "Cart",
        False,
        ("return len(c.items)", "return cap(c.items)"),
        ("append(c.items, item)", "append(c.items, item, item)"),
        (GO[GO.index("func (c *Cart) Add") : GO.index("func (c Cart) Len")], ""),
    ),
    "rust impl method": Case(
        "src/cart.rs",
        RUST,
        "Cart.add",
        "Cart",
        True,
        ("items: Vec<String>,\n}\n", "items: Vec<String>,\n}\n\npub fn other() {}\n"),
        ("self.items.push(item);", "self.items.insert(0, item);"),
        (RUST[RUST.index("    pub fn add") : RUST.index("    pub fn len")], ""),
    ),
    "java method": Case(
        "src/shop/Cart.java",
        JAVA,
        "Cart.add",
        "Cart",
        True,
        ("package shop;", "package shop;\n\nimport java.util.List;"),
        ("count += n;", "count += 2 * n;"),
        (JAVA[JAVA.index("    public void add") : JAVA.index("    public int size")], ""),
    ),
    "javascript method": Case(
        "web/cart.mjs",
        JAVASCRIPT,
        "Cart.total",
        "Cart",
        True,
        ("export class Cart", "// the cart\nexport class Cart"),
        ("this.items.length", "this.items.length + 0"),
        (JAVASCRIPT[JAVASCRIPT.index("  total()") : JAVASCRIPT.index("  clear()")], ""),
    ),
}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo.committed(tmp_path / "repo", {case.path: case.source for case in CASES.values()})


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_an_anchor_is_valid_then_drifted_then_vanished(repo: Repo, case: Case) -> None:
    lesson = repo.add("about the symbol", f"{case.path}::{case.symbol}")
    record = repo.json("show", str(lesson))
    prefix = {"ts": "ts:", "go": "go:", "rs": "rs:", "java": "java:", "mjs": "js:"}
    assert record["anchor"]["key"] == (
        f"{prefix[case.path.rsplit('.', 1)[1]]}{case.path}::{case.symbol}"
    )
    assert record["anchor_state"] == "valid"
    enclosing = (
        repo.add("about its type", f"{case.path}::{case.enclosing}") if case.enclosing else None
    )

    text = case.source.replace(*case.neighbour)
    assert text != case.source
    repo.write(case.path, text)
    assert repo.state(lesson) == "valid", "a neighbour's edit"
    if enclosing is not None:
        assert repo.state(enclosing) == "valid", "a neighbour's edit, outside the type"

    edited = text.replace(*case.own)
    assert edited != text
    repo.write(case.path, edited)
    assert repo.state(lesson) == "drifted", "its own edit"
    if enclosing is not None:
        assert repo.state(enclosing) == ("drifted" if case.follows else "valid")

    repo.write(case.path, text)
    assert repo.state(lesson) == "valid", "the edit undone"

    removed = text.replace(*case.removal)
    assert removed != text
    repo.write(case.path, removed)
    assert repo.state(lesson) == "vanished", "its removal"
    listed = repo.json("list", "--anchor", case.path)["records"]
    assert lesson in [r["id"] for r in listed], "a bare path keeps the file's symbols' records"


def test_a_symbol_the_file_does_not_define_is_refused_naming_those_it_does(repo: Repo) -> None:
    done = repo.run("add", "x", "--anchor", "cart/cart.go::Cart.Remove")
    assert done.returncode == 2
    assert done.stderr == (
        "roteiro-memory: error: --anchor: cart/cart.go defines no 'Cart.Remove'; "
        "expected one of: Cart, Cart.Add, Cart.Len\n"
    )


def test_a_name_differing_only_in_unicode_normalization_is_refused_shown_escaped(
    repo: Repo,
) -> None:
    """``cafe\\u0301`` (NFD) looks like the ``caf\\u00e9`` (NFC) the file
    defines: the refusal says they differ in normalization, and shows both
    escaped, instead of listing a name that looks like the one given."""
    repo.write("web/menu.ts", "export function caf\u00e9(): number {\n  return 1;\n}\n")
    done = repo.run("add", "x", "--anchor", "web/menu.ts::cafe\u0301")
    assert done.returncode == 2
    assert done.stderr == (
        "roteiro-memory: error: --anchor: web/menu.ts defines no 'cafe\u0301'; it defines "
        "'caf\u00e9', which differs from it only in Unicode normalization ('cafe\\u0301' "
        "given, 'caf\\u00e9' defined): names are matched exactly, so give the one defined\n"
    )
    assert repo.state(repo.add("the menu", "web/menu.ts::caf\u00e9")) == "valid"


def test_a_file_whose_name_holds_double_colons_is_named_by_its_raw_key(repo: Repo) -> None:
    """``web/a::b.ts`` cannot be written as PATH::QUALNAME, whose path ends
    at the first ``::``: the refusal of that form names the raw key that
    works, for a symbol in it and for the file itself."""
    repo.write("web/a::b.ts", TYPESCRIPT)
    symbol = repo.run("add", "x", "--anchor", "web/a::b.ts::render")
    assert symbol.returncode == 2
    assert symbol.stderr.endswith(
        " files only; anchor to the file instead; but 'web/a::b.ts' is a file, whose name "
        "holds the '::' that ends a path in --anchor: its raw key 'ts:web/a::b.ts::render' "
        "names 'render' in it\n"
    )
    whole = repo.run("add", "x", "--anchor", "web/a::b.ts")
    assert whole.returncode == 2
    assert whole.stderr.endswith("its raw key 'file:web/a::b.ts' names it\n")
    assert repo.state(repo.add("render", "ts:web/a::b.ts::render")) == "valid"
    assert repo.state(repo.add("the module", "file:web/a::b.ts")) == "valid"


def test_a_raw_key_with_another_languages_prefix_is_refused_naming_the_files(
    repo: Repo,
) -> None:
    """``py:`` on a TypeScript file is a key no sync makes, so it could only
    read vanished: refused, naming the prefix of the file's language, and
    nothing is written."""
    done = repo.run("add", "x", "--anchor", "py:web/app.ts::render")
    assert done.returncode == 2
    assert done.stderr == (
        "roteiro-memory: error: --anchor 'py:web/app.ts::render': 'web/app.ts' is a TypeScript "
        "file, whose symbols' keys start with 'ts:' ('ts:web/app.ts::render'); 'py:' is "
        "Python's, so sync makes no node with this key\n"
    )
    listed = repo.run("list", "--json")
    assert json.loads(listed.stdout)["result"]["records"] == [], "nothing was written"
    assert repo.state(repo.add("render", "ts:web/app.ts::render")) == "valid"


def test_a_symbol_in_a_file_of_no_language_with_symbols_is_refused(repo: Repo) -> None:
    repo.write("native/cart.c", "int add(int a) { return a; }\n")
    done = repo.run("add", "x", "--anchor", "native/cart.c::add")
    assert done.returncode == 2
    assert "symbols are read from Python (.py, .pyi), TypeScript (.ts, .tsx" in done.stderr
    assert done.stderr.endswith("Java (.java) files only; anchor to the file instead\n")


def test_a_file_over_one_mib_has_unverifiable_symbols_and_refuses_new_anchors(
    repo: Repo,
) -> None:
    """The default limit on what is parsed, 1 MiB: a file grown past it (a
    generated one, say) keeps its file node and its records, which read
    unverifiable, and a new anchor on one of its symbols is refused, naming
    the file's size and the limit."""
    lesson = repo.add("render returns pixels", "web/app.ts::render")
    grown = TYPESCRIPT + "// " + "x" * (1024 * 1024) + "\n"
    size = len(grown.encode())
    repo.write("web/app.ts", grown)
    synced = repo.run("sync")
    assert synced.returncode == 0, synced.stderr
    assert synced.stderr == (
        f"roteiro-memory: warning: web/app.ts is {size:,} bytes, over the 1 MiB whose symbols "
        "are read (what is larger is taken for generated or minified code), so it is not "
        "parsed; its file node is kept and anchors on its symbols read unverifiable until it "
        "is smaller\n"
    )
    assert repo.state(lesson) == "unverifiable"
    refused = repo.run("add", "x", "--anchor", "web/app.ts::layout")
    assert refused.returncode == 2
    assert refused.stderr == (
        f"roteiro-memory: error: --anchor: web/app.ts is {size:,} bytes, over the 1 MiB whose "
        "symbols are read (what is larger is taken for generated or minified code), so its "
        "symbols cannot be anchored; anchor to the file\n"
    )
    assert repo.state(repo.add("the app module is generated now", "web/app.ts")) == "valid"


def test_a_symbol_anchor_shows_as_path_and_qualname(repo: Repo) -> None:
    repo.add("about the method", "src/cart.rs::Cart.add")
    listed = repo.ok("list")
    assert "src/cart.rs::Cart.add" in listed
    assert "rs:src" not in listed


def _without_tree_sitter(repo: Repo, tmp_path: Path) -> None:
    """Run the console script as if tree-sitter were not installed: a
    package of that name first on the path, whose import fails."""
    shadow = tmp_path / "shadow" / "tree_sitter"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ImportError('not installed, for this test', name='tree_sitter')\n"
    )
    kept = repo.env.get("PYTHONPATH")
    repo.env["PYTHONPATH"] = os.pathsep.join([str(shadow.parent), *([kept] if kept else [])])


def _tree_sitter_not_found(repo: Repo, tmp_path: Path) -> None:
    """Run the console script as where tree-sitter and its grammars are not
    installed at all: not found on the path, so no sync takes them for
    installed since (:func:`_without_tree_sitter`'s package is found)."""
    shadow = tmp_path / "unfound"
    shadow.mkdir()
    (shadow / "sitecustomize.py").write_text(
        "import sys\n"
        "from importlib.machinery import PathFinder\n\n\n"
        "class Unfound:\n"
        "    @staticmethod\n"
        "    def find_spec(name, path=None, target=None):\n"
        "        if name.startswith('tree_sitter'):\n"
        "            return None\n"
        "        return PathFinder.find_spec(name, path, target)\n\n"
        "    @staticmethod\n"
        "    def invalidate_caches():\n"
        "        PathFinder.invalidate_caches()\n\n\n"
        "sys.meta_path[:] = [Unfound if f is PathFinder else f for f in sys.meta_path]\n"
    )
    kept = repo.env.get("PYTHONPATH")
    repo.env["PYTHONPATH"] = os.pathsep.join([str(shadow), *([kept] if kept else [])])


def test_without_the_extra_anchors_are_file_level_and_it_is_said_once(
    repo: Repo, tmp_path: Path
) -> None:
    _without_tree_sitter(repo, tmp_path)
    first = repo.run("sync")
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [
        "roteiro-memory: warning: the symbols of 5 files are not read (Go 1, Java 1, "
        "JavaScript 1, Rust 1, TypeScript 1): their parsers are not installed or do not "
        "load, so anchors into them name whole files; pip install 'roteiro-memory[symbols]' "
        "(from a checkout: pip install -e '.[symbols]')"
    ]
    repo.write("web/app.ts", TYPESCRIPT + "\nexport const extra = 1;\n")
    again = repo.run("sync")
    assert again.returncode == 0
    assert again.stderr == ""
    refused = repo.run("add", "x", "--anchor", "web/app.ts::render")
    assert refused.returncode == 2
    assert refused.stderr.startswith(
        "roteiro-memory: error: --anchor web/app.ts::render: TypeScript symbols are read with "
        "tree-sitter and tree-sitter-typescript, and tree_sitter is not installed; pip install "
    )
    on_file = repo.add("the app module renders", "web/app.ts")
    assert repo.state(on_file) == "valid"


def test_anchor_refusals_of_names_no_file_can_have_are_one_line(repo: Repo) -> None:
    """A name past what the file system takes, or one holding a newline,
    is refused in one line saying what is wrong: never an unexpected
    failure, never a message split across lines."""
    long = "/".join(["a" * 200] * 25)
    for anchor, says in (
        (f"x::{long}", "anchor to the file instead"),
        ("py:web/a\nb.ts::render", "'web/a\\nb.ts' is a TypeScript file"),
    ):
        done = repo.run("add", "x", "--anchor", anchor)
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1, done.stderr
        assert says in done.stderr, done.stderr
        assert "unexpected failure" not in done.stderr


@pytest.mark.parametrize("change", ["renamed", "removed"])
def test_a_symbol_whose_file_is_not_parsed_here_reads_unverifiable_never_vanished(
    repo: Repo, tmp_path: Path, change: str
) -> None:
    """Without its parser, whether a symbol is in a file cannot be told: an
    anchor into one reads unverifiable, at the working tree and at a
    revision whose file the synced graph does not hold at that path (it was
    renamed or removed since), never vanished."""
    lesson = repo.add("render sizes in px", "web/app.ts::render")
    if change == "renamed":
        repo.git("mv", "web/app.ts", "web/view.ts")
    else:
        repo.git("rm", "-q", "web/app.ts")
    repo.commit(change)
    repo.ok("sync")
    _without_tree_sitter(repo, tmp_path)
    assert repo.state(lesson) == "vanished", "its file is not at that path now"
    assert repo.state(lesson, "--rev", "HEAD~1") == "unverifiable"
    repo.git("checkout", "-q", "HEAD~1", "--", "web/app.ts")
    assert repo.state(lesson) == "unverifiable"


@pytest.mark.parametrize("then", ["read", "sync"])
def test_a_symbol_anchored_since_the_last_sync_in_a_file_not_parsed_here_reads_unverifiable(
    repo: Repo, tmp_path: Path, then: str
) -> None:
    """A record written after the last sync (by a machine that reads the
    file, into a shared store) names a symbol the graph holds no node of;
    the working tree is unchanged, so no sync rebuilds the graph, yet
    whether the symbol is there cannot be told here: unverifiable, at the
    next read and after a sync, never vanished.  A file that is read keeps
    its verdict."""
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    _tree_sitter_not_found(repo, tmp_path)
    repo.ok("sync")
    with SQLiteStore(repo.db) as store:
        lesson = store.record("lesson", "render sizes in px", anchor="ts:web/app.ts::render")
        gone = store.record("lesson", "about a file never here", anchor="ts:web/gone.ts::x")
        store.cache_put("cart", "fp", "{}", anchor="go:cart/cart.go::Cart")
    if then == "sync":
        assert repo.json("sync")["up_to_date"] is True
    assert repo.state(lesson) == "unverifiable"
    assert repo.state(gone) == "vanished", "no file at that path"
    with SQLiteStore(repo.db) as store:
        held = {node.key: node.kind for node in store.find_nodes(keys=["go:cart/cart.go::Cart"])}
    assert held == {"go:cart/cart.go::Cart": "symbol (not read)"}, "a cache entry's anchor too"


def test_a_symbol_anchored_in_a_file_whose_parser_is_missing_reads_unverifiable_from_the_start(
    tmp_path: Path,
) -> None:
    """Whether the symbol is there cannot be told, from the moment the
    record is written by its raw key: not vanished until some unrelated
    edit has the graph built again, then unverifiable."""
    repo = Repo.committed(tmp_path / "repo", {"web/app.ts": TYPESCRIPT, "README.txt": "hi\n"})
    _tree_sitter_not_found(repo, tmp_path)
    repo.ok("sync")
    lesson = repo.add("render sizes in px", "ts:web/app.ts::render")
    first = repo.state(lesson)
    repo.write("README.txt", "hi again\n")
    assert (first, repo.state(lesson)) == ("unverifiable", "unverifiable")
