"""The MCP server's stdio: lines read and written by us, so every request is
answered, the answers to what was received are all written before the
server exits, and a client that goes away ends the server quietly.

What holds:

* **Every request is answered** or handed on: :func:`~.lines.classify` answers
  what is not a message; a message goes to ``deliver``, which answers it or
  hands it to the SDK -- and a request it hands on is owed
  (:meth:`Wire.owe`) there, as the SDK read it, so what is owed is exactly what the SDK will
  answer or settle unanswered.  A shape the SDK reads otherwise than
  :func:`~.lines.classify` (a request it takes for a response) is owed
  nothing, so it cannot leave the server waiting at EOF.
* **One request an id.**  A request whose id is that of a request not yet
  answered is refused (``-32600``): MCP forbids reusing an id, and two
  requests in flight under one id would make their answers indistinguishable.
* **A batch is answered in one array** (when the session's revision has
  batches, :attr:`Wire.revision`): its requests are handed on one by one,
  their answers held until the last is settled, then written together;
  a batch of notifications gets nothing.  Otherwise it is refused whole.
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

import json
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from roteiro_memory.agents.lines import (
    BATCH_REVISIONS,
    INVALID_REQUEST,
    MAX_LINE_BYTES,
    Batch,
    Forward,
    Reply,
    classify,
    error_line,
    json_line,
    refuse_batch,
)
from roteiro_memory.errors import bounded_line
from roteiro_memory.terminal import to_stderr

__all__ = ["Deliver", "Wire"]

Deliver = Callable[[Forward], Awaitable[None]]
"""Hands one message on: answers it (:meth:`Wire.write` with the id it
answers), or gives it to the SDK, owing a request first (:meth:`Wire.owe`)."""


def _key(request: str | int) -> str:
    """One spelling per id: ``1`` and ``"1"`` are different requests."""
    return f"s{request}" if isinstance(request, str) else f"i{request}"


class _Collected:
    """The answers to one batch, held until each of its requests is settled."""

    def __init__(self, refused: tuple[dict[str, Any], ...]) -> None:
        self.answers: list[Any] = list(refused)
        self.open: set[str] = set()
        self.delivering = True


class Wire:
    """Newline-delimited JSON-RPC over the process's stdin and stdout."""

    def __init__(self) -> None:
        self.gone = False
        """Whether the client closed its end while an answer was owed."""
        self.revision: str | None = None
        """The MCP revision the session negotiated (None before initialize):
        batches are served under :data:`~.lines.BATCH_REVISIONS` only."""
        self._pending: set[str] = set()
        self._batch_of: dict[str, _Collected] = {}
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
        """Write one line (``answers``: the id of the request it answers; the
        answer to a request of a batch joins the batch's).  A closed pipe
        marks the client gone; nothing more is written."""
        if answers is not None:
            batch = self._batch_of.get(_key(answers))
            if batch is not None:
                batch.answers.append(json.loads(line))
            self.settle(answers)
            if batch is not None:
                return
        self._send(line)

    def _send(self, line: bytes) -> None:
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

    def owe(self, request: str | int) -> None:
        """The SDK has the request, and will answer it or settle it unanswered."""
        self._pending.add(_key(request))
        self._settled = anyio.Event()

    def settle(self, request: str | int) -> None:
        """The request is answered, or will never be (the client cancelled it)."""
        key = _key(request)
        self._pending.discard(key)
        batch = self._batch_of.pop(key, None)
        if batch is not None:
            batch.open.discard(key)
            self._flush(batch)
        if not self._pending:
            self._settled.set()

    def _flush(self, batch: _Collected) -> None:
        """Write a batch's answers once all are in (nothing when it has none)."""
        if batch.delivering or batch.open:
            return
        if batch.answers:
            self._send(json_line(batch.answers))

    # --- Reading -------------------------------------------------------------

    def _readline(self) -> bytes:
        """One line, or b"" at EOF; a line over the limit is read to its end
        (and refused by :func:`classify` for its length)."""
        return bounded_line(self._reader.readline, MAX_LINE_BYTES)

    def _refused(self, forward: Forward, batch: _Collected | None = None) -> bytes | None:
        """The refusal owed before ``forward`` reaches the SDK, or None: an id
        already in flight (here or in ``batch``), or initialize in a batch."""
        if forward.id is None:
            return None
        problem = None
        if batch is not None and forward.message.get("method") == "initialize":
            problem = "initialize may not be batched; send it on a line of its own"
        elif _key(forward.id) in self._pending or (batch and _key(forward.id) in batch.open):
            problem = (
                f"id {json.dumps(forward.id)} is that of a request not yet answered; "
                "each request takes an id of its own"
            )
        if problem is None:
            return None
        return error_line(INVALID_REQUEST, f"Invalid Request: {problem}", forward.id)

    async def _batch(self, batch: Batch, deliver: Deliver) -> None:
        """Serve a batch as JSON-RPC does, or refuse it whole (see the module)."""
        if self.revision not in BATCH_REVISIONS:
            refused = refuse_batch(batch, self.revision)
            if refused.line is not None:
                self._send(refused.line)
            return
        collected = _Collected(batch.refused)
        for forward in batch.messages:
            refusal = self._refused(forward, collected)
            if refusal is not None:
                collected.answers.append(json.loads(refusal))
                continue
            if forward.id is not None:
                collected.open.add(_key(forward.id))
                self._batch_of[_key(forward.id)] = collected
            await deliver(forward)
            if forward.id is not None and _key(forward.id) not in self._pending:
                self.settle(forward.id)  # answered as delivered: nothing to wait for
        collected.delivering = False
        self._flush(collected)

    async def pump(self, deliver: Deliver) -> None:
        """Read until EOF (or the client is gone), answering what is not a
        message and delivering what is; then wait until every delivered
        request is settled."""
        while not self.gone:
            try:
                line = await anyio.to_thread.run_sync(self._readline, abandon_on_cancel=True)
            except OSError as error:
                # Once gone (Ctrl-C closes the wire under this read), the
                # server is ending and has said why: nothing more to say.
                if not self.gone:
                    to_stderr(f"roteiro-memory: mcp: cannot read from the client: {error}\n")
                break
            if not line:
                break
            outcome = classify(line)
            if isinstance(outcome, Reply):
                if outcome.line is not None:
                    self._send(outcome.line)
            elif isinstance(outcome, Batch):
                await self._batch(outcome, deliver)
            elif (refusal := self._refused(outcome)) is not None:
                self._send(refusal)
            else:
                await deliver(outcome)
        if not self.gone:
            await self._settled.wait()
