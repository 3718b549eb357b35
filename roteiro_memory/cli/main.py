"""The ``roteiro-memory`` command line.

``main(argv) -> int``; a failure is one line on stderr and the exit status
its error class carries (:mod:`roteiro_memory.errors`), never a traceback --
or, under ``--json``, one envelope on stdout (:mod:`.envelope`) with the same
status -- carrying what the command warned of before it failed
(:class:`~roteiro_memory.cli.output.Warnings`, said once a command that
succeeds ends).  Start-up stays cheap: the invoked command's module
(:mod:`.commands`) is the only one imported and its parser the only one
built, and what it does is imported when it runs.
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
from collections.abc import Sequence

from roteiro_memory.cli import commands
from roteiro_memory.cli.parser import (
    Exited,
    Parser,
    UsageFailure,
    add_globals,
    described,
    json_requested,
    merge_globals,
    split_globals,
)
from roteiro_memory.errors import RoteiroError, StreamClosed, excerpt
from roteiro_memory.exitcodes import ExitCode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

    from roteiro_memory.cli.commands import Command
    from roteiro_memory.cli.output import Warnings
    from roteiro_memory.cli.render import ProgressBar

__all__ = ["ExitCode", "UsageFailure", "console", "full_parser", "main"]

PROG = "roteiro-memory"


def command_parser(name: str, command: Command, prog: str = PROG) -> Parser:
    """The parser of one command, as ``roteiro-memory NAME --help`` shows it."""
    parser = Parser(prog=f"{prog} {name}", **described(command.SUMMARY, command.EXAMPLE))
    command.configure(parser)
    return parser


def full_parser() -> Parser:
    """The whole command line, every command a subcommand: for the help index,
    completion, and a command line that names no command."""
    parser = Parser(
        prog=PROG,
        description="Durable agent memory: anchored to code, ranked by evidence.",
        epilog=f"Run `{PROG} COMMAND --help` for a command's options and an example.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    add_globals(parser)
    subcommands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in commands.names():
        command = commands.load(name)
        if getattr(command, "OPTIONS_WHEN_NAMED", False):
            subcommands.add_parser(name, help=command.SUMMARY, add_help=False)
            continue
        sub = subcommands.add_parser(
            name, help=command.SUMMARY, **described(command.SUMMARY, command.EXAMPLE)
        )
        command.configure(sub)
    return parser


def _parse(rest: list[str]) -> tuple[argparse.Namespace, Command | None]:
    """What ``rest`` (global options split off) asks for, and its command.

    A command named first is parsed by its own parser alone, as the full
    parser would hand it over (the same ``prog``, the same namespace); a
    misspelt command, or a command's option put before it, is refused naming
    what was meant (:mod:`.habits`); anything else goes to the full parser,
    which reports it."""
    if not rest or rest[0] not in commands.names():
        from roteiro_memory.cli.habits import misplaced

        misplaced(rest, command_parser)
        return full_parser().parse_args(rest), None
    name = rest[0]
    command = commands.load(name)
    parser = command_parser(name, command)
    from roteiro_memory.cli.parser import bare_options

    given = bare_options(rest[1:], parser)
    args, unknown = parser.parse_known_args(given, argparse.Namespace(command=name))
    if unknown:
        from roteiro_memory.cli.habits import unrecognized

        raise UsageFailure(unrecognized(unknown, parser, name, args))
    args.version = False
    return args, command


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = _named(arguments)
    host = command if getattr(command, "NEVER_FAILS", False) else None
    # A hook's stdout is its host's to read: its failures are said in its
    # host's terms there (the command's ``refused``), and on stderr.  A
    # server's stdout carries its protocol's messages and nothing else, so
    # its failures are said on stderr only, whatever --json says.
    wire = getattr(command, "STDOUT_IS_WIRE", False)
    as_json = json_requested(arguments) and host is None and not wire
    status = _status(arguments, as_json, host)
    if host is not None and status not in (ExitCode.OK, ExitCode.NOTHING):
        return ExitCode.OK  # said; the agent goes on
    return status


def _named(arguments: list[str]) -> Command | None:
    """The command the command line names, if it names one: ``NEVER_FAILS``
    (``hook``, whose host would take another status as a verdict) and
    ``STDOUT_IS_WIRE`` (``mcp``) change how its failures are said."""
    try:
        _, rest = split_globals(arguments)
    except UsageFailure:
        return None
    if not rest or rest[0] not in commands.names():
        return None
    return commands.load(rest[0])


def _status(arguments: list[str], as_json: bool, host: Command | None = None) -> int:
    from roteiro_memory.cli.output import Warnings

    # Said when the command ends (every one under --json); a failure's line carries them.
    warnings = Warnings(every=as_json)
    try:
        return _main(arguments, as_json, warnings)
    except UsageFailure as failure:
        said = warnings.folded(str(failure))
        return _refuse(as_json, "BadRequest", said, failure.prog, ExitCode.USAGE, host)
    except RoteiroError as error:
        lost = isinstance(error, StreamClosed) and error.output_lost
        said = warnings.folded(str(error))
        return _refuse(as_json and not lost, error.kind, said, PROG, error.exit_status, host)
    except Exited as exited:
        return exited.status
    except KeyboardInterrupt:
        from roteiro_memory.terminal import printable, to_stderr

        to_stderr(printable(warnings.folded(f"{PROG}: interrupted"), one_line=True) + "\n")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more to say to it, and
        # what the command warned of is said as for one that ended.
        warnings.release()
        if sys.stderr is not None:  # None: closed already (2>&-)
            sys.stderr.close()
        return ExitCode.OK


def console() -> NoReturn:
    """The ``roteiro-memory`` console script: :func:`main` in a process that
    ends when the command does.

    Start-up makes thousands of objects (modules, classes, functions) that
    live until exit, so the cyclic collector's youngest generation is
    collected every 10,000 allocations rather than every 700, which would
    have it walk them a dozen times for nothing; a long-running command
    (``mcp``, ``eval``) still collects.  And everything alive at exit goes
    with the process, so the collector is frozen first: finalization then
    does not walk every object the imports made.  Together that is a tenth
    of a short command's time (``bench/startup.py``).  Nothing else about
    exiting changes -- standard output is flushed, and a failed flush
    reported, as for any script -- and :func:`main` called in-process never
    touches the collector."""
    gc.set_threshold(10_000)
    status = main()
    gc.freeze()
    sys.exit(status)


def _refuse(
    as_json: bool, kind: str, message: str, prog: str, status: int, host: Command | None = None
) -> int:
    """Report a failure: one envelope on stdout under ``--json``, else one
    line on stderr (control characters escaped, so a value quoted back cannot
    drive the terminal); "nothing there" is an answer, not an error.
    ``message`` carries what the command warned of before it failed
    (:meth:`~roteiro_memory.cli.output.Warnings.folded`), so the failure is
    all that is said.  A command that never fails (``host``) says it to its
    host too, on stdout, as its ``refused`` does."""
    from roteiro_memory.cli.output import fail

    said = f"{prog}: {message}" if status == ExitCode.NOTHING else f"{prog}: error: {message}"
    fail(as_json, kind, message, said)
    refused = getattr(host, "refused", None)
    if refused is not None and status != ExitCode.NOTHING:
        refused(said)
    return status


def _main(arguments: list[str], as_json: bool, warnings: Warnings) -> int:
    from roteiro_memory.semantics import is_utf8

    for argument in arguments:
        if not is_utf8(argument):
            # The shell passed bytes that are not UTF-8: nothing can store them.
            raise UsageFailure(
                f"argument {excerpt(argument)} is not valid UTF-8; "
                "every argument must be UTF-8 text"
            )
    given, rest = split_globals(arguments)
    args, command = _parse(rest)
    if args.version:
        from roteiro_memory.cli.output import print_out
        from roteiro_memory.version import version

        if as_json:
            from roteiro_memory.cli.envelope import line, success

            print_out(line(success({"version": version()})), "the version")
        else:
            print_out(f"{PROG} {version()}\n", "the version")
        return ExitCode.OK
    if command is None:
        raise UsageFailure(f"a command is required; `{PROG} --help` lists them")
    merge_globals(given, args, command)
    return _run(command, args, warnings)


def _bar(label: str) -> ProgressBar:
    """A progress bar on the terminal, for a sync's parsing and hashing."""
    from roteiro_memory.cli.render import ProgressBar

    return ProgressBar(label)


def _run(command: Command, args: argparse.Namespace, warnings: Warnings) -> int:
    """Run ``command`` in a session it closes; a failure nothing reports on
    purpose is reported in one line, as its store family maps it.  What the
    command warns of is held in ``warnings``, and said once it has ended
    (a failure's line carries it instead: :func:`_status`)."""
    from roteiro_memory.app.session import Session

    if not getattr(command, "OWN_STREAMS", False):
        if sys.stdout is None:
            raise StreamClosed(
                f"standard output is closed (>&-), but {args.command} reports there; "
                "run it with stdout open"
            )
        if isinstance(sys.stdout, io.TextIOWrapper):
            # A body in a script the terminal cannot show is escaped, not a crash.
            sys.stdout.reconfigure(errors="backslashreplace")
        from roteiro_memory.cli.output import GuardedStdout

        stdout, sys.stdout = sys.stdout, GuardedStdout(sys.stdout)
    else:
        stdout = sys.stdout
    session = Session(
        getattr(args, "db", None),
        sync=not getattr(args, "no_sync", False),
        warn=warnings,
        progress=_bar if sys.stderr is not None and sys.stderr.isatty() else None,
        wait_ms=getattr(command, "BUSY_WAIT_MS", None),
        connect_s=getattr(command, "CONNECT_WAIT_S", None),
    )
    status: int = ExitCode.STORE  # until the command says otherwise
    try:
        status = command.run(args, session)
    except StreamClosed as failure:
        if not failure.output_lost:
            raise
        from roteiro_memory.cli.output import lost

        raise lost(failure, session.failure_leaves_changes()) from None
    except (RoteiroError, KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as error:  # the last resort: one line, never a traceback
        # A database error is mapped by its store family (sqlite3's included);
        # anything else is reported as Corrupt, naming it.
        from roteiro_memory.stores.failures import unexpected

        raise unexpected(error) from None
    finally:
        sys.stdout = stdout
        session.close(failed=status != ExitCode.OK)
    warnings.release()
    return status
