"""The ``roteiro-memory`` command line.

``main(argv) -> int``; user errors are one line on stderr and a non-zero exit,
never a traceback.
"""

from __future__ import annotations

import argparse
import enum
import sys
from collections.abc import Sequence

__all__ = ["ExitCode", "main"]


class ExitCode(enum.IntEnum):
    OK = 0
    """Success."""
    NOTHING = 1
    """Nothing found, or a check failed."""
    USAGE = 2
    """Bad usage or invalid input; nothing was changed."""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's own contract: error() must not return.
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(ExitCode.USAGE)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="roteiro-memory",
        description="Durable agent memory: anchored to code, ranked by evidence.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    protocol = commands.add_parser(
        "protocol",
        help="serve roteiro.conformance/v1 on stdin/stdout",
        description=(
            "Serve the conformance protocol (one JSON request per line on stdin, one "
            "response per line on stdout) over a fresh store."
        ),
        epilog="example: roteiro-memory protocol --backend sqlite --db /tmp/memory.db",
    )
    protocol.add_argument(
        "--backend",
        default="sqlite",
        help="sqlite (default) or memory",
    )
    protocol.add_argument(
        "--db",
        metavar="PATH",
        help="the SQLite file to serve (default: a new temporary file)",
    )
    return parser


def _protocol(args: argparse.Namespace) -> int:
    from roteiro_memory.backends import open_store
    from roteiro_memory.protocol import serve

    store = open_store(args.backend, args.db)
    try:
        return serve(store)
    finally:
        store.close()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        from roteiro_memory import __version__

        print(f"roteiro-memory {__version__}")
        return ExitCode.OK
    if args.command is None:
        parser.print_usage(sys.stderr)
        sys.stderr.write("roteiro-memory: error: a command is required\n")
        return ExitCode.USAGE
    from roteiro_memory.errors import RoteiroError

    try:
        return _protocol(args)
    except RoteiroError as error:
        sys.stderr.write(f"roteiro-memory: error: {error}\n")
        return ExitCode.USAGE
