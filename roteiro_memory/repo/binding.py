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

__all__ = ["IMPL", "Definition", "bind", "blob_id"]

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
