"""The durability entries against the reference, through ``cmd:``, and against
servers that lose writes.

The reference passes every entry over SQLite and over PostgreSQL; the
``private-copy`` mutant (lost updates between instances) fails every shared
entry and passes the crash ones, the ``stale-reads`` mutant (loses nothing,
but its readers lag) fails every shared entry, the ``write-behind`` mutant
(answers before it saves) fails every crash entry, and the
``torn-supersession`` mutant (saves a successor before its predecessor's
pointer) fails the crash entry with supersessions, and the
``last-answered-twice`` mutant (answers an instance's last request twice)
fails every entry.  Each passing run's figures are
printed and kept as the test's ``durability`` property.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pg_server
import pytest
from wire import server_argv

from roteiro_memory.suite.drivers import SubprocessBackend, resolve_backend
from roteiro_memory.suite.durability import ENTRIES, DurabilitySpec, run_durability

MUTANTS = Path(__file__).with_name("durability_mutants.py")
SHARED = [e for e in ENTRIES if e.capability == "shared"]
CRASH = [e for e in ENTRIES if e.capability == "crash"]


def _ids(entries: list[DurabilitySpec]) -> list[str]:
    return [e.id for e in entries]


def _mutant(mode: str) -> SubprocessBackend:
    return SubprocessBackend([sys.executable, str(MUTANTS), mode])


def _passes(
    entry: DurabilitySpec, backend: SubprocessBackend, record: Callable[[str, object], None]
) -> None:
    outcome = run_durability(entry, backend)
    assert outcome.status == "passed", outcome.message + (outcome.stderr or "")
    print(f"{entry.id}: {outcome.message}")
    record("durability", outcome.figures.to_json())
    figures = outcome.figures
    assert figures.present == figures.acknowledged + figures.landed
    if entry.capability == "shared":
        assert figures.writers == entry.writers
        assert figures.readers == entry.readers
        assert figures.operations == entry.writers * entry.operations
        assert figures.reads == entry.readers * entry.operations
    else:
        assert figures.kills == entry.kills
        assert figures.operations == entry.operations


@pytest.fixture
def postgres_server() -> Iterator[SubprocessBackend]:
    """The reference server over a fresh schema of the test server; the schemas
    made for the stores the entries name are dropped after."""
    dsn = pg_server.fresh_store_dsn()
    try:
        yield SubprocessBackend(server_argv(f"postgres:{dsn}"))
    finally:
        pg_server.drop_named_schemas(dsn)
        pg_server.drop_schema(dsn)


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(list(ENTRIES)))
def test_durability_reference_sqlite_passes(
    entry: DurabilitySpec, record_property: Callable[[str, object], None]
) -> None:
    _passes(entry, SubprocessBackend(server_argv("sqlite")), record_property)


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(list(ENTRIES)))
def test_durability_reference_postgres_passes(
    entry: DurabilitySpec,
    postgres_server: SubprocessBackend,
    record_property: Callable[[str, object], None],
) -> None:
    _passes(entry, postgres_server, record_property)


@pytest.mark.parametrize("entry", SHARED, ids=_ids(SHARED))
def test_durability_lost_update_mutant_fails_shared(entry: DurabilitySpec) -> None:
    outcome = run_durability(entry, _mutant("private-copy"))
    assert outcome.status == "failed"
    assert "handed out twice" in outcome.message or "not in the listing" in outcome.message


@pytest.mark.parametrize("entry", CRASH, ids=_ids(CRASH))
def test_durability_lost_update_mutant_survives_kills(entry: DurabilitySpec) -> None:
    """It saves before it answers, so the crash entries rightly pass: they
    judge what a kill loses, not what sharing does."""
    outcome = run_durability(entry, _mutant("private-copy"))
    assert outcome.status == "passed", outcome.message


@pytest.mark.parametrize("entry", SHARED, ids=_ids(SHARED))
def test_durability_stale_reads_mutant_fails_shared_though_nothing_is_lost(
    entry: DurabilitySpec,
) -> None:
    """Every write is there; only the serial-order check sees the readers lag."""
    outcome = run_durability(entry, _mutant("stale-reads"))
    assert outcome.status == "failed"
    assert "no serial order of the acknowledged operations explains" in outcome.message
    assert outcome.figures.present == outcome.figures.acknowledged


@pytest.mark.parametrize("entry", CRASH, ids=_ids(CRASH))
def test_durability_write_behind_mutant_fails_crash(entry: DurabilitySpec) -> None:
    outcome = run_durability(entry, _mutant("write-behind"))
    assert outcome.status == "failed"
    assert "acknowledged writes are not there" in outcome.message


def test_durability_torn_supersession_mutant_fails_as_half_applied() -> None:
    """Its records survive; only the supersession pointer may lag a kill."""
    records, supersession = CRASH
    assert run_durability(records, _mutant("torn-supersession")).status == "passed"
    outcome = run_durability(supersession, _mutant("torn-supersession"))
    assert outcome.status == "failed"
    assert "half applied" in outcome.message


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids(list(ENTRIES)))
def test_durability_a_last_request_answered_twice_fails_the_entry(entry: DurabilitySpec) -> None:
    """[P-wire-response]: an entry ends each instance's part with the check
    every case ends with, so a second answer to an instance's last request,
    which no later request of its would read, fails the entry -- saying it
    was found after the entry's last op on that instance, not after a case's
    last step."""
    outcome = run_durability(entry, _mutant("last-answered-twice"))
    assert outcome.status == "failed", outcome.message
    op = "memory.list" if entry.capability == "shared" else "memory.record"
    which = "writer 0" if entry.capability == "shared" else "the instance it killed"
    assert (
        f"the backend failed: after the entry's last op on {which}, the hello sent to find a "
        "request answered twice: the program answered request "
    ) in outcome.message
    assert f"({op}) a second time" in outcome.message
    assert "the case's last step" not in outcome.message
    assert "[P-wire-response]" in outcome.message


def test_a_slow_backend_is_sent_every_write_of_an_entry_and_fails_on_its_flaw() -> None:
    """An entry is bounded in operations, not in seconds.  It used to stop at
    15 s and pass on what it had seen, so a backend whose flaw shows at a
    crash stream's last write passed on a machine slow enough (a loaded one
    took 20.7 s for the 40 writes): a verdict is a fact about the backend,
    never about the machine's speed.  This one waits 0.4 s a write."""
    records, _ = CRASH
    slow = SubprocessBackend([sys.executable, str(MUTANTS), "last-answered-twice", "0.4"])
    outcome = run_durability(records, slow)
    assert outcome.figures.operations == records.operations
    assert outcome.status == "failed", outcome.message
    assert "(memory.record) a second time" in outcome.message


def test_protocol_says_an_entry_is_bounded_in_operations_never_in_seconds() -> None:
    """PROTOCOL is what a backend's author reads: since an entry stopped
    having a bound in seconds, it said the entries were bounded in both."""
    protocol = Path(__file__).parents[1] / "conformance" / "PROTOCOL.md"
    text = " ".join(protocol.read_text(encoding="utf-8").split())
    assert "bounded in operations and seconds" not in text
    assert "bounded in operations, never in seconds" in text


def test_durability_in_process_backend_is_skipped_naming_the_capability() -> None:
    outcome = run_durability(ENTRIES[0], resolve_backend("sqlite"))
    assert outcome.status == "skipped"
    assert "'shared'" in outcome.message
    assert "cmd:" in outcome.message


def test_durability_server_without_the_capability_is_skipped() -> None:
    """The memory store cannot be shared: its server ignores the variable and
    does not declare the capabilities."""
    outcome = run_durability(CRASH[0], SubprocessBackend(server_argv("memory")))
    assert outcome.status == "skipped"
    assert "does not declare 'crash'" in outcome.message
    assert "ROTEIRO_CONFORMANCE_STORE" in outcome.message


def test_durability_cmd_spec_through_resolve_backend() -> None:
    spec = "cmd:" + shlex.join(server_argv("sqlite"))
    outcome = run_durability(CRASH[0], resolve_backend(spec))
    assert outcome.status == "passed", outcome.message
