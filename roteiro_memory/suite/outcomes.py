"""What running a case came to: its breaches and its outcome.

This module does not import pytest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["Breach", "Outcome", "Status"]

JSON = Any
Status = Literal["passed", "failed", "skipped"]


@dataclass(frozen=True)
class Breach:
    """One wrong answer of a case: where, to what, and what was wrong."""

    step: int | None
    line: int | None
    op: str | None
    args: JSON
    message: str
    path: str | None = None
    expected: JSON = None
    actual: JSON = None
    sent: str | None = None
    """The request line a raw step sent, as written in the case."""

    def to_json(self) -> dict[str, JSON]:
        return {
            "step": self.step,
            "line": self.line,
            "op": self.op,
            "args": self.args,
            "sent": self.sent,
            "message": self.message,
            "path": self.path,
            "expected": self.expected,
            "actual": self.actual,
        }


@dataclass(frozen=True)
class Outcome:
    """What running one case against one backend came to.

    ``message`` to ``actual`` describe the first breach (the one a one-line
    summary shows); :attr:`breaches` holds every one, ``steps`` how many
    steps the case has, and ``stopped`` why steps after a breach did not run.
    """

    case_id: str
    status: Status
    message: str = ""
    step: int | None = None
    line: int | None = None
    op: str | None = None
    args: JSON = None
    path: str | None = None
    expected: JSON = None
    actual: JSON = None
    stderr: str | None = None
    duration: float = 0.0
    notes: tuple[str, ...] = field(default=())
    breaches: tuple[Breach, ...] = field(default=())
    steps: int = 0
    stopped: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def breached_steps(self) -> int:
        """How many distinct steps answered wrongly."""
        return len({b.step for b in self.breaches})

    def tally(self) -> str:
        """``3 of 17 steps``: how many steps breached, of how many."""
        return f"{self.breached_steps} of {self.steps} step{'s' if self.steps != 1 else ''}"

    def to_json(self) -> dict[str, JSON]:
        return {
            "case": self.case_id,
            "status": self.status,
            "message": self.message,
            "step": self.step,
            "line": self.line,
            "op": self.op,
            "args": self.args,
            "path": self.path,
            "expected": self.expected,
            "actual": self.actual,
            "stderr": self.stderr,
            "duration": round(self.duration, 6),
            "steps": self.steps,
            "breached_steps": self.breached_steps,
            "breaches": [breach.to_json() for breach in self.breaches],
            "stopped": self.stopped,
        }
