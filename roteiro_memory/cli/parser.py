"""argparse as the command line uses it: usage errors reported in one line
through :func:`~roteiro_memory.cli.main.main`, options that refuse being
given twice, the option groups several commands share, and the global
options.

The global options ``--db``, ``--json`` and ``--no-sync`` may come before the
command, as git's do (``roteiro-memory --db X add ...``), or after it where
the command takes them.  They are split off by hand (:func:`split_globals`),
not by argparse, because argparse would take the first ``--`` of the
command's own arguments (``add -- -body``) with them.

Start-up stays cheap: only argparse is imported, and only the invoked
command's parser is built (:mod:`.commands`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from roteiro_memory.errors import excerpt
from roteiro_memory.terminal import columns, to_stderr

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from _typeshed import SupportsWrite

    from roteiro_memory.app.records import Selection
    from roteiro_memory.cli.commands import Command

__all__ = [
    "ANCHOR_HELP",
    "BARE",
    "GLOBAL_FLAGS",
    "GLOBAL_VALUES",
    "KINDS_HELP",
    "Exited",
    "Parser",
    "UsageFailure",
    "add_budget",
    "add_common",
    "add_filters",
    "add_globals",
    "add_no_sync",
    "add_touched",
    "bare_options",
    "described",
    "json_requested",
    "merge_globals",
    "once",
    "selection",
    "split_globals",
]


class UsageFailure(Exception):
    """Bad usage, found before anything ran: reported by ``main`` as one
    line (or one envelope) and exit status ``ExitCode.USAGE``."""

    def __init__(self, message: str, prog: str = "roteiro-memory") -> None:
        super().__init__(message)
        self.prog = prog


class Exited(Exception):
    """argparse finished the command line itself (``--help``)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class Parser(argparse.ArgumentParser):
    """argparse that reports usage errors through ``main``, in one line, and
    refuses an option that takes one value given twice (:func:`once`), rather
    than letting the last one silently win; an option that may be repeated
    says so (``action="append"``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The default action, argparse's "store", for every option and group of it.
        self.register("action", None, _Once)
        self.register("action", "store", _Once)

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

    def print_help(self, file: SupportsWrite[str] | None = None) -> None:
        # argparse's drops a write that fails, and prints to stderr when
        # stdout is closed: help that cannot be printed is a failure instead.
        if file is not None:
            super().print_help(file)
            return
        from roteiro_memory.cli.output import print_out

        print_out(self.format_help(), "the help")

    def exit(self, status: int = 0, message: str | None = None) -> None:  # type: ignore[override]
        # After --help: main returns the status rather than raising SystemExit.
        if message:
            to_stderr(message)
        raise Exited(status)


class _Once(argparse.Action):
    """An option that takes one value: given twice, it is refused rather than
    letting the last one silently win."""

    because = "it takes one value"

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


def once(reason: str) -> type[argparse.Action]:
    """An action refusing a second value, ``reason`` saying why."""
    return type("Once", (_Once,), {"because": reason})


def described(summary: str, example: str) -> dict[str, Any]:
    """How a command's own ``--help`` describes it."""
    return {
        "description": summary[0].upper() + summary[1:] + ".",
        "epilog": f"example:\n  {example}",
        "formatter_class": argparse.RawDescriptionHelpFormatter,
    }


KINDS_HELP = "lesson, attempt, decision, pattern or outcome"
ANCHOR_HELP = (
    "a file path, PATH::QUALNAME (e.g. src/app/retry.py::Retry.run) or a raw node key "
    "(file:PATH, py:PATH::QUALNAME)"
)


def add_common(
    parser: argparse.ArgumentParser,
    *,
    syncs: bool = False,
    json: bool = True,
    db: bool = True,
    no_sync: bool = True,
) -> None:
    """``--db`` (unless ``db`` is False: the command opens no store) and
    ``--json`` (unless ``json`` is False: the command's output is JSON of
    another's shape), and ``--no-sync``, which every command that opens a
    store takes (:func:`add_no_sync`) unless ``no_sync`` is False (``sync``
    itself, which it would contradict)."""
    if db:
        parser.add_argument(
            "--db",
            metavar="PATH",
            help="the store file (default: $ROTEIRO_MEMORY_DB, else roteiro/memory.db in the "
            "repository's git common directory)",
        )
    if json:
        parser.add_argument(
            "--json",
            action="store_true",
            help="print one JSON envelope, the PROTOCOL shape in its result (see docs/cli.md), "
            "instead of a table",
        )
    if db and no_sync:
        add_no_sync(parser, syncs=syncs)


def add_no_sync(parser: argparse.ArgumentParser, *, syncs: bool) -> None:
    """``--no-sync``, as a command that opens a store takes it after its
    name: it reads the graph as last synced if the command ``syncs`` first,
    and changes nothing for one that never does."""
    parser.add_argument(
        "--no-sync",
        action="store_true",
        help="resolve anchors against the graph as last synced, without syncing first"
        if syncs
        else "accepted, as by every command that opens a store; this one never syncs",
    )


def add_filters(parser: argparse.ArgumentParser, *, limit: int | None = None) -> None:
    """What ``list`` and ``recall`` select by: kinds, scope, anchors, limit, revision."""
    parser.add_argument(
        "--kind",
        action="append",
        help=f"only records of this kind: {KINDS_HELP}; repeat for any of several",
    )
    parser.add_argument("--scope", help="only records of this scope")
    parser.add_argument(
        "--anchor",
        metavar="ANCHOR",
        action="append",
        help=f"only records anchored here: {ANCHOR_HELP}; a bare path also takes the "
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


BARE = {"--touched": "HEAD"}
"""Options whose value is given only with ``=`` (``--touched=main``), and
what they mean alone: a word after ``--touched`` is the query's, not a
revision (``recall --touched hook``)."""


def bare_options(arguments: Sequence[str], parser: argparse.ArgumentParser) -> list[str]:
    """``arguments`` with each of :data:`BARE` the parser takes, given alone
    (before any ``--``), spelt with its value, so argparse cannot take the
    next word for it."""
    out: list[str] = []
    ended = False
    for argument in arguments:
        if argument == "--":
            ended = True
        known = argument in BARE and argument in parser._option_string_actions
        out.append(f"{argument}={BARE[argument]}" if known and not ended else argument)
    return out


def add_budget(parser: argparse.ArgumentParser, *, json: bool, hook: bool = False) -> None:
    """``--budget TOKENS``, the size of the session digest, as ``pack`` and
    ``hook`` take it; ``json``: the command has ``--json``, which reports it;
    ``hook``: the budget is of all a session start says, the digest with it."""
    from roteiro_memory.app.pack import DEFAULT_PACK_BUDGET, MAX_BUDGET, MIN_BUDGET

    said = (
        "at most this many tokens of digest, counted as ceil(UTF-8 bytes / 4) of the "
        f"Markdown (default {DEFAULT_PACK_BUDGET}, from {MIN_BUDGET} to {MAX_BUDGET})"
    )
    if hook:
        said += (
            ", and of the line saying anchor states were not checked and the reminder after "
            "compaction beside it: the digest's records give way first, then the reminder"
        )
    if json:
        said += "; --json reports the same selection, its budget and tokens counting that Markdown"
    parser.add_argument("--budget", metavar="TOKENS", default=str(DEFAULT_PACK_BUDGET), help=said)


def add_unfolded(parser: argparse.ArgumentParser) -> None:
    """``--all``: near-duplicates on lines of their own, as ``recall``,
    ``pack`` and ``hook`` take it (:mod:`roteiro_memory.duplicates`)."""
    parser.add_argument(
        "--all",
        action="store_true",
        help="near-duplicates on lines of their own (else each is shown once, in the line of "
        "the better-ranked record it repeats)",
    )


def selection(args: argparse.Namespace) -> Selection:
    """What the options of :func:`add_filters` select, as the use cases take it."""
    from roteiro_memory.app.records import Selection

    return Selection(
        kinds=tuple(args.kind or ()),
        scope=args.scope,
        anchors=tuple(args.anchor or ()),
        rev=args.rev,
    )


def add_touched(parser: argparse.ArgumentParser) -> None:
    """``--touched[=REV]``, as ``recall`` and ``pack`` take it."""
    parser.add_argument(
        "--touched",
        nargs="?",
        const="HEAD",
        metavar="REV",
        help="only records anchored to files or symbols that differ between REV and the "
        "working tree; alone it means HEAD, and a revision is given as --touched=REV (a word "
        "after --touched is not taken for one)",
    )


# --- The global options ---------------------------------------------------------

GLOBAL_FLAGS = {"--json": "json", "--no-sync": "no_sync"}
GLOBAL_VALUES = {"--db": "db"}


def add_globals(parser: argparse.ArgumentParser) -> None:
    """Declare the global options, for ``--help`` and for completion;
    :func:`split_globals` is what takes them off the command line."""
    group = parser.add_argument_group(
        "global options (before the command, or after it where the command takes them)"
    )
    # SUPPRESS: never set on the namespace here, so a command that has no such
    # option is told so (merge_globals) rather than handed a default.
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


def split_globals(arguments: Sequence[str]) -> tuple[dict[str, str | bool], list[str]]:
    """The global options before the command, and the rest of the line."""
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


def merge_globals(given: dict[str, str | bool], args: argparse.Namespace, command: Command) -> None:
    """Apply the global options to the command's arguments, refusing one the
    command has no use for and a value given twice, differently."""
    from roteiro_memory.cli.commands import syncs

    name = args.command
    refuses: dict[str, str] = getattr(command, "REFUSES", {})
    for dest, value in given.items():
        option = "--" + dest.replace("_", "-")
        if dest == "no_sync":
            if not syncs(command):
                raise UsageFailure(f"{option} does not apply to {name}")
            args.no_sync = True
            continue
        if dest in refuses or not hasattr(args, dest):
            why = refuses.get(dest, "it takes no such option")
            raise UsageFailure(f"{option} does not apply to {name}: {why}")
        current = getattr(args, dest)
        if dest == "db" and current is not None and current != value:
            raise UsageFailure(
                f"--db given twice ({excerpt(value)} before {name}, {excerpt(current)} after it); "
                "give it once"
            )
        if current in (None, False):
            setattr(args, dest, value)


def json_requested(arguments: Sequence[str]) -> bool:
    """Whether ``--json`` is on the command line (before any ``--``), so that
    even a command line that does not parse is answered with an envelope."""
    for argument in arguments:
        if argument == "--":
            return False
        if argument == "--json":
            return True
    return False
