"""A small client for the protocol server, run as a real subprocess.

Every read waits at most :data:`TIMEOUT` seconds: a server that hangs fails
the test that is talking to it (and is killed) instead of hanging the run.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TIMEOUT = 30.0
"""Seconds any single exchange with a server may take before the test fails."""

MODULE_ARGV = (sys.executable, "-m", "roteiro_memory")
"""The command line as ``python -m``; the console script is the other form."""


def server_argv(
    backend: str, db: Path | None = None, *, command: Sequence[str] = MODULE_ARGV
) -> list[str]:
    """The argv that serves ``backend`` (over ``db`` when given)."""
    argv = [*command, "protocol", "--backend", backend]
    if db is not None:
        argv += ["--db", str(db)]
    return argv


def request_line(request_id: int, op: str, args: dict[str, Any] | None = None) -> bytes:
    """One request as the bytes of a line, without its newline."""
    body: dict[str, Any] = {"id": request_id, "op": op}
    if args is not None:
        body["args"] = args
    return json.dumps(body).encode("utf-8")


def run_lines(
    argv: Sequence[str], lines: Sequence[bytes], *, env: dict[str, str] | None = None
) -> tuple[list[dict[str, Any]], str, int]:
    """Feed ``lines`` to a fresh server and close its input: the responses,
    stderr, and the exit status."""
    stdin = b"".join(line + b"\n" for line in lines)
    done = subprocess.run(
        argv,
        input=stdin,
        capture_output=True,
        timeout=TIMEOUT,
        env=env,
        check=False,
    )
    # Lines end at b"\n" only: U+2028 and friends may sit raw inside a string.
    assert done.stdout == b"" or done.stdout.endswith(b"\n"), done.stdout[-200:]
    responses = [json.loads(raw.decode("utf-8")) for raw in done.stdout.split(b"\n")[:-1]]
    return responses, done.stderr.decode("utf-8", "replace"), done.returncode


class WireServer:
    """One running server: send lines, read the response to each in turn."""

    def __init__(self, argv: Sequence[str], *, env: dict[str, str] | None = None) -> None:
        self.argv = list(argv)
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env if env is not None else dict(os.environ),
        )
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._stderr: list[bytes] = []
        self._next_id = 0
        self._pumps = [
            threading.Thread(target=self._pump_stdout, daemon=True),
            threading.Thread(target=self._pump_stderr, daemon=True),
        ]
        for pump in self._pumps:
            pump.start()

    def _pump_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)
        self._lines.put(b"")  # end of output

    def _pump_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line)

    @property
    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def send(self, data: bytes) -> None:
        """Write raw bytes to the server's input (add the newline yourself)."""
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def read(self) -> dict[str, Any]:
        """The next response line, parsed; fails on a hang or an early exit."""
        try:
            raw = self._lines.get(timeout=TIMEOUT)
        except queue.Empty:
            self.kill()
            raise AssertionError(
                f"no response within {TIMEOUT} s; stderr:\n{self.stderr}"
            ) from None
        if not raw:
            self._lines.put(b"")  # keep reporting the end to later reads
            raise AssertionError(f"the server ended its output early; stderr:\n{self.stderr}")
        assert raw.endswith(b"\n"), f"a response line without its newline: {raw!r}"
        parsed: dict[str, Any] = json.loads(raw.decode("utf-8"))
        return parsed

    def raw(self, line: bytes) -> dict[str, Any]:
        """Send one line as given and read its response."""
        self.send(line + b"\n")
        return self.read()

    def call(self, op: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send one well-formed request and return its whole response."""
        self._next_id += 1
        response = self.raw(request_line(self._next_id, op, args))
        assert response.get("id") == self._next_id, response
        return response

    def ok(self, op: str, args: dict[str, Any] | None = None) -> Any:
        """The result of a request that must succeed."""
        response = self.call(op, args)
        assert response["ok"] is True, response
        assert set(response) == {"id", "ok", "result"}, response
        return response["result"]

    def error(self, op: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """The error object of a request that must fail."""
        response = self.call(op, args)
        assert response["ok"] is False, response
        assert set(response) == {"id", "ok", "error"}, response
        error: dict[str, Any] = response["error"]
        assert set(error) == {"kind", "message"}, error
        assert isinstance(error["message"], str), error
        assert error["message"], error
        return error

    def finish(self) -> int:
        """Close the input and wait for the exit status."""
        assert self.process.stdin is not None
        if not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            return self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"the server did not exit within {TIMEOUT} s") from None

    def end_of_output(self) -> bool:
        """Whether stdout has ended with nothing more on it."""
        try:
            return self._lines.get(timeout=TIMEOUT) == b""
        except queue.Empty:
            return False

    def kill(self) -> None:
        if self.alive:
            self.process.kill()
        self.process.wait(timeout=TIMEOUT)

    def __enter__(self) -> WireServer:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.alive:
            self.kill()
        for pump in self._pumps:
            pump.join(timeout=TIMEOUT)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
