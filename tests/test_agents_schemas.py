"""Each tool's advertised input schema and its reading of arguments agree:
what the schema allows the tool accepts, and what it refuses the tool
refuses -- over generated calls, each argument drawn from values on either
side of its rule (an empty string, a byte limit and one past it, an integer
past 64 bits, a malformed decay, null).  A value the schema cannot judge --
an id or a path naming nothing, non-ASCII text near a byte limit (the
schema counts characters), a scope's white space -- is the tool's alone,
and is not drawn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
from agent_repo import GitRepo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roteiro_memory import semantics as sem
from roteiro_memory.agents import tools
from roteiro_memory.app.session import Session

ABSENT = object()

ASCII = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=12)
INTEGERS = st.sampled_from([0, 1, 7, -1, sem.INT64_MAX, sem.INT64_MAX + 1, 1e30, 1e300, 2.0, True])
FLAGS = st.sampled_from([True, False, "yes", 0])
ARGUMENTS: dict[str, Any] = {
    "kind": st.sampled_from(["lesson", "pattern", "bogus", ""]),
    "body": st.one_of(
        ASCII.filter(bool), st.sampled_from(["", "  \t", "x" * sem.MAX_BODY_BYTES, "x" * 65537])
    ),
    "anchor": st.sampled_from(["src/app/retry.py", "", "x" * (sem.MAX_ANCHOR_BYTES + 1)]),
    "confidence": st.sampled_from([0, 0.5, 1, 1.5, -0.1, 10**400, "0.5"]),
    "supersedes": INTEGERS,
    "scope": st.one_of(
        ASCII.filter(bool), st.sampled_from(["", "s" * sem.MAX_SCOPE_BYTES, "s" * 129])
    ),
    "allow_duplicate": FLAGS,
    "query": st.one_of(ASCII, st.sampled_from([5])),
    "decay": st.sampled_from(
        [
            "none",
            "linear",
            "linear:5",
            "exponential:+0",
            "exponential:" + "9" * 19,
            "bogus",
            "linear:abc",
            "linear:",
            "none:1",
            "linear:" + "9" * 20,
            "linear:-1",
            "",
        ]
    ),
    "limit": INTEGERS,
    "all": FLAGS,
    "applicable_only": FLAGS,
    "include_superseded": FLAGS,
    "conflicts": FLAGS,
    "rev": st.sampled_from(["HEAD", ""]),
    "id": INTEGERS,
}
FILTER_ANCHORS = st.sampled_from(["src/app/retry.py", ""])
"""A filter's anchor: a path too long to hold names nothing, and matches nothing."""


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Session:
    repo = GitRepo(tmp_path / "repo")
    monkeypatch.chdir(repo.root)
    opened = Session(str(tmp_path / "m.db"))
    opened.spell = tools.spell
    return opened


def accepted(session: Session, name: str, arguments: dict[str, Any]) -> bool:
    """Whether the tool takes the arguments: it answers, or fails for what
    they name (no such record), not for their form."""
    try:
        tools.call(session, name, arguments)
    except tools.ToolError as error:
        return error.advice != tools._FIX_INPUT or error.kind == "NotFound"
    return True


@st.composite
def calls(draw: st.DrawFn, name: str) -> dict[str, Any]:
    schema = next(t.input_schema for t in tools.TOOLS if t.name == name)
    arguments: dict[str, Any] = {}
    for argument in schema["properties"]:
        values = ARGUMENTS[argument]
        if argument == "anchor" and name != "remember":
            values = FILTER_ANCHORS
        value = draw(st.one_of(values, st.just(None), st.just(ABSENT)))
        if value is not ABSENT:
            arguments[argument] = value
    if arguments.get("conflicts") is True:  # null beside it is absent to the tool
        arguments = {k: v for k, v in arguments.items() if v is not None}
    return arguments


@pytest.mark.parametrize("name", ["remember", "search", "touched", "list", "get", "forget"])
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_tools_schema_allows_exactly_the_arguments_it_accepts(
    session: Session, name: str, data: st.DataObject
) -> None:
    arguments = data.draw(calls(name))
    schema = next(t.input_schema for t in tools.TOOLS if t.name == name)
    allowed = jsonschema.Draft202012Validator(schema).is_valid(arguments)
    assert allowed == accepted(session, name, arguments), arguments
