"""The ``shared`` and ``crash`` entries: several instances on one store, and kills.

Neither capability has ops of its own.  The suite checks them by starting the
``cmd:`` program itself, with ``ROTEIRO_CONFORMANCE_STORE`` naming a store in a
fresh folder (PROTOCOL "Several instances on one store, and crashes"):

* a **shared** entry starts ``writers + readers`` instances on one store,
  drives them from one thread each, and checks with
  :func:`~roteiro_memory.suite.histories.check_history` that every
  acknowledged write is present once, under an id of its own, and that one
  serial order of the acknowledged operations explains every answer -- the
  final listings of every instance and of a fresh one included;
* a **crash** entry drives one instance through a stream of records and
  supersessions, SIGKILLs it at seeded points -- between two writes, or while
  one is unanswered -- and after each restart checks with
  :func:`~roteiro_memory.suite.histories.check_crash_state` that every
  acknowledged write survived and nothing is half applied.

Every choice (bodies, supersession targets, kill points, delays) comes from the
entry's seed, and each entry is bounded in operations, each request by the
suite's deadline; an entry sends every operation however long its backend
takes, so a slow machine never cuts a run short of the write that would show
a flaw.  A correct backend passes every run, one that loses writes fails
every run.

This module does not import pytest.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roteiro_memory.suite.drivers import SubprocessBackend
from roteiro_memory.suite.errors import BackendFailure, OpError
from roteiro_memory.suite.histories import (
    Event,
    Violation,
    Write,
    check_crash_state,
    check_history,
    listing_view,
    order_writes,
)
from roteiro_memory.suite.runner import Backend, Status, end_of_case
from roteiro_memory.suite.sequences import reference_backend
from roteiro_memory.suite.vocabulary import STORE_ENV

__all__ = [
    "ENTRIES",
    "STORE_ENV",
    "DurabilityOutcome",
    "DurabilitySpec",
    "Figures",
    "run_durability",
]

JSON = Any

KINDS = ("lesson", "decision", "pattern")


@dataclass(frozen=True)
class DurabilitySpec:
    """One entry: what it runs, against which invariant, and its bounds.

    ``operations`` is the writes per writer (``shared``; each reader makes as
    many reads) or the writes of the stream (``crash``); ``supersede`` the
    share of writes that supersede an earlier record.
    """

    id: str
    title: str
    invariant: str
    capability: str
    operations: int
    supersede: float
    seed: int
    writers: int = 1
    readers: int = 0
    kills: int = 0
    rules: tuple[str, ...] = ()
    """The PROTOCOL.md rules the entry checks, by tag."""

    @property
    def requires(self) -> tuple[str, ...]:
        return (self.capability, "episodic")


ENTRIES: tuple[DurabilitySpec, ...] = (
    DurabilitySpec(
        "durability-shared-records",
        "Concurrent writers on one store: every acknowledged record is there, once",
        "shared-writes-all-present",
        "shared",
        operations=25,
        supersede=0.0,
        seed=1,
        writers=4,
        readers=2,
        rules=("P-store-env", "P-acknowledged", "P-shared"),
    ),
    DurabilitySpec(
        "durability-shared-supersession",
        "Writers superseding each other's records and readers listing them are one serial order",
        "shared-serializable",
        "shared",
        operations=25,
        supersede=0.5,
        seed=2,
        writers=4,
        readers=2,
        rules=("P-store-env", "P-acknowledged", "P-shared"),
    ),
    DurabilitySpec(
        "durability-crash-records",
        "Records acknowledged before a SIGKILL are there after the restart",
        "crash-writes-survive",
        "crash",
        operations=40,
        supersede=0.0,
        seed=3,
        kills=5,
        rules=("P-store-env", "P-acknowledged", "P-crash"),
    ),
    DurabilitySpec(
        "durability-crash-supersession",
        "A supersession cut short by a SIGKILL is there whole or not at all",
        "crash-nothing-half-applied",
        "crash",
        operations=40,
        supersede=0.5,
        seed=4,
        kills=6,
        rules=("P-store-env", "P-acknowledged", "P-crash"),
    ),
)
"""The built-in entries; the plugin collects one item each."""


@dataclass
class Figures:
    """What one run did, for the report."""

    writers: int = 0
    readers: int = 0
    instances: int = 0
    operations: int = 0
    acknowledged: int = 0
    refused: int = 0
    reads: int = 0
    kills: int = 0
    cut_short: int = 0
    landed: int = 0
    present: int = 0
    seconds: float = 0.0

    def describe(self) -> str:
        parts = [f"{self.writers} writer(s)"]
        if self.readers:
            parts.append(f"{self.readers} reader(s)")
        parts.append(f"{self.instances} instance(s) started")
        parts.append(f"{self.operations} writes sent")
        if self.reads:
            parts.append(f"{self.reads} reads")
        if self.kills:
            parts.append(
                f"{self.kills} SIGKILLs ({self.cut_short} with a write unanswered, "
                f"{self.landed} of those landed whole)"
            )
        parts.append(f"{self.acknowledged} acknowledged")
        if self.refused:
            parts.append(f"{self.refused} refused")
        parts.append(f"{self.present} present at the end")
        return ", ".join(parts) + f"; {self.seconds:.1f}s"

    def to_json(self) -> dict[str, JSON]:
        return {k: round(v, 3) if isinstance(v, float) else v for k, v in vars(self).items()}


@dataclass(frozen=True)
class DurabilityOutcome:
    """The verdict on one entry: passed, failed or skipped, why, and the figures."""

    status: Status
    message: str
    figures: Figures = field(default_factory=Figures)
    stderr: str | None = None
    duration: float = 0.0


def run_durability(spec: DurabilitySpec, backend: Backend) -> DurabilityOutcome:
    """Run one entry against the program ``backend`` starts (a ``cmd:``
    backend); skipped with the reason for any other, or when the program does
    not declare the capability once its store is named."""
    if not isinstance(backend, SubprocessBackend):
        return DurabilityOutcome(
            "skipped",
            f"{spec.capability!r} is checked by starting instances of a cmd: backend; "
            f"{backend.name!r} is not one",
        )
    started = time.monotonic()
    folder = Path(tempfile.mkdtemp(prefix="roteiro-durability-"))
    run = _Run(spec, backend, str(folder / "store"))
    try:
        status, message = run.go()
    finally:
        run.close()
        shutil.rmtree(folder, ignore_errors=True)
    run.figures.seconds = time.monotonic() - started
    if status == "passed":
        message = run.figures.describe()
    return DurabilityOutcome(status, message, run.figures, run.stderr, duration=run.figures.seconds)


class _Run:
    """The instances of one entry's run, and what they answered."""

    def __init__(self, spec: DurabilitySpec, like: SubprocessBackend, store: str) -> None:
        self.spec = spec
        self.like = like
        self.store = store
        self.figures = Figures(writers=spec.writers, readers=spec.readers)
        self.instances: list[SubprocessBackend] = []
        self.stderr: str | None = None
        self.started = time.monotonic()

    def start(self) -> SubprocessBackend:
        instance = SubprocessBackend(
            list(self.like.argv), timeout=self.like.timeout, env={STORE_ENV: self.store}
        )
        self.instances.append(instance)
        self.figures.instances += 1
        return instance

    def close(self) -> None:
        for instance in self.instances:
            instance.close()

    def finish(self, instance: SubprocessBackend, which: str) -> None:
        """End ``instance``'s part as every case ends (:func:`end_of_case`:
        a request it answered twice fails the entry, saying after the
        entry's last op on ``which`` instance), then close it."""
        failure = end_of_case(instance, f"the entry's last op on {which}")
        if failure is not None:
            raise failure
        instance.close()

    def go(self) -> tuple[Status, str]:
        first = self.start()
        try:
            declared = first.capabilities()
            missing = [c for c in self.spec.requires if c not in declared]
            if missing:
                return "skipped", (
                    f"the backend does not declare {', '.join(repr(m) for m in missing)} when "
                    f"{STORE_ENV} names its store (declared: {', '.join(sorted(declared))})"
                )
            first.call("reset", {})
            if self.spec.capability == "shared":
                self.shared(first)
            else:
                self.crash(first)
        except Violation as violation:
            self.figures.seconds = time.monotonic() - self.started
            return "failed", f"{self.spec.id}: {violation}\n({self.figures.describe()})"
        except (BackendFailure, OpError) as error:
            self.stderr = getattr(error, "stderr", None)
            return "failed", f"{self.spec.id}: the backend failed: {error}"
        return "passed", ""

    # --- shared ----------------------------------------------------------------

    def shared(self, first: SubprocessBackend) -> None:
        spec = self.spec
        writers = [first, *(self.start() for _ in range(spec.writers - 1))]
        readers = [self.start() for _ in range(spec.readers)]
        _start_all([*writers, *readers])
        history: list[Event] = []
        acknowledged: list[int] = []
        lock = threading.Lock()
        failures: list[BaseException] = []
        go = threading.Barrier(len(writers) + len(readers))

        def call(name: str, instance: SubprocessBackend, op: str, args: dict[str, JSON]) -> Event:
            invoked = time.monotonic()
            try:
                result, error = instance.call(op, args), None
            except OpError as refused:
                result, error = None, refused.kind
            event = Event(name, op, args, invoked, time.monotonic(), result, error)
            with lock:
                history.append(event)
            return event

        def write(index: int, instance: SubprocessBackend) -> None:
            rng = random.Random(spec.seed * 1000 + index)
            for n in range(spec.operations):
                args: dict[str, JSON] = {"kind": rng.choice(KINDS), "body": f"w{index}-{n}"}
                with lock:
                    recent = acknowledged[-4:]
                if recent and rng.random() < spec.supersede:
                    args["supersedes"] = rng.choice(recent)
                event = call(f"writer {index}", instance, "memory.record", args)
                with lock:
                    self.figures.operations += 1
                    if event.wrote:
                        self.figures.acknowledged += 1
                        acknowledged.append(_id_of(event.result, args))
                    else:
                        self.figures.refused += 1

        def read(index: int, instance: SubprocessBackend) -> None:
            rng = random.Random(spec.seed * 1000 + 500 + index)
            for n in range(spec.operations):
                with lock:
                    known = acknowledged[-8:]
                if known and n % 3 == 2:
                    op, args = "memory.get", {"id": rng.choice(known)}
                else:
                    op, args = "memory.list", {"include_superseded": n % 3 == 1}
                call(f"reader {index}", instance, op, args)
                with lock:
                    self.figures.reads += 1

        def thread(
            job: Callable[[int, SubprocessBackend], None], index: int, instance: SubprocessBackend
        ) -> threading.Thread:
            def body() -> None:
                try:
                    go.wait()
                    job(index, instance)
                except BaseException as error:  # reported by the main thread
                    failures.append(error)
                    go.abort()

            return threading.Thread(target=body, daemon=True)

        threads = [thread(write, i, w) for i, w in enumerate(writers)]
        threads += [thread(read, i, r) for i, r in enumerate(readers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if failures:
            raise failures[0]
        everything = {"include_superseded": True}
        for index, instance in enumerate([*writers, *readers]):
            call(f"instance {index}, at the end", instance, "memory.list", everything)
        for index, instance in enumerate(writers):
            self.finish(instance, f"writer {index}")
        for index, instance in enumerate(readers):
            self.finish(instance, f"reader {index}")
        fresh = self.start()
        final = call("a fresh instance", fresh, "memory.list", everything)
        self.finish(fresh, "a fresh instance")
        present = {(r[0], r[3]) for r in listing_view(final.result)[0]}
        writes = order_writes(history)  # ids handed out twice fail here
        lost = [w for w in writes if (w.result["id"], w.args["body"]) not in present]
        self.figures.present = len(writes) - len(lost)
        if lost:
            shown = ", ".join(f"id {w.result['id']} ({w.args['body']!r})" for w in lost[:8])
            raise Violation(
                f"{len(lost)} of {len(writes)} acknowledged records are not in the listing "
                f"of a fresh instance on the store: {shown}"
            )
        check_history(history, reference_backend())

    # --- crash ------------------------------------------------------------------

    def crash(self, instance: SubprocessBackend) -> None:
        spec = self.spec
        rng = random.Random(spec.seed)
        points = sorted(rng.sample(range(1, spec.operations), spec.kills))
        modes = {p: rng.random() < 0.5 for p in points}  # True: kill with the write unanswered
        delays = {p: rng.uniform(0.0, 0.00015) for p in points}
        acknowledged: list[Write] = []
        live: list[int] = []
        for n in range(spec.operations):
            args: dict[str, JSON] = {"kind": rng.choice(KINDS), "body": f"s{spec.seed}-{n}"}
            if live and rng.random() < spec.supersede:
                args["supersedes"] = rng.choice(live[-6:])
            self.figures.operations += 1
            if n in points and modes[n]:
                answered = self._cut_short(instance, args, delays[n])
            else:
                answered = _id_of(instance.call("memory.record", args), args)
            if answered is not None:
                acknowledged.append(Write(args, answered))
                self.figures.acknowledged += 1
                _supersede(live, args, answered)
            if n not in points:
                continue
            if not modes[n]:
                instance.kill()
            self.figures.kills += 1
            self.figures.instances += 1  # the next request starts it again
            unanswered = None if answered is not None else Write(args)
            landed = check_crash_state(
                instance.call("memory.list", {"include_superseded": True}),
                acknowledged,
                unanswered,
                reference_backend(),
            )
            if landed is not None:
                # A write whose answer was lost stands as if acknowledged.
                acknowledged.append(landed)
                assert landed.id is not None
                _supersede(live, args, landed.id)
                self.figures.landed += 1
        self.finish(instance, "the instance it killed")
        fresh = self.start()
        check_crash_state(
            fresh.call("memory.list", {"include_superseded": True}),
            acknowledged,
            None,
            reference_backend(),
        )
        self.finish(fresh, "a fresh instance")
        self.figures.present = len(acknowledged)

    def _cut_short(
        self, instance: SubprocessBackend, args: dict[str, JSON], delay: float
    ) -> int | None:
        """Send one write and SIGKILL the program ``delay`` seconds after it is
        sent; its id if the answer was read first, else None."""
        pid = instance.pid
        sent = threading.Event()

        def kill() -> None:
            sent.wait()
            due = time.monotonic() + delay
            while time.monotonic() < due:
                # A sleep is coarser than the round trip of one write; this only
                # lets the sending thread have the interpreter meanwhile.
                time.sleep(0)
            # A program that had already exited fails the write on its own.
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

        killer = threading.Thread(target=kill, daemon=True)
        killer.start()
        sent.set()
        try:
            answered: int | None = _id_of(instance.call("memory.record", args), args)
        except BackendFailure:
            answered = None  # killed before it answered: the write is not acknowledged
        killer.join()
        if answered is not None:
            instance.kill()  # the answer beat the signal: reap the program now
        else:
            self.figures.cut_short += 1
        return answered


def _id_of(result: JSON, args: dict[str, JSON]) -> int:
    """The id a ``memory.record`` answer gives, or :class:`Violation`."""
    got = result.get("id") if isinstance(result, dict) else None
    if not isinstance(got, int) or isinstance(got, bool):
        raise Violation(f"memory.record {args} answered {result!r}, not {{'id': n}}")
    return got


def _supersede(live: list[int], args: dict[str, JSON], new: int) -> None:
    target = args.get("supersedes")
    if target is not None and target in live:
        live.remove(target)
    live.append(new)


def _start_all(instances: list[SubprocessBackend]) -> None:
    """Start every instance (its first request, ``hello``) at once: a program's
    start-up is not what the entry measures."""
    failures: list[BaseException] = []

    def hello(instance: SubprocessBackend) -> None:
        try:
            instance.hello()
        except BaseException as error:  # re-raised below, in the caller's thread
            failures.append(error)

    threads = [threading.Thread(target=hello, args=(i,), daemon=True) for i in instances]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
