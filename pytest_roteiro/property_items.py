"""The entries of ``properties.yaml`` as pytest items, beside the cases.

Each entry is one item under ``conformance/properties.yaml``, named by its id,
marked and reported like a case (same invariant and capability markers, same
known-failures file, same report), so ``-k prop-`` selects them and
``-m "not roteiro_property"`` leaves them out.  A failure shows the property's
message and the shrunk sequence as a case to paste.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_roteiro.config import OUTCOME_KEY, STATE_KEY
from pytest_roteiro.items import (
    NODE_PREFIX,
    CaseFailed,
    CaseFile,
    CaseItem,
    CaseRepr,
    backend,
    settle,
    tb_style,
)

if TYPE_CHECKING:
    from roteiro_memory.suite.properties import (  # noqa: F401 -- PropertyOutcome in a string annotation
        PropertyOutcome,
        PropertySpec,
    )

__all__ = ["PropertyFile", "PropertyItem", "collect_properties"]

MARKER = "roteiro_property"
_RESULT_KEY = pytest.StashKey["PropertyOutcome"]()


class PropertyFile(CaseFile):
    """The properties file in force; its items are its entries."""

    label = "properties file"

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        from roteiro_memory.suite.properties import load_properties

        state = self.config.stash[STATE_KEY]
        return [
            PropertyItem.from_parent(self, name=spec.id, spec=spec)
            for spec in load_properties(self.source, state.registry)
        ]


class PropertyItem(CaseItem):
    """One property entry, run like a case: same markers, known failures and report."""

    def __init__(self, *, spec: PropertySpec, **kwargs: Any) -> None:
        from roteiro_memory.suite.cases import Case

        case = Case(
            id=spec.id,
            title=spec.title,
            clause=spec.clause,
            invariant=spec.invariant,
            requires=spec.requires,
            steps=(),
            file=spec.file,
            line=spec.line,
            topic="properties",
            rules=spec.rules,
        )
        super().__init__(case=case, **kwargs)
        self.spec = spec
        self.add_marker(MARKER)

    def runtest(self) -> None:
        from roteiro_memory.suite.properties import run_property
        from roteiro_memory.suite.runner import Outcome

        state = self.config.stash[STATE_KEY]
        result = run_property(self.spec, backend(self.config, state), seed_value=state.config.seed)
        self.stash[OUTCOME_KEY] = Outcome(
            self.spec.id, result.status, result.message, duration=result.duration
        )
        self.stash[_RESULT_KEY] = result
        self.user_properties.append(("property_seconds", round(result.duration, 3)))
        settle(state, "property", self.spec.id, result.status, result.message)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | CaseRepr:
        from roteiro_memory.suite.properties import format_property_outcome

        if isinstance(excinfo.value, CaseFailed) and not excinfo.value.args:
            result = self.stash[_RESULT_KEY]
            tb = tb_style(self.config, style)
            text = format_property_outcome(self.spec, result, style=tb)
            first = text.splitlines()[0]
            return CaseRepr(text, self.spec.file, self.spec.line, first, style=tb)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.spec.file, self.spec.line - 1, f"{self.spec.id}: {self.spec.title}"


def collect_properties(
    session: pytest.Session, case_dirs: Iterable[Path], *, builtin: bool
) -> list[pytest.Item]:
    """The property items of the run, reporting a bad properties file as a
    collection error (as a bad case file is)."""
    from _pytest.runner import collect_one_node

    from roteiro_memory.suite.properties import property_files

    session.config.addinivalue_line("markers", f"{MARKER}: a built-in Hypothesis property")
    items: list[pytest.Item] = []
    for path in property_files(case_dirs, builtin=builtin):
        collector = PropertyFile.from_parent(
            session, name=path.name, nodeid=f"{NODE_PREFIX}/{path.name}", source=path
        )
        report = collect_one_node(collector)
        session.ihook.pytest_collectreport(report=report)
        if report.passed:
            items.extend(n for n in report.result if isinstance(n, pytest.Item))
    return items
