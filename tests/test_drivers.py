"""Resolving and driving backends: what hello may declare."""

from __future__ import annotations

from typing import Any

import pytest

from roteiro_memory.suite.cases import load_cases
from roteiro_memory.suite.drivers import InProcessBackend
from roteiro_memory.suite.runner import BackendFailure, run_case


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
