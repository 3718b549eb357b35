"""``roteiro-memory list``: records newest first, without ranking."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_common, add_filters, selection

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "list records, newest first"
EXAMPLE = "roteiro-memory list --kind decision --limit 20"


def configure(parser: argparse.ArgumentParser) -> None:
    add_filters(parser)
    parser.add_argument(
        "--all",
        action="store_true",
        help="every record: superseded ones, and near-duplicates unfolded (else each is shown "
        "once, in the line of the newer record it repeats)",
    )
    add_common(parser, syncs=True)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app import records, shown
    from roteiro_memory.cli.output import emit, say
    from roteiro_memory.exitcodes import ExitCode

    listing = records.listing(
        session,
        selection(args),
        include_superseded=args.all,
        limit=args.limit,
    )
    view = shown.listed(session, listing, every=args.all)
    if args.json:
        emit(shown.listed_json(listing, view))
    else:
        from roteiro_memory.cli import render

        say(render.listing_table(listing, view))
    return ExitCode.OK if listing.records else ExitCode.NOTHING
