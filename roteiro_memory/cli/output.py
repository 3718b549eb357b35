"""The command line's streams: what it reads from standard input, and what
it prints besides tables -- a command's result (the ``--json`` envelope,
:mod:`roteiro_memory.cli.envelope`), plain lines, and warnings and refusals
on stderr (or, under ``--json``, in the envelope)."""

from __future__ import annotations

import sys

from roteiro_memory.errors import ReportLost, StreamClosed, UsageError
from roteiro_memory.terminal import discard, printable, to_stderr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Generator
    from typing import Any, BinaryIO, TextIO

    from roteiro_memory.app.session import Session

__all__ = [
    "EVERY_WARNING",
    "FOLDED_WARNINGS",
    "GuardedStdout",
    "Warnings",
    "emit",
    "fail",
    "held",
    "lost",
    "print_out",
    "printable",
    "read_lines",
    "read_stdin",
    "reader_gone",
    "say",
    "serving",
    "shown_warnings",
    "warn",
]


def emit(value: Any) -> None:
    """Print a command's result in the envelope, on one line."""
    from roteiro_memory.cli.envelope import success, write

    write(success(value))


def fail(as_json: bool, kind: str, message: str, line: str) -> None:
    """Report a failure once: under ``--json`` the envelope of ``kind`` on
    stdout; else -- or when stdout is closed, or its reader has gone -- ``line``
    on stderr, control characters and line breaks escaped, so it is one line
    whatever it quotes (and given up when stderr cannot take it either:
    :func:`~roteiro_memory.terminal.to_stderr`)."""
    if as_json and sys.stdout is not None:
        from roteiro_memory.cli.envelope import failure, write

        try:
            write(failure(kind, message))
            return
        except OSError:  # the reader went, or the disk is full
            discard(sys.stdout)
    to_stderr(printable(line, one_line=True) + "\n")


class GuardedStdout:
    """Standard output while a command runs: a write or flush that fails
    (a full disk, an I/O error) is reported as :class:`StreamClosed` naming
    standard output, not as a failure of whatever the command was doing, and
    what stdout still holds is discarded, so the flush at exit does not
    report it again.  A reader that went away (``| head``) is still
    :class:`BrokenPipeError`, which ends the command quietly."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _lost(error) from None

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as error:
            raise _lost(error) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _lost(error: OSError) -> StreamClosed:
    discard(sys.stdout)
    return _output_failed(
        f"cannot write to standard output ({error.strerror or error}); what was written "
        "there is incomplete"
    )


def reader_gone(when: str) -> StreamClosed:
    """The failure of an output that must arrive whole (an export) when the
    reader of standard output went away ``when``."""
    discard(sys.stdout)
    return _output_failed(
        f"standard output was closed by its reader {when}; what was written there is incomplete"
    )


def lost(failure: StreamClosed, stored: bool) -> StreamClosed:
    """The failure of standard output, saying what became of the store:
    :class:`~roteiro_memory.errors.ReportLost` when the command's change was
    stored before its report failed (it stays), else that nothing was."""
    if stored:
        return ReportLost(f"{failure}, but the command's change was stored")
    return _output_failed(f"{failure} (nothing stored was changed)")


def _output_failed(message: str) -> StreamClosed:
    """Standard output itself failing: said on stderr, as stdout takes nothing more."""
    failure = StreamClosed(message)
    failure.output_lost = True
    return failure


def print_out(text: str, what: str) -> None:
    """``text`` on standard output, flushed, where no command runs (the
    version, the help): a closed or failing stdout is one line of
    :class:`StreamClosed`, never a silent loss."""
    if sys.stdout is None:
        raise StreamClosed(
            f"standard output is closed (>&-), but {what} is printed there; run it with stdout open"
        )
    out = GuardedStdout(sys.stdout)
    try:
        out.write(text)
        out.flush()
    except StreamClosed as failure:
        raise lost(failure, False) from None


def say(text: str) -> None:
    sys.stdout.write(text + "\n")


def warn(text: str) -> None:
    """A warning on stderr, in one line, control characters and line breaks
    escaped (it may quote a name)."""
    to_stderr(f"roteiro-memory: warning: {printable(text, one_line=True)}\n")


FOLDED_WARNINGS = 3
"""Most warnings a command quotes before it counts the rest: in a
failure's one line, in the hook's, and a line each when it succeeds."""

EVERY_WARNING = "with --json every warning is said"
"""How to have a command say every warning, which its count of the rest
says: under ``--json`` none is left out."""


def shown_warnings(held: list[str]) -> tuple[list[str], str | None]:
    """The first :data:`FOLDED_WARNINGS` of ``held``, in the order they
    came, and the count of the rest (``and 7 more warnings``; None when
    none is left out): so a sync that meets a thousand files that do not
    parse says so in a few lines that can be read."""
    rest = len(held) - FOLDED_WARNINGS
    counted = f"and {rest} more warning{'s' if rest > 1 else ''}" if rest > 0 else None
    return held[:FOLDED_WARNINGS], counted


class Warnings:
    """What a command warns of while it runs: its session's ``warn``.

    A failing command says exactly one thing -- one line on stderr, or one
    envelope under ``--json`` -- so its warnings are held until it ends: a
    command that succeeds says them then, one line each (:func:`warn`), the
    first few and a line counting the rest, or, ``every`` (``--json``),
    every one; one that fails carries them in its failure's line
    (:meth:`folded`), since a warning may be why it failed (a file that does
    not parse) or news that must not be lost (a store migrated).  A server
    says them once it serves, and each later one as it comes
    (:func:`serving`): its stderr is a log."""

    def __init__(self, *, every: bool = False) -> None:
        self._held: list[str] | None = []
        self.every = every

    def __call__(self, text: str) -> None:
        if self._held is None:
            warn(text)
        else:
            self._held.append(text)

    def take(self) -> list[str]:
        """The warnings held, held no more: for a command that says them its
        own way (``hook``, in one line)."""
        held = self._held or []
        if self._held is not None:
            self._held = []
        return held

    def release(self) -> None:
        """Say the warnings held -- all of them when ``every``, else the
        first few and how many more (:func:`shown_warnings`) -- and every
        later one as it comes."""
        held = self.take()
        self._held = None
        shown, rest = (held, None) if self.every else shown_warnings(held)
        for text in shown:
            warn(text)
        if rest is not None:
            warn(f"{rest}, not shown ({EVERY_WARNING})")

    def folded(self, message: str) -> str:
        """``message``, a failure's, followed by the warnings held (taken),
        as ``MESSAGE; warning: TEXT``: the first few, in the order they
        came, and a count of the rest (``; and 7 more warnings``:
        :func:`shown_warnings`), so a failure is one line that can be read."""
        shown, rest = shown_warnings(self.take())
        parts = [message, *(f"; warning: {text}" for text in shown)]
        return "".join([*parts, *([f"; {rest}"] if rest else [])])


def held(session: Session) -> Warnings | None:
    """The held warnings of the command ``session`` runs (None: a session
    the command line did not make, whose warnings are said as they come)."""
    return session.warn if isinstance(session.warn, Warnings) else None


def serving(session: Session) -> None:
    """A server (``mcp``, ``protocol``) starts serving: the warnings of its
    start (a store migrated, a database that is down) are said, and every
    later one as it comes."""
    warnings = held(session)
    if warnings is not None:
        warnings.release()


def read_lines(stream: BinaryIO, what: str, limit: int) -> Generator[str, None, None]:
    """The lines of ``stream`` as UTF-8 text, without their ends: a line
    ends at ``\n``, ``\r\n`` or ``\r`` (never inside a JSON string, which
    escapes both), and not at U+2028 or the other breaks ``str.splitlines``
    takes, which a JSON string may hold as they are.  A line of more than
    ``limit`` characters is refused once that many are read, no more (the
    input may never end, as ``/dev/zero`` does not), and so is one that is
    not UTF-8; ``what`` names the input in both."""
    import io
    import re

    # Bytes that are not UTF-8 are decoded as lone surrogates, which no
    # UTF-8 text holds, so each line says whether it had any: the decoder
    # reads ahead, and would blame a line before the one at fault.
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="surrogateescape", newline=None)
    undecodable = re.compile("[\udc80-\udcff]")
    number = 0
    try:
        while True:
            try:
                line = text.readline(limit + 1)  # room for the line's own end
            except OSError as error:
                raise UsageError(f"cannot read {what} ({error.strerror or error})") from None
            if not line:
                return
            number += 1
            line = line.removesuffix("\n")
            if len(line) > limit:
                raise UsageError(
                    f"line {number} of {what} is over {limit:,} characters, the most a line "
                    "may be; nothing was read past that"
                )
            bad = undecodable.search(line)
            if bad is not None:
                raise UsageError(
                    f"line {number} of {what} is not valid UTF-8: byte "
                    f"{ord(bad[0]) - 0xDC00:#04x} at character {bad.start()} of the line; only "
                    "UTF-8 text can be read"
                )
            yield line
    finally:
        if not stream.closed:  # the stream is the caller's to close, whenever it does
            text.detach()


def read_stdin(what: str, limit: int | None = None) -> str:
    """All of standard input as UTF-8 text, ``what`` naming it in errors: a
    closed descriptor (``<&-``), a read error, bytes that are not UTF-8, and
    more than ``limit`` bytes when one is given (no more is read: the input
    may never end, as ``/dev/zero`` does not) are one-line errors, before
    anything is written."""
    if sys.stdin is None:
        raise StreamClosed(f"standard input is closed, but {what} is read from it (-)")
    try:
        data = sys.stdin.buffer.read(-1 if limit is None else limit + 1)
    except OSError as error:
        reason = error.strerror or error
        raise StreamClosed(f"cannot read {what} from standard input ({reason})") from None
    if limit is not None and len(data) > limit:
        raise UsageError(
            f"{what} on standard input is over {limit:,} bytes, the most it may be; "
            "nothing was read past that"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{what} on standard input is not valid UTF-8: byte {data[error.start]:#04x} "
            f"at offset {error.start}; only UTF-8 text can be stored"
        ) from None
