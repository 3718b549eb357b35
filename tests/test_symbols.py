"""Python definitions as nodes: which names, and which text each blob covers."""

from __future__ import annotations

import subprocess

import pytest

from roteiro_memory.repo.symbols import SymbolError, blob_id, definitions, is_python_path

SOURCE = b"""\
import functools


class Outer:
    class Inner:
        def method(self):
            return 1

    @property
    def size(self):
        return 2

    @size.setter
    def size(self, value):
        self._size = value


@functools.cache
def top(x):
    def helper():
        return x

    return helper()


if True:
    async def conditional():
        pass
"""


def _blobs(source: bytes) -> dict[str, str]:
    return {d.qualname: d.blob for d in definitions(source)}


def test_definitions_nest_qualnames_through_classes_and_functions() -> None:
    found = {d.qualname: d.kind for d in definitions(SOURCE)}
    assert found == {
        "Outer": "class",
        "Outer.Inner": "class",
        "Outer.Inner.method": "method",
        "Outer.size": "method",
        "top": "function",
        "top.helper": "function",
        "conditional": "function",
    }


def test_blob_id_matches_git_hash_object() -> None:
    content = b"print('hello')\n"
    expected = subprocess.run(
        ["git", "hash-object", "--stdin"], input=content, capture_output=True, check=True
    ).stdout.decode()
    assert blob_id(content) == expected.strip()


def test_a_definition_blob_is_the_hash_of_exactly_its_text() -> None:
    source = b"x = 1\n\ndef f(a):\n    return a\n\ny = 2\n"
    assert _blobs(source)["f"] == blob_id(b"def f(a):\n    return a")


def test_editing_one_function_changes_only_its_blob_and_its_enclosers() -> None:
    before = _blobs(SOURCE)
    after = _blobs(SOURCE.replace(b"return 1", b"return 10"))
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {"Outer", "Outer.Inner", "Outer.Inner.method"}


def test_a_decorator_is_part_of_the_definition() -> None:
    before = _blobs(SOURCE)
    after = _blobs(SOURCE.replace(b"@functools.cache", b"@functools.lru_cache"))
    assert before["top"] != after["top"]
    assert before["top.helper"] == after["top.helper"]


def test_reformatting_changes_the_blob() -> None:
    before = _blobs(SOURCE)
    after = _blobs(SOURCE.replace(b"def top(x):", b"def top( x ):"))
    assert before["top"] != after["top"]


def test_moving_a_definition_down_the_file_keeps_its_blob() -> None:
    before = _blobs(SOURCE)
    after = _blobs(b"# a new comment line\n\n" + SOURCE)
    assert before == after


def test_a_name_bound_twice_covers_both_definitions() -> None:
    before = _blobs(SOURCE)
    after = _blobs(SOURCE.replace(b"self._size = value", b"self._size = int(value)"))
    assert before["Outer.size"] != after["Outer.size"]


def test_non_utf8_source_with_a_coding_cookie() -> None:
    source = "# -*- coding: latin-1 -*-\ndef caf\u00e9():\n    return '\u00e9'\n".encode("latin-1")
    assert _blobs(source) == {
        "caf\u00e9": blob_id("def caf\u00e9():\n    return '\u00e9'".encode())
    }


def test_crlf_line_endings_are_kept_in_the_text() -> None:
    source = b"def f():\r\n    return 1\r\n"
    assert _blobs(source)["f"] == blob_id(b"def f():\r\n    return 1")


@pytest.mark.parametrize("source", [b"def broken(:\n", b"x = 1\x00\n", b"\xff\xfe bad"])
def test_source_that_does_not_parse_is_a_symbol_error(source: bytes) -> None:
    with pytest.raises(SymbolError):
        definitions(source)


def test_python_paths_by_suffix() -> None:
    assert is_python_path("src/a.py")
    assert is_python_path("stubs/a.pyi")
    assert not is_python_path("src/a.pyc")


def test_a_parse_warning_without_a_line_names_none() -> None:
    """A NUL byte has no line: the warning says what is wrong, not "line None"."""
    with pytest.raises(SymbolError) as raised:
        definitions(b"x = 1\0\n")
    assert "None" not in str(raised.value)
    assert "null bytes" in str(raised.value)


@pytest.mark.parametrize(
    "source",
    [
        b"x = " + b"-" * 200_000 + b"1\n",  # MemoryError in CPython's parser
        b"x = a" + b".b" * 200_000 + b"\n",  # RecursionError building the tree
    ],
    ids=["unary", "attributes"],
)
def test_python_nested_too_deeply_to_parse_is_a_symbol_error_saying_so(source: bytes) -> None:
    with pytest.raises(SymbolError, match="nested too deeply for Python's parser"):
        definitions(source)
