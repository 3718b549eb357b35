"""Reading an operator's dataset file: its digest, and its top-level array
one element at a time (LongMemEval ``m`` is 2.7 GB; it is never held whole)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["DatasetFileError", "iter_array", "sha256"]

_CHUNK = 1 << 20


class DatasetFileError(ValueError):
    """A dataset file that is missing or not the shape its adapter reads."""


def sha256(path: Path) -> str:
    """The file's sha256, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def iter_array(path: Path) -> Iterator[Any]:
    """Each element of the JSON array in ``path``, decoded one at a time."""
    if not path.is_file():
        raise DatasetFileError(f"{path}: no such file; pass the path of the downloaded dataset")
    decoder = json.JSONDecoder()
    with path.open(encoding="utf-8") as handle:
        buffer = handle.read(_CHUNK).lstrip()
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
                more = handle.read(_CHUNK)
                if not more:
                    raise DatasetFileError(f"{path}: the JSON array is truncated") from None
                buffer += more
                continue
            yield value
            buffer = buffer[end:]
