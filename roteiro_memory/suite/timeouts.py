"""How long the suite waits for one request to a ``cmd:`` backend.

Imports nothing but the standard library, so a command can check the value
before the suite's own dependencies are known to be installed.  This module
does not import pytest.
"""

from __future__ import annotations

import math

__all__ = ["DEFAULT_TIMEOUT", "MAX_TIMEOUT", "timeout_problem"]

DEFAULT_TIMEOUT = 10.0
MAX_TIMEOUT = 86400.0
"""A day: longer than any request should take, and short enough for every
clock and wait the suite uses (an infinite or astronomic wait overflows them)."""


def timeout_problem(seconds: float) -> str | None:
    """Why ``seconds`` cannot be a request's timeout; None when it can: a
    finite number of seconds above 0 and at most :data:`MAX_TIMEOUT`."""
    if math.isfinite(seconds) and 0 < seconds <= MAX_TIMEOUT:
        return None
    return (
        f"{seconds:g} is not a timeout the suite can wait: give a number of seconds "
        f"above 0 and at most {MAX_TIMEOUT:g} (a day)"
    )
