"""The suite's own exceptions, kept apart from the library's tree
(:mod:`roteiro_memory.errors`): the suite judges any implementation and
depends on none.

This module does not import pytest.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["BackendFailure", "BackendSpecError", "CaseFileError", "OpError"]


class CaseFileError(Exception):
    """A case file (or registry, or known-failures file) that cannot be used.

    ``str()`` reads ``FILE:LINE: case 'ID': at PATH: PROBLEM``; :attr:`every`
    lists this fault and the others found with it.
    """

    def __init__(
        self,
        file: Path | str,
        problem: str,
        *,
        line: int | None = None,
        case_id: str | None = None,
        path: str | None = None,
    ) -> None:
        self.file = str(file)
        self.problem = problem
        self.line = line
        self.case_id = case_id
        self.path = path
        self.more: tuple[CaseFileError, ...] = ()
        """Further faults found in the same file with this one (every schema
        error at once), for a reader that lists them all."""
        where = self.file if line is None else f"{self.file}:{line}"
        parts = [where]
        if case_id is not None:
            parts.append(f"case {case_id!r}")
        if path:
            parts.append(f"at {path}")
        super().__init__(": ".join([*parts, problem]))

    @property
    def every(self) -> list[CaseFileError]:
        """This fault and the others found in the same file."""
        return [self, *self.more]


class BackendSpecError(ValueError):
    """A backend spec that names no backend, with what is allowed."""


class OpError(Exception):
    """An op the backend refused, with the PROTOCOL error kind it gave."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        self.message = message
        super().__init__(f"{kind}: {message}")


class BackendFailure(Exception):
    """The backend could not answer at all: it died, hung, or broke the
    protocol.  The message says which; ``stderr`` is its last output."""

    def __init__(
        self, message: str, stderr: str | None = None, *, answered_twice: int | None = None
    ) -> None:
        self.message = message
        self.stderr = stderr
        self.answered_twice = answered_twice
        """Which request a second answer came for, when that is the failure
        -- a request sent before the one in progress -- by its place among
        the requests the backend sent (its ``requests_sent`` once that
        request was sent)."""
        super().__init__(message)
