"""The suite's copy of the protocol vocabulary agrees with the library's and
with the case schemas.

The suite keeps its own copy so that it judges any implementation without
depending on this one; these tests are what keeps the copies in step (a new
capability or op must be added to both, or these fail).
"""

from __future__ import annotations

import json
from typing import Any

from roteiro_memory import errors, protocol, store
from roteiro_memory.suite import vocabulary
from roteiro_memory.suite.cases import builtin_dir


def _schema(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((builtin_dir() / name).read_text(encoding="utf-8"))
    return loaded


def test_vocabulary_capabilities_are_the_librarys() -> None:
    assert set(vocabulary.CAPABILITIES) == set(store.CAPABILITIES)
    assert vocabulary.CAPABILITIES == store.CAPABILITIES


def test_vocabulary_ops_are_the_protocols_but_the_session_end() -> None:
    assert set(vocabulary.OP_CAPABILITY) | {vocabulary.SESSION_END} == set(protocol.OPS)
    assert vocabulary.SESSION_END not in vocabulary.OP_CAPABILITY


def test_vocabulary_each_op_needs_the_librarys_capability() -> None:
    library = {op: spec.capability for op, spec in protocol.OPS.items()}
    assert library == {**vocabulary.OP_CAPABILITY, vocabulary.SESSION_END: None}


def test_vocabulary_op_capabilities_are_capabilities() -> None:
    used = {c for c in vocabulary.OP_CAPABILITY.values() if c is not None}
    assert used <= set(vocabulary.CAPABILITIES)
    assert vocabulary.CORE not in vocabulary.CAPABILITIES


def test_vocabulary_error_kinds_are_the_librarys() -> None:
    assert vocabulary.ERROR_KINDS == errors.ERROR_KINDS


def test_vocabulary_every_library_error_is_reported_as_a_known_kind() -> None:
    """A kind a case cannot expect is one the suite could never check."""
    kinds = {
        cls.kind
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.RoteiroError)
        if cls is not errors.RoteiroError
    }
    assert kinds <= set(vocabulary.ERROR_KINDS)


def test_vocabulary_case_schema_allows_exactly_the_capabilities_and_error_kinds() -> None:
    defs = _schema("case.schema.json")["$defs"]
    assert defs["case"]["properties"]["requires"]["items"]["enum"] == list(vocabulary.CAPABILITIES)
    assert defs["step"]["properties"]["error"]["enum"] == list(vocabulary.ERROR_KINDS)


def test_vocabulary_property_schema_allows_exactly_the_capabilities() -> None:
    defs = _schema("property.schema.json")["$defs"]
    assert defs["entry"]["properties"]["requires"]["items"]["enum"] == list(vocabulary.CAPABILITIES)
