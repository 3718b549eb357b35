"""Sources nested deeply: the tree-sitter walk finds definitions at any
depth -- iterative, it finds what a recursion per level found, in the same
order, and a file nested thousands of levels deep is read like any other
rather than crashing every sync with a RecursionError -- and a Python file
too deep for CPython's parser is one that does not parse."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_cli import Repo, _node_keys
from test_grammars import GO, JAVA, RUST, TYPESCRIPT

from roteiro_memory.repo import treesitter
from roteiro_memory.repo.grammars import RULES, TYPE_KINDS, Rules
from roteiro_memory.repo.languages import language_of
from roteiro_memory.repo.symbols import file_symbols

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from tree_sitter import Node

JAVASCRIPT = b"""\
@sealed
class Cart extends Base {
  static count = 0;
  // a comment between
  add = (item) => { this.items.push(item); };
  total() { function inner() {} return 0; }
  *[Symbol.iterator]() {}
}
function* ids() {}
var legacy = function () { class Local { m() {} } };
let Klass = class { method() {} };
if (x) { function cond() {} } else { function cond() {} }
"""

_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})


def _recursive_walk(
    node: Node, prefix: str, outer: str, rules: Rules, own: bool
) -> Iterator[tuple[str, str, int, int]]:
    """The walk as it was written before it was made iterative: one recursion
    per level, each definition's start found through its node's siblings.
    The oracle the iterative walk must agree with."""
    for child in node.named_children:
        named = rules.named(child)
        if named is None or not named[0]:
            if child.type in rules.bodies or (own and child.type in rules.values):
                yield from _recursive_walk(child, prefix, outer, rules, False)
            continue
        name, kind = named
        if kind == "function" and outer in TYPE_KINDS:
            kind = "method"
        qualname = f"{prefix}{name}"
        start = child.start_byte
        before = child.prev_named_sibling
        while before is not None and (before.type in rules.leading or before.type in _COMMENTS):
            if before.type in rules.leading:
                start = before.start_byte
            before = before.prev_named_sibling
        yield qualname, kind, start, child.end_byte
        yield from _recursive_walk(child, f"{qualname}.", kind, rules, True)


def _nested(depth: int, keyword: str = "function") -> bytes:
    """Functions inside functions, ``depth`` levels: JavaScript and
    TypeScript, or Rust with ``keyword`` ``fn``."""
    return ("".join(f"{keyword} a{i}() {{\n" for i in range(depth)) + "}\n" * depth).encode()


def _both_walks(path: str, source: bytes) -> tuple[list[object], list[object]]:
    language = language_of(path)
    assert language is not None
    root = treesitter._parser(language, path).parse(source).root_node
    assert not root.has_error
    rules = RULES[language.name]
    walked = [found[:4] for found in treesitter._walk(root, rules)]
    return walked, list(_recursive_walk(root, "", "", rules, False))


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("web/widget.ts", TYPESCRIPT),
        ("cart.js", JAVASCRIPT),
        ("shop/cart.go", GO),
        ("src/cart.rs", RUST),
        ("src/shop/Cart.java", JAVA),
        ("deep.js", _nested(60)),
        ("deep.rs", _nested(60, "fn")),
    ],
    ids=["ts", "js", "go", "rust", "java", "nested-js", "nested-rust"],
)
def test_the_iterative_walk_finds_what_the_recursive_walk_found_in_its_order(
    path: str, source: bytes
) -> None:
    iterative, recursive = _both_walks(path, source)
    assert iterative
    assert iterative == recursive


@pytest.mark.parametrize(
    ("path", "opening"),
    [
        ("deep.js", "function a{}() {{"),
        ("deep.ts", "function a{}() {{"),
        ("deep.rs", "fn a{}() {{"),
        ("Deep.java", "class a{} {{"),
    ],
)
def test_deeply_nested_source_is_read_without_recursion_limit(path: str, opening: str) -> None:
    depth = 5000
    source = "".join(opening.format(i) + "\n" for i in range(depth)) + "}\n" * depth
    found = file_symbols(path, source.encode())
    assert len(found) == depth
    innermost = max(found, key=lambda d: len(d.qualname)).qualname
    assert innermost == ".".join(f"a{i}" for i in range(depth))


def test_a_deeply_nested_untracked_file_does_not_stop_a_sync(tmp_path: Path) -> None:
    repo = Repo.committed(tmp_path / "r", {"a.py": "def f():\n    return 1\n"})
    (repo.root / "gen.js").write_bytes(_nested(500))
    repo.ok("add", "unrelated", "--anchor", "a.py::f")
    assert "a.py::f" in repo.ok("list")
    assert "js:gen.js::a0.a1.a2" in _node_keys(repo)


def test_a_python_file_nested_too_deeply_to_parse_warns_and_its_anchors_read_unverifiable(
    tmp_path: Path,
) -> None:
    repo = Repo.committed(tmp_path / "r", {"a.py": "def f():\n    return 1\n"})
    lesson = repo.add("f stays pure", "a.py::f")
    repo.write("a.py", "def f():\n    return 1\n\nx = a" + ".b" * 200_000 + "\n")
    done = repo.run("sync")
    assert done.returncode == 0, done.stderr
    assert "a.py does not parse (nested too deeply for Python's parser" in done.stderr
    assert repo.state(lesson) == "unverifiable"
