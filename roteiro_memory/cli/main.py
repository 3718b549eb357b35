"""The ``roteiro-memory`` command line.

``main(argv) -> int``; user errors are one line on stderr and a non-zero exit,
never a traceback -- or, under ``--json``, one envelope on stdout
(:mod:`.envelope`) with the same exit status.  Start-up stays cheap: this
module imports only argparse, only the invoked subcommand's options are
built, and a subcommand's machinery is imported when that subcommand runs.

The global options ``--db``, ``--json`` and ``--no-sync`` may come before the
subcommand, as git's do (``roteiro-memory --db X add ...``).
"""

from __future__ import annotations

import argparse
import gc
import io
import sys
from collections.abc import Callable, Sequence

from roteiro_memory.errors import excerpt
from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.terminal import columns

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = ["ExitCode", "UsageFailure", "console", "main"]


class UsageFailure(Exception):
    """Bad usage, found before anything ran: reported by :func:`main` as one
    line (or one envelope) and exit status :attr:`ExitCode.USAGE`."""

    def __init__(self, message: str, prog: str = "roteiro-memory") -> None:
        super().__init__(message)
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors through :func:`main`, in one line."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # argparse's own contract: error() must not return.
        raise UsageFailure(message, self.prog)

    _width: int | None = None

    def _get_formatter(self) -> argparse.HelpFormatter:
        # The width HelpFormatter would ask shutil for (see roteiro_memory.terminal),
        # asked once per parser: argparse makes a formatter for every option added.
        if self._width is None:
            self._width = columns() - 2
        # Every HelpFormatter takes width; typeshed's protocol names only prog.
        return self.formatter_class(prog=self.prog, width=self._width)  # type: ignore[call-arg]

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        # After --help: main returns the status rather than raising SystemExit.
        if message:
            sys.stderr.write(message)
        raise _Exited(status)


class _Exited(Exception):
    """argparse finished the command line itself (``--help``)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _Once(argparse.Action):
    """An option that takes one value: given twice, it is refused rather than
    letting the last one silently win."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        seen: set[str] = namespace.__dict__.setdefault("_given_once", set())
        if self.dest in seen:
            previous = getattr(namespace, self.dest)
            raise UsageFailure(
                f"{option_string} given twice ({excerpt(previous)}, then {excerpt(values)}); "
                f"{self.because}: give it once",
                parser.prog,
            )
        seen.add(self.dest)
        setattr(namespace, self.dest, values)

    because = "it takes one value"


def _once(reason: str) -> type[argparse.Action]:
    return type("Once", (_Once,), {"because": reason})


_KINDS = "lesson, attempt, decision, pattern or outcome"
_ANCHOR_HELP = (
    "a file path, PATH::QUALNAME (e.g. src/app/retry.py::Retry.run) or a raw node key "
    "(file:PATH, py:PATH::QUALNAME)"
)


def _common(parser: argparse.ArgumentParser, *, syncs: bool = False) -> None:
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="the store file (default: $ROTEIRO_MEMORY_DB, else roteiro/memory.db in the "
        "repository's git common directory)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON envelope, the PROTOCOL shape in its result (see docs/cli.md), "
        "instead of a table",
    )
    if syncs:
        parser.add_argument(
            "--no-sync",
            action="store_true",
            help="resolve anchors against the graph as last synced, without syncing first",
        )


RECALL_LIMIT = 20
"""How many records ``recall`` prints unless told otherwise: recall is ranked,
and what a reader (or an agent's context) needs is the top of it."""


def _filters(parser: argparse.ArgumentParser, *, limit: int | None = None) -> None:
    parser.add_argument(
        "--kind",
        action="append",
        help=f"only records of this kind: {_KINDS}; repeat for any of several",
    )
    parser.add_argument("--scope", help="only records of this scope")
    parser.add_argument(
        "--anchor",
        metavar="ANCHOR",
        action="append",
        help=f"only records anchored here: {_ANCHOR_HELP}; a bare path also takes the "
        "symbols in that file; repeat for any of several",
    )
    parser.add_argument(
        "--limit",
        metavar="N",
        default=None if limit is None else str(limit),
        help="at most N records (0 = all)"
        + ("" if limit is None else f"; default {limit}, the best-ranked"),
    )
    parser.add_argument(
        "--rev",
        metavar="REV",
        help="resolve anchors against this commit instead of the working tree "
        "(the stored graph is not changed)",
    )


def _add_add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("body", help="what was learned (- reads it from stdin)")
    parser.add_argument(
        "--kind",
        default="lesson",
        action=_once("a record has one kind"),
        help=f"{_KINDS} (default: lesson)",
    )
    parser.add_argument(
        "--anchor",
        metavar="ANCHOR",
        action=_once("a record has one anchor"),
        help=f"what the record is about: {_ANCHOR_HELP}",
    )
    parser.add_argument("--confidence", metavar="X", help="how sure, from 0 to 1 (default: none)")
    parser.add_argument("--supersedes", metavar="ID", help="the record this one replaces")
    parser.add_argument("--scope", default="repo", help="a namespace label (default: repo)")
    _common(parser, syncs=True)


def _add_list(parser: argparse.ArgumentParser) -> None:
    _filters(parser)
    parser.add_argument("--all", action="store_true", help="include superseded records")
    _common(parser, syncs=True)


def _add_recall(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "query",
        nargs="*",
        help="what you are looking for, in any words: records holding any of them, ranked by "
        "relevance (BM25) times confidence, anchor state and age",
    )
    parser.add_argument(
        "--filter",
        action="store_true",
        help="match the words exactly instead: only records containing every one of them "
        "(body or anchor), ranked by confidence, anchor state and age",
    )
    _filters(parser, limit=RECALL_LIMIT)
    parser.add_argument(
        "--decay",
        default="none",
        help="none (default), linear, linear:N, exponential or exponential:N generations",
    )
    parser.add_argument(
        "--applicable-only",
        action="store_true",
        help="only records whose anchor is valid here, or that have none",
    )
    _add_touched(parser)
    _common(parser, syncs=True)


def _add_touched(parser: argparse.ArgumentParser) -> None:
    """``--touched [REV]``, as ``recall`` and ``pack`` take it."""
    parser.add_argument(
        "--touched",
        nargs="?",
        const="HEAD",
        metavar="REV",
        help="only records anchored to files or symbols that differ between REV "
        "(default HEAD) and the working tree",
    )


def _add_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", help="the record's id")
    parser.add_argument("--rev", metavar="REV", help="resolve the anchor against this commit")
    _common(parser, syncs=True)


def _add_forget(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", metavar="ID", help="the record's id")
    _common(parser)


def _add_sync(parser: argparse.ArgumentParser) -> None:
    _common(parser)


def _add_check(parser: argparse.ArgumentParser) -> None:
    _common(parser)


def _add_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    parser.add_argument("--db", metavar="PATH", help="the store file (see `add --help`)")
    parser.add_argument(
        "--json",
        action="store_true",
        help="with -o: print the envelope saying what was written (the export itself is "
        "always JSON Lines)",
    )


def _add_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a file written by export (- for stdin)")
    _common(parser)


"""The shells ``completion`` writes a script for."""


def _add_completion(parser: argparse.ArgumentParser) -> None:
    from roteiro_memory.cli.completion import SHELLS

    parser.add_argument("shell", metavar="SHELL", choices=SHELLS, help="bash, zsh or fish")
    parser.add_argument(
        "--json", action="store_true", help="print the envelope, the script in its result"
    )


def _budget(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget-mb",
        metavar="N",
        help="the cache budget in whole megabytes (default: $ROTEIRO_CACHE_BUDGET_MB, else 256)",
    )


def _add_cache(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(
        dest="action", metavar="ACTION", parser_class=_Parser, required=True
    )
    for name, summary, example, configure in _CACHE_ACTIONS:
        sub = actions.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=f"example:\n  {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        configure(sub)


def _cache_key(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", metavar="KEY", help="the entry's key")


def _cache_stats(parser: argparse.ArgumentParser) -> None:
    _budget(parser)
    _common(parser)


def _cache_sweep(parser: argparse.ArgumentParser) -> None:
    _budget(parser)
    _common(parser, syncs=True)


def _cache_list(parser: argparse.ArgumentParser) -> None:
    _common(parser, syncs=True)


def _cache_get(parser: argparse.ArgumentParser) -> None:
    _cache_key(parser)
    _common(parser, syncs=True)


def _cache_put(parser: argparse.ArgumentParser) -> None:
    _cache_key(parser)
    parser.add_argument(
        "fingerprint", metavar="FINGERPRINT", help="what the value was derived from"
    )
    parser.add_argument(
        "payload", metavar="JSON", nargs="?", help="the value, as JSON (omitted or -: stdin)"
    )
    parser.add_argument(
        "--anchor",
        metavar="ANCHOR",
        action=_once("an entry has one anchor"),
        help=f"what it is about: {_ANCHOR_HELP}",
    )
    _common(parser, syncs=True)


def _cache_forget(parser: argparse.ArgumentParser) -> None:
    _cache_key(parser)
    _common(parser)


Configure = Callable[[argparse.ArgumentParser], None]

_CACHE_ACTIONS: tuple[tuple[str, str, str, Configure], ...] = (
    (
        "stats",
        "what the cache holds against its budget",
        "roteiro-memory cache stats --budget-mb 64",
        _cache_stats,
    ),
    (
        "sweep",
        "evict down to the budget, then advance the generation",
        "roteiro-memory cache sweep --budget-mb 64",
        _cache_sweep,
    ),
    (
        "list",
        "every entry, by key, without recording an access",
        "roteiro-memory cache list",
        _cache_list,
    ),
    (
        "get",
        "print an entry's JSON, recording the hit",
        "roteiro-memory cache get summary:src/app",
        _cache_get,
    ),
    (
        "put",
        "store a JSON value under a key",
        "roteiro-memory cache put summary:src/app v1 '{\"lines\": 120}' --anchor src/app",
        _cache_put,
    ),
    ("forget", "delete one entry", "roteiro-memory cache forget summary:src/app", _cache_forget),
)


def _add_mcp(parser: argparse.ArgumentParser) -> None:
    _common(parser, syncs=True)


def _add_pack(parser: argparse.ArgumentParser) -> None:
    from roteiro_memory.agents import DEFAULT_PACK_BUDGET

    parser.add_argument(
        "--budget",
        metavar="TOKENS",
        default=str(DEFAULT_PACK_BUDGET),
        help=f"at most this many tokens, counted as ceil(UTF-8 bytes / 4) of the Markdown "
        f"(default {DEFAULT_PACK_BUDGET}, at least 100)",
    )
    _add_touched(parser)
    _common(parser, syncs=True)


_COMMANDS: tuple[tuple[str, str, str, Configure], ...] = (
    (
        "add",
        "record a lesson, attempt, decision, pattern or outcome",
        "roteiro-memory add 'Retry.run must cap its backoff at 30 s' "
        "--anchor src/app/retry.py::Retry.run --confidence 0.8",
        _add_add,
    ),
    (
        "list",
        "list records, newest first",
        "roteiro-memory list --kind decision --limit 20",
        _add_list,
    ),
    (
        "recall",
        "recall live records: the most relevant to your words, or all, ranked by evidence",
        "roteiro-memory recall why does the retry give up --applicable-only --limit 5\n"
        "  roteiro-memory recall --filter retry backoff  # every word, as a substring\n"
        "  roteiro-memory recall --rev main          # is it valid on main?\n"
        "  roteiro-memory recall --touched           # about what this change touches",
        _add_recall,
    ),
    ("show", "show one record in full", "roteiro-memory show 12 --rev main", _add_show),
    (
        "forget",
        "delete a record, restoring what it superseded",
        "roteiro-memory forget 12",
        _add_forget,
    ),
    ("sync", "update the code graph from the working tree", "roteiro-memory sync", _add_sync),
    (
        "cache",
        "the bounded cache tier: stats, sweep, list, get, put, forget",
        "roteiro-memory cache stats",
        _add_cache,
    ),
    (
        "check",
        "check a store's integrity and invariants",
        "roteiro-memory check --db backup.db",
        _add_check,
    ),
    (
        "export",
        "write every record and cache entry as JSON Lines",
        "roteiro-memory export -o memory.jsonl",
        _add_export,
    ),
    (
        "import",
        "load an export into an empty store",
        "roteiro-memory import memory.jsonl",
        _add_import,
    ),
    (
        "completion",
        "print a shell completion script for bash, zsh or fish",
        "roteiro-memory completion bash > ~/.local/share/bash-completion/completions/"
        "roteiro-memory\n"
        '  roteiro-memory completion zsh > "${fpath[1]}/_roteiro-memory"\n'
        "  roteiro-memory completion fish > ~/.config/fish/completions/roteiro-memory.fish",
        _add_completion,
    ),
    (
        "mcp",
        "serve this memory to a coding agent over MCP (stdio)",
        "claude mcp add roteiro-memory -- roteiro-memory mcp",
        _add_mcp,
    ),
    (
        "pack",
        "print a digest of what applies here, for the start of an agent session",
        "roteiro-memory pack --budget 1500\n  roteiro-memory pack --touched --json",
        _add_pack,
    ),
)


def _add_protocol(commands: argparse._SubParsersAction[_Parser]) -> None:
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
        help="the SQLite file to serve (default: the store ROTEIRO_CONFORMANCE_STORE "
        "names, declaring shared and crash; else a new temporary file)",
    )
    protocol.add_argument(
        "--allow-reset",
        action="store_true",
        help="let reset erase a --db store that already holds data (refused otherwise)",
    )


def _globals(parser: argparse.ArgumentParser) -> None:
    """The options that may come before the subcommand.  :func:`split_globals`
    takes them off the command line; they are declared here for ``--help`` and
    for completion."""
    group = parser.add_argument_group(
        "global options (before the command, or after it where the command takes them)"
    )
    # SUPPRESS: never set on the namespace here, so a subcommand that has no
    # such option is told so (see _merge_globals) rather than handed a default.
    group.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="the store file or postgresql:// DSN",
    )
    group.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print one JSON envelope"
    )
    group.add_argument(
        "--no-sync",
        action="store_true",
        default=argparse.SUPPRESS,
        help="do not sync the code graph first",
    )


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; when ``only`` names a command, only that command is built,
    so start-up does not pay for the others' options."""
    parser = _Parser(
        prog="roteiro-memory",
        description="Durable agent memory: anchored to code, ranked by evidence.",
        epilog="Run `roteiro-memory COMMAND --help` for a command's options and an example.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    _globals(parser)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, summary, example, configure in _COMMANDS:
        if only is not None and only != name:
            continue
        configure(commands.add_parser(name, help=summary, **_described(summary, example)))
    if only is None or only == "protocol":
        _add_protocol(commands)
        # Named only: its options (and the harness) load when it is run.
        commands.add_parser("eval", help=EVAL_SUMMARY, add_help=False)
    elif only == "eval":
        from roteiro_memory.evaluation.__main__ import add_parser

        add_parser(commands)
    return parser


def _described(summary: str, example: str) -> dict[str, Any]:
    """How a command's own ``--help`` describes it."""
    return {
        "description": summary[0].upper() + summary[1:] + ".",
        "epilog": f"example:\n  {example}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


def _parse(rest: list[str]) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser for ``rest`` (global options split off), and what it parsed.

    A command of :data:`_COMMANDS` named first is parsed by its own parser
    alone, as the full parser would hand it over (the same ``prog``, the same
    namespace), without building the top level at all; anything else goes
    to the full parser, which reports it."""
    named = [entry for entry in _COMMANDS if rest and rest[0] == entry[0]]
    if not named:
        parser = _parser(_command_name(rest))
        return parser, parser.parse_args(rest)
    name, summary, example, configure = named[0]
    command = _Parser(prog=f"roteiro-memory {name}", **_described(summary, example))
    configure(command)
    args, unknown = command.parse_known_args(rest[1:], argparse.Namespace(command=name))
    if unknown:
        # The top level's own words for what no parser took.
        raise UsageFailure(f"unrecognized arguments: {' '.join(unknown)}")
    args.version = False
    return command, args


EVAL_SUMMARY = "measure the retrieval arms (filter, search, bm25s) on a dataset"


def _eval(args: argparse.Namespace) -> int:
    """``roteiro-memory eval ...``: the evaluation's options, parsed by this
    command line, run; the table, or under ``--json`` the result in the
    envelope."""
    from roteiro_memory.evaluation import report
    from roteiro_memory.evaluation.__main__ import EvaluationRefused, run
    from roteiro_memory.evaluation.datasets.jsonfile import DatasetFileError

    try:
        result = run(args)
    except (EvaluationRefused, DatasetFileError) as error:
        raise UsageFailure(str(error), "roteiro-memory eval") from None
    if args.json:
        from roteiro_memory.cli.output import emit

        emit(result)
    else:
        sys.stdout.write(report.table(result))
    return ExitCode.OK


def _protocol(args: argparse.Namespace) -> int:
    from roteiro_memory.protocol import reset_refusal, serve
    from roteiro_memory.stores.naming import (
        SERVER_CAPABILITIES,
        can_share,
        named_value,
        open_named,
        open_store,
    )

    named = named_value() if args.db is None and can_share(args.backend) else None
    if named is not None:
        # The suite names the store: it is shared, and it outlives this process.
        store = open_named(args.backend, named)
        capabilities: tuple[str, ...] = SERVER_CAPABILITIES
    else:
        store, capabilities = open_store(args.backend, args.db), ()
    from roteiro_memory.cli.session import announce_migration

    announce_migration(store)
    try:
        # A store this server made (the temporary default, or a new --db) is
        # empty, and may always be reset; one that holds data is the user's.
        refusal = None if args.allow_reset else reset_refusal(store, args.db or args.backend)
        return serve(store, server_capabilities=capabilities, refuse_reset=refusal)
    finally:
        store.close()


GLOBAL_FLAGS = {"--json": "json", "--no-sync": "no_sync"}
GLOBAL_VALUES = {"--db": "db"}
NEVER_SYNCS = frozenset({"sync", "completion", "eval"})
"""Commands that refuse a global ``--no-sync``: ``sync`` would contradict it,
and ``completion`` and ``eval`` have no store to sync.  Every other command
accepts it; those that never sync first (``forget``, ``check``, ...) have
nothing to skip."""


def split_globals(arguments: Sequence[str]) -> tuple[dict[str, str | bool], list[str]]:
    """The global options before the subcommand, and the rest of the line."""
    given: dict[str, str | bool] = {}
    index = 0
    while index < len(arguments):
        argument = arguments[index]
        name, equals, value = argument.partition("=")
        if argument in GLOBAL_FLAGS:
            given[GLOBAL_FLAGS[argument]] = True
        elif name in GLOBAL_VALUES:
            if not equals:
                index += 1
                if index == len(arguments):
                    raise UsageFailure(f"argument {name}: expected one argument")
                value = arguments[index]
            dest = GLOBAL_VALUES[name]
            if dest in given and given[dest] != value:
                raise UsageFailure(
                    f"{name} given twice ({excerpt(given[dest])}, then {excerpt(value)}); "
                    "give it once"
                )
            given[dest] = value
        else:
            break
        index += 1
    return given, list(arguments[index:])


def _merge_globals(given: dict[str, str | bool], args: argparse.Namespace) -> None:
    """Apply the global options to the subcommand's arguments, refusing one the
    subcommand has no use for and a value given twice, differently."""
    name = args.command
    for dest, value in given.items():
        option = "--" + dest.replace("_", "-")
        if dest == "no_sync":
            if name in NEVER_SYNCS:
                raise UsageFailure(f"{option} does not apply to {name}")
            args.no_sync = True
            continue
        if not hasattr(args, dest):
            why = {"protocol": "it always speaks roteiro.conformance/v1 JSON lines"}.get(
                name, "it takes no such option"
            )
            raise UsageFailure(f"{option} does not apply to {name}: {why}")
        current = getattr(args, dest)
        if dest == "db" and current is not None and current != value:
            raise UsageFailure(
                f"--db given twice ({excerpt(value)} before {name}, {excerpt(current)} after it); "
                "give it once"
            )
        if current in (None, False):
            setattr(args, dest, value)


def _command_name(argv: Sequence[str]) -> str | None:
    """The subcommand, when it is the first argument (global options have
    been split off); None for anything else, so the full parser reports it."""
    names = {c[0] for c in _COMMANDS} | {"protocol", "eval"}
    return argv[0] if argv and argv[0] in names else None


def json_requested(arguments: Sequence[str]) -> bool:
    """Whether ``--json`` is on the command line (before any ``--``), so that
    even a command line that does not parse is answered with an envelope."""
    for argument in arguments:
        if argument == "--":
            return False
        if argument == "--json":
            return True
    return False


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit status."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    as_json = json_requested(arguments)
    try:
        return _main(arguments, as_json)
    except UsageFailure as failure:
        return _refuse(as_json, "BadRequest", str(failure), failure.prog, ExitCode.USAGE)
    except _Exited as exited:
        return exited.status
    except KeyboardInterrupt:
        sys.stderr.write("roteiro-memory: interrupted\n")
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        # The reader went away (``| head``): nothing more to say to it.
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


def _refuse(as_json: bool, kind: str, message: str, prog: str, status: int) -> int:
    """Report a failure: one envelope on stdout under ``--json``, else one
    line on stderr (control characters escaped, so a value quoted back cannot
    drive the terminal)."""
    from roteiro_memory.cli.output import fail

    fail(as_json, kind, message, f"{prog}: error: {message}")
    return status


def _main(arguments: list[str], as_json: bool) -> int:
    from roteiro_memory.semantics import is_utf8

    for argument in arguments:
        if not is_utf8(argument):
            # The shell passed bytes that are not UTF-8: nothing can store them.
            raise UsageFailure(
                f"argument {excerpt(argument)} is not valid UTF-8; "
                "every argument must be UTF-8 text"
            )
    given, rest = split_globals(arguments)
    parser, args = _parse(rest)
    if args.version:
        from roteiro_memory import __version__

        if as_json:
            from roteiro_memory.cli.envelope import success, write

            write(success({"version": __version__}))
        else:
            print(f"roteiro-memory {__version__}")
        return ExitCode.OK
    if args.command is None:
        if not as_json:
            parser.print_usage(sys.stderr)
        raise UsageFailure("a command is required")
    _merge_globals(given, args)
    if args.command == "eval":
        return _eval(args)
    from roteiro_memory.errors import RoteiroError

    try:
        if args.command == "protocol":
            return _protocol(args)
        if args.command == "completion":
            from roteiro_memory.cli.completion import emit_script

            return emit_script(args.shell, _parser(), as_json=args.json)
        return _run(args)
    except RoteiroError as error:
        return _refuse(as_json, error.kind, str(error), "roteiro-memory", error.exit_status)


def _run(args: argparse.Namespace) -> int:
    from roteiro_memory.cli.commands import run
    from roteiro_memory.errors import RoteiroError

    name = f"cache {args.action}" if args.command == "cache" else args.command
    if isinstance(sys.stdout, io.TextIOWrapper):
        # A body in a script the terminal cannot show is escaped, not a crash.
        sys.stdout.reconfigure(errors="backslashreplace")
    try:
        return run(name, args)
    except (RoteiroError, KeyboardInterrupt, BrokenPipeError):
        raise
    except Exception as error:  # the last resort: one line, never a traceback
        # A database error is mapped by its store family (sqlite3's included);
        # anything else is reported as Corrupt, naming it.
        from roteiro_memory.stores.failures import unexpected

        failure = unexpected(error)
        return _refuse(
            getattr(args, "json", False),
            failure.kind,
            str(failure),
            "roteiro-memory",
            failure.exit_status,
        )
