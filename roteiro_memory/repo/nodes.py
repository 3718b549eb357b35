"""A tree's files as graph nodes: one per file, and one per definition in a
file of a language with symbols (:mod:`.languages`), parsed only where the
file's blob differs from the one the store holds.

A file of a language whose parser is not installed (the ``symbols`` extra)
keeps its file node, marked :data:`UNREAD`, and has no symbols: anchors into
it name the whole file.  The mark is what makes a later sync read it once
the parser is there, though its blob has not changed; and it is what the
one-line notice about such files is given once by: by the sync that first
meets files of that language unread, not by every sync after it.

A file that does not parse, or is too large to be parsed
(:data:`~roteiro_memory.repo.symbols.MAX_PARSED_BYTES`), keeps its file
node and the symbols it had, with no blob: anchors on them read back
unverifiable, not vanished, until it parses again.

Whether a symbol is in a file whose language's parser is missing here
cannot be told, whatever the stored graph held at its path: so every
symbol of it an anchor names (``anchored``) has a node with no blob too,
and reads unverifiable -- at a revision whose file the synced graph does
not hold at that path (renamed or removed since), or in a file never read
here -- never vanished.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterable, Mapping, Sequence

from roteiro_memory.errors import SourceTooLarge, SymbolError
from roteiro_memory.repo.languages import (
    FILE_PREFIX,
    PYTHON,
    SYMBOL_PREFIXES,
    SYMBOLS_EXTRA,
    Language,
    file_key,
    key_parts,
    language_of,
    symbol_key,
    symbol_prefix,
)
from roteiro_memory.repo.symbols import file_symbols
from roteiro_memory.results import GraphNode
from roteiro_memory.semantics import is_utf8
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple

__all__ = [
    "FILE",
    "UNKNOWN",
    "UNREAD",
    "Built",
    "FileEntry",
    "Stored",
    "build",
    "named_in",
    "shown_path",
    "source_language",
    "takes_stored",
]

GITLINK = "160000"
SYMLINK = "120000"
REGULAR = "100644"
EXECUTABLE = "100755"

FILE = "file"
"""The kind of a file node."""
UNREAD = "file (symbols not read)"
"""The kind of the node of a file whose language's parser is not installed."""
UNKNOWN = "symbol (not read)"
"""The kind of the node of a symbol an anchor names in a file whose symbols
are not known here: whether it is there cannot be told."""

Progress = Callable[[int, int], None]
"""Called with (done, total) while a sync reads and parses files."""

if TYPE_CHECKING:

    class FileEntry(NamedTuple):
        path: str
        mode: str
        blob: str

else:
    # collections.namedtuple, not typing.NamedTuple: the same class, without
    # importing typing at start-up.
    FileEntry = namedtuple("FileEntry", ["path", "mode", "blob"])
FileEntry.__doc__ = """One file of a graph: its path from the top level, mode and blob id.

A named tuple rather than a value class: a sync builds one per file, and
tuples are several times cheaper to make."""


def shown_path(path: str) -> str:
    """``path`` as text UTF-8 can carry, for a message or a ``--json`` field:
    a name that is not UTF-8 (read from git with surrogate escapes) with each
    byte UTF-8 cannot take as U+FFFD, since a lone surrogate is no valid JSON
    string and no terminal shows it."""
    if path.isascii() or is_utf8(path):
        return path
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def source_language(entry: FileEntry) -> Language | None:
    """The language whose symbols are read from ``entry``: its path's, when
    it is a regular file, executable or not.  A symbolic link has none, what
    it points to never being read (it may lie outside the repository, be a
    FIFO or a device, or not be there at all), and neither has a submodule."""
    return language_of(entry.path) if entry.mode in (REGULAR, EXECUTABLE) else None


def _file_node(entry: FileEntry, stored: Stored, kind: str = FILE) -> GraphNode:
    """The node of ``entry``: the stored one when it is already exactly
    right (an unchanged tree costs no new objects), else a new one."""
    old = stored.nodes.get(FILE_PREFIX + entry.path)
    if old is not None and (old.blob, old.path, old.kind) == (entry.blob, entry.path, kind):
        return old
    return GraphNode(
        file_key(entry.path), kind, entry.path.rsplit("/", 1)[-1], entry.path, entry.blob
    )


def _symbol_nodes(path: str, source: bytes, object_format: str) -> list[GraphNode]:
    return [
        GraphNode(symbol_key(path, d.qualname), d.kind, d.qualname, path, d.blob)
        for d in file_symbols(path, source, object_format)
    ]


def _unverifiable(previous: Sequence[GraphNode]) -> list[GraphNode]:
    """The symbols a file had, kept with no blob: it no longer parses (or can
    no longer be parsed here), so anchors on them read back unverifiable
    rather than valid or vanished."""
    return [GraphNode(n.key, n.kind, n.name, n.path, None) for n in previous]


def _readable(language: Language, path: str) -> bool:
    """Whether this process can parse ``path``: always for Python, else when
    its grammar is installed (which loads tree-sitter)."""
    if language is PYTHON:
        return True
    from roteiro_memory.repo import treesitter

    return treesitter.available(language, path)


@valueclass(frozen=False)
class Stored:
    """A graph as a store holds it, indexed by file."""

    symbols: dict[str, list[GraphNode]]
    nodes: dict[str, GraphNode]
    unread: set[str]
    """The languages some file of which is :data:`UNREAD`."""

    @classmethod
    def of(cls, nodes: Iterable[GraphNode]) -> Stored:
        symbols: dict[str, list[GraphNode]] = {}
        by_key: dict[str, GraphNode] = {}
        unread: set[str] = set()
        for node in nodes:
            by_key[node.key] = node
            if node.path is None:
                continue
            if node.key.startswith(SYMBOL_PREFIXES):
                symbols.setdefault(node.path, []).append(node)
            elif node.kind == UNREAD:
                language = language_of(node.path)
                unread.add(language.name if language is not None else "")
        return cls(symbols, by_key, unread)


@valueclass(frozen=False)
class Built:
    """A tree's nodes, and what building them found."""

    nodes: list[GraphNode]
    parsed: list[str]
    """The files parsed: those of a language with symbols whose blob changed."""
    problems: list[tuple[str, str]]
    """``(path, problem)`` for each file left out or that does not parse."""
    unread: set[str]
    """The languages some file of which is :data:`UNREAD` in these nodes."""
    notice: str | None = None
    """One line about the files whose symbols could not be read, when this
    is the first sync to meet files of their language unread."""


def _kept(entry: FileEntry, language: Language, old: GraphNode) -> bool:
    """Whether source file ``entry``, of ``language``, whose node was
    ``old``, keeps its nodes as they were: its blob is the same, its symbols
    read (or no parser to read them yet)."""
    return old.blob == entry.blob and (old.kind != UNREAD or not _readable(language, entry.path))


def takes_stored(entry: FileEntry, stored: Stored) -> bool:
    """Whether :func:`build` takes the nodes of ``entry`` from ``stored`` as
    they are, its own and its symbols (:func:`_kept`)."""
    language = source_language(entry)
    old = stored.nodes.get(FILE_PREFIX + entry.path)
    return language is not None and old is not None and _kept(entry, language, old)


def named_in(paths: set[str], have: Iterable[GraphNode], keys: Iterable[str]) -> list[GraphNode]:
    """A node with no blob for each of ``keys`` naming a symbol of a file of
    ``paths`` (whose parser is missing here) that ``have`` has no node of:
    whether that symbol is there cannot be told."""
    held = {node.key for node in have}
    out: dict[str, GraphNode] = {}
    for key in keys:
        parts = key_parts(key)
        if key in held or parts is None or parts[0] not in paths or parts[1] is None:
            continue
        if key.startswith(symbol_prefix(parts[0])):
            out[key] = GraphNode(key, UNKNOWN, parts[1], parts[0], None)
    return list(out.values())


def build(
    files: Mapping[str, FileEntry],
    stored: Stored,
    read: Callable[[Sequence[str]], Mapping[str, bytes]],
    object_format: str,
    progress: Progress | None,
    anchored: Callable[[], Iterable[str]] | None = None,
) -> Built:
    """The nodes of ``files``: symbols reused from ``stored`` where a file's
    blob is unchanged, parsed from ``read`` where it is not.  ``anchored``
    gives the keys anchors name, asked only when some file's parser is
    missing here (:func:`named_in`)."""
    problems: list[tuple[str, str]] = []
    nodes: list[GraphNode] = []
    fresh: list[str] = []
    unread: dict[str, list[str]] = {}
    left: set[str] = set()
    unknown: set[str] = set()  # files whose parser is missing here
    for path, entry in files.items():
        if not (path.isascii() or is_utf8(path)):
            shown = shown_path(path)
            problems.append((shown, "has a name that is not UTF-8, so it has no node"))
            continue
        language = source_language(entry)
        if language is None:
            nodes.append(_file_node(entry, stored))
            continue
        old = stored.nodes.get(FILE_PREFIX + path)
        if old is not None and _kept(entry, language, old):
            nodes.append(_file_node(entry, stored, str(old.kind)))
            nodes.extend(stored.symbols.get(path, ()))
            if old.kind == UNREAD:
                left.add(language.name)
                unknown.add(path)
        elif _readable(language, path):
            nodes.append(_file_node(entry, stored))
            fresh.append(path)
        else:
            nodes.append(_file_node(entry, stored, UNREAD))
            nodes.extend(_unverifiable(stored.symbols.get(path, ())))
            unread.setdefault(language.name, []).append(path)
            left.add(language.name)
            unknown.add(path)
    batch = 256
    for start in range(0, len(fresh), batch):
        chunk = fresh[start : start + batch]
        sources = read(chunk)
        for path in chunk:
            try:
                nodes.extend(_symbol_nodes(path, sources[path], object_format))
            except SymbolError as error:
                if isinstance(error, SourceTooLarge):
                    why = f"{error}, so it is not parsed; its file node is kept and anchors on "
                    why += "its symbols read unverifiable until it is smaller"
                else:
                    why = f"does not parse ({error}); its file node is kept and anchors on "
                    why += "its symbols read unverifiable until it does"
                problems.append((path, why))
                nodes.extend(_unverifiable(stored.symbols.get(path, ())))
        if progress is not None:
            progress(min(start + batch, len(fresh)), len(fresh))
    if unknown and anchored is not None:
        nodes.extend(named_in(unknown, nodes, anchored()))
    return Built(nodes, fresh, problems, left, _notice(unread, stored))


def _notice(unread: Mapping[str, list[str]], stored: Stored) -> str | None:
    """The line saying which files' symbols are not read, or None when every
    such language was already unread in the stored graph (said before)."""
    if not unread or set(unread) <= stored.unread:
        return None
    count = sum(len(paths) for paths in unread.values())
    each = ", ".join(f"{name} {len(paths):,}" for name, paths in sorted(unread.items()))
    return (
        f"the symbols of {count:,} {'file' if count == 1 else 'files'} are not read "
        f"({each}): their parsers are not installed or do not load, so anchors into them "
        f"name whole files; {SYMBOLS_EXTRA}"
    )
