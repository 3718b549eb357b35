"""The ``shared`` and ``crash`` entries as pytest items, beside the cases.

Each entry of :data:`roteiro_memory.suite.durability.ENTRIES` is one item
under ``conformance/durability``, named by its id and marked, reported and
listed in the known-failures file like a case.  It runs only against a
``cmd:`` backend that declares the entry's capability once
``ROTEIRO_CONFORMANCE_STORE`` names its store, and is skipped otherwise with
the reason.  A pass records the run's figures (writers, operations, kills,
acknowledged, present) as the item's ``durability`` property and as the
outcome's message in the report.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_roteiro.config import OUTCOME_KEY, STATE_KEY
from pytest_roteiro.items import NODE_PREFIX, CaseFailed, CaseItem, CaseRepr, backend, settle

if TYPE_CHECKING:
    from roteiro_memory.suite.durability import DurabilitySpec

__all__ = ["DurabilityCollector", "DurabilityItem", "collect_durability"]

MARKER = "roteiro_durability"
NAME = "durability"


class DurabilityCollector(pytest.Collector):
    """The built-in durability entries; they live in the suite's code, not in a file."""

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        from roteiro_memory.suite.durability import ENTRIES

        state = self.config.stash[STATE_KEY]
        return [
            DurabilityItem.from_parent(self, name=spec.id, spec=spec)
            for spec in ENTRIES
            if spec.invariant in state.registry
        ]


class DurabilityItem(CaseItem):
    """One durability entry, run like a case: same markers, known failures and report."""

    def __init__(self, *, spec: DurabilitySpec, **kwargs: Any) -> None:
        from roteiro_memory.suite import durability
        from roteiro_memory.suite.cases import Case

        state = kwargs["parent"].config.stash[STATE_KEY]
        case = Case(
            id=spec.id,
            title=spec.title,
            clause=state.registry[spec.invariant].clause,
            invariant=spec.invariant,
            requires=spec.requires,
            steps=(),
            file=Path(durability.__file__),
            line=1,
            topic=NAME,
            rules=spec.rules,
        )
        super().__init__(case=case, **kwargs)
        self.spec = spec
        self.add_marker(MARKER)

    def runtest(self) -> None:
        from roteiro_memory.suite.durability import run_durability
        from roteiro_memory.suite.runner import Outcome

        state = self.config.stash[STATE_KEY]
        result = run_durability(self.spec, backend(self.config, state))
        self.stash[OUTCOME_KEY] = Outcome(
            self.spec.id,
            result.status,
            result.message,
            stderr=result.stderr,
            duration=result.duration,
        )
        if result.status != "skipped":
            self.user_properties.append((NAME, result.figures.to_json()))
        message = result.message
        if result.status == "failed" and result.stderr:
            message += f"\n--- the backend's stderr (last lines) ---\n{result.stderr}"
        settle(state, NAME, self.spec.id, result.status, message)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | CaseRepr:
        if isinstance(excinfo.value, CaseFailed) and excinfo.value.args:
            return str(excinfo.value.args[0])
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.case.file, None, f"{self.spec.id}: {self.spec.title}"


def collect_durability(session: pytest.Session) -> list[pytest.Item]:
    """The durability items of the run."""
    from _pytest.runner import collect_one_node

    session.config.addinivalue_line("markers", f"{MARKER}: a shared-store or crash entry")
    collector = DurabilityCollector.from_parent(session, name=NAME, nodeid=f"{NODE_PREFIX}/{NAME}")
    report = collect_one_node(collector)
    session.ihook.pytest_collectreport(report=report)
    return [n for n in report.result if isinstance(n, pytest.Item)] if report.passed else []
