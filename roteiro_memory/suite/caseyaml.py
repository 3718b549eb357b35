"""Case files' YAML, read as the JSON values a case holds, each mapping
remembering its line (:func:`read_yaml`), and how a place in such a document
is named (:func:`json_path`, :func:`line_at`).

Only what JSON can carry is taken: a date, ``!!binary``, a set and the other
values YAML has and JSON has not are refused at their line, as are aliases of
mappings and lists; each scalar YAML cannot make is a refusal at its line, not
a library's exception.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml

from roteiro_memory.suite.errors import CaseFileError

__all__ = ["json_path", "line_at", "read_yaml"]

JSON = Any


class _Located(dict[str, Any]):
    """A mapping that remembers the line it started on (1-based)."""

    line: int = 0


# libyaml's parser when PyYAML was built with it: the same safe constructors,
# several times faster than the pure-Python parser on the shipped cases.
_SafeBase: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_SafeBase):  # type: ignore[misc]  # the base is chosen at run time
    """Safe YAML whose mappings remember their line."""


def _construct_mapping(loader: _Loader, node: yaml.MappingNode) -> _Located:
    loader.flatten_mapping(node)
    mapping = _Located()
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            mark = key_node.start_mark
            raise yaml.constructor.ConstructorError(
                None, None, f"mapping keys must be strings, found {key!r}", mark
            )
        if key in mapping:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        mapping[key] = loader.construct_object(value_node, deep=True)
    mapping.line = node.start_mark.line + 1
    return mapping


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _refusing(kind: str, base: Any) -> Any:
    """PyYAML's constructor of ``kind`` scalars, whose every failure is a
    :class:`~yaml.constructor.ConstructorError` at the value's line: as
    they are, ``int`` raises ValueError past 4,300 digits, ``bool`` a
    KeyError for ``!!bool maybe``, ``timestamp`` an AttributeError..."""

    def construct(loader: _Loader, node: yaml.ScalarNode) -> Any:
        try:
            return base(loader, node)
        except (ValueError, IndexError, KeyError, AttributeError):
            text = str(node.value)
            shown = repr(text) if len(text) <= 40 else f"{text[:40]!r}... ({len(text)} characters)"
            raise yaml.constructor.ConstructorError(
                None, None, f"{shown} is no {kind} YAML can make", node.start_mark
            ) from None

    return construct


for _kind in ("int", "float", "bool"):
    _tag = f"tag:yaml.org,2002:{_kind}"
    _Loader.add_constructor(_tag, _refusing(_kind, _SafeBase.yaml_constructors[_tag]))


def _not_json(what: str) -> Any:
    """A constructor refusing, at the value's line, a YAML value JSON has no
    type for: a case's values are sent as JSON and compared as JSON."""

    def construct(loader: _Loader, node: yaml.Node) -> Any:
        raise yaml.constructor.ConstructorError(
            None, None, f"{what}: a case holds only JSON values", node.start_mark
        )

    return construct


for _kind, _what in (
    ("binary", "binary data (!!binary) is no JSON value"),
    ("set", "a set (!!set) is no JSON value; write a list"),
    ("omap", "an ordered map (!!omap) is no JSON value; write a mapping"),
    ("pairs", "a list of pairs (!!pairs) is no JSON value; write a mapping"),
    ("timestamp", "an unquoted date or time is no JSON value; quote it to write text"),
):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_kind}", _not_json(_what))


def read_yaml(path: Path, *, max_bytes: int | None = None, split: str = "") -> JSON:
    """A YAML file's document, its mappings remembering their lines.

    A mapping or list written once and repeated by an alias (``*name``) is
    refused: aliases nested in aliases (a "billion laughs" bomb) stand for more
    values than memory holds once anything walks the document, and a case
    file has no need of them.  A file of more than ``max_bytes`` bytes is
    refused before it is parsed, saying what to do (``split``); no more than
    one byte past the limit is read.
    """
    try:
        with path.open("rb") as stream:
            data = stream.read() if max_bytes is None else stream.read(max_bytes + 1)
    except OSError as error:
        raise CaseFileError(path, f"cannot be read: {error}") from error
    if max_bytes is not None and len(data) > max_bytes:
        # before decoding: the limit may cut a character in two
        raise CaseFileError(
            path, f"is larger than {max_bytes:,} bytes, the most such a file may hold{split}"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        wide = data.startswith((b"\xff\xfe", b"\xfe\xff"))
        what = "UTF-16 text (its byte order mark says)" if wide else "not UTF-8 text"
        raise CaseFileError(
            path,
            f"is {what}: byte {error.start} is {data[error.start : error.start + 1]!r}; "
            "a case file is UTF-8: save it as UTF-8",
        ) from None
    try:
        document = yaml.load(text, Loader=_Loader)  # _Loader derives from a safe loader
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(error, "problem", None) or str(error)
        raise CaseFileError(path, f"is not valid YAML: {problem}", line=line) from error
    except RecursionError:  # the constructor recurses into each nested value
        raise CaseFileError(
            path, "nests lists or mappings too deeply to read; no case nests so deep"
        ) from None
    repeated = _repeated_container(document)
    if repeated is not None:
        where, line = repeated
        raise CaseFileError(
            path,
            "a YAML alias (*name) repeats a mapping or list here; case files do not "
            "allow aliases of them: write the value out",
            line=line,
            path=where,
        )
    return document


def _repeated_container(document: JSON) -> tuple[str, int | None] | None:
    """Where a mapping or list first appears a second time (only an alias
    does that), visiting each object once; or None."""
    seen: set[int] = set()
    stack: list[tuple[JSON, list[str | int], int | None]] = [(document, [], None)]
    while stack:
        node, parts, line = stack.pop()
        if not isinstance(node, (dict, list)):
            continue
        line = getattr(node, "line", line)
        if id(node) in seen:
            return json_path(parts) or "(top level)", line
        seen.add(id(node))
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((value, [*parts, key], line) for key, value in items)
    return None


def line_at(document: JSON, path: Sequence[str | int]) -> int | None:
    """The line of the deepest mapping along ``path``."""
    line = getattr(document, "line", None)
    node = document
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        line = getattr(node, "line", line)
    return line


def json_path(parts: Iterable[str | int]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
