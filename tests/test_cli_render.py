"""Human rendering: the progress bar draws only on a terminal, and only for
work that takes more than a moment; tables align and clip."""

from __future__ import annotations

import io
from typing import Any

import pytest

from roteiro_memory.cli import render
from roteiro_memory.semantics import AnchorState


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_bar_draws_on_a_terminal_after_its_delay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = iter([0.0, 0.1, 1.0, 2.0, 3.0])
    monkeypatch.setattr(render.time, "monotonic", lambda: next(clock))
    stream = _Terminal()
    bar = render.ProgressBar("parsing", stream)
    bar(1, 10)  # at 0.1 s: too soon to be worth a bar
    assert stream.getvalue() == ""
    bar(5, 10)
    assert stream.getvalue() == "\rparsing [###############...............] 5/10"
    bar.close()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_progress_bar_draws_nothing_when_not_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([0.0, 5.0, 6.0])
    monkeypatch.setattr(render.time, "monotonic", lambda: next(clock))
    stream = io.StringIO()
    bar = render.ProgressBar("parsing", stream)
    bar(1, 2)
    bar(2, 2)
    bar.close()
    assert stream.getvalue() == ""


def test_every_state_has_its_own_mark() -> None:
    marks = [render.STATE_MARKS[state] for state in AnchorState]
    assert len(set(marks)) == len(marks)
    assert render.state_label(AnchorState.DRIFTED) == "~ drifted"


def test_table_aligns_columns_and_clips_the_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setattr(render.sys, "stdout", _Terminal())
    out = render.table(["ID", "BODY"], [["7", "short"], ["12", "x" * 200]], right=(0,))
    lines = out.splitlines()
    assert lines[0] == "ID  BODY"
    assert lines[1] == " 7  short"
    assert lines[2].startswith("12  xxx")
    assert lines[2].endswith("...")
    assert len(lines[2]) == 60


def test_anchor_labels_take_the_form_anchor_options_take() -> None:
    assert render.anchor_label("file:src/a.py") == "src/a.py"
    assert render.anchor_label("py:src/a.py::A.run") == "src/a.py::A.run"
    assert render.anchor_label("doc:guide") == "doc:guide"
    assert render.anchor_label(None) == "-"


@pytest.mark.parametrize(
    "key",
    ["file:", "py:x::y", "py:a.py", "py:a.py::", "file:a::b", "file:py:x", "file:../x", "file:/x"],
)
def test_anchor_labels_show_the_key_when_the_short_form_would_name_another(key: str) -> None:
    """Issue 22, item 21: ``file:`` showed an empty column and ``py:x::y``
    showed ``x::y``, which ``--anchor`` refuses (x is no Python file)."""
    assert render.anchor_label(key) == key


def test_printable_escapes_control_sequences_and_keeps_tabs_and_newlines() -> None:
    body = "a\x1b]0;owned\x07b\x1b[2J\rc\x9b\u202ed\te\nf"
    shown = render.printable(body)
    assert shown == "a\\x1b]0;owned\\x07b\\x1b[2J\\x0dc\\x9b\\u202ed\te\nf"
    assert not any(ch in shown for ch in "\x1b\x07\r\x9b\u202e")


def _record(body: str, anchor: str | None = None) -> Any:
    from roteiro_memory.results import MemoryAnchor, MemoryListing, MemoryRecord
    from roteiro_memory.semantics import MemoryKind

    record = MemoryRecord(
        id=1,
        scope="repo",
        kind=MemoryKind.LESSON,
        anchor=MemoryAnchor(anchor, None, None) if anchor else None,
        anchor_state=AnchorState.VANISHED if anchor else AnchorState.UNANCHORED,
        body=body,
        confidence=None,
        tree=None,
        created_at="2026-01-01 00:00:00",
        superseded_by=None,
        superseded_at=None,
    )
    return record, MemoryListing(records=[record], live=1, superseded=0)


def test_tables_and_detail_never_carry_raw_control_characters() -> None:
    record, listing = _record("title\x1b]0;pwned\x07 and \x1b[2J", "file:x\x1b[31m.py")
    for text in (render.listing_table(listing), render.record_detail(record)):
        assert "\x1b" not in text
        assert "\x07" not in text
        assert "\\x1b]0;pwned" in text


def test_a_table_keeps_the_whole_body_when_stdout_is_not_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "60")
    monkeypatch.setattr(render.sys, "stdout", io.StringIO())
    body = "word " * 100
    _, listing = _record(body)
    assert body.strip() in render.listing_table(listing)
    monkeypatch.setattr(render.sys, "stdout", _Terminal())
    assert body.strip() not in render.listing_table(listing)


def test_detail_and_conflicts_escape_every_stored_field_not_only_body_and_anchor() -> None:
    """A record's scope, tree and captured blob are stored text too (an
    import takes any text there, a scope may hold a bidirectional
    override): ``show`` and ``conflicts`` print them as escapes, so no
    stored field can retitle, clear or reorder the terminal."""
    from roteiro_memory.app.shown import Conflicts
    from roteiro_memory.conflicts import Conflict
    from roteiro_memory.results import MemoryAnchor, MemoryRecord
    from roteiro_memory.semantics import MemoryKind

    def decision(id_: int) -> MemoryRecord:
        return MemoryRecord(
            id=id_,
            scope="s\u202ecope",
            kind=MemoryKind.DECISION,
            anchor=MemoryAnchor("file:x.py", "\x1b[2Jblob", None),
            anchor_state=AnchorState.VANISHED,
            body=f"body {id_}",
            confidence=None,
            tree="\x1b]0;pwned\x07",
            created_at="2026-01-01 00:00:00",
            superseded_by=None,
            superseded_at=None,
        )

    record, other = decision(1), decision(2)
    found = Conflicts([Conflict(record.scope, "file:x.py", (record, other), ((1,), (2,)))], 2)
    for text in (render.record_detail(record), render.conflicts_text(found)):
        assert not any(ch in text for ch in "\x1b\x07\u202e"), text
        assert "\\u202e" in text
    detail = render.record_detail(record)
    assert "\\x1b]0;pwned\\x07" in detail
    assert "\\x1b[2Jblob" in detail


def test_detail_escapes_the_timestamps_a_damaged_store_holds() -> None:
    """Writes and imports keep timestamps in one form, but a store damaged
    behind their back may hold any text there, and reads pass it on: show
    prints it as escapes, as it prints every other stored field."""
    from roteiro_memory.results import MemoryRecord
    from roteiro_memory.semantics import MemoryKind

    record = MemoryRecord(
        id=1,
        scope="repo",
        kind=MemoryKind.LESSON,
        anchor=None,
        anchor_state=AnchorState.UNANCHORED,
        body="a body",
        confidence=None,
        tree=None,
        created_at="\x1b]0;pwned\x07",
        superseded_by=2,
        superseded_at="\x1b[2J",
    )
    detail = render.record_detail(record)
    assert "\x1b" not in detail
    assert "\x07" not in detail
    assert "created     \\x1b]0;pwned\\x07 UTC" in detail
    assert "at \\x1b[2J UTC" in detail


def test_printable_text_is_shown_as_it_is_and_every_escaped_character_is_unprintable() -> None:
    """``printable`` returns text ``str.isprintable`` passes untouched,
    without its patterns: that holds only while every character they escape
    is one ``isprintable`` refuses, which this pins over all of Unicode."""
    import re

    from roteiro_memory import terminal

    for pattern in (terminal._CONTROL, terminal._CONTROL_OR_BREAK):
        escaped = re.compile(pattern)
        assert not [c for c in map(chr, range(0x110000)) if escaped.match(c) and c.isprintable()]
    plain = "caf\u00e9 \u2014 src/a.py::f"
    assert terminal.printable(plain, one_line=True) is plain
    assert terminal.printable("a\tb\x1b", one_line=True) == "a\\x09b\\x1b"
    assert terminal.printable("a\tb\x1b") == "a\tb\\x1b"


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        ("file:a.py ", "'a.py '"),
        ("py:a.py::f ", "'a.py::f '"),
        ("file:a  b.py", "'a  b.py'"),
        ("file:tab\tx.py", "'tab\\tx.py'"),
        ("py:new\nline.py::n", "'new\\nline.py::n'"),
        ("file:a b.py", "a b.py"),
    ],
)
def test_an_anchor_label_never_loses_white_space_to_name_another_file(key: str, shown: str) -> None:
    """A table row keeps one line and single spaces: an anchor whose white
    space it would fold or hide is quoted and escaped, so ``file:a.py `` is
    not shown as ``a.py``, a file that may well be valid."""
    assert render.anchor_label(key) == shown
