"""Each tool's advertised input schema and its reading of arguments agree,
for every tool: what the schema allows the tool accepts, and what it refuses
the tool refuses -- over generated calls, each argument drawn from values on
either side of its rule (an empty string, white space from the tool's own
set and characters other dialects count as such, control characters, a
byte limit and one past it, an integer past 64 bits, a malformed decay or
one of 20 digits, ids repeated or none, flags that do not go together,
null).

A value naming nothing -- an id no record has, a filter's path -- is about
what it names, not its form: the tool answering NotFound, or matching
nothing, takes its form.  What no schema can say is in :data:`KNOWN`, each
with its reason, as docs/cli.md lists it: a call it covers may be allowed by
the schema and refused by the tool, and no other disagreement passes."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roteiro_memory import lexical
from roteiro_memory import semantics as sem
from roteiro_memory.agents import tools
from roteiro_memory.app.session import Session
from roteiro_memory.errors import lone_surrogate

ABSENT = object()

PRINTABLE = st.characters(min_codepoint=0x21, max_codepoint=0x7E)
ASCII = st.text(alphabet=PRINTABLE, max_size=12)
WHITE = st.sampled_from(sorted(sem.WHITE_SPACE))
NEAR_WHITE = st.sampled_from(["\x00", "\x1c", "\x1f", "\x7f", "\x9f", "\ufeff", "\u200b", "\u180e"])
"""Control characters (U+001C..U+001F are white space to Python's ``\\s``)
and characters some dialect or an older Unicode counts as white space; none
is White_Space."""
MIXED = st.text(alphabet=st.one_of(PRINTABLE, WHITE, NEAR_WHITE), max_size=6)
"""Text with white space and control characters at either end or inside."""
BLANK = st.text(alphabet=WHITE, min_size=1, max_size=3)
LONE = "a\ud800"
"""Text JSON can escape and no Unicode text holds."""

INTEGERS = st.sampled_from([0, 1, 7, -1, sem.INT64_MAX, sem.INT64_MAX + 1, 1e30, 1e300, 2.0, True])
FLAGS = st.sampled_from([True, False, "yes", 0])
IDS = st.one_of(
    st.lists(st.sampled_from([1, 2, 2.0, 0, -1, sem.INT64_MAX + 1, "#2", "2", True]), max_size=3),
    st.sampled_from([[1, 1], [1, 1.0], [], "1", 5]),
)
QUERY_PAST_THE_CAP = " ".join(f"word{n}x" for n in range(lexical.MAX_QUERY_TERMS + 1))
PLACES = ["src/app/retry.py::", "/outside", "../x", "README.md::f"]
"""Anchors whose path the tool judges against the repository: PATH:: with no
QUALNAME, a path outside it, a symbol of a file in no language read."""
FILTER_ANCHOR = st.one_of(
    st.text(alphabet=st.one_of(st.sampled_from("ab_1"), WHITE, NEAR_WHITE), max_size=6),
    st.sampled_from(["src/app/retry.py", "", "x" * (sem.MAX_ANCHOR_BYTES + 1), LONE, *PLACES]),
    st.just("é" * (sem.MAX_ANCHOR_BYTES // 2 + 1)),
)
"""A filter's anchor: one naming nothing matches nothing."""

ARGUMENTS: dict[str, Any] = {
    "kind": st.sampled_from(["lesson", "pattern", "Lesson", "bogus", ""]),
    "body": st.one_of(
        MIXED,
        BLANK,
        st.sampled_from(["", "x" * sem.MAX_BODY_BYTES, "x" * (sem.MAX_BODY_BYTES + 1), LONE]),
        st.just("é" * (sem.MAX_BODY_BYTES // 2 + 1)),
    ),
    "anchor": st.one_of(
        BLANK,
        st.sampled_from(
            ["src/app/retry.py", "", "x" * (sem.MAX_ANCHOR_BYTES + 1), "src/app/retry.py\x00"]
        ),
    ),
    "confidence": st.sampled_from([0, 0.5, 1, 1.5, -0.1, 10**400, "0.5"]),
    "supersedes": INTEGERS,
    "scope": st.one_of(
        MIXED,
        BLANK,
        st.sampled_from(["", "s" * sem.MAX_SCOPE_BYTES, "s" * (sem.MAX_SCOPE_BYTES + 1), LONE]),
        st.just("é" * (sem.MAX_SCOPE_BYTES // 2 + 1)),
    ),
    "allow_duplicate": FLAGS,
    "query": st.one_of(ASCII, MIXED, st.sampled_from([5, LONE, QUERY_PAST_THE_CAP])),
    "decay": st.sampled_from(
        [
            "none",
            "linear",
            "linear:5",
            "exponential:+0",
            "exponential:" + "9" * 19,
            "linear:" + str(sem.U64_MAX),
            "exponential:" + "0" * 24 + "7",
            "linear:" + str(sem.U64_MAX + 1),
            "bogus",
            "Linear",
            "linear:abc",
            "linear:",
            "linear: 5",
            "linear:\u0663",
            "none:1",
            "linear\n",
            "none\n",
            "linear:-1",
            "",
        ]
    ),
    "limit": INTEGERS,
    "all": FLAGS,
    "applicable_only": FLAGS,
    "include_superseded": FLAGS,
    "conflicts": FLAGS,
    "rev": st.sampled_from(["HEAD", "", " ", "HEAD\n", "nosuch"]),
    "id": INTEGERS,
    "ids": IDS,
    "apply": FLAGS,
    "all_certain": FLAGS,
}


def _texts(arguments: dict[str, Any]) -> list[str]:
    return [value for value in arguments.values() if isinstance(value, str)]


LIMITS = {"body": sem.MAX_BODY_BYTES, "anchor": sem.MAX_ANCHOR_BYTES, "scope": sem.MAX_SCOPE_BYTES}


def _over_in_bytes(name: str, value: object) -> bool:
    return (
        isinstance(value, str)
        and name in LIMITS
        and len(value.encode(errors="surrogatepass")) > LIMITS[name]
    )


def _decay_past_64_bits(decay: object) -> bool:
    digits = str(decay).partition(":")[2].lstrip("+")
    return digits.isascii() and digits.isdigit() and int(digits) > sem.U64_MAX


KNOWN: tuple[tuple[str, Callable[[dict[str, Any]], bool]], ...] = (
    (
        "maxLength counts characters and the limits are UTF-8 bytes: non-ASCII text "
        "over a limit in no more characters than it passes",
        lambda a: any(_over_in_bytes(name, value) for name, value in a.items()),
    ),
    (
        "a decay's N is digits to the schema, at most 2^64-1 to the tool",
        lambda a: _decay_past_64_bits(a.get("decay")),
    ),
    (
        "a lone surrogate: a pattern without ECMA-262's u flag cannot tell it from half of a pair",
        lambda a: any(lone_surrogate(text) for text in _texts(a)),
    ),
    (
        "an anchor's path is judged against the repository",
        lambda a: a.get("anchor") in PLACES,
    ),
    (
        "an anchor holding a NUL character: a pattern could say it, but at 76 bytes more "
        "than the tool list's 10,000 (bench/answers.py) allow",
        lambda a: "\0" in str(a.get("anchor")),
    ),
    ("a revision is git's to judge", lambda a: a.get("rev") not in (None, "HEAD", "")),
    (
        "Python's re reads $ as also matching before a final line break, ECMA-262 (JSON "
        "Schema's dialect) does not: 'linear\\n' passes Python's validator only; a "
        "lookahead would keep it out but is beyond the portable subset (RE2)",
        lambda a: isinstance(a.get("decay"), str) and a["decay"].endswith("\n"),
    ),
    (
        f"a query of more than {lexical.MAX_QUERY_TERMS:,} distinct terms: the schema "
        "cannot count terms",
        lambda a: a.get("query") == QUERY_PAST_THE_CAP,
    ),
)
"""What the schemas cannot say: a call one of these covers may pass its
schema and be refused by the tool."""

ABOUT_WHAT_IS_NAMED = {"NotFound", "AlreadySuperseded", "ReanchorRefused"}
"""Refusals of what ids name (no such record, superseded, not stale), not of their form."""


def accepted(session: Session, name: str, arguments: dict[str, Any]) -> bool:
    """Whether the tool takes the arguments: it answers, or fails for what
    they name or for the store's state, not for their form."""
    try:
        tools.call(session, name, arguments)
    except tools.ToolError as error:
        return error.advice != tools._FIX_INPUT or error.kind in ABOUT_WHAT_IS_NAMED
    return True


def schema_of(name: str) -> dict[str, Any]:
    return next(t.input_schema for t in tools.TOOLS if t.name == name)


@st.composite
def calls(draw: st.DrawFn, name: str) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for argument in schema_of(name)["properties"]:
        values = ARGUMENTS[argument]
        if argument == "anchor" and name != "remember":
            values = FILTER_ANCHOR
        value = draw(st.one_of(values, st.just(None), st.just(ABSENT)))
        if value is not ABSENT:
            arguments[argument] = value
    return arguments


@pytest.mark.parametrize("name", [tool.name for tool in tools.TOOLS])
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_tools_schema_allows_exactly_the_arguments_it_accepts(
    session: Session, name: str, data: st.DataObject
) -> None:
    arguments = data.draw(calls(name))
    allowed = jsonschema.Draft202012Validator(schema_of(name)).is_valid(arguments)
    if allowed != accepted(session, name, arguments):
        assert allowed, arguments  # no schema refuses what its tool takes
        assert any(covers(arguments) for _, covers in KNOWN), arguments


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("remember", {"kind": "lesson", "body": "\x1c"}),
        ("remember", {"kind": "lesson", "body": "\ufeff"}),
        ("search", {"anchor": "\x1c"}),
        ("search", {"decay": "linear:" + str(sem.U64_MAX)}),
        ("search", {"decay": "exponential:" + "0" * 24 + "7"}),
        ("list", {"conflicts": True, "limit": None, "kind": None, "all": None}),
        ("list", {"scope": "\ufeffa"}),
        ("reanchor", {"ids": [], "all_certain": True, "apply": True}),
    ],
)
def test_what_the_tool_takes_at_the_edges_its_schema_allows(
    session: Session, name: str, arguments: dict[str, Any]
) -> None:
    assert jsonschema.Draft202012Validator(schema_of(name)).is_valid(arguments)
    tools.call(session, name, arguments)


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("remember", {"kind": "lesson", "body": "x", "anchor": " "}),
        ("remember", {"kind": "lesson", "body": "\x85"}),
        ("remember", {"kind": "lesson", "body": "x", "scope": " repo"}),
        ("remember", {"kind": "lesson", "body": "x", "scope": "re\x00po"}),
        ("remember", {"kind": "Lesson", "body": "x"}),
        ("search", {"anchor": "\t"}),
        ("search", {"scope": "repo\n"}),
        ("list", {"scope": "a\x1cb"}),
        ("list", {"scope": "a\u3000"}),
        ("list", {"conflicts": True, "limit": 3}),
        ("reanchor", {"apply": True}),
        ("reanchor", {"ids": [1], "all_certain": True}),
        ("reanchor", {"ids": [2, 2]}),
        ("reanchor", {"ids": ["#2"]}),
        ("confirm", {"ids": []}),
        ("confirm", {"ids": [1, 1.0]}),
    ],
)
def test_what_the_tool_refuses_at_the_edges_its_schema_refuses(
    session: Session, name: str, arguments: dict[str, Any]
) -> None:
    assert not jsonschema.Draft202012Validator(schema_of(name)).is_valid(arguments)
    with pytest.raises(tools.ToolError) as refused:
        tools.call(session, name, arguments)
    assert refused.value.advice == tools._FIX_INPUT


def test_the_schemas_white_space_is_the_tools() -> None:
    """Built from semantics' set, the class holds exactly its characters."""
    import re

    blank = tools._NOT_BLANK["pattern"]
    for code in range(0x3001):
        char = chr(code)
        assert (re.search(blank, char) is None) == (sem.strip_white_space(char) == ""), hex(code)
    assert json.dumps(blank).isascii()
