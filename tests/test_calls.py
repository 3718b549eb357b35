"""``Calls`` in one process, each race decided by the test: what a cancel does
depends only on whether the call had started, and the loop stays free while a
call runs.  (``test_mcp_calls`` drives the same through a server, where the
order of a cancel and a call's start is the scheduler's.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from roteiro_memory.agents.calls import Calls

WAIT = 30.0


def served(test: Callable[[Calls], Coroutine[Any, Any, None]]) -> None:
    """Run ``test`` on an event loop in another thread while this thread
    serves the calls, as the server does."""
    calls = Calls()
    failure: list[BaseException] = []

    def loop() -> None:
        try:
            asyncio.run(test(calls))
        except BaseException as error:  # handed to the test's own thread
            failure.append(error)
        finally:
            calls.close()

    thread = threading.Thread(target=loop, name="loop")
    thread.start()
    calls.serve()
    thread.join(WAIT)
    assert not thread.is_alive()
    if failure:
        raise failure[0]


def test_the_loop_stays_free_while_a_call_runs() -> None:
    running, release = threading.Event(), threading.Event()
    ran_on: list[str] = []

    def work() -> str:
        ran_on.append(threading.current_thread().name)
        running.set()
        assert release.wait(WAIT)
        return "done"

    async def test(calls: Calls) -> None:
        call = asyncio.create_task(calls.run(work))
        assert await asyncio.to_thread(running.wait, WAIT)
        # The call is running: the loop still runs other tasks meanwhile.
        assert await asyncio.sleep(0, "answered") == "answered"
        assert not call.done()
        release.set()
        assert await call == "done"

    served(test)
    assert ran_on == [threading.current_thread().name]


def test_a_call_cancelled_while_it_runs_runs_to_its_end_unheard() -> None:
    running, release = threading.Event(), threading.Event()
    ended: list[str] = []

    def work() -> None:
        running.set()
        assert release.wait(WAIT)
        ended.append("first")

    async def test(calls: Calls) -> None:
        call = asyncio.create_task(calls.run(work))
        assert await asyncio.to_thread(running.wait, WAIT)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        release.set()
        # The next call runs after it, so it sees the cancelled call's end.
        assert await calls.run(lambda: list(ended)) == ["first"]

    served(test)
    assert ended == ["first"]


def test_a_call_cancelled_before_it_starts_never_runs() -> None:
    running, release = threading.Event(), threading.Event()
    ran: list[str] = []

    def blocking() -> None:
        running.set()
        assert release.wait(WAIT)
        ran.append("blocking")

    async def test(calls: Calls) -> None:
        first = asyncio.create_task(calls.run(blocking))
        assert await asyncio.to_thread(running.wait, WAIT)
        queued = asyncio.create_task(calls.run(lambda: ran.append("queued")))
        await asyncio.sleep(0)  # handed on, behind the running call
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        release.set()
        await first
        assert await calls.run(lambda: list(ran)) == ["blocking"]

    served(test)
    assert ran == ["blocking"]


def test_an_exception_a_call_raises_is_its_callers_and_serving_goes_on() -> None:
    def failing() -> None:
        raise ValueError("the call's own")

    async def test(calls: Calls) -> None:
        with pytest.raises(ValueError, match="the call's own"):
            await calls.run(failing)
        assert await calls.run(lambda: 2) == 2

    served(test)


def test_calls_run_one_at_a_time_in_the_order_handed_on() -> None:
    order: list[int] = []

    async def test(calls: Calls) -> None:
        tasks = [asyncio.create_task(calls.run(lambda n=n: order.append(n))) for n in range(20)]
        await asyncio.gather(*tasks)

    served(test)
    assert order == list(range(20))
