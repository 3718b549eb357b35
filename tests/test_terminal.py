"""``roteiro_memory.terminal``: a stream that cannot be written is sent
nowhere, and the errors that says nothing of are handled by name."""

from __future__ import annotations

import io
from pathlib import Path

from roteiro_memory.terminal import discard


def test_discard_leaves_a_stream_without_a_descriptor_as_it_is() -> None:
    """A test's stream, and a stream closed already: no descriptor, nothing
    flushed at exit, nothing to do -- and no failure."""
    held = io.StringIO("kept")
    discard(held)
    assert held.getvalue() == "kept"
    closed = io.TextIOWrapper(io.BytesIO())
    closed.close()
    discard(closed)
    assert closed.closed


def test_discard_sends_what_a_stream_writes_after_it_nowhere(tmp_path: Path) -> None:
    """A stream on a descriptor: what it writes after is not written where
    it wrote before."""
    target = tmp_path / "out"
    with target.open("w") as stream:
        stream.write("before\n")
        stream.flush()
        discard(stream)
        stream.write("after\n")
    assert target.read_text() == "before\n"
