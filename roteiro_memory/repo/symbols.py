"""The definitions of a file as graph nodes: :func:`file_symbols` for a file
of any language in :mod:`~roteiro_memory.repo.languages`; Python read here
with the standard library's :mod:`ast`, the others with tree-sitter
(:mod:`.treesitter`, loaded only when such a file is read).  Blob ids and the
rule for a name bound twice are :mod:`.binding`'s, shared by every language.

A Python definition's text runs from its first decorator (a decorator changes
behaviour, so it belongs to the definition) to the end of its last statement,
exactly as written but for the comments among its decorators, which are no
part of it (:func:`~roteiro_memory.repo.binding.uncommented`, as in every
language).  Qualified names nest with dots through classes and
functions alike: ``Outer.Inner.method`` and, for a function defined inside
another, ``f.inner`` (no ``<locals>`` segment).  Definitions under
``if``/``try``/``with``/loops count at the level they are bound.  When one name
is bound by several definitions -- a property and its setter, or a conditional
redefinition -- the node's text is all of them in source order, so a change to
any one drifts it.
"""

from __future__ import annotations

from collections.abc import Iterator

from roteiro_memory.errors import SourceTooLarge, SymbolError, SymbolsUnavailable
from roteiro_memory.repo.binding import Definition, bind, blob_id, uncommented
from roteiro_memory.repo.languages import PYTHON, described, language_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    import ast
    from typing import TypeAlias

__all__ = [
    "MAX_PARSED_BYTES",
    "PYTHON_SUFFIXES",
    "Definition",
    "SourceTooLarge",
    "SymbolError",
    "SymbolsUnavailable",
    "blob_id",
    "definitions",
    "file_symbols",
    "is_python_path",
]

PYTHON_SUFFIXES = PYTHON.suffixes
"""Files whose definitions :mod:`ast` reads."""

MAX_PARSED_BYTES = 1024 * 1024
"""The largest source whose definitions are read: 1 MiB.  A hand-written
source file is rarely a tenth of it; what is larger is nearly always
generated or minified (a bundle, a parser's tables, bindings), where parsing
costs about a second a MiB and an anchor on one definition is of no use --
a 25 MB minified script took 35 s to sync.  Such a file keeps its file
node and is treated as one that does not parse.  Measured on the bytes
parsed, a working file's clean form (line endings as git stores them,
:func:`~roteiro_memory.repo.graph.working_source`), by sync and ``add
--anchor`` alike."""

_DefNode: TypeAlias = "ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef"


def is_python_path(path: str) -> bool:
    """Whether ``path`` names a Python source file by its suffix."""
    return language_of(path) is PYTHON


def _utf8_lines(source: bytes) -> list[bytes]:
    """The source's lines as UTF-8, split where the tokenizer splits them
    (``\\n``, ``\\r\\n`` or ``\\r``, which is what ``bytes.splitlines`` does).

    ``ast`` column offsets count UTF-8 bytes of the decoded line, so a file in
    another encoding is decoded (by its coding cookie) and re-encoded first.
    """
    import codecs
    import io
    import tokenize

    head = source[: source.find(b"\n", source.find(b"\n") + 1) + 1 or len(source)]
    if b"coding" not in head:
        data = source[3:] if source.startswith(codecs.BOM_UTF8) else source
        return data.splitlines(keepends=True)
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        text = source.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as error:
        raise SymbolError(f"cannot be decoded ({error})") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.encode("utf-8").splitlines(keepends=True)


def _text(lines: list[bytes], node: _DefNode) -> bytes:
    first = node.decorator_list[0] if node.decorator_list else node
    start_line, start_col = first.lineno, first.col_offset
    end_line = node.end_lineno if node.end_lineno is not None else node.lineno
    end_col = node.end_col_offset if node.end_col_offset is not None else len(lines[end_line - 1])
    if start_line == end_line:
        return lines[start_line - 1][start_col:end_col]
    parts = [lines[start_line - 1][start_col:]]
    parts.extend(lines[start_line : end_line - 1])
    parts.append(lines[end_line - 1][:end_col])
    text = b"".join(parts)
    if node.decorator_list:  # on lines of their own, before the def's
        head = len(b"".join(parts[: node.lineno - start_line]))
        head += len(lines[node.lineno - 1][: node.col_offset])
        comments = _comments(text[:head])
        if comments:
            return uncommented(text, 0, len(text), comments)
    return text


def _comments(head: bytes) -> list[tuple[int, int]]:
    """The byte ranges of the comments in ``head``, a definition's
    decorators up to its ``def`` or ``class``, as Python's tokenizer finds
    them (a ``#`` in a string is none); none when it cannot read them."""
    if b"#" not in head:
        return []
    import io
    import tokenize

    text = head.decode("utf-8")
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line.encode("utf-8")))
    rows = text.splitlines(keepends=True)
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                row, col = token.start
                at = starts[row - 1] + len(rows[row - 1][:col].encode("utf-8"))
                found.append((at, at + len(token.string.encode("utf-8"))))
    except (tokenize.TokenError, SyntaxError):
        return []
    return found


def _walk(body: list[ast.stmt], prefix: str, in_class: bool) -> Iterator[tuple[str, str, _DefNode]]:
    """Every definition bound in ``body`` (and in blocks nested in it), depth first."""
    import ast  # already loaded by the caller; bound here for the checks below

    for statement in body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            qualname = f"{prefix}{statement.name}"
            if isinstance(statement, ast.ClassDef):
                kind = "class"
            else:
                kind = "method" if in_class else "function"
            yield qualname, kind, statement
            yield from _walk(statement.body, f"{qualname}.", isinstance(statement, ast.ClassDef))
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(statement, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield from _walk(block, prefix, in_class)
        for handler in getattr(statement, "handlers", ()):
            yield from _walk(handler.body, prefix, in_class)
        for case in getattr(statement, "cases", ()):
            yield from _walk(case.body, prefix, in_class)


def definitions(source: bytes, object_format: str = "sha1") -> list[Definition]:
    """Every function, class and method in ``source``, sorted by qualname.

    Raises :class:`SymbolError` when the source does not parse.
    """
    import ast

    try:
        tree = ast.parse(source, type_comments=False)
    except SyntaxError as error:
        # Some faults (a NUL byte, an unknown encoding) have no line, or line 0.
        where = f"line {error.lineno}: " if error.lineno else ""
        raise SymbolError(f"{where}{error.msg}") from None
    except ValueError as error:
        raise SymbolError(str(error) or type(error).__name__) from None
    except (RecursionError, MemoryError) as error:
        # CPython's parser gives up on deep nesting (an expression thousands
        # of operators deep) with one of these, never a SyntaxError.  Statements
        # cannot nest past the tokenizer's 100 indents, so the walk below,
        # which recurses per block, never goes deep.
        raise SymbolError(
            f"nested too deeply for Python's parser ({type(error).__name__})"
        ) from None
    lines = _utf8_lines(source)
    found = ((name, kind, _text(lines, node)) for name, kind, node in _walk(tree.body, "", False))
    return bind(found, object_format)


def file_symbols(path: str, source: bytes, object_format: str = "sha1") -> list[Definition]:
    """Every definition in ``source``, the content of the file at ``path``,
    read by the rules of the file's language, sorted by qualname.

    Raises :class:`SymbolError` when the source does not parse or ``path`` is
    of no language with symbols, :class:`SourceTooLarge` when it is over
    :data:`MAX_PARSED_BYTES` (not parsed at all), and
    :class:`SymbolsUnavailable` when the language's parser is not installed.
    """
    language = language_of(path)
    if language is None:
        raise SymbolError(f"symbols are read from {described()} files only")
    if len(source) > MAX_PARSED_BYTES:
        raise SourceTooLarge(
            f"is {len(source):,} bytes, over the {_size(MAX_PARSED_BYTES)} whose symbols "
            "are read (what is larger is taken for generated or minified code)"
        )
    if language is PYTHON:
        return definitions(source, object_format)
    from roteiro_memory.repo import treesitter

    return treesitter.definitions(language, path, source, object_format)


def _size(limit: int) -> str:
    """``limit`` as a message gives it: in MiB when it is whole MiB."""
    mib = 1024 * 1024
    return f"{limit // mib} MiB" if limit % mib == 0 else f"{limit:,} bytes"
