"""Finding and driving a backend: in-process objects and external programs.

A backend spec is one of:

* a registered name -- a factory from the ``roteiro.backends`` entry-point
  group (this package registers ``sqlite`` and ``memory``) or a plugin's
  ``pytest_roteiro_backend_factories`` hook, called with no argument;
* ``NAME:ARGUMENT`` -- the factory registered as ``NAME``, called with
  ``ARGUMENT``; and ``NAME://...``, a URI, the factory registered as its
  scheme, called with the whole URI.  This package registers ``postgres``
  (and ``postgresql``): ``postgres:DSN`` or a ``postgresql://`` URI is the
  PostgreSQL store the DSN names, in-process, in a throwaway schema dropped
  at close unless the DSN names one (``?schema=NAME``);
* ``module.path:factory`` -- a callable returning a
  :class:`roteiro_memory.store.Store` or any object with ``call(op, args)``;
* ``cmd:COMMAND LINE`` -- a program speaking the PROTOCOL wire form on its
  standard input and output.

A spec may carry a DSN's password, so it is shown -- as a backend's name, in
every message, summary and report -- as :func:`shown_spec` shows it, and
connected with as given.  What the suite writes of a backend's answers is
strict JSON as the library's servers write it: :func:`strict_json`, the
library's one rule, reached here as the rest of the library is, as is how a
file is written whole (:func:`replace_file`, :func:`check_replaceable`).
Which stores there are is the entry points' business: this module names
none.  It does not import pytest.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from roteiro_memory.errors import byte_order_mark, strict_json
from roteiro_memory.privatefile import check_replaceable
from roteiro_memory.privatefile import replace as replace_file
from roteiro_memory.redaction import mask, redact
from roteiro_memory.suite.errors import BackendFailure, BackendSpecError, OpError
from roteiro_memory.suite.greeting import capabilities_of, implementation_of
from roteiro_memory.suite.pipes import (
    AnsweredRequests,
    UnreadableResponse,
    is_shutdown,
    raise_op_error,
    raw_request,
    read_response,
    response_problem,
    shown_line,
    write_within,
)
from roteiro_memory.suite.program_output import (
    MAX_LINE_BYTES,
    OVERLONG,
    STDERR_LINE_CHARS,
    STDERR_LINES,
    ProgramOutput,
)
from roteiro_memory.suite.runner import Backend
from roteiro_memory.suite.timeouts import DEFAULT_TIMEOUT
from roteiro_memory.suite.vocabulary import STORE_ENV

__all__ = [
    "ENTRY_POINT_GROUP",
    "NO_BACKEND_NAMED",
    "STDERR_LINES",
    "STDERR_LINE_CHARS",
    "BackendSpecError",
    "InProcessBackend",
    "SubprocessBackend",
    "check_replaceable",
    "entry_point_factories",
    "memory_store",
    "reference_numbers",
    "replace_file",
    "resolve_backend",
    "shown_spec",
    "strict_json",
    "withheld",
    "withholder",
]

JSON = Any
Factory = Callable[..., object]
"""Makes a backend: called with no argument for a registered name, with one
(a string) for ``NAME:ARGUMENT`` or a URI."""
ENTRY_POINT_GROUP = "roteiro.backends"
RESTARTED = "; the program was restarted for the next case"
"""How a failure's message ends when the program was killed for it."""


def memory_store() -> object:
    """The in-memory model store, the reference the suite's sequences
    compare a backend with (registered as ``memory``)."""
    factory = entry_point_factories().get("memory")
    if factory is None:
        raise BackendSpecError(
            f"no 'memory' backend in the {ENTRY_POINT_GROUP!r} entry points: install "
            "roteiro-memory (pip install -e . in a checkout) so that they are registered"
        )
    return factory()


def reference_numbers() -> Callable[[str, JSON, JSON, JSON], JSON]:
    """The reference's rule for the numbers a faithful ``ln`` or power may
    move (PROTOCOL [P-search-numbers]), as the properties compare a backend
    with the reference model: :func:`roteiro_memory.faithful.within_faithful`."""
    from roteiro_memory.faithful import within_faithful

    return within_faithful


def entry_point_factories() -> dict[str, Factory]:
    """Backends installed packages register in the ``roteiro.backends`` group.

    Each entry point names a factory; it is loaded only when chosen.
    """
    out: dict[str, Factory] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):

        def load(*argument: str, ep: Any = ep) -> object:
            return _make(ep.load(), *argument)

        out[ep.name] = load
    return out


# --- In-process ----------------------------------------------------------------


class InProcessBackend:
    """An object with ``call(op, args)`` (or a ``Store``, wrapped in ``Ops``).

    Exceptions with a ``kind`` attribute (the :mod:`roteiro_memory.errors`
    tree) are refusals; anything else escaping ``call`` is a backend failure.
    """

    def __init__(self, target: object, name: str) -> None:
        self.name = shown_spec(name)
        self._target = _as_caller(target, self.name)
        self._hello: JSON = None

    @property
    def speaks_wire(self) -> bool:
        """Whether raw request lines can be answered: only for the reference
        ``Ops``, whose wire form is :func:`roteiro_memory.protocol.handle_line`."""
        from roteiro_memory.protocol import Ops

        return isinstance(self._target, Ops)

    def send_raw(self, line: str) -> JSON:
        """The response object to one raw request line (reference ``Ops`` only)."""
        from roteiro_memory.protocol import Ops, handle_line

        if not isinstance(self._target, Ops):
            raise BackendFailure(f"backend {self.name!r} is in-process and takes no wire lines")
        response, _ = handle_line(self._target, line.encode("utf-8", "surrogatepass"))
        return json.loads(response)

    def call(self, op: str, args: Mapping[str, JSON]) -> JSON:
        try:
            result = self._target.call(op, dict(args))
        except Exception as error:
            kind = getattr(error, "kind", None)
            if isinstance(kind, str):
                raise OpError(kind, str(error)) from error
            raise BackendFailure(
                f"{op} raised {type(error).__name__}: {error} (not a PROTOCOL error kind)"
            ) from error
        # A result must be JSON: round-trip it so in-process and wire agree.
        try:
            return json.loads(json.dumps(result, allow_nan=False))
        except (TypeError, ValueError) as error:
            shown = repr(result)
            shown = shown if len(shown) <= 500 else shown[:500] + "..."
            raise BackendFailure(f"{op} returned a value that is not JSON: {shown}") from error
        except RecursionError:
            raise BackendFailure(f"{op} returned a value nested too deeply to read") from None

    def hello(self) -> JSON:
        """The backend's answer to ``hello``, asked once."""
        if self._hello is None:
            self._hello = self.call("hello", {})
        return self._hello

    def capabilities(self) -> frozenset[str]:
        return capabilities_of(self.hello(), self.name)

    def implementation(self) -> str | None:
        return implementation_of(self.hello())

    def stderr_tail(self) -> str | None:
        return None

    def close(self) -> None:
        closer = getattr(getattr(self._target, "store", self._target), "close", None)
        if callable(closer):
            closer()


def _as_caller(target: object, name: str) -> Any:
    if callable(getattr(target, "call", None)):
        return target
    from roteiro_memory.protocol import Ops
    from roteiro_memory.store import Store

    if isinstance(target, Store):
        return Ops(target)
    raise BackendSpecError(
        f"backend {name!r}: the factory returned {type(target).__name__}, which is neither a "
        "roteiro_memory Store nor an object with a call(op, args) method"
    )


# --- External programs -------------------------------------------------------


class SubprocessBackend:
    """A program speaking the PROTOCOL wire form, one JSON line each way.

    Every request waits at most ``timeout`` seconds.  A program that hangs,
    dies or answers with a line that breaks the protocol is killed; the request
    fails with :class:`BackendFailure` (the line received, the exit status, the
    stderr tail) and the next request starts a fresh program.
    """

    def __init__(
        self,
        argv: list[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> None:
        if not argv:
            raise BackendSpecError("cmd: needs a command line, e.g. 'cmd:my-store --protocol'")
        self.argv = argv
        self.name = shown_spec(f"cmd:{shlex.join(argv)}")
        self.timeout = timeout
        self.env = dict(env or {})
        """Variables added to the program's environment (the durability
        entries name the store this way)."""
        self._proc: subprocess.Popen[bytes] | None = None
        self.output = ProgramOutput()
        """What the running program writes: its lines, its stderr's tail."""
        self._next_id = 0
        self._sent = 0
        """The requests sent: call's and raw lines alike."""
        self._answered = AnsweredRequests()
        self._hello: JSON = None
        self.restarts = 0

    def _start(self) -> subprocess.Popen[bytes]:
        try:
            proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._environment(),
                process_group=0,  # its own group: killed with every process it starts
            )
        except OSError as error:
            said = withheld(str(error), f"cmd:{shlex.join(self.argv)}")
            raise BackendFailure(
                f"cannot start {self.name.removeprefix('cmd:')}: {said}"
            ) from error
        self.output.start(proc)
        self._proc = proc
        return proc

    def _environment(self) -> dict[str, str]:
        """The program's environment: the suite's own, less the variable that
        names a durability entry's store (PROTOCOL [P-store-env]) unless this
        backend sets it -- inherited from the caller, it would point the main
        backend at a store the next run refuses as not its own."""
        inherited = {k: v for k, v in os.environ.items() if k != STORE_ENV}
        return {**inherited, "PYTHONUNBUFFERED": "1", **self.env}

    def stderr_tail(self) -> str | None:
        return self.output.tail()

    @property
    def pid(self) -> int | None:
        """The running program's process id; None when none is running."""
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def kill(self) -> None:
        """SIGKILL the program between requests, as a crash would: no shutdown,
        nothing flushed.  The next request starts it afresh.  (To kill it while
        a request waits, signal :attr:`pid`: that request then fails.)"""
        self._kill()

    def _kill(self) -> None:
        """SIGKILL the program's process group (with what it started, which may
        hold its pipes open) and reap it; its output streams close at their readers."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        # A group outlives its exited leader while one of it lives, keeping its id.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
        # A killed program is reaped; one that survives a kill is left to the OS.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        if proc.stdin is not None:
            # Written only through a duplicate descriptor: nothing to flush.
            with contextlib.suppress(OSError):
                proc.stdin.close()

    def _fail(self, message: str, *, answered_twice: int | None = None) -> BackendFailure:
        # Give the stderr reader a moment to drain what the program said last.
        proc = self._proc
        if proc is not None and proc.poll() is not None:
            threading.Event().wait(0.05)
        tail = self.stderr_tail()
        self._kill()
        self.restarts += 1
        return BackendFailure(message + RESTARTED, tail, answered_twice=answered_twice)

    def _read_line(self, proc: subprocess.Popen[bytes], op: str, deadline: float) -> bytes:
        try:
            line = self.output.take(deadline - time.monotonic())
        except TimeoutError:
            raise self._fail(
                f"{op}: no response within {self.timeout:g}s (the program hung)"
            ) from None
        if line is OVERLONG:
            raise self._fail(
                f"{op}: the response is longer than {MAX_LINE_BYTES} bytes without ending "
                "its line (the protocol's responses are one JSON line each)"
            )
        if line is None:
            try:
                status = proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                status = None
            raise self._fail(
                f"{op}: the program closed its output without answering "
                f"(exit status {status if status is not None else 'unknown: still running'}; "
                f"{_ANSWERED})"
            )
        return line

    def call(self, op: str, args: Mapping[str, JSON]) -> JSON:
        proc = self._proc if self._proc is not None and self._proc.poll() is None else None
        if proc is None:
            if self._proc is not None and op != "reset":
                status = self._proc.returncode
                raise self._fail(f"{op}: the program had exited with status {status} ({_ANSWERED})")
            # A case starts with reset: a program that exited after the last
            # case is simply started again.
            self._kill()
            proc = self._start()
        if op == "reset":
            # Each case starts with reset, so the stderr shown on a failure is
            # what the program said during that case.
            self.output.clear_tail()
            self._answered.new_case()
        self._next_id += 1
        while self._answered.taken(self._next_id):  # a raw line's id: its second answer
            self._next_id += 1
        request_id = self._next_id
        self._sent += 1
        body = {"id": request_id, "op": op, "args": dict(args)}
        # A NaN goes out as the token NaN and a lone surrogate as its \u escape,
        # as a case asks: both are for the program to refuse (PROTOCOL [P-wire-json]).
        try:
            request = json.dumps(body, ensure_ascii=False, allow_nan=False)
            unreadable = False
        except ValueError:
            request = json.dumps(body, ensure_ascii=False)
            unreadable = True  # not JSON: the answer cannot echo the id
        try:
            data = request.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate: a strict parser refuses the line before it
            # reads the id, so the answer may carry "id": null, as for NaN.
            data = json.dumps(body, ensure_ascii=True).encode("ascii")
            unreadable = True
        line = self._exchange(proc, op, data)
        return self._decode(op, request_id, line, unreadable=unreadable)

    @property
    def requests_sent(self) -> int:
        """How many requests were sent, by :meth:`call` and :meth:`send_raw`
        alike, by which a run tells which of its steps sent a request."""
        return self._sent

    @property
    def speaks_wire(self) -> bool:
        return True

    def send_raw(self, text: str) -> JSON:
        """Send one line as is; the response object, whatever its id.  A line
        that is a request with an integer id is recorded as answered once its
        answer echoes that id, and an answer with another request's id is
        that request's second answer, as for :meth:`call`'s requests."""
        proc = self._proc if self._proc is not None and self._proc.poll() is None else None
        if proc is None:
            raise self._fail("raw line: the program had exited")
        shown = text if len(text) <= 200 else text[:200] + "..."
        self._sent += 1
        line = self._exchange(proc, f"raw line {shown!r}", text.encode("utf-8", "surrogatepass"))
        response = self._parse("raw line", line)
        request = raw_request(text)
        if request is not None:
            self._check_answer("raw line", request[0], response, line)
            self._answered.answered_if_echoed(response, *request, self._sent)
        if is_shutdown(text) and isinstance(response, dict) and response.get("ok") is True:
            self._await_exit(proc)
        return response

    def _await_exit(self, proc: subprocess.Popen[bytes]) -> None:
        """After an answered shutdown the program must end, with status 0
        (PROTOCOL [P-wire-end]); the next case's reset starts it afresh."""
        try:
            status = proc.wait(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            message = f"shutdown: the program did not exit within {self.timeout:g}s ({_END})"
            raise self._fail(message) from None
        if status != 0:
            raise self._fail(f"shutdown: the program exited with status {status}, not 0 ({_END})")

    def _exchange(self, proc: subprocess.Popen[bytes], op: str, data: bytes) -> bytes:
        """Send one request line and read its response, within one deadline
        for both: a program that stops reading its input (with more to send
        than the pipe holds) fails the request as one that stops answering."""
        deadline = time.monotonic() + self.timeout
        written = write_within(proc, data + b"\n", self.timeout)
        if written is None:
            raise self._fail(
                f"{op}: no response within {self.timeout:g}s "
                "(the program hung: it stopped reading its input)"
            )
        if not written:
            status = proc.poll()
            raise self._fail(
                f"{op}: the program is not reading its input (exit status {status}; {_ANSWERED})"
            )
        return self._read_line(proc, op, deadline)

    def _parse(self, op: str, line: bytes) -> JSON:
        """A response line read as strict JSON, or the failure naming the rule
        it breaks: a byte-order mark (its first three bytes) is said in the
        library's one wording, and breaks [P-wire-line], UTF-8 JSON."""
        try:
            marked = byte_order_mark(line)
            if marked is not None:
                raise UnreadableResponse(f"the response {marked} (PROTOCOL [P-wire-line])")
            return read_response(line)
        except UnreadableResponse as error:
            shown = shown_line(line)
            shown = shown if error.quoted is None else shown[: error.quoted]
            raise self._fail(f"{op}: {error}: {shown!r}") from None

    def _decode(self, op: str, request_id: int, line: bytes, *, unreadable: bool = False) -> JSON:
        response = self._parse(op, line)
        self._check_answer(op, request_id, response, line)
        problem = response_problem(response, request_id, unreadable=unreadable)
        if problem:
            shown = shown_line(line)
            raise self._fail(f"{op}: the response breaks the protocol ({problem}): {shown!r}")
        self._answered.answered(request_id, op, self._sent)
        if response["ok"]:
            return response["result"]
        refusal = response["error"]
        return raise_op_error(refusal["kind"], refusal.get("message", ""))

    def _check_answer(self, op: str, request_id: int, response: JSON, line: bytes) -> None:
        """Fail when ``response``, read for request ``request_id``, is another's second answer."""
        second = self._answered.second_answer(response, request_id)
        if second is not None:
            said, sent = second
            raise self._fail(f"{op}: {said}: {shown_line(line)!r}", answered_twice=sent)

    def hello(self) -> JSON:
        """The backend's answer to ``hello``, asked once."""
        if self._hello is None:
            self._hello = self.call("hello", {})
        return self._hello

    def check_answered_once(self) -> None:
        """Fail, before a run's verdict, when the program sent a line after
        its last answer that no request asked for (a request answered twice):
        that run breaks [P-wire-response], not the next one's reset.  The
        program answers in order, so a ``hello`` sent now is answered after
        any such line: no wait, and the same verdict every run.  A program
        that has ended is read to the end of its output instead.  The failure
        says what was found; :func:`~roteiro_memory.suite.runner.end_of_case`
        says after what."""
        proc = self._proc
        if proc is None:  # killed for a failure the case already has
            return
        if proc.poll() is None:
            try:
                self.call("hello", {})
            except BackendFailure as failure:
                said = failure.message.removeprefix("hello: ")
                raise BackendFailure(
                    f"{_HELLO_SENT}{said}", failure.stderr, answered_twice=failure.answered_twice
                ) from None
            except OpError as error:
                raise self._fail(f"{_HELLO_SENT}it was refused: {error}") from None
            return
        try:
            line = self.output.take(self.timeout)
        except TimeoutError:
            return  # a child holds the output open: the next case's reset ends it
        if line is not None:
            raise self._fail(
                "the program ended, having sent a line no request asked for "
                f"({_ANSWERED}): {shown_line(line)!r}"
            )

    def capabilities(self) -> frozenset[str]:
        return capabilities_of(self.hello(), self.name)

    def implementation(self) -> str | None:
        return implementation_of(self.hello())

    def close(self) -> None:
        proc = self._proc
        if (
            proc is not None
            and proc.poll() is None
            and proc.stdin is not None
            and write_within(proc, b'{"id": 0, "op": "shutdown"}\n', 2.0)
        ):
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                proc.stdin.close()
                proc.wait(timeout=2)
        self._kill()


_ANSWERED = "PROTOCOL [P-wire-response]: one response line per request"
"""Why a program that ends, or stops reading, before it answers breaks the protocol."""
_HELLO_SENT = "the hello sent to find a request answered twice: "
_END = "PROTOCOL [P-wire-end]: shutdown ends the program with exit status 0"


# --- Resolution --------------------------------------------------------------


class _TakesNoArgument(Exception):
    """A factory was given an argument it does not take."""


def _make(factory: Factory, *argument: str) -> object:
    """What ``factory`` makes, given ``argument`` when there is one."""
    if argument:
        import inspect

        try:
            inspect.signature(factory).bind(*argument)
        except TypeError:
            raise _TakesNoArgument from None
        except ValueError:
            return factory(*argument)  # no signature to read: the call says
    return factory(*argument)


def _with_argument(factory: Factory, spec: str, argument: str) -> Backend:
    """The backend ``factory`` makes of ``argument``; a refusal of it (an
    error carrying a PROTOCOL kind: a malformed DSN, say) is the spec's fault."""
    try:
        return InProcessBackend(_make(factory, argument), spec)
    except _TakesNoArgument:
        raise BackendSpecError(
            f"backend {shown_spec(spec)!r}: the backend {spec.partition(':')[0]!r} "
            "takes no argument"
        ) from None
    except Exception as error:
        if isinstance(getattr(error, "kind", None), str):
            raise BackendSpecError(
                f"backend {shown_spec(spec)!r}: {withheld(str(error), spec)}"
            ) from None
        raise


def resolve_backend(
    spec: str,
    factories: Mapping[str, Factory] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> Backend:
    """The backend ``spec`` names (see the module docstring).

    ``factories`` are named backends beyond the built-in and entry-point ones
    (a later mapping wins over an earlier one).
    """
    spec = spec.strip()
    shown = shown_spec(spec)
    if spec.startswith("cmd:"):
        try:
            argv = shlex.split(spec[4:])
        except ValueError as error:
            raise BackendSpecError(
                f"backend {shown!r}: cannot split the command: {error}"
            ) from None
        return SubprocessBackend(argv, timeout=timeout)
    named = {**entry_point_factories(), **(factories or {})}
    if spec in named:
        return InProcessBackend(named[spec](), spec)
    name, colon, argument = spec.partition(":")
    if colon and name in named:
        return _with_argument(named[name], spec, spec if argument.startswith("//") else argument)
    if ":" in spec:
        module_name, _, attr = shown.partition(":")
        try:
            module = importlib.import_module(spec.partition(":")[0])
        except ImportError as error:
            raise BackendSpecError(
                f"backend {shown!r}: cannot import module {module_name!r}: "
                f"{withheld(str(error), spec)}"
            ) from None
        factory = getattr(module, spec.partition(":")[2], None)
        if not callable(factory):
            raise BackendSpecError(
                f"backend {shown!r}: module {module_name!r} has no callable {attr!r}"
            )
        return InProcessBackend(factory(), spec)
    raise BackendSpecError(
        f"unknown backend {shown!r}: expected one of {', '.join(sorted(named))}, "
        "'module.path:factory' or 'cmd:COMMAND LINE'"
    )


# --- Showing a spec ------------------------------------------------------------

NO_BACKEND_NAMED = (
    "no backend is named, so none of yours would be checked: name it with --backend SPEC in "
    "the hook's args (module.path:factory, a registered name, or 'cmd:COMMAND LINE'), or with "
    "roteiro_backend in the pytest configuration"
)
"""Why a run that must be told its backend (``--roteiro-backend-required``,
which the ``roteiro-conformance`` hook passes) was told none."""


def shown_spec(spec: str) -> str:
    """``spec`` as every name, message, summary and report shows it: each
    password a DSN in it carries -- ``postgres:DSN``, a URI, libpq
    keyword/value text, or a word of a ``cmd:`` command line
    (``--backend postgres:DSN``, ``--db=DSN``) -- shown as ``<password>``
    where it stands (:mod:`roteiro_memory.redaction`), the rest as given.
    Showing a shown spec changes nothing."""
    words = _command_words(spec)
    if any(mask(word) != word and word not in spec for word in words):
        # A word written with escapes does not stand in the spec as it is.
        return "cmd:" + shlex.join(mask(word) for word in words)
    return withheld(spec, spec)


def withheld(text: str, spec: str) -> str:
    """``text`` (about the backend ``spec`` names: an error, what its factory
    said) with every password the spec carries withheld, and the spec, where
    it holds it, as :func:`shown_spec` shows it."""
    return withholder(spec)(text)


def withholder(spec: str) -> Callable[[str], str]:
    """:func:`withheld` for many texts about one spec: the spec read once,
    and each text left as it is when the spec carries no password."""
    dsns = (spec, *_command_words(spec))
    if all(mask(dsn) == dsn for dsn in dsns):
        return str
    return lambda text: redact(text, *dsns)


def _command_words(spec: str) -> list[str]:
    """The words of a ``cmd:`` spec's command line (split at white space when
    they do not split as a shell would); none for any other spec."""
    head, cmd, line = spec.partition("cmd:")
    if not cmd or head.strip():
        return []
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()
