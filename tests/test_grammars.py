"""Definitions of the languages read with tree-sitter: which qualified names
each makes, and which text each blob covers (the blob rule is Python's)."""

from __future__ import annotations

import pytest

from roteiro_memory.repo.binding import blob_id
from roteiro_memory.repo.symbols import SymbolError, file_symbols

TYPESCRIPT = b"""\
import { x } from "./x";

@Component({ tag: "app" })
export class Widget<T> extends Base implements Shape {
  @log
  render(size: number): string {
    return `${size}`;
  }
  private static helper = () => 1;
  get area() { return 1; }
  set area(value: number) { this.a = value; }
  over(a: string): void;
  over(a: any) {}
  #secret() {}
}

export function grow(by: number): number {
  function clamp(v: number) { return Math.max(0, v); }
  return clamp(by);
}

function parse(a: string): number;
function parse(a: any) { return 1; }

export const make = (n: number) => new Widget(n), other = 3;
const { a, b } = pair;
export default function () {}

export interface Shape { area(): number; sides: number }
enum Color { Red, Green }
type Id = string;
namespace Outer.Inner { export function deep() {} }
declare module "vendor" { function hook(): void }
abstract class Abstract { abstract must(): void }
describe("suite", () => { function notAName() {} });
"""


def _kinds(path: str, source: bytes) -> dict[str, str]:
    return {d.qualname: d.kind for d in file_symbols(path, source)}


def _blobs(path: str, source: bytes) -> dict[str, str]:
    return {d.qualname: d.blob for d in file_symbols(path, source)}


def test_typescript_qualnames_nest_through_classes_namespaces_and_functions() -> None:
    assert _kinds("web/widget.ts", TYPESCRIPT) == {
        "Widget": "class",
        "Widget.render": "method",
        "Widget.helper": "method",
        "Widget.area": "method",
        "Widget.over": "method",
        "Widget.#secret": "method",
        "grow": "function",
        "grow.clamp": "function",
        "parse": "function",
        "make": "function",
        "Shape": "interface",
        "Shape.area": "method",
        "Color": "enum",
        "Id": "type",
        "Outer.Inner": "namespace",
        "Outer.Inner.deep": "function",
        "vendor": "namespace",
        "vendor.hook": "function",
        "Abstract": "class",
        "Abstract.must": "method",
    }


def test_a_decorator_belongs_to_its_definition_in_typescript() -> None:
    (render,) = [d for d in file_symbols("w.ts", TYPESCRIPT) if d.qualname == "Widget.render"]
    start = TYPESCRIPT.index(b"@log")
    end = TYPESCRIPT.index(b"\n  }\n", start) + len(b"\n  }")
    assert render.blob == blob_id(TYPESCRIPT[start:end])
    undecorated = TYPESCRIPT.replace(b"  @log\n", b"")
    assert _blobs("w.ts", undecorated)["Widget.render"] != render.blob


def test_a_name_bound_twice_covers_both_in_typescript() -> None:
    """An overload signature and its implementation, a getter and its setter."""
    before = _blobs("w.ts", TYPESCRIPT)
    signature = _blobs("w.ts", TYPESCRIPT.replace(b"parse(a: string)", b"parse(a: String)"))
    assert signature["parse"] != before["parse"]
    setter = _blobs("w.ts", TYPESCRIPT.replace(b"this.a = value", b"this.a = -value"))
    assert setter["Widget.area"] != before["Widget.area"]


def test_editing_one_member_changes_only_its_blob_and_its_enclosers() -> None:
    before = _blobs("w.ts", TYPESCRIPT)
    after = _blobs("w.ts", TYPESCRIPT.replace(b"return `${size}`", b"return `${size}px`"))
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"Widget", "Widget.render"}


def test_tsx_and_javascript_read_jsx() -> None:
    source = b"export function App() { return <div>{1}</div>; }\nconst Btn = () => <b/>;\n"
    assert _kinds("web/App.tsx", source) == {"App": "function", "Btn": "function"}
    assert _kinds("web/App.jsx", source) == {"App": "function", "Btn": "function"}


def test_javascript_classes_fields_and_bound_functions() -> None:
    source = b"""\
class Cart extends Base {
  static count = 0;
  add = (item) => { this.items.push(item); };
  total() { return 0; }
  *[Symbol.iterator]() {}
}
function* ids() {}
module.exports = { helper() {} };
var legacy = function () {};
let Klass = class { method() {} };
"""
    assert _kinds("cart.cjs", source) == {
        "Cart": "class",
        "Cart.add": "method",
        "Cart.total": "method",
        "Cart.[Symbol.iterator]": "method",
        "ids": "function",
        "legacy": "function",
        "Klass": "class",
        "Klass.method": "method",
    }


GO = b"""\
package shop

// Cart holds items.
type Cart[T any] struct {
	items []T
}

type (
	Store interface {
		Get(id string) (Cart[int], error)
	}
	ID = string
)

func (c *Cart[T]) Add(item T) { c.items = append(c.items, item) }

func (c Cart[T]) Len() int { return len(c.items) }

func (*Cart[T]) Reset() {}

func New() *Cart[int] {
	type local struct{}
	return &Cart[int]{}
}

func init() {}

func init() { println() }
"""


def test_go_methods_with_receivers_are_type_dot_method() -> None:
    assert _kinds("shop/cart.go", GO) == {
        "Cart": "struct",
        "Cart.Add": "method",
        "Cart.Len": "method",
        "Cart.Reset": "method",
        "Store": "interface",
        "Store.Get": "method",
        "ID": "type",
        "New": "function",
        "New.local": "struct",
        "init": "function",
    }


def test_a_go_types_text_is_its_declaration_not_its_methods() -> None:
    before = _blobs("cart.go", GO)
    edited = _blobs("cart.go", GO.replace(b"return len(c.items)", b"return cap(c.items)"))
    assert {name for name in before if before[name] != edited[name]} == {"Cart.Len"}
    field = _blobs("cart.go", GO.replace(b"items []T", b"items []*T"))
    assert {name for name in before if before[name] != field[name]} == {"Cart"}


def test_two_go_init_functions_cover_each_other() -> None:
    before = _blobs("cart.go", GO)
    after = _blobs("cart.go", GO.replace(b"func init() {}", b"func init() { _ = 1 }"))
    assert before["init"] != after["init"]


RUST = b"""\
use std::fmt;

/// A cart.
#[derive(Debug, Clone)]
pub struct Cart<T> {
    items: Vec<T>,
}

impl<T> Cart<T> {
    pub fn new() -> Self {
        fn helper() {}
        Cart { items: Vec::new() }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }
}

impl<T> fmt::Display for Cart<T> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "cart")
    }
}

impl<T> fmt::Debug for &Cart<T> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "debug")
    }
}

pub trait Priced {
    fn price(&self) -> u32;
    fn discounted(&self) -> u32 { self.price() }
}

pub enum Size { Small, Large }

mod tests {
    #[test]
    fn adds() {}
}

type Id = u64;

macro_rules! cart { () => {} }
"""


def test_rust_impl_methods_are_type_dot_method_and_trait_impls_type_dot_trait() -> None:
    assert _kinds("src/cart.rs", RUST) == {
        "Cart": "struct",
        "Cart.new": "method",
        "Cart.new.helper": "function",
        "Cart.len": "method",
        "Cart.Display": "impl",
        "Cart.Display.fmt": "method",
        "Cart.Debug": "impl",
        "Cart.Debug.fmt": "method",
        "Priced": "trait",
        "Priced.price": "method",
        "Priced.discounted": "method",
        "Size": "enum",
        "tests": "module",
        "tests.adds": "function",
        "Id": "type",
        "cart": "macro",
    }


def test_a_rust_type_covers_its_inherent_impls_and_not_its_trait_impls() -> None:
    """``impl Cart`` binds ``Cart`` as the struct does, so the struct's node
    follows its methods as a Python class follows its body; each trait's
    implementation is its own node."""
    before = _blobs("cart.rs", RUST)
    method = _blobs("cart.rs", RUST.replace(b"self.items.len()", b"self.items.len() + 0"))
    assert {n for n in before if before[n] != method[n]} == {"Cart", "Cart.len"}
    shown = _blobs("cart.rs", RUST.replace(b'"cart"', b'"a cart"'))
    assert {n for n in before if before[n] != shown[n]} == {"Cart.Display", "Cart.Display.fmt"}


def test_a_rust_attribute_belongs_to_its_item() -> None:
    before = _blobs("cart.rs", RUST)
    after = _blobs("cart.rs", RUST.replace(b"#[derive(Debug, Clone)]", b"#[derive(Debug)]"))
    assert before["Cart"] != after["Cart"]
    comment = _blobs("cart.rs", RUST.replace(b"/// A cart.", b"/// The cart."))
    assert comment == before, "a doc comment is not code"


JAVA = b"""\
package shop;

import java.util.List;

@Deprecated
public class Cart<T> {
    private final List<T> items;

    public Cart() { this(List.of()); }
    public Cart(List<T> items) { this.items = items; }

    @Override
    public String toString() { return "cart"; }

    int add(int a) { return a; }
    int add(String a) { return 0; }

    static class Line {
        int total() {
            class Local {}
            return 0;
        }
    }

    interface Priced { int price(); default int twice() { return 2 * price(); } }
    enum Size { SMALL, LARGE; int rank() { return ordinal(); } }
    record Pair(int a, int b) { int sum() { return a + b; } }
}
"""


def test_java_qualnames_nest_through_inner_types() -> None:
    assert _kinds("src/shop/Cart.java", JAVA) == {
        "Cart": "class",
        "Cart.Cart": "method",
        "Cart.toString": "method",
        "Cart.add": "method",
        "Cart.Line": "class",
        "Cart.Line.total": "method",
        "Cart.Line.total.Local": "class",
        "Cart.Priced": "interface",
        "Cart.Priced.price": "method",
        "Cart.Priced.twice": "method",
        "Cart.Size": "enum",
        "Cart.Size.rank": "method",
        "Cart.Pair": "record",
        "Cart.Pair.sum": "method",
    }


def test_java_overloads_bind_one_name_and_cover_each_other() -> None:
    before = _blobs("Cart.java", JAVA)
    after = _blobs(
        "Cart.java",
        JAVA.replace(b"int add(String a) { return 0; }", b"int add(String a) { return 1; }"),
    )
    assert {n for n in before if before[n] != after[n]} == {"Cart", "Cart.add"}


@pytest.mark.parametrize(
    ("path", "source", "line"),
    [
        ("a.ts", b"export function f(a: number {\n  return a;\n}\n", 1),
        ("a.js", b"function ok() {}\nclass {\n", 2),
        ("a.go", b"package p\n\nfunc f( {\n}\n", 3),
        ("a.rs", b"fn ok() {}\nfn broken( {}\n", 2),
        ("A.java", b"class A {\n  void m( {}\n}\n", 2),
    ],
)
def test_source_with_a_syntax_error_is_a_symbol_error_naming_its_line(
    path: str, source: bytes, line: int
) -> None:
    with pytest.raises(SymbolError, match=rf"^line {line}: "):
        file_symbols(path, source)


def test_moving_a_definition_keeps_its_blob() -> None:
    first = b"function a() { return 1; }\n\nfunction b() { return 2; }\n"
    moved = b"function b() { return 2; }\n\n// moved\nfunction a() { return 1; }\n"
    assert _blobs("m.js", first) == _blobs("m.js", moved)


_AMONG_DECORATORS = {
    "rust doc comment after an attribute": (
        "lib.rs",
        "#[inline]\n{c}pub fn f() -> u8 {{ 1 }}\n",
        ("/// Does f.\n", "/// Does f, better.\n", "// plain\n"),
    ),
    "rust comment after an attribute on its line": (
        "lib.rs",
        "#[inline]{c}\npub fn f() -> u8 {{ 1 }}\n",
        (" // why", " /* why */"),
    ),
    "rust comment between attributes": (
        "lib.rs",
        "#[inline]\n{c}#[must_use]\npub fn f() -> u8 {{ 1 }}\n",
        ("/* block */\n", "/// doc\n", "    // indented\n"),
    ),
    "typescript doc comment after a method decorator": (
        "web/a.ts",
        "class A {{\n  @Log()\n{c}  stop() {{}}\n}}\n",
        ("  /** Stops. */\n", "  /** Stops it all. */\n", "  // plain\n  // two\n"),
    ),
    "typescript comment after a class decorator": (
        "web/a.ts",
        "@Component()\n{c}export class B {{}}\n",
        ("/** B. */\n", "// b\n"),
    ),
    "typescript comment inside the decorated class's head": (
        "web/a.ts",
        "@Component() {c}class C {{}}\n",
        ("/* c */ ", "/** doc */ "),
    ),
    "java comment among annotations and modifiers": (
        "src/A.java",
        "class A {{\n  @Override\n{c}  public void f() {{}}\n}}\n",
        ("  // why\n", "  /** Does f. */\n"),
    ),
    "python comment between decorator and def": (
        "a.py",
        "class A:\n    @property\n{c}    def f(self):\n        return 1\n",
        ("    # why\n", "    # why\n    # and more\n"),
    ),
    "python comment after a decorator on its line": (
        "a.py",
        "@cache{c}\ndef f():\n    return 1\n",
        ("  # why", "  # '#' in it"),
    ),
}


@pytest.mark.parametrize(
    ("path", "template", "comments"), _AMONG_DECORATORS.values(), ids=_AMONG_DECORATORS.keys()
)
def test_a_comment_among_a_definitions_decorators_or_attributes_is_no_part_of_its_text(
    path: str, template: str, comments: tuple[str, ...]
) -> None:
    """Comments, doc comments included, are no part of a definition's text
    wherever they sit among its leading decorators or attributes: adding,
    editing or removing one drifts nothing -- while the decorators and
    attributes themselves still count."""
    bare = _blobs(path, template.format(c="").encode())
    symbol = max(bare, key=len)
    for comment in comments:
        assert _blobs(path, template.format(c=comment).encode())[symbol] == bare[symbol], comment
    edited = template.replace("@Log()", "@Log(1)").replace("#[inline]", "#[cold]")
    edited = edited.replace("@Component()", "@Component(1)").replace("@Override", "@Deprecated")
    edited = edited.replace("@property", "@cached").replace("@cache", "@lru")
    assert _blobs(path, edited.format(c="").encode())[symbol] != bare[symbol]
