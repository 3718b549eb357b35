"""What a backend's answer to ``hello`` says (PROTOCOL [P-hello],
[P-capabilities]): the capabilities it declares, each one PROTOCOL defines,
and the implementation's name and version.

This module does not import pytest.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from roteiro_memory.suite.errors import BackendFailure
from roteiro_memory.suite.vocabulary import CAPABILITIES

__all__ = ["capabilities_of", "implementation_of"]

JSON = Any


def capabilities_of(hello: JSON, name: str) -> frozenset[str]:
    """The capabilities ``hello`` declares for the backend ``name``; a
    :class:`BackendFailure` for a list that is missing or names one PROTOCOL
    does not define (with the closest it does)."""
    caps = hello.get("capabilities") if isinstance(hello, dict) else None
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        raise BackendFailure(
            f"backend {name!r}: hello must return an object with a list of strings "
            f"'capabilities', got {json.dumps(hello)[:200]}"
        )
    unknown = sorted(set(caps) - set(CAPABILITIES))
    if unknown:
        # A misspelt capability would otherwise skip every case needing it.
        hints = []
        for name_ in unknown:
            close = difflib.get_close_matches(name_, CAPABILITIES, n=1)
            hints.append(f"{name_!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise BackendFailure(
            f"backend {name!r}: hello declares unknown capabilit"
            f"{'y' if len(unknown) == 1 else 'ies'} {', '.join(hints)}; "
            f"PROTOCOL defines {', '.join(CAPABILITIES)}"
        )
    return frozenset(caps)


def implementation_of(hello: JSON) -> str | None:
    """``name version`` from a hello's ``implementation``, when it gives them."""
    implementation = hello.get("implementation") if isinstance(hello, dict) else None
    if not isinstance(implementation, dict):
        return None
    parts = [implementation.get("name"), implementation.get("version")]
    words = [part for part in parts if isinstance(part, str) and part]
    return " ".join(words) or None
