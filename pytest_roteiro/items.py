"""Case files as collectors and cases as items, with their failure rendering.

A failure is shown in the case's own terms -- case, step, op, expected,
actual -- by :meth:`CaseItem.repr_failure`; the verdict against the
known-failures file is the suite's (:func:`roteiro_memory.suite.report.judge`).
The engine is imported only when a case is collected or run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _pytest._code.code import ReprFileLocation, TerminalRepr
from _pytest._io import TerminalWriter

from pytest_roteiro.config import OUTCOME_KEY, STATE_KEY, RunState

if TYPE_CHECKING:
    from roteiro_memory.suite.cases import Case
    from roteiro_memory.suite.runner import Backend

__all__ = [
    "NODE_PREFIX",
    "CaseFailed",
    "CaseFile",
    "CaseItem",
    "CaseRepr",
    "backend",
    "marker",
    "settle",
    "tb_style",
]

NODE_PREFIX = "conformance"


def marker(prefix: str, name: str) -> str:
    """The marker of an invariant or capability: ``invariant_TAG`` with ``-`` as ``_``."""
    return f"{prefix}_{name.replace('-', '_')}"


class CaseFile(pytest.Collector):
    """One YAML case file; its items are its cases."""

    label = "conformance case file"
    """What the file is, as a collection error names it."""

    def __init__(self, *, source: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.source = source

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        from roteiro_memory.suite.cases import load_file

        state = self.config.stash[STATE_KEY]
        return [
            CaseItem.from_parent(self, name=case.id, case=case)
            for case in load_file(self.source, state.registry)
        ]

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str:
        from roteiro_memory.suite.errors import CaseFileError

        if isinstance(excinfo.value, CaseFileError):
            faults = "\n".join(str(fault) for fault in excinfo.value.every)
            return f"invalid {self.label}\n{faults}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.source, None, self.name


def tb_style(config: pytest.Config, style: Any = None) -> str:
    """The ``--tb`` style a failure is rendered in: ``line``, ``short`` or ``long``."""
    chosen = str(style or config.getoption("tbstyle", "auto"))
    return chosen if chosen in ("line", "short") else "long"


class CaseRepr(TerminalRepr):
    """A failure's block, with the one line pytest shows for it (``-ra``,
    ``--tb=line``) as its ``reprcrash``: the first mismatch, at the case's file
    and line.  Sent between xdist processes as its text, whose first line is
    that same headline."""

    def __init__(
        self, text: str, path: Path, line: int, headline: str, *, style: str = "long"
    ) -> None:
        self.text = text
        self.style = style
        self.reprcrash = ReprFileLocation(str(path), line, headline)

    def toterminal(self, tw: TerminalWriter) -> None:
        if self.style == "line":
            # pytest prints the reprcrash line after the block.
            return
        for line in self.text.splitlines():
            tw.line(line)

    def __str__(self) -> str:
        return self.text


class CaseFailed(Exception):
    """A case whose outcome is a failure; rendered by :meth:`CaseItem.repr_failure`
    (from the outcome when it carries no message)."""


def settle(state: RunState, entry: str, entry_id: str, status: str, message: str) -> None:
    """End the run of ``entry`` (``case`` or ``property``) ``entry_id`` as the
    suite judges its outcome: skipped, an expected failure, a failure, or (by
    returning) a pass."""
    from roteiro_memory.suite.report import judge

    verdict = judge(
        f"{entry} {entry_id}",
        status,
        message,
        state.known.get(entry_id),
        listed_in=state.config.known_failures,
    )
    if verdict.status == "skipped":
        pytest.skip(verdict.message or "")
    if verdict.status == "known-failing":
        pytest.xfail(verdict.message or "")
    if verdict.status == "failed":
        raise CaseFailed() if verdict.message is None else CaseFailed(verdict.message)


class CaseItem(pytest.Item):
    """One conformance case."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.add_marker("roteiro")
        self.add_marker(marker("invariant", case.invariant))
        state = self.config.stash[STATE_KEY]
        invariant = state.registry[case.invariant]
        capabilities = set(case.requires) | {invariant.capability}
        for capability in sorted(capabilities):
            self.add_marker(marker("capability", capability))
        self.user_properties.append(("invariant", case.invariant))

    def runtest(self) -> None:
        from roteiro_memory.suite.runner import run_case

        state = self.config.stash[STATE_KEY]
        outcome = run_case(self.case, backend(self.config, state))
        self.stash[OUTCOME_KEY] = outcome
        settle(state, "case", self.case.id, outcome.status, outcome.message)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | CaseRepr:
        from roteiro_memory.suite.errors import CaseFileError
        from roteiro_memory.suite.runner import format_outcome, headline

        if isinstance(excinfo.value, CaseFileError):
            return f"invalid case file\n{excinfo.value}"
        if isinstance(excinfo.value, CaseFailed):
            tb = tb_style(self.config, style)
            if excinfo.value.args:
                message = str(excinfo.value.args[0])
                first = message.splitlines()[0] if message else "failed"
                return CaseRepr(message, self.case.file, self.case.line, first, style=tb)
            state = self.config.stash[STATE_KEY]
            clause = f"{self.case.clause} [{state.registry[self.case.invariant].clause}]"
            outcome = self.stash[OUTCOME_KEY]
            text = format_outcome(self.case, outcome, clause=clause, style=tb)
            line = outcome.line or self.case.line
            return CaseRepr(text, self.case.file, line, headline(outcome), style=tb)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.case.file, self.case.line - 1, f"{self.case.id}: {self.case.title}"


def backend(config: pytest.Config, state: RunState) -> Backend:
    """The run's backend, made on first use: by a ``pytest_roteiro_make_backend``
    hook, else from the spec (with the factories plugins register)."""
    if state.backend is None:
        from roteiro_memory.suite.drivers import resolve_backend, withheld
        from roteiro_memory.suite.errors import BackendSpecError

        spec = state.config.backend
        made = config.hook.pytest_roteiro_make_backend(config=config, spec=spec)
        if made is None:
            factories: dict[str, Any] = {}
            for found in config.hook.pytest_roteiro_backend_factories(config=config):
                factories.update(found or {})
            try:
                made = resolve_backend(spec, factories, timeout=state.config.timeout)
            except BackendSpecError as error:
                raise pytest.UsageError(str(error)) from None
            except (Exception, SystemExit) as error:
                # A factory that raises (sys.exit too) is the backend's fault,
                # reported as such, never as pytest's INTERNALERROR.
                raise pytest.UsageError(
                    f"backend {state.config.backend_shown!r} could not be created: "
                    f"{type(error).__name__}: {withheld(str(error), spec)}"
                ) from error
        state.backend = made
    return state.backend
