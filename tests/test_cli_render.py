"""Human rendering: the progress bar draws only on a terminal, and only for
work that takes more than a moment; tables align and clip."""

from __future__ import annotations

import io

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
