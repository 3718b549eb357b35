"""The tree witness: the id of the tree git would write for a set of file
entries, computed here without writing any object (:func:`tree_id`)."""

from __future__ import annotations

from roteiro_memory.repo.blobs import hasher

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not loaded on the way to a command's answer
    from collections.abc import Callable, Iterable
    from typing import Any

    from roteiro_memory.repo.nodes import FileEntry

__all__ = ["tree_id"]


def tree_id(files: Iterable[FileEntry], object_format: str = "sha1") -> str:
    """The id of the tree git would write for ``files``, writing nothing."""
    root: dict[str, Any] = {}
    for entry in files:
        parts = entry.path.split("/")
        folder = root
        for part in parts[:-1]:
            sub = folder.get(part)
            if sub is None:
                sub = folder[part] = {}
            folder = sub
        folder[parts[-1]] = entry
    return _hash_tree(root, hasher(object_format))


def _hash_tree(folder: dict[str, Any], hasher: Callable[[bytes], Any]) -> str:
    rows: list[tuple[bytes, bytes]] = []
    for name, value in folder.items():
        encoded = name.encode("utf-8", "surrogateescape")
        if type(value) is dict:
            sub = bytes.fromhex(_hash_tree(value, hasher))
            rows.append((encoded + b"/", b"40000 %s\x00%s" % (encoded, sub)))
        else:
            blob = bytes.fromhex(value.blob)
            rows.append((encoded, b"%s %s\x00%s" % (value.mode.encode(), encoded, blob)))
    # Git orders a tree's entries by name, comparing a folder as if its name
    # ended with '/'.
    rows.sort()
    body = b"".join([row[1] for row in rows])
    return str(hasher(b"tree %d\x00%s" % (len(body), body)).hexdigest())
