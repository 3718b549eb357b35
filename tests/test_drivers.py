"""Resolving and driving backends: opening stores by name, and what hello may declare."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from roteiro_memory import SQLiteStore, open_store
from roteiro_memory.suite.cases import load_cases
from roteiro_memory.suite.drivers import InProcessBackend, SubprocessBackend
from roteiro_memory.suite.runner import BackendFailure, OpError, run_case


class _Declares:
    """A caller whose hello declares the given capabilities and nothing works."""

    def __init__(self, *capabilities: str) -> None:
        self.capabilities = list(capabilities)

    def call(self, op: str, args: Any = None) -> Any:
        if op == "hello":
            return {"protocol": "roteiro.conformance/v1", "capabilities": self.capabilities}
        return None


def test_an_unknown_capability_in_hello_is_an_error_naming_it() -> None:
    backend = InProcessBackend(_Declares("episodic", "episodc", "teleport"), "typo")
    with pytest.raises(BackendFailure) as caught:
        backend.capabilities()
    message = str(caught.value)
    assert "'episodc' (did you mean 'episodic'?)" in message
    assert "'teleport'" in message
    assert "PROTOCOL defines episodic, cache, graph, snapshot, budget, durable" in message


def test_a_misspelt_capability_fails_every_case_instead_of_skipping_them() -> None:
    """PROTOCOL [P-capabilities]: a typo would otherwise skip every case needing it."""
    backend = InProcessBackend(_Declares("episodic", "cahce"), "typo")
    outcomes = [run_case(case, backend) for case in load_cases()[:20]]
    assert {o.status for o in outcomes} == {"failed"}
    assert "did you mean 'cache'?" in outcomes[0].message


def _server() -> list[str]:
    return [sys.executable, "-m", "roteiro_memory", "protocol", "--backend", "memory"]


def test_the_wire_driver_sends_nan_and_lone_surrogates_for_the_program_to_refuse() -> None:
    backend = SubprocessBackend(_server())
    try:
        backend.call("reset", {})
        for args in (
            {"kind": "lesson", "body": "x", "confidence": float("nan")},
            {"kind": "lesson", "body": "half \ud800"},
        ):
            with pytest.raises(OpError) as caught:
                backend.call("memory.record", args)
            assert caught.value.kind == "BadRequest"
        assert backend.call("memory.list", {})["live"] == 0
        assert backend.restarts == 0
    finally:
        backend.close()


def test_a_readable_request_answered_with_a_null_id_breaks_the_protocol(tmp_path: Path) -> None:
    """Only a request that was not JSON may be answered with "id": null."""
    program = tmp_path / "null_ids.py"
    program.write_text(
        "import sys\n"
        "for line in sys.stdin:\n"
        '    print(\'{"id": null, "ok": false, "error": {"kind": "BadRequest", "message": "no"}}\','
        " flush=True)\n",
        encoding="utf-8",
    )
    backend = SubprocessBackend([sys.executable, str(program)])
    try:
        with pytest.raises(BackendFailure, match="does not echo the request's id"):
            backend.call("hello", {})
        with pytest.raises(OpError):
            backend.call("reset", {"x": float("nan")})
    finally:
        backend.close()


def test_a_temporary_sqlite_store_leaves_nothing_behind() -> None:
    """``open_store("sqlite")`` with no file works in a scratch folder that
    closing the store removes, so protocol servers and suites leak nothing."""
    store = open_store("sqlite")
    assert isinstance(store, SQLiteStore)
    store.record("lesson", "kept while open")
    folder = store.path.parent
    assert folder.is_dir()
    store.close()
    assert not folder.exists()


def test_a_spec_name_argument_goes_to_the_factory_registered_as_name() -> None:
    """``NAME:ARGUMENT`` calls NAME's factory with ARGUMENT; a URI goes whole
    to its scheme's; a bare name calls it with nothing."""
    from roteiro_memory.suite.drivers import resolve_backend

    given: list[tuple[str, ...]] = []

    def factory(*argument: str) -> object:
        given.append(argument)
        return _Declares("episodic")

    factories = {"mine": factory}
    for spec in ("mine", "mine:some place", "mine://host/db?x=1"):
        resolve_backend(spec, factories).close()
    assert given == [(), ("some place",), ("mine://host/db?x=1",)]


def test_a_spec_argument_for_a_backend_that_takes_none_is_refused_naming_it() -> None:
    from roteiro_memory.suite.drivers import resolve_backend
    from roteiro_memory.suite.errors import BackendSpecError

    with pytest.raises(BackendSpecError, match="backend 'sqlite' takes no argument"):
        resolve_backend("sqlite:x.db")


def test_a_malformed_postgres_spec_is_the_specs_fault_in_one_line() -> None:
    """Refused by the store package's own parser, before any connection."""
    from roteiro_memory.suite.drivers import resolve_backend
    from roteiro_memory.suite.errors import BackendSpecError

    with pytest.raises(BackendSpecError, match="the DSN is empty") as caught:
        resolve_backend("postgres:")
    assert "\n" not in str(caught.value)
    with pytest.raises(BackendSpecError, match="malformed"):
        resolve_backend("postgresql://%zz@[::1")


def test_the_callers_store_variable_never_reaches_the_main_backend(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``ROTEIRO_CONFORMANCE_STORE`` in the caller's environment names no store
    of the main ``cmd:`` backend: inherited, it would fill that store on one
    run and have the next refuse it as holding data it did not create."""
    named = tmp_path / "left-over.db"
    monkeypatch.setenv("ROTEIRO_CONFORMANCE_STORE", str(named))
    argv = [sys.executable, "-m", "roteiro_memory", "protocol", "--backend", "sqlite"]
    for _ in range(2):
        backend = SubprocessBackend(argv)
        try:
            assert backend.call("memory.list", {})["live"] == 0
            backend.call("memory.record", {"kind": "lesson", "body": "kept nowhere"})
        finally:
            backend.close()
    assert not named.exists()
    durable = SubprocessBackend(argv, env={"ROTEIRO_CONFORMANCE_STORE": str(named)})
    try:
        durable.call("memory.record", {"kind": "lesson", "body": "kept"})
    finally:
        durable.close()
    assert named.exists()


SECRET = "S3cr3tPw!"
DSN = f"postgresql://alice:{SECRET}@127.0.0.1:1/postgres"
SHOWN = "postgresql://alice:<password>@127.0.0.1:1/postgres"


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        (f"postgres:{DSN}", f"postgres:{SHOWN}"),
        (DSN, SHOWN),
        ("postgres:host=h password='a b' dbname=d", "postgres:host=h password=<password> dbname=d"),
        (
            f"cmd:roteiro-memory protocol --backend 'postgres:{DSN}'",
            f"cmd:roteiro-memory protocol --backend 'postgres:{SHOWN}'",
        ),
        (f"cmd:my-store --db={DSN}", f"cmd:my-store --db={SHOWN}"),
        (
            "cmd:my-store --db postgresql://alice:S3cr\\ et@h/db",
            "cmd:my-store --db 'postgresql://alice:<password>@h/db'",
        ),
        ("cmd:env PGPASSWORD=S3cr3t ./my-store", "cmd:env PGPASSWORD=<password> ./my-store"),
        ("cmd:env 'DB_Password=a b=c' my-store", "cmd:env 'DB_Password=<password>' my-store"),
        ("cmd:env PGPASSFILE=/p ./my-store", "cmd:env PGPASSFILE=/p ./my-store"),
        ("cmd:./my-store --protocol", "cmd:./my-store --protocol"),
        ("tests.mutants:SignedIds", "tests.mutants:SignedIds"),
    ],
)
def test_a_backend_spec_is_shown_with_its_dsn_password_withheld(spec: str, shown: str) -> None:
    from roteiro_memory.suite.drivers import shown_spec

    assert shown_spec(spec) == shown
    assert shown_spec(shown) == shown


def test_a_password_a_command_line_sets_is_withheld_from_what_the_backend_says() -> None:
    from roteiro_memory.suite.drivers import withheld

    spec = "cmd:env 'PGPASSWORD=two words' DB_PASSWORD=S3cr3t ./my-store"
    said = "connecting with two words and S3cr3t as the password"
    assert withheld(said, spec) == ("connecting with <password> and <password> as the password")


def test_a_backend_is_named_and_refused_without_its_dsn_password() -> None:
    from roteiro_memory.stores.model import ModelStore
    from roteiro_memory.suite.drivers import resolve_backend
    from roteiro_memory.suite.errors import BackendSpecError

    assert InProcessBackend(ModelStore(), f"postgres:{DSN}").name == f"postgres:{SHOWN}"
    program = SubprocessBackend(["my-store", "--backend", f"postgres:{DSN}"])
    assert program.name == f"cmd:my-store --backend 'postgres:{SHOWN}'"
    for spec in (f"nosuch:{DSN}", f"os:{DSN}", f"memory:{DSN}"):
        with pytest.raises(BackendSpecError) as refused:
            resolve_backend(spec)
        assert SECRET not in str(refused.value)
        assert SHOWN in str(refused.value)
