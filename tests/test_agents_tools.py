"""The MCP tools' reading of arguments, called in process (no SDK): a value
the CLI and the protocol refuse is refused here too, by its own kind, and
nothing is stored (issue 22, items 4, 5 and 15)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roteiro_memory.agents import tools
from roteiro_memory.app.session import Session


def _refused(session: Session, name: str, arguments: dict[str, object]) -> tools.ToolError:
    with pytest.raises(tools.ToolError) as raised:
        tools.call(session, name, arguments)
    return raised.value


def _stored(session: Session) -> int:
    return int(tools.call(session, "list", {"limit": 0}).structured["live"])


def test_tools_remember_refuses_a_confidence_beyond_any_double(session: Session) -> None:
    """Held already at cbff0b8 (values.confidence reads the integer); pinned."""
    error = _refused(session, "remember", {"kind": "lesson", "body": "b", "confidence": 10**400})
    assert error.kind == "InvalidConfidence"
    assert "argument 'confidence'" in error.message
    assert _stored(session) == 0


def test_tools_touched_refuses_a_nul_in_rev_by_name(session: Session) -> None:
    error = _refused(session, "touched", {"rev": "HE\x00AD"})
    assert error.kind == "BadRequest"
    assert "NUL" in error.message
    assert "'HE\\x00AD'" in error.message


def test_tools_remember_refuses_an_empty_scope_as_the_cli_does(session: Session) -> None:
    error = _refused(session, "remember", {"kind": "lesson", "body": "b", "scope": ""})
    assert error.kind == "InvalidScope"
    assert _stored(session) == 0
    written = tools.call(session, "remember", {"kind": "lesson", "body": "b"})
    assert written.structured["record"]["scope"] == "repo"


def test_tools_an_unavailable_store_is_advised_as_such(session: Session, tmp_path: Path) -> None:
    """A sound store that cannot be used now is not input to correct."""
    tools.call(session, "remember", {"kind": "lesson", "body": "kept"})
    for suffix in ("", "-wal", "-shm"):
        (tmp_path / f"m.db{suffix}").unlink(missing_ok=True)
    (tmp_path / "m.db").mkdir()
    error = _refused(session, "remember", {"kind": "lesson", "body": "would vanish"})
    assert error.kind == "Unavailable"
    assert "nothing was written" in error.message
    assert "correct that argument" not in error.advice
    assert list((tmp_path / "m.db").iterdir()) == []


def test_tools_search_refuses_a_query_beyond_the_distinct_term_cap(session: Session) -> None:
    from test_search_cost import unknown_words

    from roteiro_memory import lexical

    tools.call(session, "remember", {"kind": "lesson", "body": "migration timeout"})
    words = unknown_words(lexical.MAX_QUERY_TERMS + 1)
    error = _refused(session, "search", {"query": " ".join(words)})
    assert error.kind == "BadRequest"
    assert "at most 1,024" in error.message
    found = tools.call(session, "search", {"query": "timeout " * 5000})
    assert len(found.structured["results"]) == 1


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        ("list", {"limit": True}, "invalid argument 'limit' true: expected a whole number"),
        ("get", {"id": True}, "invalid argument 'id' true: expected a positive whole number"),
        ("get", {"id": [None]}, "invalid argument 'id' [null]: expected"),
        ("remember", {"kind": "lesson", "body": "b", "supersedes": False}, "'supersedes' false:"),
        ("remember", {"kind": "lesson", "body": "b", "confidence": True}, "'confidence' true:"),
        ("search", {"query": True}, "search: argument 'query' is true: expected a string"),
        ("search", {"query": "q", "all": "yes"}, "argument 'all' is 'yes': expected"),  # text
    ],
)
def test_tools_quote_a_json_value_they_refuse_as_json_writes_it(
    session: Session, name: str, arguments: dict[str, object], said: str
) -> None:
    """``true``, ``null``: what the agent sent, not Python's ``True``, ``None``."""
    error = _refused(session, name, arguments)
    assert said in error.message, error.message
    assert _stored(session) == 0


def test_null_is_absent_for_every_optional_argument_and_refused_for_a_required_one(
    session: Session,
) -> None:
    """LLM clients send null for an argument they leave out: each optional
    one takes it as absent (booleans refused it), and each schema says so;
    a required one refuses it, naming it."""
    import jsonschema

    for tool in tools.TOOLS:
        required = set(tool.input_schema.get("required", ()))
        for name in tool.input_schema["properties"]:
            nulled = {n: "lesson" if n == "kind" else "b" for n in required} | {name: None}
            allowed = jsonschema.Draft202012Validator(tool.input_schema).is_valid(nulled)
            assert allowed == (name not in required), (tool.name, name)
    tools.call(session, "remember", {"kind": "lesson", "body": "b", "allow_duplicate": None})
    listed = tools.call(session, "list", {"conflicts": None, "all": None, "limit": None})
    assert listed.structured["live"] == 1
    tools.call(session, "search", {"query": "b", "all": None, "applicable_only": None})
    tools.call(session, "reanchor", {"ids": None, "apply": None, "all_certain": None})
    error = _refused(session, "remember", {"kind": "lesson", "body": None})
    assert "remember: argument 'body' is null: it is required" in error.message
    assert _stored(session) == 1


@pytest.mark.parametrize("anchor", ["a.py\x00", "file:a\x00b", "src/x.py::f\x00", "\x00"])
@pytest.mark.parametrize("tool", ["list", "search", "remember"])
def test_tools_refuse_a_nul_in_an_anchor_by_name(session: Session, tool: str, anchor: str) -> None:
    """A filter holding one matched nothing: 0 results, as if nothing were
    recorded there, where no anchor can hold one."""
    arguments: dict[str, object] = {"anchor": anchor}
    if tool == "remember":
        arguments.update(kind="lesson", body="b")
    error = _refused(session, tool, arguments)
    assert error.kind == "BadRequest"
    assert "anchor" in error.message
    assert "NUL character" in error.message, error.message
    assert "expected a path, PATH::QUALNAME" in error.message, error.message
    assert _stored(session) == 0
