"""Definitions of the languages read with tree-sitter (the ``symbols`` extra).

Loaded only when a file of such a language must be parsed, and it loads one
grammar at a time, the first time a file of that grammar is read.  What a
definition is in each language is :mod:`.grammars`'s; here the tree is
walked by those rules and each definition's text cut from the source: the
bytes of its syntax node, from the first decorator or attribute that belongs
to it, exactly as written but for the comments among those, which
:func:`~roteiro_memory.repo.binding.uncommented` leaves out (:mod:`.binding`
hashes the rest).

A tree with a syntax error is a :class:`~roteiro_memory.errors.SymbolError`
naming the line of the first error, as a Python file that does not parse is:
tree-sitter recovers from errors, but the definitions it recovers around one
are a guess, and an anchor must not read valid or vanished from a guess.
"""

from __future__ import annotations

from collections.abc import Iterator

from roteiro_memory.errors import SymbolError, SymbolsUnavailable
from roteiro_memory.repo.binding import Definition, bind, uncommented
from roteiro_memory.repo.grammars import RULES, TYPE_KINDS, Rules
from roteiro_memory.repo.languages import SYMBOLS_EXTRA, Language

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tree_sitter import Node, Parser

__all__ = ["available", "definitions"]

_COMMENTS = frozenset({"comment", "line_comment", "block_comment"})

_parsers: dict[tuple[str, str], Parser | SymbolsUnavailable] = {}
"""Each grammar's parser once made, or why none can be: a missing package is
looked for once per process, not once per file."""


def _parser(language: Language, path: str) -> Parser:
    suffix = path[path.rfind(".") :]
    grammar = language.grammars[suffix]
    made = _parsers.get(grammar)
    if made is None:
        made = _parsers[grammar] = _load(language, grammar)
    if isinstance(made, SymbolsUnavailable):
        raise made
    return made


def _load(language: Language, grammar: tuple[str, str]) -> Parser | SymbolsUnavailable:
    import importlib

    module, function = grammar
    try:
        from tree_sitter import Language as Grammar
        from tree_sitter import Parser

        loaded = importlib.import_module(module)
    except ImportError as error:
        missing = error.name or module
        return SymbolsUnavailable(
            f"{language.name} symbols are read with tree-sitter and {language.package}, "
            f"and {missing} is not installed; {SYMBOLS_EXTRA}"
        )
    try:
        return Parser(Grammar(getattr(loaded, function)()))
    except (AttributeError, TypeError, ValueError) as error:
        # A grammar built for another tree-sitter: "Incompatible Language version".
        return SymbolsUnavailable(
            f"{language.name} symbols are read with tree-sitter and {language.package}, "
            f"and the installed {language.package} cannot be loaded by the installed "
            f"tree-sitter ({error}); install versions that match: {SYMBOLS_EXTRA}"
        )


def available(language: Language, path: str) -> bool:
    """Whether the parser for ``path``, a file of ``language``, is installed."""
    try:
        _parser(language, path)
    except SymbolsUnavailable:
        return False
    return True


def definitions(
    language: Language, path: str, source: bytes, object_format: str = "sha1"
) -> list[Definition]:
    """Every definition in ``source`` (the file at ``path``, of ``language``),
    sorted by qualname.

    Raises :class:`SymbolsUnavailable` when the parser is not installed and
    :class:`SymbolError` when the source has a syntax error.
    """
    tree = _parser(language, path).parse(source)
    root = tree.root_node
    if root.has_error:
        raise SymbolError(_first_error(root))
    found = (
        (
            qualname,
            kind,
            uncommented(source, start, end, comments) if comments else source[start:end],
        )
        for qualname, kind, start, end, comments in _walk(root, RULES[language.name])
    )
    return bind(found, object_format)


def _walk(
    root: Node, rules: Rules
) -> Iterator[tuple[str, str, int, int, tuple[tuple[int, int], ...]]]:
    """``(qualname, kind, start, end, comments)`` of every definition bound
    in ``root``, depth first in source order: ``comments`` are those among
    its decorators or attributes, no part of its text.

    Iterative, with a stack of the child lists being walked, so a file nested
    thousands of levels deep (generated code, or one planted to crash a sync)
    is walked as any other: a recursion per level would exceed Python's
    limit.  Each entry holds the next child to walk, the prefix of the names
    bound there, the kind of the definition it is in, and whether it is that
    definition's own node, whose :attr:`Rules.values` are walked too."""
    stack: list[tuple[list[Node], int, str, str, bool]] = [(root.named_children, 0, "", "", False)]
    while stack:
        children, at, prefix, outer, own = stack.pop()
        if at == len(children):
            continue
        stack.append((children, at + 1, prefix, outer, own))
        child = children[at]
        named = rules.named(child)
        if named is None or not named[0]:
            if child.type in rules.bodies or (own and child.type in rules.values):
                stack.append((child.named_children, 0, prefix, outer, False))
            continue
        name, kind = named
        if kind == "function" and outer in TYPE_KINDS:
            kind = "method"
        qualname = f"{prefix}{name}"
        start, comments = _start(children, at, rules)
        yield qualname, kind, start, child.end_byte, comments
        stack.append((child.named_children, 0, f"{qualname}.", kind, True))


def _start(siblings: list[Node], at: int, rules: Rules) -> tuple[int, tuple[tuple[int, int], ...]]:
    """Where the text of the definition ``siblings[at]`` starts -- at the
    first of the decorators or attributes right before it (comments between
    them allowed) -- and the comments among those, before it or at the head
    of its own node (:func:`_head_comments`), which are no part of it.
    Read from the list of named siblings the walk holds, not asked of the
    node: tree-sitter finds a node's sibling through its parent, from the
    root down, which costs a step per level of nesting."""
    node = siblings[at]
    start = node.start_byte
    between: list[tuple[int, int]] = []
    for index in range(at - 1, -1, -1):
        before = siblings[index]
        if before.type in rules.leading:
            start = before.start_byte
        elif before.type in _COMMENTS:
            between.append((before.start_byte, before.end_byte))
        else:
            break
    comments = tuple(c for c in reversed(between) if c[0] > start)
    return start, comments + _head_comments(node, rules)


def _head_comments(node: Node, rules: Rules) -> tuple[tuple[int, int], ...]:
    """The comments among the decorators, attributes or modifiers a
    definition's own node begins with (TypeScript's ``@D() /* c */ class``,
    Java's ``@Override // c`` in its ``modifiers``), and in those."""
    first = node.child(0)
    if first is None or first.type not in rules.leading:
        return ()
    found = []
    for child in node.children:
        if child.type in _COMMENTS:
            found.append((child.start_byte, child.end_byte))
        elif child.type in rules.leading:
            found += [(c.start_byte, c.end_byte) for c in child.children if c.type in _COMMENTS]
        else:
            break
    return tuple(found)


def _first_error(root: Node) -> str:
    """``line N: ...`` for the first error in the tree, found by following
    the children that hold one."""
    node = root
    while not (node.is_error or node.is_missing):
        following = next((child for child in node.children if child.has_error), None)
        if following is None:
            break
        node = following
    line = node.start_point[0] + 1
    if node.is_missing:
        return f"line {line}: expected {node.type!r}"
    return f"line {line}: syntax error"
