"""What an anchor names -- a path, ``path::qualname``, or a raw node key --
and how the anchors a read names filter it.

A path becomes ``file:<path>`` and ``path::qualname`` becomes
``<prefix><path>::<qualname>``, the prefix the path's language's
(``py:`` for Python; :mod:`roteiro_memory.repo.languages`).  A path is read
from the repository's top level on every surface -- the command line, the
MCP tools, the hooks -- whichever folder the command runs in, because that is
how every anchor is shown; an absolute path inside the repository is taken
too.  A relative path that names nothing from the top level but a file from
the current folder is refused, naming its form from the top level, and so is
a path that names a folder: one ending in ``/`` (or ``/.``, ``/..``), or one
that is a folder of the working tree.  A path that names nothing is taken by
a read, as a record may be about a file since deleted.  A value that already
starts with a key prefix (``file:``, ``py:``, ``ts:``..., or any
other ``scheme:`` that is not an existing path) is used as it is; a write
refuses one only when it is a symbol key with another language's prefix than
its file's (``py:a.ts::f``).  A file whose name holds ``::`` cannot be named
as a path, which ends at the first ``::``; a refusal that meets one names
its raw key.

Refusals name the input as the surface does (``what``: ``--anchor`` on the
command line, ``argument 'anchor'`` in a tool call).
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection, Iterable
from pathlib import Path

from roteiro_memory.errors import (
    EXCERPT_CHARS,
    AnchorError,
    SourceTooLarge,
    SymbolError,
    SymbolsUnavailable,
    excerpt,
)
from roteiro_memory.repo.languages import FILE_PREFIX, KEY_PREFIXES, PY_PREFIX
from roteiro_memory.semantics import AnchorFilter, is_utf8, strip_white_space
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.repo.graph import Repo

__all__ = [
    "FILE_PREFIX",
    "KEY_PREFIXES",
    "PY_PREFIX",
    "AnchorError",
    "AnchorSpec",
    "anchor_filter",
    "anchor_label",
    "names_a_path",
    "parse_anchor",
    "verify_anchor",
]

_NAME_MAX = 255
"""The longest file name, in bytes, on the systems git runs on."""

_LS_FILES = ("git", "--literal-pathspecs")
_LISTED = ("--cached", "--others", "--exclude-standard")
"""What the graph holds: tracked files, and untracked ones not ignored."""

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9_.+-]*:")


@valueclass
class AnchorSpec:
    """An ``--anchor`` resolved to a node key."""

    key: str
    path: str | None
    """The repository path it names (None for a raw key)."""
    qualname: str | None
    """The definition it names inside ``path``, if any."""

    @property
    def is_raw(self) -> bool:
        return self.path is None


def _inside(full: str, root: str) -> str | None:
    """``full`` as a path from ``root``, or None when it is not below it."""
    relative = os.path.relpath(full, root)
    if relative == "." or relative == ".." or relative.startswith(".." + os.sep):
        return None
    return relative


_AN_ANCHOR_IS = (
    "an anchor is a file (tracked, or untracked and not ignored) or PATH::QUALNAME, a symbol "
    "in one: give a file's path"
)


def _is_folder(full: str) -> bool:
    """Whether ``full`` is a folder itself, not a symbolic link to one (which
    git holds as a file, and an anchor may name)."""
    return os.path.isdir(full) and not os.path.islink(full)


def _repo_path(text: str, repo: Repo | None, spec: str, what: str, write: bool = False) -> str:
    """The path ``text`` names, from the repository's top level; refused when
    it names a folder -- one ending in ``/`` (or ``/.``, ``/..``), or one
    that is a folder of the working tree -- so no read filters by a folder,
    to answer nothing, and no write anchors to one (the refusal ends with
    what a ``write`` can do instead, or how a read finds what the path
    named before: :func:`_folder_remedy`).  A path that names nothing is
    taken: a read may name a file since deleted."""
    _, slash, last = text.rpartition("/")
    if slash and last in ("", ".", ".."):  # 'a.py/', 'src/.': a folder, however spelt
        raise AnchorError(
            f"{what} {excerpt(spec)}: a path ending in {slash + last!r} names a folder, and "
            f"{_AN_ANCHOR_IS}, with no '/' at its end"
        )
    if repo is None:
        raise AnchorError(
            f"{what} {excerpt(spec)} names a path, which needs a git repository; run inside "
            "one, or give a raw key such as 'file:src/app.py'"
        )
    root = str(repo.root)
    full = os.path.normpath(os.path.join(root, text))
    relative = _inside(full, root)
    if relative is None and os.path.isabs(text):
        relative = _inside(os.path.realpath(full), os.path.realpath(root))
    if relative is None:
        raise AnchorError(
            f"{what} {excerpt(spec)}: {full} is not a file inside the repository at {root}"
        )
    if _is_folder(full):
        shown = excerpt(Path(relative).as_posix())
        if os.path.lexists(os.path.join(full, ".git")):
            raise AnchorError(
                f"{what} {excerpt(spec)}: {shown} is a repository of its own (a submodule, or "
                "one nested in the working tree), whose files are not in this repository's "
                "code graph: run the command inside it to anchor to them"
            )
        raise AnchorError(
            f"{what} {excerpt(spec)}: {shown} is a folder of the working tree, and "
            f"{_AN_ANCHOR_IS} (one in the folder)"
            f"{_folder_remedy(Path(relative).as_posix(), spec, write)}"
        )
    here = os.path.normpath(os.path.join(os.getcwd(), text))
    if not os.path.isabs(text) and here != full and not os.path.lexists(full):
        from_top = _inside(here, root)
        if from_top is not None and os.path.lexists(here):
            shown = Path(from_top).as_posix()
            if _is_folder(here):
                raise AnchorError(
                    f"{what} {excerpt(spec)}: anchors are paths from the repository's top "
                    f"level ({root}), and there is no {excerpt(text)} there; in this folder it "
                    f"is {excerpt(shown)} from the top level, a folder, and {_AN_ANCHOR_IS} "
                    "(one in the folder)"
                )
            raise AnchorError(
                f"{what} {excerpt(spec)}: anchors are paths from the repository's top level "
                f"({root}), and there is no {excerpt(text)} there; the file in this folder is "
                f"{excerpt(shown)} from the top level"
            )
    for part in Path(relative).parts:
        size = len(os.fsencode(part))
        if size > _NAME_MAX:
            raise AnchorError(
                f"{what} {excerpt(spec)}: the path component {excerpt(part, 40)} is {size} "
                f"bytes, over the {_NAME_MAX} a file name may be, so no such file exists"
            )
    return Path(relative).as_posix()


def _folder_remedy(path: str, spec: str, write: bool) -> str:
    """The end of the refusal of folder ``path``, named by ``spec``.  For a
    ``write``: that it may have no anchor instead of a file in the folder.
    For a read: the raw key the records about a file once at that path are
    found by (the file's, or the symbol's in it), which a path cannot name
    while the folder is there -- empty when no key has that form (a symbol
    of a file of no language with symbols)."""
    from roteiro_memory.repo.languages import file_key, language_of, symbol_key

    if write:
        return ", or none at all"  # a write may go without an anchor

    _, symbol, qualname = spec.partition("::")
    if not symbol:
        key = file_key(path)
    elif language_of(path) is not None and qualname:
        key = symbol_key(path, qualname)
    else:
        return ""
    return f"; records about a file once at that path are found by its raw key {excerpt(key)}"


def names_a_path(spec: str) -> bool:
    """Whether ``spec`` names a path (and so needs the repository), rather
    than being a raw key: the rule :func:`parse_anchor` follows."""
    if spec.startswith(KEY_PREFIXES):
        return False
    return "::" in spec or not (_SCHEME.match(spec) and not os.path.lexists(spec))


def parse_anchor(
    spec: str, repo: Repo | None, what: str = "--anchor", *, write: bool = False
) -> AnchorSpec:
    """The node key ``spec`` names, without checking that the node exists;
    ``write``: for a write to anchor to, not a read to filter by."""
    if not strip_white_space(spec):  # blank as a body is: Unicode White_Space only
        raise AnchorError(
            f"{what} is empty: expected a path, path::qualname or a key such as file:PATH"
        )
    if not is_utf8(spec):
        at = next(n for n, c in enumerate(spec) if not is_utf8(c))
        raise AnchorError(
            f"{what} {excerpt(spec)} is not UTF-8 text (it holds {spec[at]!r} at {at}): no "
            "node key is, as a file whose name is not UTF-8 has no node"
        )
    if "\0" in spec:
        raise AnchorError(
            f"{what} {excerpt(spec)} holds a NUL character (at {spec.index(chr(0))}), which "
            "no file name or symbol does, so it names nothing: expected a path, "
            "PATH::QUALNAME or a key such as file:PATH"
        )
    if spec.startswith(KEY_PREFIXES):
        return AnchorSpec(spec, None, None)
    from roteiro_memory.repo.languages import described, file_key, language_of, symbol_key

    if "::" in spec:
        path_text, _, qualname = spec.partition("::")
        if not path_text or not qualname:
            raise AnchorError(
                f"{what} {excerpt(spec)}: expected PATH::QUALNAME, e.g. "
                f"src/app/retry.py::Retry.run{_colon_file(spec, repo, what)}"
            )
        path = _repo_path(path_text, repo, spec, what, write)
        if language_of(path) is None:
            raise AnchorError(
                f"{what} {excerpt(spec)}: symbols are read from {described()} files only; "
                f"anchor to the file instead{_colon_file(spec, repo, what)}"
            )
        return AnchorSpec(symbol_key(path, qualname), path, qualname)
    if _SCHEME.match(spec) and not os.path.lexists(spec):
        return AnchorSpec(spec, None, None)
    path = _repo_path(spec, repo, spec, what, write)
    return AnchorSpec(file_key(path), path, None)


def _colon_file(text: str, repo: Repo | None, what: str) -> str:
    """The end of a refusal of ``text``, read as ``PATH::QUALNAME``, when a
    file of the working tree has a name holding ``::`` (``a::b.ts``), which
    that form cannot name, as its path ends at the first ``::``: the raw key
    that names what was meant -- the file (``file:a::b.ts``), or a symbol in
    it (``ts:a::b.ts::f``).  Empty when no such file is there."""
    if repo is None:
        return ""
    from roteiro_memory.repo.languages import file_key, language_of, symbol_key

    at = text.find("::")
    while at >= 0:
        at = text.find("::", at + 1)
        path_text, qualname = (text[:at], text[at + 2 :]) if at >= 0 else (text, "")
        try:
            path = _repo_path(path_text, repo, text, what)
        except AnchorError:
            continue
        full = os.path.join(repo.root, path)
        if not (os.path.islink(full) or os.path.isfile(full)):  # False, not OSError, for a bad name
            continue
        if qualname and language_of(path) is not None:
            key, named = symbol_key(path, qualname), f"{excerpt(qualname)} in it"
        else:
            key, named = file_key(path), "it" if not qualname else "the file (it has no symbols)"
        return (
            f"; but {excerpt(path)} is a file, whose name holds the '::' that ends a path in "
            f"{what}: its raw key {excerpt(key)} names {named}"
        )
    return ""


def _no_symbol(path: str, qualname: str, names: list[str], what: str) -> str:
    """Why ``qualname`` names nothing in ``path``, which defines ``names``.
    A name that differs from one of them in Unicode normalization alone
    (``cafe\\u0301`` for ``caf\\u00e9``) looks the same, so the message shows
    both escaped: names are matched exactly, as keys are."""
    import unicodedata

    wanted = unicodedata.normalize("NFKC", qualname)
    alike = next((n for n in names if unicodedata.normalize("NFKC", n) == wanted), None)
    if alike is not None:
        return (
            f"{what}: {path} defines no {excerpt(qualname)}; it defines {excerpt(alike)}, "
            f"which differs from it only in Unicode normalization ({_escaped(qualname)} given, "
            f"{_escaped(alike)} defined): names are matched exactly, so give the one defined"
        )
    shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    return (
        f"{what}: {path} defines no {excerpt(qualname)}; "
        f"expected one of: {shown or '(it defines no functions or classes)'}"
    )


def _escaped(name: str) -> str:
    """``name`` quoted with every character outside printable ASCII as its
    code point's escape (``'caf\\u00e9'``), where two spellings that look
    alike can be told apart."""
    escaped = "".join(
        c if " " <= c <= "~" else f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
        for c in name[:EXCERPT_CHARS]
    )
    return f"'{escaped}'" + ("..." if len(name) > EXCERPT_CHARS else "")


def anchor_label(key: str) -> str:
    """How ``key`` is shown: in the form ``--anchor`` takes -- ``PATH`` for
    ``file:PATH``, ``PATH::QUALNAME`` for a symbol's key (``py:``, ``ts:``...)
    -- when that form reads back as ``key`` and a write would take it; else the
    key as it is.  So an empty path (``file:``), a path that would read as a
    key or a symbol (``file:py:x``, ``file:a::b``), one that is not written
    from the repository's top level (``file:../x``), and a symbol whose prefix
    is not its file's language's (``py:x::y``, ``ts:a.py::f``) show as their
    keys."""
    from pathlib import PurePosixPath

    from roteiro_memory.repo.languages import SYMBOL_PREFIXES, language_of

    if key.startswith(FILE_PREFIX):
        path, qualname = key[len(FILE_PREFIX) :], ""
    else:
        prefix = next((p for p in SYMBOL_PREFIXES if key.startswith(p)), None)
        if prefix is None:
            return key
        path, _, qualname = key[len(prefix) :].partition("::")
        language = language_of(path)
        if not qualname or language is None or language.prefix != prefix:
            return key
    plain = PurePosixPath(path)
    if (
        not path
        or "::" in path
        or _SCHEME.match(path)
        or plain.is_absolute()
        or plain.as_posix() != path
        or ".." in plain.parts
    ):
        return key
    return f"{path}::{qualname}" if qualname else path


def verify_anchor(spec: AnchorSpec, repo: Repo | None, what: str = "--anchor") -> None:
    """Refuse a path or symbol anchor that names nothing in the working tree.

    What may be named is what sync holds: a tracked or untracked, not
    ignored, file (:func:`~roteiro_memory.repo.graph.working_entry`), not
    below a folder that is a symbolic link; and a symbol of a file whose
    symbols sync reads (:func:`~roteiro_memory.repo.nodes.source_language`),
    which a symbolic link never is: what it points to may be outside the
    repository, a FIFO, a device, or nothing.  So the path is looked at
    without following it, and is read only once it is known for a regular
    file, without blocking and through no link, as sync reads it
    (:mod:`~roteiro_memory.repo.regular`), and its symbols parsed from the
    bytes sync parses them from, its clean form
    (:func:`~roteiro_memory.repo.graph.working_source`).  A symbol of a file
    that does not parse, or is too large to be parsed
    (:data:`~roteiro_memory.repo.symbols.MAX_PARSED_BYTES`, measured on
    those bytes), is refused, as sync gives it no blob.  Raw keys are taken
    on trust: they are the way to anchor to a node some other tool puts in
    the graph -- all but a symbol key whose prefix is not its file's
    language's (``py:a.ts::f``), which names no node any sync makes.
    Checked before anything is written.
    """
    if spec.path is None:
        _refuse_foreign_prefix(spec.key, what)
        return
    if repo is None:
        return
    import stat

    from roteiro_memory.privatefile import file_kind
    from roteiro_memory.repo.graph import linked_folder, working_entry, working_source
    from roteiro_memory.repo.nodes import source_language
    from roteiro_memory.repo.symbols import file_symbols

    shown = excerpt(spec.path)
    linked = linked_folder(repo.root, spec.path)
    if linked is not None:
        raise AnchorError(
            f"{what}: {shown} is inside {excerpt(linked)}, a symbolic link, which git does "
            "not follow, so it is not in the code graph; anchor to the file where it lives"
        )
    full = repo.root / spec.path
    try:
        mode = full.lstat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        named = f"{spec.path}::{spec.qualname}" if spec.qualname is not None else spec.path
        if _tag(repo, spec.path) == b"S":
            raise AnchorError(
                f"{what}: {shown} is tracked, but outside the sparse checkout, so it is not in "
                "the working tree to be read; the code graph holds it as the index does: "
                f"anchor to it by its raw key, {excerpt(spec.key)}"
            ) from None
        raise AnchorError(
            f"{what}: no file {shown} in the working tree of {repo.root}; "
            f"expected a tracked or untracked, not ignored, file{_colon_file(named, repo, what)}"
        ) from None
    except OSError as error:
        raise AnchorError(f"{what}: {shown} cannot be looked at ({error.strerror})") from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise AnchorError(
            f"{what}: {shown} is {file_kind(mode)}, not a file, so it is not in the code "
            "graph; anchor to a tracked or untracked, not ignored, file"
        )
    tracked = _tracked(repo, spec.path)
    if tracked is None:
        _refuse_unlisted(spec.path, repo, what)
    entry = working_entry(repo, spec.path, untracked=not tracked)
    if entry is None:
        raise AnchorError(f"{what}: {shown} changed while it was checked; try again")
    if isinstance(entry, str):
        raise AnchorError(
            f"{what}: {shown} {entry}, so it is not in the code graph; anchor to a source "
            "file, or track this one (git add) to give it a node"
        )
    if spec.qualname is None:
        return
    if source_language(entry) is None:
        raise AnchorError(
            f"{what} {excerpt(f'{spec.path}::{spec.qualname}')}: {shown} is a symbolic link, "
            "and what a link points to is never read, so it has no symbols; anchor to the "
            f"link as a file ({spec.path}), or to the symbol in the file that defines it"
        )
    source = working_source(repo, spec.path)
    if source is None:
        raise AnchorError(f"{what}: {shown} changed while it was checked; try again")
    try:
        found = file_symbols(spec.path, source, repo.object_format)
    except SymbolsUnavailable as error:
        raise AnchorError(
            f"{what} {spec.path}::{spec.qualname}: {error}; or anchor to the file"
        ) from None
    except SourceTooLarge as error:
        raise AnchorError(
            f"{what}: {spec.path} {error}, so its symbols cannot be anchored; anchor to the file"
        ) from None
    except SymbolError as error:
        raise AnchorError(
            f"{what}: {spec.path} does not parse ({error}), so its symbols cannot be "
            "anchored; fix it or anchor to the file"
        ) from None
    names = [d.qualname for d in found]
    if spec.qualname not in names:
        raise AnchorError(
            _no_symbol(spec.path, spec.qualname, names, what)
            + _colon_file(f"{spec.path}::{spec.qualname}", repo, what)
        )


def _refuse_foreign_prefix(key: str, what: str) -> None:
    """Refuse a raw symbol key whose prefix is not its file's language's
    (``py:a.ts::f``): no sync makes one, so it could only ever read
    vanished (:func:`~roteiro_memory.repo.languages.foreign_prefix`)."""
    from roteiro_memory.repo.languages import foreign_prefix, symbol_key

    foreign = foreign_prefix(key)
    if foreign is None:
        return
    path, qualname, language, given = foreign
    raise AnchorError(
        f"{what} {excerpt(key)}: {excerpt(path)} is a {language.name} file, whose symbols' "
        f"keys start with {language.prefix!r} ({excerpt(symbol_key(path, qualname))}); "
        f"{given.prefix!r} is {given.name}'s, so sync makes no node with this key"
    )


def _tracked(repo: Repo, path: str) -> bool | None:
    """Whether git tracks ``path`` (True) or lists it as untracked and not
    ignored (False), asked in one ``git ls-files -t``; None when it lists
    neither, as for a file under .git or inside a submodule (git refuses
    those)."""
    tag = _tag(repo, path)
    return None if tag is None else tag != b"?"


def _tag(repo: Repo, path: str) -> bytes | None:
    """The tag ``git ls-files -t`` gives ``path``: ``?`` for an untracked
    file, a letter of its state for a tracked one (``S`` for one outside a
    sparse checkout); None when it lists it as neither."""
    import subprocess

    listed = subprocess.run(
        [*_LS_FILES, "-C", str(repo.root), "ls-files", "-z", "-t", *_LISTED, "--", path],
        capture_output=True,
        check=False,
    )
    wanted = os.fsencode(path)
    for entry in listed.stdout.split(b"\0"):
        if entry[2:] == wanted:
            return entry[:1]
    return None


def _refuse_unlisted(path: str, repo: Repo, what: str) -> None:
    """Refuse ``path``, which git lists neither as tracked nor as untracked:
    it is ignored, or it is not the working tree's."""
    import subprocess

    ignored = subprocess.run(
        ["git", "-C", str(repo.root), "check-ignore", "-q", "--", path],
        capture_output=True,
        check=False,
    )
    if ignored.returncode == 0:
        raise AnchorError(
            f"{what}: {excerpt(path)} is ignored by git, so it is not in the code "
            "graph; anchor to a tracked or untracked, not ignored, file"
        )
    raise AnchorError(
        f"{what}: {excerpt(path)} is not a file of this repository's working tree "
        "(it is inside .git or a submodule), so it is not in the code graph; anchor to a "
        "tracked or untracked, not ignored, file"
    )


def anchor_filter(
    specs: Iterable[AnchorSpec] | None, touched: Collection[str] | None = None
) -> tuple[str | None, AnchorFilter | None]:
    """How ``--anchor`` (each value given) and ``--touched`` filter, as the
    store takes them: an exact key, or the anchors to keep -- the union of
    every value's, a bare path being the file and every symbol in it; with
    ``touched``, only the touched keys among those.  One symbol or raw key
    is the exact key; anything else is one :class:`AnchorFilter`."""
    unique = list({spec.key: spec for spec in specs or ()}.values())
    key: str | None = None
    anchors: AnchorFilter | None = None
    bare = [spec.path for spec in unique if spec.path is not None and spec.qualname is None]
    if len(unique) == 1 and not bare:
        key = unique[0].key
    elif unique:
        from roteiro_memory.repo.languages import language_of, symbol_prefix

        anchors = AnchorFilter(
            keys=frozenset(spec.key for spec in unique),
            prefixes=tuple(symbol_prefix(path) for path in bare if language_of(path)),
        )
    if touched is None:
        return key, anchors
    if anchors is None:
        anchors = AnchorFilter(keys=frozenset({key} if key is not None else touched))
    return None, anchors.narrowed(touched)
