"""Tool calls, run off the MCP server's event loop on the one thread that owns
the session.

What holds:

* **The loop stays free.**  A call is handed to the owning thread and
  awaited, so the loop goes on reading: ``ping`` is answered while a call
  runs, and a ``notifications/cancelled`` is seen while it runs.
* **One thread, one call at a time, in the order handed on.**  The store's
  connection is bound to the thread that opened it (SQLite's is), so the
  owning thread is that one; and it takes the calls first in, first out, so
  a call sees what every call read before it wrote.  Answers to what is not
  a call (``ping``, ``tools/list``) are not held behind them.
* **A cancelled call is not answered.**  Cancelled before it starts, it
  never runs; cancelled while it runs, it runs to its end (a write is never
  left half done) and its result is dropped.
* **The owning thread is never left waiting.**  :meth:`Calls.serve` returns
  once :meth:`Calls.close` is called, which the loop's thread does however it
  ends; nothing on the owning thread waits for the loop.

No MCP SDK here (asyncio, which :func:`anyio.run` runs by default).
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["Calls"]

T = TypeVar("T")


class Calls:
    """The calls handed from the event loop to the thread that owns the session."""

    def __init__(self) -> None:
        self._waiting: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None]
        self._waiting = queue.SimpleQueue()

    async def run(self, work: Callable[[], T]) -> T:
        """What ``work`` returns (or raises), run on the owning thread after
        every call handed on before it.  Cancelling the awaiting task cancels
        a call not yet started; one already running finishes, unheard."""
        done: Future[T] = Future()
        self._waiting.put((done, work))
        return await asyncio.wrap_future(done)

    def close(self) -> None:
        """No more calls: :meth:`serve` returns once those handed on are done."""
        self._waiting.put(None)

    def serve(self) -> None:
        """Run the calls handed on, on this thread, until :meth:`close`.  An
        exception a call raises is its caller's; an interrupt (Ctrl-C) ends
        the serving at once."""
        while (job := self._waiting.get()) is not None:
            done, work = job
            if not done.set_running_or_notify_cancel():
                continue  # cancelled before it started
            try:
                result = work()
            except Exception as error:
                done.set_exception(error)
            else:
                done.set_result(result)
