"""What every hook shares: its exit status, its findings and how they print.

A finding prints as one line, ``FILE: WHERE: PROBLEM`` (``WHERE`` is a row, a
case or a line, and is left out when the problem is the whole file), on
stdout, control characters and line breaks escaped (``\\x0a``), so a file
name holding a newline cannot split a finding; what standard output's
encoding cannot spell is escaped too, never a traceback.  Nothing is printed on success.

A file a hook was given but could not read is a finding too
(:func:`cannot_read`), never a pass: a hook passes only what it examined.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence

from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.terminal import columns, discard, printable, to_stderr
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Literal, TextIO

__all__ = ["Finding", "arguments", "cannot_read", "files", "parser", "report", "write"]


@valueclass
class Finding:
    """One thing wrong with one file."""

    file: str
    problem: str
    where: str | None = None

    def __str__(self) -> str:
        if self.where:
            return f"{self.file}: {self.where}: {self.problem}"
        return f"{self.file}: {self.problem}"


def cannot_read(file: str, reason: str) -> Finding:
    """The finding for a file a hook was given and could not read, with the
    system's reason (:func:`roteiro_memory.precommit.sniff.unreadable`)."""
    return Finding(file, f"cannot be read ({reason}), so it was not examined")


def report(findings: Iterable[Finding | str], out: TextIO | None = None) -> int:
    """Print each finding on its own line; the hook's exit status.  When the
    reader of the findings goes away (``| head -1``) no more are looked
    for, and the status still says some were found; when standard output
    cannot take them (a full disk) that is one line on stderr, and status 2."""
    stream = sys.stdout if out is None else out
    if out is None:
        _escaping(stream)
    status = ExitCode.OK
    for finding in findings:
        status = ExitCode.NOTHING
        # One line whatever it quotes: a file name may hold a newline.
        outcome = write(stream, printable(str(finding), one_line=True) + "\n", out is None)
        if outcome != "written":
            return int(ExitCode.USAGE if outcome == "failed" else status)
    if write(stream, "", out is None) == "failed":
        return int(ExitCode.USAGE)
    return int(status)


def _escaping(stream: TextIO) -> None:
    """Have standard output escape what its encoding cannot spell (``é``
    under ``PYTHONIOENCODING=ascii``, a file name's byte that is not UTF-8)
    as ``\\xe9``, as ``roteiro-memory`` does, where it would fail instead; a
    stream that already passes such bytes through (``surrogateescape``, in
    a UTF-8 locale) keeps doing so, printing a name as its bytes are."""
    import io

    if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
        stream.reconfigure(errors="backslashreplace")


def write(stream: TextIO, text: str, own: bool) -> Literal["written", "gone", "failed"]:
    """Write ``text`` to ``stream`` and flush it: ``gone`` when its reader
    went away (a closed pipe), which is no failure; ``failed`` when it
    could not be written (a full disk), said in one line on stderr.  Either
    way what is left is sent nowhere when ``own``, the stream being
    standard output, whose flush at exit would fail again."""
    try:
        stream.write(text)
        stream.flush()
    except OSError as error:
        if own:
            discard(sys.stdout)
        if isinstance(error, BrokenPipeError):
            return "gone"
        to_stderr(
            f"cannot write to standard output ({error.strerror or error}); what was written "
            "there is incomplete\n"
        )
        return "failed"
    return "written"


def files(argv: Sequence[str] | None, prog: str, description: str) -> list[str]:
    """The files a hook is given.  pre-commit passes file names only, and
    those are taken as they are, without building a parser; a command line
    with anything else that looks like an option (``--help``, a mistake)
    goes through :func:`parser`, which answers it as always."""
    given = list(sys.argv[1:] if argv is None else argv)
    if not any(_is_option(argument) for argument in given):
        return given
    found: list[str] = arguments(parser(prog, description), given).files
    return found


def _is_option(argument: str) -> bool:
    """Whether ``argument`` is read as an option: it begins with ``-`` and
    names no file.  pre-commit passes file names as they are, with no ``--``
    before them, so a staged file named ``-h`` is a file to examine, never a
    request for help that would let the files beside it through unexamined."""
    return argument.startswith("-") and not os.path.lexists(argument)


def arguments(cli: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``cli``'s reading of a hook's command line (:func:`parser`'s, with
    the hook's options added), where an argument that begins with ``-`` and
    names a file is one of the files (:func:`_is_option`)."""
    given = list(sys.argv[1:] if argv is None else argv)
    named: list[str] = []
    rest: list[str] = []
    for argument in given:
        (named if argument.startswith("-") and not _is_option(argument) else rest).append(argument)
    read = cli.parse_args(rest)
    read.files = [*read.files, *named]
    return read


def parser(prog: str, description: str, *, takes_files: bool = True) -> argparse.ArgumentParser:
    """A hook's argument parser, with the file list every hook that is
    passed files takes."""
    import argparse  # here: a hook given only file names never builds a parser

    class _Parser(argparse.ArgumentParser):
        def _get_formatter(self) -> argparse.HelpFormatter:
            # The width HelpFormatter would ask shutil for (see roteiro_memory.terminal).
            return argparse.HelpFormatter(prog=self.prog, width=columns() - 2)

    made = _Parser(prog=prog, description=description)
    if takes_files:
        made.add_argument("files", nargs="*", metavar="FILE", help="files pre-commit passes")
    return made
