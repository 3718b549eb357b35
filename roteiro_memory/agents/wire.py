"""The MCP server's stdio: lines read and written by us, so every request is
answered, the answers to what was received are all written before the
server exits, and a client that goes away ends the server quietly.

What holds:

* **Every line is answered** or handed on: :func:`~.lines.classify` answers
  what is not a message; a message goes to ``deliver`` (the SDK), and a
  message the SDK's validator refuses is answered ``-32600`` by the caller.
* **End of input finishes the work.**  At EOF the requests already handed on
  are answered (or settle unanswered, when the client cancelled them) before
  the SDK is told the input ended: a client that pipes 20 calls and closes
  its end gets 20 answers.  The SDK on its own cancels what is in flight.
* **A client gone is a quiet end.**  A write to a closed pipe stops the
  server with :attr:`Wire.gone` set, and nothing is raised.
* **The wire is ours alone.**  While serving, descriptors 0 and 1 point at
  the null device and at stderr, and the protocol uses private duplicates,
  so a child process (git) cannot read the client's requests and nothing
  printed by accident corrupts a frame; both are restored at the end.

No MCP SDK here (anyio only); :mod:`.server` joins this to the SDK.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable

import anyio

from roteiro_memory.agents.lines import MAX_LINE_BYTES, Forward, Reply, classify
from roteiro_memory.terminal import to_stderr

__all__ = ["Wire"]


def _key(request: str | int) -> str:
    """One spelling per id: ``1`` and ``"1"`` are different requests."""
    return f"s{request}" if isinstance(request, str) else f"i{request}"


class Wire:
    """Newline-delimited JSON-RPC over the process's stdin and stdout."""

    def __init__(self) -> None:
        self.gone = False
        """Whether the client closed its end while an answer was owed."""
        self._pending: set[str] = set()
        self._settled = anyio.Event()
        self._settled.set()
        self._restore: list[tuple[int, int]] = []
        self._in = self._claim(0, os.O_RDONLY)
        self._out = self._claim(1, os.O_WRONLY)
        self._reader = os.fdopen(self._in, "rb", closefd=False)

    def _claim(self, fd: int, mode: int) -> int:
        """A private duplicate of ``fd`` for the protocol; ``fd`` itself now
        points at the null device (stdin) or at stderr (stdout)."""
        private = os.dup(fd)
        os.set_inheritable(private, False)
        stand_in = os.open(os.devnull, mode) if fd == 0 else os.dup(2)
        os.dup2(stand_in, fd)
        os.close(stand_in)
        self._restore.append((fd, private))
        return private

    def close(self) -> None:
        """Give descriptors 0 and 1 their wire back."""
        for fd, private in reversed(self._restore):
            os.dup2(private, fd)
            os.close(private)
        self._restore.clear()

    # --- Writing -------------------------------------------------------------

    def write(self, line: bytes, answers: str | int | None = None) -> None:
        """Write one line (``answers``: the id of the request it answers).
        A closed pipe marks the client gone; nothing more is written."""
        if answers is not None:
            self.settle(answers)
        if self.gone:
            return
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(self._out, view) :]
        except (BrokenPipeError, ConnectionResetError):
            self.gone = True
        except OSError as error:
            to_stderr(f"roteiro-memory: mcp: cannot write to the client: {error}\n")
            self.gone = True

    def settle(self, request: str | int) -> None:
        """The request is answered, or will never be (the client cancelled it)."""
        self._pending.discard(_key(request))
        if not self._pending:
            self._settled.set()

    # --- Reading -------------------------------------------------------------

    def _readline(self) -> bytes:
        """One line, or b"" at EOF; a line over the limit is read to its end
        (and refused by :func:`classify` for its length)."""
        line = self._reader.readline(MAX_LINE_BYTES + 1)
        if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
            return line
        while True:
            rest = self._reader.readline(MAX_LINE_BYTES)
            if not rest or rest.endswith(b"\n"):
                return line
            # The excess is dropped: only its length matters to the refusal.

    async def pump(self, deliver: Callable[[Forward], Awaitable[None]]) -> None:
        """Read until EOF (or the client is gone), answering what is not a
        message and delivering what is; then wait until every delivered
        request is settled."""
        while not self.gone:
            try:
                line = await anyio.to_thread.run_sync(self._readline, abandon_on_cancel=True)
            except OSError as error:
                to_stderr(f"roteiro-memory: mcp: cannot read from the client: {error}\n")
                break
            if not line:
                break
            outcome = classify(line)
            if isinstance(outcome, Reply):
                if outcome.line is not None:
                    self.write(outcome.line)
                continue
            if outcome.id is not None:
                self._pending.add(_key(outcome.id))
                self._settled = anyio.Event()
            await deliver(outcome)
        if not self.gone:
            await self._settled.wait()
