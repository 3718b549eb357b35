"""What a running program writes, read by threads so a program that hangs
cannot block the suite: its standard output as a queue of lines, each read
to a bound, and the bounded tail of its standard error.

A request waits for its answer line on a condition with a deadline
(:meth:`ProgramOutput.take`) instead of on the pipe.  This module does not
import pytest.
"""

from __future__ import annotations

import collections
import contextlib
import subprocess
import threading
from typing import IO

__all__ = [
    "MAX_LINE_BYTES",
    "OVERLONG",
    "STDERR_LINES",
    "STDERR_LINE_CHARS",
    "ProgramOutput",
]

STDERR_LINES = 30
STDERR_LINE_CHARS = 2000
"""The most of one stderr line kept (its end): with :data:`STDERR_LINES`,
what a program writes to stderr holds the suite's memory to a bound, however
much it writes and whether or not it ends its lines."""
_STDERR_READ = 64 * 1024
MAX_LINE_BYTES = 16 * 1024 * 1024
"""The longest response line read from a program; a longer one (or bytes that
never end a line) fails the request rather than filling the suite's memory."""
OVERLONG = b""
"""Queued in place of a line longer than :data:`MAX_LINE_BYTES` (``readline``
never returns an empty line before end of output)."""


class ProgramOutput:
    """The output of the program last :meth:`start`-ed: its lines, then None
    at end of output, and its stderr's last lines."""

    def __init__(self) -> None:
        self._ready = threading.Condition()
        self._lines: collections.deque[bytes | None] = collections.deque()
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_LINES)

    def start(self, proc: subprocess.Popen[bytes]) -> None:
        """Read ``proc``'s output from now on; what an earlier program wrote
        is dropped (its readers, still ending, queue into a queue of their own)."""
        assert proc.stdout is not None
        assert proc.stderr is not None
        self._lines = collections.deque()
        self._stderr.clear()
        threading.Thread(target=self.pump_out, args=(proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self.pump_err, args=(proc.stderr,), daemon=True).start()

    def take(self, timeout: float) -> bytes | None:
        """The next output line (:data:`OVERLONG` for one past the bound), or
        None at end of output; :class:`TimeoutError` when none comes within
        ``timeout`` seconds."""
        with self._ready:
            if not self._ready.wait_for(lambda: bool(self._lines), timeout=max(0.0, timeout)):
                raise TimeoutError
            return self._lines.popleft()

    def pump_out(self, stream: IO[bytes], sink: collections.deque[bytes | None]) -> None:
        """Queue the program's output lines, then None; closed here, by its
        reader: a close elsewhere waits on a read a child holding the pipe may never end."""
        with contextlib.suppress(OSError, ValueError), contextlib.closing(stream):
            while line := stream.readline(MAX_LINE_BYTES + 1):
                overlong = len(line) > MAX_LINE_BYTES
                with self._ready:
                    sink.append(OVERLONG if overlong else line)
                    self._ready.notify_all()
                if overlong:
                    # Read no further: the program is killed by the request.
                    return
        with self._ready:
            sink.append(None)
            self._ready.notify_all()

    def pump_err(self, stream: IO[bytes]) -> None:
        """Keep the last :data:`STDERR_LINES` lines of stderr, each cut to its
        last :data:`STDERR_LINE_CHARS` characters; read in bounded pieces, so
        text that never ends a line cannot fill memory.  Ends quietly when the
        stream closes under it; closes it at its end, as :meth:`pump_out` does."""
        unfinished = False
        with contextlib.suppress(OSError, ValueError), contextlib.closing(stream):
            while piece := stream.readline(_STDERR_READ):
                text = piece.decode("utf-8", "replace")
                ended = text.endswith("\n")
                text = text.rstrip("\n")
                if unfinished:
                    with contextlib.suppress(IndexError):  # cleared meanwhile
                        text = self._stderr.pop() + text
                self._stderr.append(text[-STDERR_LINE_CHARS:])
                unfinished = not ended

    def tail(self) -> str | None:
        """The last lines the program wrote to stderr; None when none."""
        return "\n".join(self._stderr) or None

    def clear_tail(self) -> None:
        """Forget what stderr said so far (a case starts afresh)."""
        self._stderr.clear()
