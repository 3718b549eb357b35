"""A definition's node: the blob id of its text, and the rule every language
shares for a name bound more than once.

A definition's blob id is the git-style id of exactly its source bytes, so an
anchor on it stays valid while anything else in the file changes and drifts
when it does -- reformatting included.  When one name is bound by several
definitions (a property and its setter, an overload and its implementation,
a conditional redefinition, a Rust type and its ``impl``), the node's text is
all of them in source order, so a change to any one drifts it.
"""

from __future__ import annotations

from collections.abc import Iterable

from roteiro_memory.valueclass import valueclass

__all__ = ["IMPL", "Definition", "bind", "blob_id", "uncommented"]

IMPL = "impl"
"""The kind of a block that implements a type declared elsewhere (Rust's
``impl``): it yields to the type's own kind when both bind one name."""


@valueclass
class Definition:
    """One qualified name bound by a definition and the blob of its text."""

    qualname: str
    kind: str
    """``class``, ``function`` or ``method`` (a function bound in a class
    body); in other languages also ``interface``, ``enum``, ``struct``,
    ``trait``, ``impl`` and the like (``docs/cli.md`` lists them)."""
    blob: str


def blob_id(content: bytes, object_format: str = "sha1") -> str:
    """The id git gives a blob with ``content``: the hash of a ``blob <size>``
    header, a NUL and the content."""
    import hashlib  # here, not at the top: a sync with nothing changed hashes no blob

    digest = hashlib.new(object_format)
    digest.update(b"blob %d\x00" % len(content))
    digest.update(content)
    return digest.hexdigest()


def bind(found: Iterable[tuple[str, str, bytes]], object_format: str = "sha1") -> list[Definition]:
    """The definitions of ``(qualname, kind, text)`` found in source order,
    sorted by qualname: a name found several times covers all its texts,
    joined by newlines in source order, and keeps the kind it was first
    found with (or, first found as an :data:`IMPL`, its type's)."""
    texts: dict[str, list[bytes]] = {}
    kinds: dict[str, str] = {}
    for qualname, kind, text in found:
        texts.setdefault(qualname, []).append(text)
        if kinds.get(qualname, IMPL) == IMPL:
            kinds[qualname] = kind
    return [
        Definition(name, kinds[name], blob_id(b"\n".join(texts[name]), object_format))
        for name in sorted(texts)
    ]


_BLANK = b" \t"
_EOL = b"\r\n"


def uncommented(source: bytes, start: int, end: int, comments: Iterable[tuple[int, int]]) -> bytes:
    """``source[start:end]`` without the comments at the byte ranges
    ``comments`` (inside it, in order): a comment alone on its lines goes
    with them, one beginning a line with the blanks after it, any other with
    the blanks before it -- so a definition's text with a comment among its
    decorators or attributes is what it is without one.  The one rule for
    every language: comments are no part of a definition's text there."""
    out = []
    at = start
    for first, last in comments:
        while last > first and source[last - 1] in _EOL:
            last -= 1  # a line comment that holds its line's end leaves it
        before = first
        while before > at and source[before - 1] in _BLANK:
            before -= 1
        after = last
        while after < end and source[after] in _BLANK:
            after += 1
        begins = before == 0 or source[before - 1] in _EOL
        if begins and (after == end or source[after] in _EOL):
            cut = (before, after + (2 if source[after : after + 2] == b"\r\n" else 1))
        elif begins:
            cut = (first, after)
        else:
            cut = (before, last)
        out.append(source[at : cut[0]])
        at = min(max(cut[1], at), end)
    out.append(source[at:end])
    return b"".join(out)
