"""The stores' layout holds what issue 20 made of it: one SQL store written
once over a dialect, and two database stores that keep only what truly
differs.  Read from the source, like ``test_layout``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from roteiro_memory.stores.sql import columns as cols

ROOT = Path(__file__).resolve().parents[1]
STORES = ROOT / "roteiro_memory" / "stores"
SQL = STORES / "sql"

MOST_SHARED = 40
"""How many substantive lines the two database stores' modules may share."""
MOST_LINES = 700
"""The longest a module of the stores may be."""


def _substantive(path: Path) -> list[str]:
    """The lines of ``path`` that say something: stripped, 25 characters or
    more, neither a comment nor an import."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if len(text) < 25 or text.startswith("#"):
            continue
        if text.startswith("import ") or (text.startswith("from ") and " import " in text):
            continue
        out.append(text)
    return out


def test_store_layout_the_database_stores_share_almost_nothing() -> None:
    """Whatever the SQLite and PostgreSQL stores would both say is said once,
    in the SQL store; a line standing verbatim in both is a copy."""
    sqlite = _substantive(STORES / "sqlite" / "store.py")
    postgres = set(_substantive(STORES / "postgres" / "store.py"))
    shared = [line for line in sqlite if line in postgres]
    assert len(shared) <= MOST_SHARED, "\n".join(shared)


def test_store_layout_the_substantive_line_count_sees_a_copy(tmp_path: Path) -> None:
    """A guard for the measure itself: a copied method counts, its imports
    and comments do not."""
    body = (
        "from roteiro_memory.store import Store\n"
        "# a comment long enough to be counted if it were code\n"
        "def cache_get(self, key: str) -> CacheEntry | None:\n"
        "    return None\n"
    )
    (tmp_path / "a.py").write_text(body, encoding="utf-8")
    assert _substantive(tmp_path / "a.py") == [
        "def cache_get(self, key: str) -> CacheEntry | None:"
    ]


@pytest.mark.parametrize(
    "path", sorted(STORES.rglob("*.py")), ids=lambda p: str(p.relative_to(STORES))
)
def test_store_layout_no_store_module_is_longer_than_700_lines(path: Path) -> None:
    assert len(path.read_text(encoding="utf-8").splitlines()) <= MOST_LINES


def _is_dialect(node: ast.AST) -> bool:
    """Whether ``node`` is the definition of a dialect, where marks are spelled."""
    return isinstance(node, ast.ClassDef) and (
        node.name == "Dialect"
        or any(isinstance(base, ast.Name) and base.id == "Dialect" for base in node.bases)
    )


def _strings(path: Path, *, dialects: bool = True) -> list[tuple[int, str]]:
    """Every string constant in ``path`` (f-strings' literal parts too) but
    the docstrings, with its line; without those of dialect classes when
    ``dialects`` is false."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    roots = [tree] if dialects else [n for n in tree.body if not _is_dialect(n)]
    nodes = [node for root in roots for node in ast.walk(root)]
    prose = {
        id(node.value)
        for node in nodes
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        (node.lineno, node.value)
        for node in nodes
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
    ]


_MARK = re.compile(r"%s|%\(\w+\)s|(?<![\w'])\?(?=[\s,)]|$)|(?<![:\w]):\w+")
"""A positional or named parameter mark of either engine."""


@pytest.mark.parametrize("path", sorted(SQL.glob("*.py")), ids=lambda p: p.name)
def test_store_layout_shared_sql_spells_no_parameter_mark(path: Path) -> None:
    """The SQL the stores share takes its marks from the dialect, so it runs
    on either engine (and on a third); only a dialect spells them."""
    found = [
        f"{path.name}:{line}: {text!r}"
        for line, text in _strings(path, dialects=False)
        if ("SELECT" in text or "UPDATE" in text or "INSERT" in text or "DELETE" in text)
        and _MARK.search(text.replace("::bytea", ""))
    ]
    assert not found, "\n".join(found)


def test_store_layout_the_mark_pattern_finds_each_engines_marks() -> None:
    for text in ("id = ?", "id IN (?, ?)", "id = %s", "id = %(id)s", "id = :id"):
        assert _MARK.search(text), text
    for text in ("datetime('now')", "x::bytea[]", "COALESCE(a, 0)", "?'"):
        assert not _MARK.search(text.replace("::bytea", "")), text
    dialects = SQL / "dialects.py"
    assert len(_strings(dialects, dialects=False)) < len(_strings(dialects))


_OUR_TABLES = "|".join(re.escape(table) for table in cols.TABLES)
_COLUMN_LIST = re.compile(rf"INSERT INTO (?:{_OUR_TABLES}) \(")


def test_store_layout_every_insert_takes_its_columns_from_the_column_lists() -> None:
    """Outside the migrations (released, never edited), no module spells an
    INSERT's column list of one of our tables: :func:`~.columns.insert` writes it."""
    found = [
        f"{path.relative_to(STORES)}:{line}: {text!r}"
        for path in sorted(STORES.rglob("*.py"))
        if path.name != "migrations.py"
        for line, text in _strings(path)
        if _COLUMN_LIST.search(text)
    ]
    assert not found, "\n".join(found)
