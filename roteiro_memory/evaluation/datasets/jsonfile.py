"""Reading an operator's dataset file: its digest, and its top-level array
one element at a time (LongMemEval ``m`` is 2.7 GB; it is never held whole).

A file that is not what an adapter reads -- not UTF-8, not an array of
objects, nested past what the decoder can follow, or an element missing the
fields its adapter needs -- is :class:`DatasetFileError`, naming the file,
the element and what was wrong, never a traceback.
"""

from __future__ import annotations

import codecs
import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from roteiro_memory.errors import excerpt

__all__ = ["DatasetFileError", "iter_array", "read_objects", "sha256"]

_CHUNK = 1 << 20
_T = TypeVar("_T")

_WIDE_MARKS = {
    codecs.BOM_UTF32_LE: "UTF-32",
    codecs.BOM_UTF32_BE: "UTF-32",
    codecs.BOM_UTF16_LE: "UTF-16",
    codecs.BOM_UTF16_BE: "UTF-16",
}
"""Byte-order marks of encodings other than UTF-8 (UTF-32's first: UTF-32
little-endian begins with UTF-16 little-endian's mark)."""


class DatasetFileError(ValueError):
    """A dataset file that is missing or not the shape its adapter reads."""


def sha256(path: Path) -> str:
    """The file's sha256, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _readable(path: Path) -> None:
    if path.is_dir():
        raise DatasetFileError(
            f"{path}: is a folder; pass the path of the downloaded dataset file itself"
        )
    if not path.exists():
        raise DatasetFileError(f"{path}: no such file; pass the path of the downloaded dataset")
    if not path.is_file():
        raise DatasetFileError(f"{path}: not a regular file; pass the downloaded dataset file")
    with path.open("rb") as handle:
        head = handle.read(4)
    for mark, encoding in _WIDE_MARKS.items():
        if head.startswith(mark):
            raise DatasetFileError(
                f"{path}: {encoding} text (it starts with a byte-order mark); the datasets are "
                f"UTF-8 JSON: convert it first (iconv -f {encoding} -t UTF-8)"
            )


def iter_array(path: Path) -> Iterator[Any]:
    """Each element of the JSON array in ``path``, decoded one at a time (a
    UTF-8 byte-order mark is passed over)."""
    _readable(path)
    decoder = json.JSONDecoder()
    index = 0
    with path.open(encoding="utf-8-sig") as handle:

        def more() -> str:
            try:
                return handle.read(_CHUNK)
            except UnicodeDecodeError as error:
                raise DatasetFileError(
                    f"{path}: not UTF-8 text ({error.reason}, byte {error.object[error.start]:#04x}"
                    f" near element {index}); the datasets are UTF-8 JSON"
                ) from None

        buffer = more().lstrip()
        if not buffer.startswith("["):
            raise DatasetFileError(f"{path}: expected a JSON array, found {buffer[:20]!r}")
        buffer = buffer[1:]
        while True:
            buffer = buffer.lstrip().removeprefix(",").lstrip()
            if buffer.startswith("]"):
                return
            try:
                value, end = decoder.raw_decode(buffer)
            except json.JSONDecodeError:
                chunk = more()
                if not chunk:
                    raise DatasetFileError(f"{path}: the JSON array is truncated") from None
                buffer += chunk
                continue
            except RecursionError:
                raise DatasetFileError(
                    f"{path}: element {index} nests arrays or objects too deeply to read; "
                    "no dataset nests so deep"
                ) from None
            yield value
            index += 1
            buffer = buffer[end:]


def _kind(value: object) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def read_objects(
    path: Path, what: str, read: Callable[[dict[str, Any]], _T], limit: int | None = None
) -> Iterator[_T]:
    """``read`` of each element of the array in ``path``, which must each be
    an object (``what`` names one: "a LoCoMo conversation"), the first
    ``limit`` only when given.  An element ``read`` cannot take -- a field
    missing, or of the wrong type -- is :class:`DatasetFileError` naming it."""
    for index, value in enumerate(iter_array(path)):
        if limit is not None and index >= limit:
            return
        if not isinstance(value, dict):
            raise DatasetFileError(
                f"{path}: element {index} of the array is {_kind(value)}, expected an object "
                f"({what})"
            )
        try:
            item = read(value)
        except DatasetFileError as error:
            raise DatasetFileError(f"{path}: element {index}: {error}") from None
        except (AttributeError, KeyError, TypeError, ValueError) as error:
            said = f"{type(error).__name__}: {excerpt(str(error), 120)}"
            raise DatasetFileError(
                f"{path}: element {index} is not the shape of {what} ({said})"
            ) from None
        yield item
