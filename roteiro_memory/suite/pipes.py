"""The wire form over a program's pipes: a request written within a
deadline, a response read as strict JSON, and what a response must be
(PROTOCOL "The wire form").

This module does not import pytest.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from typing import Any

from roteiro_memory.suite.errors import OpError

__all__ = [
    "AnsweredRequests",
    "NotStrictJSON",
    "UnreadableResponse",
    "is_shutdown",
    "raise_op_error",
    "raw_request",
    "read_response",
    "response_problem",
    "shown_line",
    "strict_loads",
    "write_within",
]

JSON = Any


def write_within(proc: subprocess.Popen[bytes], data: bytes, timeout: float) -> bool | None:
    """Write ``data`` to the program's input within ``timeout`` seconds: True
    once written, False when the pipe is broken, None when the time ran out
    (the program stopped reading; killing it ends the write).  A thread
    writes to a duplicate of the pipe's descriptor, unbuffered, so nothing
    the caller does with the pipe -- closing it once the program is killed --
    waits on that write, nor is another file ever written in its place."""
    assert proc.stdin is not None
    try:
        fd = os.dup(proc.stdin.fileno())
    except (OSError, ValueError):
        return False
    done: list[bool] = []

    def write() -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            done.append(True)
        except OSError:
            done.append(False)
        finally:
            os.close(fd)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(timeout)
    return done[0] if done else None


class NotStrictJSON(ValueError):
    """JSON text a lenient parser reads and a strict one refuses."""


def strict_loads(line: bytes) -> JSON:
    """A response line as strict JSON (RFC 8259): UTF-8 JSON [P-wire-line]
    holding neither the tokens ``NaN``, ``Infinity`` and ``-Infinity`` nor a
    string with a lone surrogate, which is not Unicode [P-wire-json] -- the
    suite holds the lines it reads to the rule its programs read by.  Raises
    :class:`NotStrictJSON` for those, UnicodeDecodeError for bytes that are
    not UTF-8, ValueError for text that is no JSON -- a byte-order mark
    before it included, which RFC 8259 forbids in JSON text sent.  (Given
    the bytes, ``json.loads`` would drop a mark unsaid, read UTF-16 and
    UTF-32, and let UTF-8's encoding of a lone surrogate through.)"""

    def refuse(token: str) -> JSON:
        raise NotStrictJSON(f"the token {token} is not JSON")

    text = line.decode("utf-8")
    value = json.loads(text, parse_constant=refuse)
    if "\\u" in text:
        found = _SURROGATE.search(json.dumps(value, ensure_ascii=False))
        if found is not None:
            raise NotStrictJSON(f"a string holds a lone surrogate (U+{ord(found[0]):04X})")
    return value


def shown_line(line: bytes) -> str:
    """A response line as a failure quotes it: decoded, cut to 500 characters."""
    shown = line.decode("utf-8", "replace").rstrip("\n")
    return shown if len(shown) <= 500 else shown[:500] + "..."


class UnreadableResponse(ValueError):
    """A response line that is no strict JSON line, saying why and naming the
    PROTOCOL rule it breaks; ``quoted``, when set, is how many of its
    characters a failure quotes."""

    def __init__(self, message: str, quoted: int | None = None) -> None:
        super().__init__(message)
        self.quoted = quoted


def read_response(line: bytes) -> JSON:
    """A response line read by :func:`strict_loads`, or :class:`UnreadableResponse`."""
    try:
        return strict_loads(line)
    except NotStrictJSON as error:
        raise UnreadableResponse(
            f"the response is not strict JSON ({error}; PROTOCOL [P-wire-json])"
        ) from None
    except UnicodeDecodeError as error:
        raise UnreadableResponse(
            f"the response is not UTF-8 ({error.reason} at byte {error.start}; "
            "PROTOCOL [P-wire-line])"
        ) from None
    except ValueError:
        raise UnreadableResponse(
            "the response is not a JSON line (PROTOCOL [P-wire-response]: one JSON object per line)"
        ) from None
    except RecursionError:
        raise UnreadableResponse("the response is nested too deeply to read", 80) from None


_SURROGATE = re.compile("[\ud800-\udfff]")


def is_shutdown(text: str) -> bool:
    try:
        request = json.loads(text)
    except ValueError:
        return False
    return isinstance(request, dict) and request.get("op") == "shutdown"


def raise_op_error(kind: str, message: str) -> JSON:
    raise OpError(kind, message)


def response_problem(response: JSON, request_id: int, *, unreadable: bool = False) -> str | None:
    """What makes ``response`` no answer to request ``request_id``, naming the
    PROTOCOL rule it breaks; None when it is one."""
    if not isinstance(response, dict):
        return f"not a JSON object; {_RESPONSE}"
    error = response.get("error")
    bad_request = (
        response.get("ok") is False
        and isinstance(error, dict)
        and error.get("kind") == "BadRequest"
    )
    if unreadable and response.get("id") is None and bad_request:
        # A request the program could not read (a NaN token, say) is answered
        # with "id": null; it is still the answer to this request, in order.
        return None
    echoed = response.get("id")
    if type(echoed) is not int or echoed != request_id:
        # [P-wire-id]: the same JSON integer; 1.0 and true are other values.
        return (
            f"id {json.dumps(echoed)} does not echo the request's id {request_id}; "
            "PROTOCOL [P-wire-id]"
        )
    ok = response.get("ok")
    if ok is True:
        return None if "result" in response else f"'ok': true without 'result'; {_RESPONSE}"
    if ok is False:
        error = response.get("error")
        if not isinstance(error, dict) or not isinstance(error.get("kind"), str):
            return f"'ok': false without an 'error' object carrying a string 'kind'; {_RESPONSE}"
        return None
    return f"'ok' must be true or false; {_RESPONSE}"


_RESPONSE = "PROTOCOL [P-wire-response]"


class AnsweredRequests:
    """The requests a program has answered, by id, in the case under way and
    the one before it -- those the driver numbered and those a case sent as
    raw lines with an integer id of its own: a response whose ``id`` names
    one of them is that request's second answer ([P-wire-response]: one
    response line per request), which this names -- op and case -- instead
    of blaming the request it arrived in place of.  Each is kept with its
    place among the requests sent (the driver's ``requests_sent`` after it),
    by which a run tells which of its steps sent it."""

    def __init__(self) -> None:
        self._now: dict[int, tuple[str, int]] = {}
        self._before: dict[int, tuple[str, int]] = {}

    def new_case(self) -> None:
        """A case starts (its reset is sent): what was answered is the case before's."""
        self._before, self._now = self._now, {}

    def answered(self, request_id: int, op: str, sent: int) -> None:
        """Request ``request_id``, the ``sent``-th request, answered; ``op``
        is how a failure names it.  A raw line reusing an id answered before
        in the case takes its place: the id says no more."""
        self._now[request_id] = (op, sent)

    def answered_if_echoed(self, response: JSON, request_id: int, op: str, sent: int) -> None:
        """:meth:`answered`, when ``response`` echoes ``request_id`` as the same
        JSON integer ([P-wire-id]) -- a raw line's answer, which may not."""
        echoed = response.get("id") if isinstance(response, dict) else None
        if type(echoed) is int and echoed == request_id:
            self.answered(request_id, op, sent)

    def taken(self, request_id: int) -> bool:
        """Whether an answered request of this case or the one before has
        ``request_id``: the driver numbers its own requests around the ids
        a case's raw lines used, so that a second answer to one of those is
        never read as the answer to a request of the driver's."""
        return request_id in self._now or request_id in self._before

    def second_answer(self, response: JSON, request_id: int) -> tuple[str, int] | None:
        """Why ``response``, read for request ``request_id``, is another
        request's second answer, with that request's place among those sent;
        None when it is not one."""
        echoed = response.get("id") if isinstance(response, dict) else None
        if type(echoed) is not int or echoed == request_id:
            return None
        if echoed in self._now:
            op, sent = self._now[echoed]
            which = f"request {echoed} ({op})"
        elif echoed in self._before:
            op, sent = self._before[echoed]
            which = f"request {echoed} ({op}, of the case before)"
        else:
            return None
        return (
            f"the program answered {which} a second time, where the answer to request "
            f"{request_id} was due; {_RESPONSE}: one response line per request",
            sent,
        )


def raw_request(text: str) -> tuple[int, str] | None:
    """The id of a raw line that is a request with a JSON integer id, and how
    a failure names it (its op, a raw line); None for any other line, whose
    answer carries no id of its own ([P-wire-id]: ``"id": null``)."""
    try:
        request = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(request, dict) or type(request.get("id")) is not int:
        return None
    op = request.get("op")
    return request["id"], f"{op}, a raw line" if isinstance(op, str) else "a raw line"
