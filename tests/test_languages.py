"""The key rule: a file's language, by its suffix, names its symbols' prefix."""

from __future__ import annotations

import pytest

from roteiro_memory.app.anchors import anchor_label
from roteiro_memory.repo.languages import (
    KEY_PREFIXES,
    LANGUAGES,
    described,
    file_key,
    foreign_prefix,
    language_of,
    symbol_key,
    symbol_prefix,
)


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("src/app/retry.py", "py:src/app/retry.py::Retry.run"),
        ("stubs/a.pyi", "py:stubs/a.pyi::Retry.run"),
        ("web/app.ts", "ts:web/app.ts::Retry.run"),
        ("web/app.d.ts", "ts:web/app.d.ts::Retry.run"),
        ("web/App.tsx", "ts:web/App.tsx::Retry.run"),
        ("web/app.js", "js:web/app.js::Retry.run"),
        ("web/app.jsx", "js:web/app.jsx::Retry.run"),
        ("web/app.mjs", "js:web/app.mjs::Retry.run"),
        ("web/app.cjs", "js:web/app.cjs::Retry.run"),
        ("cmd/main.go", "go:cmd/main.go::Retry.run"),
        ("src/lib.rs", "rs:src/lib.rs::Retry.run"),
        ("src/Retry.java", "java:src/Retry.java::Retry.run"),
    ],
)
def test_symbol_keys_take_the_prefix_of_the_files_language(path: str, key: str) -> None:
    assert symbol_key(path, "Retry.run") == key
    assert key.startswith(symbol_prefix(path))
    assert anchor_label(key) == f"{path}::Retry.run"


@pytest.mark.parametrize("path", ["README.md", "a.pyc", "Makefile", "src.ts/notes", "x.c", "go"])
def test_a_file_of_no_language_with_symbols_has_no_symbol_key(path: str) -> None:
    assert language_of(path) is None
    with pytest.raises(ValueError, match="not a file of a language with symbols"):
        symbol_key(path, "f")


def test_every_suffix_belongs_to_one_language() -> None:
    suffixes = [suffix for language in LANGUAGES for suffix in language.suffixes]
    assert len(suffixes) == len(set(suffixes))
    prefixes = [language.prefix for language in LANGUAGES]
    assert len(prefixes) == len(set(prefixes))
    assert all(prefix.endswith(":") for prefix in KEY_PREFIXES)


def test_every_language_but_python_names_a_grammar_for_each_suffix() -> None:
    for language in LANGUAGES:
        if language.name == "Python":
            assert language.grammars == {}
        else:
            assert set(language.grammars) == set(language.suffixes), language
            assert language.package.startswith("tree-sitter-")


def test_an_anchor_is_shown_in_the_form_anchor_takes() -> None:
    assert anchor_label(file_key("src/a.go")) == "src/a.go"
    assert anchor_label("doc:guide") == "doc:guide"
    assert anchor_label("ts:src/a.py::f") == "ts:src/a.py::f"  # not the file's language
    assert "TypeScript (.ts, .tsx, .mts, .cts)" in described()


@pytest.mark.parametrize(
    ("key", "foreign"),
    [
        ("py:web/app.ts::render", ("web/app.ts", "render", "TypeScript", "Python")),
        ("java:svc/cart.go::Cart.Add", ("svc/cart.go", "Cart.Add", "Go", "Java")),
        ("ts:web/app.ts::render", None),
        ("ts:web/a::b.ts::render", None),  # f of the file a::b.ts
        ("py:a.ts::b.py::f", None),  # f of the file a.ts::b.py
        ("py:tools/run::main", None),  # a path of no language: another tool's key
        ("file:web/app.ts", None),
        ("doc:guide", None),
    ],
)
def test_a_symbol_key_is_foreign_only_when_no_split_gives_a_file_its_prefix_fits(
    key: str, foreign: tuple[str, str, str, str] | None
) -> None:
    found = foreign_prefix(key)
    named = None if found is None else (found[0], found[1], found[2].name, found[3].name)
    assert named == foreign
