"""What every hook shares: its exit status, its findings and how they print.

A finding prints as one line, ``FILE: WHERE: PROBLEM`` (``WHERE`` is a row, a
case or a line, and is left out when the problem is the whole file), on
stdout.  Nothing is printed on success.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TextIO

from roteiro_memory.exitcodes import ExitCode

__all__ = ["Finding", "parser", "report"]


@dataclass(frozen=True)
class Finding:
    """One thing wrong with one file."""

    file: str
    problem: str
    where: str | None = None

    def __str__(self) -> str:
        if self.where:
            return f"{self.file}: {self.where}: {self.problem}"
        return f"{self.file}: {self.problem}"


def report(findings: Iterable[Finding | str], out: TextIO | None = None) -> int:
    """Print each finding on its own line; the hook's exit status."""
    stream = sys.stdout if out is None else out
    status = ExitCode.OK
    for finding in findings:
        stream.write(f"{finding}\n")
        status = ExitCode.NOTHING
    return int(status)


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """A hook's argument parser, with the file list every hook takes."""
    made = argparse.ArgumentParser(prog=prog, description=description)
    made.add_argument("files", nargs="*", metavar="FILE", help="files pre-commit passes")
    return made
