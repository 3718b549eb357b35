"""Generated repository histories, with the ground truth of every anchor.

A :class:`Module` is a model of one source file -- functions, and types with
methods -- that renders itself in any of six languages and knows, for each
qualified name it defines, the exact text of each definition binding it.
:func:`step` edits, renames, deletes, adds and moves definitions, edits the
file outside any definition, breaks and mends its syntax, and renames the
file.  The verdict an anchor must read is decided from those texts alone
(:func:`verdict`): no parser and no store is asked, so a store whose
verdicts agree with it on every commit follows the code as documented.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

Truth = dict[str, tuple[str, ...]]
"""Qualified name (``""`` for the file itself) -> the texts binding it."""


@dataclass
class Method:
    name: str
    version: int = 0


@dataclass
class Item:
    """A function (``methods`` None) or a type and its methods."""

    name: str
    version: int = 0
    methods: list[Method] | None = None


@dataclass
class Module:
    language: str
    path: str
    items: list[Item] = field(default_factory=list)
    header: int = 0
    broken: bool = False
    serial: int = 0

    def fresh(self, stem: str) -> str:
        self.serial += 1
        return f"{stem}{self.serial}"

    def render(self) -> tuple[str, Truth]:
        """The file's text, and the texts of each name it defines (``""``
        the file's whole text)."""
        source, truth = RENDERERS[self.language](self)
        return source, {"": (source,), **truth}


def _members(
    owner: str, methods: list[Method], render: Callable[[Method], str]
) -> tuple[list[str], Truth]:
    """Each method's text, as written inside its type, and each one's truth."""
    texts = [render(m) for m in methods]
    return texts, {f"{owner}.{m.name}": (t.lstrip(),) for m, t in zip(methods, texts, strict=True)}


def _join(parts: list[tuple[str, Truth]]) -> tuple[list[str], Truth]:
    texts, truth = [], {}
    for text, names in parts:
        texts.append(text)
        truth.update(names)
    return texts, truth


def _python(module: Module) -> tuple[str, Truth]:
    def item(it: Item) -> tuple[str, Truth]:
        if it.methods is None:
            text = f"def {it.name}(a):\n    return a + {it.version}"
            return text, {it.name: (text,)}
        members, truth = _members(
            it.name,
            it.methods,
            lambda m: f"    def {m.name}(self, x):\n        return x * {m.version}",
        )
        text = f"class {it.name}:\n" + ("\n\n".join(members) or "    pass")
        return text, {it.name: (text,), **truth}

    texts, truth = _join([item(it) for it in module.items])
    source = f"# header {module.header}\n\n\n" + "\n\n\n".join(texts) + "\n"
    return source + ("def broken(:\n" if module.broken else ""), truth


def _ecmascript(typed: bool) -> object:
    num = ": number" if typed else ""

    def render(module: Module) -> tuple[str, Truth]:
        def item(it: Item) -> tuple[str, Truth]:
            if it.methods is None:
                text = f"export function {it.name}(a{num}){num} {{\n  return a + {it.version};\n}}"
                return text, {it.name: (text,)}
            members, truth = _members(
                it.name,
                it.methods,
                lambda m: f"  {m.name}(x{num}){num} {{\n    return x * {m.version};\n  }}",
            )
            text = f"export class {it.name} {{\n" + "\n\n".join(members) + "\n}"
            return text, {it.name: (text,), **truth}

        texts, truth = _join([item(it) for it in module.items])
        source = f"// header {module.header}\n\n" + "\n\n".join(texts) + "\n"
        return source + ("function broken( {\n" if module.broken else ""), truth

    return render


def _go(module: Module) -> tuple[str, Truth]:
    def item(it: Item) -> tuple[str, Truth]:
        if it.methods is None:
            text = f"func {it.name}(a int) int {{\n\treturn a + {it.version}\n}}"
            return text, {it.name: (text,)}
        spec = f"{it.name} struct {{\n\tn int\n}}"
        members, truth = _members(
            it.name,
            it.methods,
            lambda m: f"func (t *{it.name}) {m.name}(x int) int {{\n\treturn x * {m.version}\n}}",
        )
        return "\n\n".join([f"type {spec}", *members]), {it.name: (spec,), **truth}

    texts, truth = _join([item(it) for it in module.items])
    source = f"// header {module.header}\npackage sample\n\n" + "\n\n".join(texts) + "\n"
    return source + ("func broken( {\n" if module.broken else ""), truth


def _rust(module: Module) -> tuple[str, Truth]:
    def item(it: Item) -> tuple[str, Truth]:
        if it.methods is None:
            text = f"pub fn {it.name}(a: i64) -> i64 {{\n    a + {it.version}\n}}"
            return text, {it.name: (text,)}
        struct = f"pub struct {it.name} {{\n    n: i64,\n}}"
        if not it.methods:
            return struct, {it.name: (struct,)}
        members, truth = _members(
            it.name,
            it.methods,
            lambda m: (
                f"    pub fn {m.name}(&self, x: i64) -> i64 {{\n        x * {m.version}\n    }}"
            ),
        )
        block = f"impl {it.name} {{\n" + "\n\n".join(members) + "\n}"
        # ``impl T`` binds T as the struct does: its node covers both.
        return f"{struct}\n\n{block}", {it.name: (struct, block), **truth}

    texts, truth = _join([item(it) for it in module.items])
    source = f"// header {module.header}\n\n" + "\n\n".join(texts) + "\n"
    return source + ("fn broken( {\n" if module.broken else ""), truth


def _java(module: Module) -> tuple[str, Truth]:
    def item(it: Item) -> tuple[str, Truth]:
        if it.methods is None:
            text = f"    static int {it.name}(int a) {{\n        return a + {it.version};\n    }}"
            return text, {f"Sample.{it.name}": (text.lstrip(),)}
        members, truth = _members(
            f"Sample.{it.name}",
            it.methods,
            lambda m: (
                f"        int {m.name}(int x) {{\n            return x * {m.version};\n        }}"
            ),
        )
        text = f"    static class {it.name} {{\n" + "\n\n".join(members) + "\n    }"
        return text, {f"Sample.{it.name}": (text.lstrip(),), **truth}

    texts, truth = _join([item(it) for it in module.items])
    body = "public class Sample {\n" + "\n\n".join(texts) + "\n}"
    source = f"// header {module.header}\npackage sample;\n\n{body}\n"
    return source + ("class {\n" if module.broken else ""), {"Sample": (body,), **truth}


RENDERERS = {
    "Python": _python,
    "TypeScript": _ecmascript(True),
    "JavaScript": _ecmascript(False),
    "Go": _go,
    "Rust": _rust,
    "Java": _java,
}
SUFFIXES = {
    "Python": ".py",
    "TypeScript": ".ts",
    "JavaScript": ".js",
    "Go": ".go",
    "Rust": ".rs",
    "Java": ".java",
}


def start(language: str, rng: random.Random) -> Module:
    module = Module(language, f"src/sample{SUFFIXES[language]}")
    for _ in range(2):
        module.items.append(Item(module.fresh("f")))
    module.items.append(Item(module.fresh("T"), methods=[Method(module.fresh("m")) for _ in "ab"]))
    rng.shuffle(module.items)
    return module


def _functions(module: Module) -> list[Item | Method]:
    found: list[Item | Method] = []
    for it in module.items:
        found.extend([it] if it.methods is None else it.methods)
    return found


STEPS = ("edit", "rename", "delete", "add", "move", "header", "break", "mv")
"""Every kind of change :func:`step` makes."""


def plan(rng: random.Random) -> list[str]:
    """A history's changes: each kind twice (the file renamed once), in an
    order of ``rng``'s."""
    kinds = [kind for kind in STEPS * 2 if kind != "mv"] + ["mv"]
    rng.shuffle(kinds)
    return kinds


def step(module: Module, kind: str, rng: random.Random) -> str:
    """Make the change ``kind`` names (a broken file is mended first, and a
    change that has nothing to act on edits outside any definition); what
    was done, for messages."""
    if module.broken:
        module.broken = False
        return "mend the syntax"
    types = [it for it in module.items if it.methods is not None]
    targets = _functions(module)
    if kind == "edit" and targets:
        target = rng.choice(targets)
        target.version += 1
        return f"edit {target.name}"
    if kind == "rename" and module.items:
        target = rng.choice([*module.items, *targets])
        old, target.name = target.name, module.fresh(target.name[0])
        return f"rename {old} to {target.name}"
    if kind == "delete" and len(targets) > 1:
        target = rng.choice(targets)
        module.items = [it for it in module.items if it is not target]
        for it in module.items:
            if it.methods is not None:
                it.methods = [m for m in it.methods if m is not target]
        return f"delete {target.name}"
    if kind == "add":
        if types and rng.random() < 0.5:
            owner = rng.choice(types)
            assert owner.methods is not None
            owner.methods.append(Method(module.fresh("m")))
            return f"add a method to {owner.name}"
        module.items.insert(rng.randrange(len(module.items) + 1), Item(module.fresh("f")))
        return "add a function"
    if kind == "move" and len(module.items) > 1:
        a, b = rng.sample(range(len(module.items)), 2)
        module.items[a], module.items[b] = module.items[b], module.items[a]
        return "move two definitions"
    if kind == "break":
        module.broken = True
        return "break the syntax"
    if kind == "mv" and module.path.startswith("src/"):
        module.path = "lib/" + module.path.removeprefix("src/")
        return f"git mv to {module.path}"
    module.header += 1
    return "edit outside any definition"


def joined(texts: tuple[str, ...]) -> str:
    return "\0".join(texts)


def verdict(captured: str, qualname: str, now: Truth, parsed: Truth | None) -> str:
    """The state an anchor on ``qualname`` (``""``: the file) must read.

    ``captured`` is its text when the lesson was written (:func:`joined`),
    ``now`` the texts of the file at its path now (empty when no file is
    there), and ``parsed`` the texts as last parsed when the file does not
    parse now (else None): its symbols then are those, with no blob.
    """
    if parsed is not None and qualname:
        return "unverifiable" if qualname in parsed else "vanished"
    if qualname not in now:
        return "vanished"
    return "valid" if joined(now[qualname]) == captured else "drifted"
