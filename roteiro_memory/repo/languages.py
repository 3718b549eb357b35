"""Which files have symbols, and the key rule for them: one table, no I/O.

A symbol's node key is ``<prefix><path>::<qualname>``, the prefix named by
the language of ``path``, which its suffix decides: ``py:`` for Python (the
key every existing anchor has), ``ts:``, ``js:``, ``go:``, ``rs:`` and
``java:`` for the languages read with tree-sitter.  A key therefore says which
language's rules made its qualified name, and every place that builds a
symbol key, or the prefix of every symbol in one file, asks :func:`language_of`
-- ``--anchor`` parsing, the bare-path filter, the sync, the labels shown.

No command imports this table at start-up: one that names a symbol or
syncs pays for one small module, and loads no parser.
"""

from __future__ import annotations

__all__ = [
    "FILE_PREFIX",
    "KEY_PREFIXES",
    "LANGUAGES",
    "PYTHON",
    "PY_PREFIX",
    "SYMBOLS_EXTRA",
    "SYMBOL_PREFIXES",
    "Language",
    "described",
    "file_key",
    "foreign_prefix",
    "key_parts",
    "language_of",
    "symbol_key",
    "symbol_prefix",
]

FILE_PREFIX = "file:"
PY_PREFIX = "py:"

SYMBOLS_EXTRA = (
    "pip install 'roteiro-memory[symbols]' (from a checkout: pip install -e '.[symbols]')"
)
"""How to install the parsers of every language but Python."""


class Language:
    """One language whose definitions become nodes.

    ``grammars`` maps each suffix to the grammar package and the function in
    it that returns the tree-sitter language; it is empty for Python, which
    the standard library's :mod:`ast` reads.
    """

    __slots__ = ("grammars", "name", "package", "prefix", "suffixes")

    def __init__(
        self,
        name: str,
        prefix: str,
        suffixes: tuple[str, ...],
        package: str = "",
        grammars: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.name = name
        self.prefix = prefix
        self.suffixes = suffixes
        self.package = package
        """The grammar's distribution, as pip names it (empty for Python)."""
        self.grammars = dict(zip(suffixes, grammars, strict=True)) if grammars else {}

    def __repr__(self) -> str:
        return f"Language({self.name!r})"


PYTHON = Language("Python", PY_PREFIX, (".py", ".pyi"))

_TS = ("tree_sitter_typescript", "language_typescript")
_TSX = ("tree_sitter_typescript", "language_tsx")
_JS = ("tree_sitter_javascript", "language")

LANGUAGES: tuple[Language, ...] = (
    PYTHON,
    Language(
        "TypeScript",
        "ts:",
        (".ts", ".tsx", ".mts", ".cts"),
        "tree-sitter-typescript",
        (_TS, _TSX, _TS, _TS),
    ),
    Language(
        "JavaScript",
        "js:",
        (".js", ".jsx", ".mjs", ".cjs"),
        "tree-sitter-javascript",
        (_JS, _JS, _JS, _JS),
    ),
    Language("Go", "go:", (".go",), "tree-sitter-go", (("tree_sitter_go", "language"),)),
    Language("Rust", "rs:", (".rs",), "tree-sitter-rust", (("tree_sitter_rust", "language"),)),
    Language("Java", "java:", (".java",), "tree-sitter-java", (("tree_sitter_java", "language"),)),
)
"""Every language with symbols; a suffix belongs to one language only."""

SYMBOL_PREFIXES: tuple[str, ...] = tuple(language.prefix for language in LANGUAGES)
KEY_PREFIXES: tuple[str, ...] = (FILE_PREFIX, *SYMBOL_PREFIXES)
"""Every prefix of a key the sync writes: a value starting with one is a key."""

_BY_SUFFIX = {suffix: language for language in LANGUAGES for suffix in language.suffixes}


def language_of(path: str) -> Language | None:
    """The language of the file at ``path``, by its suffix; None when its
    definitions are not read (the file is still a node)."""
    dot = path.rfind(".")
    if dot <= path.rfind("/"):
        return None
    return _BY_SUFFIX.get(path[dot:])


def file_key(path: str) -> str:
    """The key of the file at ``path``."""
    return f"{FILE_PREFIX}{path}"


def symbol_key(path: str, qualname: str) -> str:
    """The key of ``qualname`` defined in ``path``, a file of a language in
    :data:`LANGUAGES` (:class:`ValueError` for any other)."""
    return f"{symbol_prefix(path)}{qualname}"


def symbol_prefix(path: str) -> str:
    """What the key of every symbol defined in ``path`` starts with."""
    language = language_of(path)
    if language is None:
        raise ValueError(f"{path!r} is not a file of a language with symbols ({described()})")
    return f"{language.prefix}{path}::"


def key_parts(key: str) -> tuple[str, str | None] | None:
    """What a key the sync makes names: ``(path, None)`` for a file's,
    ``(path, qualname)`` for a symbol's (split at the first ``::``, as
    ``--anchor`` is); None for any other key."""
    if key.startswith(FILE_PREFIX):
        return key[len(FILE_PREFIX) :], None
    for prefix in SYMBOL_PREFIXES:
        if key.startswith(prefix):
            path, separator, qualname = key[len(prefix) :].partition("::")
            return (path, qualname) if separator and path and qualname else None
    return None


def foreign_prefix(key: str) -> tuple[str, str, Language, Language] | None:
    """Why no sync makes the symbol key ``key``: ``(path, qualname, the
    language of path, the language whose prefix it has)`` when its file is of
    a language that keys its symbols with another prefix (``py:a.ts::f``);
    None for any other key.  A path may hold ``::`` itself, so the key is
    not refused while any split at a ``::`` gives a path its prefix fits
    (``ts:a::b.ts::f`` is ``f`` of ``a::b.ts``); one whose path is of no
    language is left alone (``py:tool::f``), other tools being free to
    make such keys."""
    prefix = next((p for p in SYMBOL_PREFIXES if key.startswith(p)), None)
    if prefix is None:
        return None
    own = next(language for language in LANGUAGES if language.prefix == prefix)
    rest = key[len(prefix) :]
    found: tuple[str, str, Language, Language] | None = None
    at = rest.find("::")
    while at >= 0:
        language = language_of(rest[:at])
        if language is own:
            return None
        if language is not None:
            found = (rest[:at], rest[at + 2 :], language, own)
        at = rest.find("::", at + 2)
    return found


def described() -> str:
    """The languages with symbols and their suffixes, for messages."""
    return ", ".join(f"{lang.name} ({', '.join(lang.suffixes)})" for lang in LANGUAGES)
