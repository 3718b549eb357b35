"""Reading an operator's dataset file: its digest, and its top-level array
one element at a time (LongMemEval ``m`` is 2.7 GB; it is never held whole).

A file that is not what an adapter reads -- not UTF-8, not a JSON array of
objects (strict JSON: ``json.load`` with ``NaN`` refused), nested past what
the decoder can follow, or an element missing the fields its adapter needs
-- is :class:`DatasetFileError`, naming the file, the element and what was
wrong, never a traceback.
"""

from __future__ import annotations

import codecs
import hashlib
import itertools
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO, TypeVar

from roteiro_memory.errors import excerpt

__all__ = ["DatasetFileError", "iter_array", "kind", "read_objects", "sha256", "text"]

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


_SPACE = " \t\n\r"
"""JSON's whitespace, and no other (``str.strip`` would pass over more)."""

_LOOKAHEAD = 16
"""More than the decoder looks past where it stops (a literal such as
``-Infinity``, an escape ``\\uXXXX``, a number's exponent): a failure, or a
value's end, closer than this to the end of what was read may be text cut
at a chunk's end, so more is read first."""


class _Unreadable(Exception):
    """Valid JSON, or nearly, that no dataset holds: said with the element."""


def _constant(name: str) -> object:
    raise _Unreadable(f"{name}, which is not JSON")


class _Text:
    """The file's text from ``start`` (an offset in characters), read a
    chunk at a time as it is needed."""

    def __init__(self, path: Path, handle: TextIO) -> None:
        self.path = path
        self.handle = handle
        self.text = ""
        self.start = 0
        self.ended = False
        self.element = 0
        """The elements read whole: the index of the one being read."""

    def more(self) -> None:
        try:
            chunk = self.handle.read(_CHUNK)
        except UnicodeDecodeError as error:
            raise DatasetFileError(
                f"{self.path}: not UTF-8 text ({error.reason}, byte "
                f"{error.object[error.start]:#04x} near element {self.element}); the datasets "
                "are UTF-8 JSON"
            ) from None
        self.ended = not chunk
        self.text += chunk

    def drop(self, count: int) -> None:
        self.start += count
        self.text = self.text[count:]

    def next_char(self) -> str | None:
        """The next character that is not whitespace (the whitespace passed
        over), or None at the end of the file."""
        while True:
            kept = self.text.lstrip(_SPACE)
            self.drop(len(self.text) - len(kept))
            if kept:
                return kept[0]
            if self.ended:
                return None
            self.more()

    def truncated(self) -> DatasetFileError:
        return DatasetFileError(
            f"{self.path}: the JSON array is truncated: the file ends after {self.element} "
            "whole element(s), before the array's closing ']'"
        )

    def separator(self) -> str:
        """The ``,`` or ``]`` after an element, passed over; after a comma,
        the next element must follow."""
        after = self.next_char()
        if after is None:
            raise self.truncated()
        if after not in ",]":
            raise DatasetFileError(
                f"{self.path}: expected ',' or ']' after element {self.element - 1} at "
                f"character {self.start}, found {after!r}"
            )
        self.drop(1)
        if after == "," and self.next_char() == "]":
            raise DatasetFileError(
                f"{self.path}: a ',' with no element after it, before the array's closing ']' "
                f"at character {self.start}; JSON allows none there"
            )
        return after

    def finish(self) -> None:
        """Refuse anything but whitespace after the array's closing ``]``."""
        if self.next_char() is not None:
            raise DatasetFileError(
                f"{self.path}: text after the array's closing ']' at character {self.start}: "
                f"{self.text[:20]!r}; a dataset file is one JSON array"
            )

    def decode(self, decoder: json.JSONDecoder) -> Any:
        """The element at the start of the text, passed over."""
        while True:
            try:
                value, end = decoder.raw_decode(self.text)
            except json.JSONDecodeError as error:
                cut = error.msg.startswith("Unterminated string")
                if not self.ended and (cut or error.pos >= len(self.text) - _LOOKAHEAD):
                    self.more()  # maybe cut at the chunk's end: read on
                    continue
                if cut or not self.text[error.pos :].strip(_SPACE):
                    raise self.truncated() from None
                raise DatasetFileError(
                    f"{self.path}: element {self.element} is not JSON at character "
                    f"{self.start + error.pos}: {error.msg}"
                ) from None
            except _Unreadable as error:
                raise DatasetFileError(
                    f"{self.path}: element {self.element} holds {error}; no dataset does"
                ) from None
            except RecursionError:
                raise DatasetFileError(
                    f"{self.path}: element {self.element} nests arrays or objects too deeply "
                    "to read; no dataset nests so deep"
                ) from None
            if end < len(self.text) - _LOOKAHEAD or self.ended:
                self.drop(end)
                self.element += 1
                return value
            self.more()  # a number may go on in the next chunk (``-6.2|5e+3``)


def _integer(digits: str) -> int:
    try:
        return int(digits)
    except ValueError:  # past sys.get_int_max_str_digits()
        raise _Unreadable(f"an integer of {len(digits):,} digits, more than can be read") from None


def iter_array(path: Path) -> Iterator[Any]:
    """Each element of the JSON array in ``path``, decoded one at a time (a
    UTF-8 byte-order mark is passed over).  The text is strict JSON: what
    ``json.load`` refuses is :class:`DatasetFileError` -- a comma missing or
    left over, text after the closing ``]``, ``NaN`` -- found before the
    element ahead of it is handed on; an element that is not JSON is named
    at the character where it fails, as soon as it does, and only a file
    that ends early is "truncated"."""
    _readable(path)
    decoder = json.JSONDecoder(parse_constant=_constant, parse_int=_integer)
    with path.open(encoding="utf-8-sig") as handle:
        text = _Text(path, handle)
        if text.next_char() != "[":
            raise DatasetFileError(f"{path}: expected a JSON array, found {text.text[:20]!r}")
        text.drop(1)
        if text.next_char() == "]":
            text.drop(1)
            text.finish()
            return
        while True:
            value = text.decode(decoder)
            if text.separator() == "]":
                text.finish()  # before the last element is handed on
                yield value
                return
            yield value


_SURROGATE = re.compile("[\ud800-\udfff]")


def text(value: object, field: str) -> str:
    """``value``, a field an adapter stores, searches or reports, which must
    be a JSON string: a number, null, an array or an object there is
    :class:`DatasetFileError` naming ``field``, never its Python spelling
    (``None``) stored or searched for.  So is a lone surrogate in it -- the
    JSON escape of half a pair, ``\\ud800``: valid JSON, it is no
    character, so no store can hold it nor a result be printed with it."""
    if not isinstance(value, str):
        raise DatasetFileError(f"{field} is {kind(value)}, expected a string")
    said = value
    found = _SURROGATE.search(said)
    if found is not None:
        raise DatasetFileError(
            f"{field} holds the escape \\u{ord(found.group()):04x}, half a surrogate pair: no "
            "character, so not text"
        )
    return said


def kind(value: object) -> str:
    """What JSON value ``value`` is, as a finding says it ("an array")."""
    names = {
        list: "an array",
        dict: "an object",
        str: "a string",
        bool: "a boolean",
        type(None): "null",
    }
    return names.get(type(value), "a number")


def read_objects(
    path: Path, what: str, read: Callable[[dict[str, Any]], _T], limit: int | None = None
) -> Iterator[_T]:
    """``read`` of each element of the array in ``path``, which must each be
    an object (``what`` names one: "a LoCoMo conversation"), the first
    ``limit`` only when given.  An element ``read`` cannot take -- a field
    missing, or of the wrong type -- is :class:`DatasetFileError` naming it."""
    for index, value in enumerate(itertools.islice(iter_array(path), limit)):
        if not isinstance(value, dict):
            raise DatasetFileError(
                f"{path}: element {index} of the array is {kind(value)}, expected an object "
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
