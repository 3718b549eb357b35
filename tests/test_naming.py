"""One parser of store names (``stores/naming.py``): the spellings each
place accepts, and the ones it refuses, in one table."""

from __future__ import annotations

from pathlib import Path

import pytest

from roteiro_memory.errors import InvalidStoreName
from roteiro_memory.stores.naming import StoreName, parse_store_name

URI = "postgresql://h/db?schema=s"

ACCEPTED = [
    # (backend, db) -> what they name
    (("sqlite", None), StoreName("sqlite")),
    (("sqlite", "memory.db"), StoreName("sqlite", "memory.db")),
    (("sqlite", "postgres:host=x"), StoreName("sqlite", "postgres:host=x")),  # a file name
    (("sqlite", "dir/postgresql:x"), StoreName("sqlite", "dir/postgresql:x")),
    (("memory", None), StoreName("memory")),
    (("postgres", URI), StoreName("postgres", URI)),
    (("postgres", "host=/tmp dbname=x"), StoreName("postgres", "host=/tmp dbname=x")),
    (("sqlite", URI), StoreName("postgres", URI)),
    (("sqlite", "postgres://h/db"), StoreName("postgres", "postgres://h/db")),
    ((URI, None), StoreName("postgres", URI)),
    ((URI, "ignored.db"), StoreName("postgres", URI)),
    (("postgres://h/db", None), StoreName("postgres", "postgres://h/db")),
    (("postgres:" + URI, None), StoreName("postgres", URI)),
    (("postgres:host=/tmp dbname=x", None), StoreName("postgres", "host=/tmp dbname=x")),
]

REFUSED = [
    (("postgres", None), "needs a DSN"),
    (("postgres:", None), "DSN is empty"),
    (("postgres:  ", None), "DSN is empty"),
    (("postgres:host=x", "other.db"), "already names the database"),
    (("memory", "memory.db"), "takes no --db"),
]

NOT_OURS = ["mypkg.store:open_store", "postgresql:host=x", "cmd:roteiro-memory protocol", "pg"]


@pytest.mark.parametrize(("given", "expected"), ACCEPTED, ids=[repr(g) for g, _ in ACCEPTED])
def test_naming_accepts(given: tuple[str, str | None], expected: StoreName) -> None:
    assert parse_store_name(*given) == expected


@pytest.mark.parametrize(("given", "problem"), REFUSED, ids=[repr(g) for g, _ in REFUSED])
def test_naming_refuses_naming_the_fix(given: tuple[str, str | None], problem: str) -> None:
    with pytest.raises(InvalidStoreName, match=problem):
        parse_store_name(*given)


@pytest.mark.parametrize("backend", NOT_OURS)
def test_naming_leaves_other_backends_to_their_owners(backend: str) -> None:
    assert parse_store_name(backend) is None


def test_naming_takes_a_path_object(tmp_path: Path) -> None:
    assert parse_store_name("sqlite", tmp_path / "m.db") == StoreName(
        "sqlite", str(tmp_path / "m.db")
    )


def test_naming_the_cli_and_the_suite_use_the_one_parser() -> None:
    """No other module spells out how a PostgreSQL name begins."""
    root = Path(__file__).resolve().parents[1] / "roteiro_memory"
    allowed = {root / "stores" / "postgres" / "dsn.py"}
    spelled = [
        path
        for path in root.rglob("*.py")
        if path not in allowed
        and any(
            f'"{prefix}' in line and "startswith" in line
            for line in path.read_text(encoding="utf-8").splitlines()
            for prefix in ("postgres:", "postgresql:", "postgres://", "postgresql://")
        )
    ]
    assert spelled == [], spelled
