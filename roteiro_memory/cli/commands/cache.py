"""``roteiro-memory cache ACTION``: the bounded cache tier -- stats, sweep,
list, get, put and forget, each an action of this one command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from roteiro_memory.cli.parser import ANCHOR_HELP, Parser, add_common, once
from roteiro_memory.exitcodes import ExitCode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "the bounded cache tier: stats, sweep, list, get, put, forget"
EXAMPLE = "roteiro-memory cache stats"

MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
"""Most bytes ``cache put`` reads from standard input: a derived value, not
a file system.  No more is read, so an input that never ends is refused."""


def _budget(parser: argparse.ArgumentParser, *, syncs: bool = True) -> None:
    parser.add_argument(
        "--budget-mb",
        metavar="N",
        help="the cache budget in whole megabytes (default: $ROTEIRO_CACHE_BUDGET_MB, else 256)",
    )
    add_common(parser, syncs=syncs)


def _key(parser: argparse.ArgumentParser, *, syncs: bool = True) -> None:
    parser.add_argument("key", metavar="KEY", help="the entry's key")
    add_common(parser, syncs=syncs)


def _put(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("key", metavar="KEY", help="the entry's key")
    parser.add_argument(
        "fingerprint", metavar="FINGERPRINT", help="what the value was derived from"
    )
    parser.add_argument(
        "payload", metavar="JSON", nargs="?", help="the value, as JSON (omitted or -: stdin)"
    )
    parser.add_argument(
        "--anchor",
        metavar="ANCHOR",
        action=once("an entry has one anchor"),
        help=f"what it is about: {ANCHOR_HELP}",
    )
    add_common(parser, syncs=True)


def _stats(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import cache
    from roteiro_memory.cli.output import emit, say

    stats = cache.stats(session, args.budget_mb)
    if args.json:
        emit(stats.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.stats_text(stats))
    return ExitCode.OK


def _sweep(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import cache
    from roteiro_memory.cli.output import emit, say

    swept = cache.sweep(session, args.budget_mb)
    if args.json:
        emit(swept.to_json())
    else:
        from roteiro_memory.cli import render

        say(render.sweep_text(swept))
    return ExitCode.OK


def _list(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import cache
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.results import CACHE_SCHEMA

    entries = cache.entries(session)
    if args.json:
        emit({"schema": CACHE_SCHEMA, "entries": [e.to_json() for e in entries]})
    else:
        from roteiro_memory.cli import render

        say(render.cache_table(entries))
    return ExitCode.OK if entries else ExitCode.NOTHING


def _get(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import cache
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.terminal import printable

    entry = cache.get(session, args.key)
    if args.json:
        emit(entry.to_json())
    elif sys.stdout.isatty():
        # Stored text never drives the terminal; piped, the payload is exact.
        say(printable(entry.json))
    else:
        say(entry.json)
    return ExitCode.OK


def _put_run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import cache
    from roteiro_memory.cli.output import emit, read_stdin, say
    from roteiro_memory.errors import excerpt

    if args.payload in (None, "-"):
        payload = read_stdin("the cache payload", MAX_PAYLOAD_BYTES)
    else:
        payload = args.payload
    cached = cache.put(session, args.key, args.fingerprint, payload, args.anchor)
    if args.json:
        emit(cached.to_json())
    else:
        say(f"cached {excerpt(args.key)} ({cached.bytes} bytes)")
    return ExitCode.OK


def _forget(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import cache
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.errors import excerpt

    cache.forget(session, args.key)
    if args.json:
        emit({"key": args.key})
    else:
        say(f"forgot cache entry {excerpt(args.key)}")
    return ExitCode.OK


Action = tuple[
    str,
    str,
    str,
    Callable[[argparse.ArgumentParser], None],
    Callable[[argparse.Namespace, "Session"], int],
]

ACTIONS: tuple[Action, ...] = (
    (
        "stats",
        "what the cache holds against its budget",
        "roteiro-memory cache stats --budget-mb 64",
        lambda parser: _budget(parser, syncs=False),
        _stats,
    ),
    (
        "sweep",
        "evict down to the budget, then advance the generation",
        "roteiro-memory cache sweep --budget-mb 64",
        _budget,
        _sweep,
    ),
    (
        "list",
        "every entry, by key, without recording an access",
        "roteiro-memory cache list",
        lambda parser: add_common(parser, syncs=True),
        _list,
    ),
    (
        "get",
        "print an entry's JSON, recording the hit",
        "roteiro-memory cache get summary:src/app",
        _key,
        _get,
    ),
    (
        "put",
        "store a JSON value under a key",
        "roteiro-memory cache put summary:src/app v1 '{\"lines\": 120}' --anchor src/app",
        _put,
        _put_run,
    ),
    (
        "forget",
        "delete one entry",
        "roteiro-memory cache forget summary:src/app",
        lambda parser: _key(parser, syncs=False),
        _forget,
    ),
)
"""Each action: its name, summary, example, options and what it does."""


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(
        dest="action", metavar="ACTION", parser_class=Parser, required=True
    )
    for name, summary, example, options, _ in ACTIONS:
        sub = actions.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=f"example:\n  {example}",
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        options(sub)


def run(args: argparse.Namespace, session: Session) -> int:
    for name, *_, action in ACTIONS:
        if name == args.action:
            return action(args, session)
    raise AssertionError(args.action)  # argparse chose one of ACTIONS
