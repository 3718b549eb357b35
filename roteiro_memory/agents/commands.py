"""The ``mcp`` and ``pack`` subcommands, given their parsed arguments.

They open the store, sync and compute ``--touched`` through the CLI's own
:class:`~roteiro_memory.cli.session.Session`, so an agent sees exactly the store
and anchor states the command line shows.
"""

from __future__ import annotations

import argparse
import os
import sys

from roteiro_memory import semantics as sem
from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.repo.location import DB_ENV
from roteiro_memory.results import Recall

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.cli.session import Session

__all__ = ["MISSING_SDK", "cmd_mcp", "cmd_pack", "pack_recall"]

MISSING_SDK = "roteiro-memory mcp needs the MCP SDK: pip install 'roteiro-memory[mcp]'"


def cmd_mcp(args: argparse.Namespace, session: Session) -> int:
    """Serve MCP on stdin/stdout until the client closes it."""
    try:
        from roteiro_memory.agents.server import serve
    except ImportError as error:
        if error.name is None or not error.name.startswith("mcp"):
            raise
        if getattr(args, "json", False):
            from roteiro_memory.cli.output import refuse

            return refuse(args, "Unsupported", MISSING_SDK, ExitCode.USAGE)
        sys.stderr.write(MISSING_SDK + "\n")
        return ExitCode.USAGE
    return serve(session)


def _budget(text: str) -> int:
    from roteiro_memory.agents import MIN_BUDGET
    from roteiro_memory.errors import UsageError, excerpt

    value = sem.parse_whole_number(text)
    if value is None or not sem.fits_int64(value) or value < MIN_BUDGET:
        raise UsageError(
            f"invalid --budget {excerpt(text)}: expected a whole number of tokens, "
            f"at least {MIN_BUDGET}"
        )
    return value


def pack_recall(session: Session, touched: str | None) -> Recall | None:
    """Every live record ranked, limited to what ``touched`` changed when given;
    None when there is no store to read yet (a first session)."""
    if session.dsn() is None:
        try:
            path = session.store_path()
        except StoreUnavailable:
            if getattr(session.args, "db", None) is not None or DB_ENV in os.environ:
                raise  # an empty --db or variable is a mistake worth naming
            return None  # not in a repository, and no store named: nothing to read
        if not os.path.exists(path):
            return None
    session.check_revs(touched=touched)
    store = session.store()
    session.sync()
    if touched is None:
        return store.recall()
    from roteiro_memory.cli.session import anchor_filter

    # As recall --touched filters: in the store, before it ranks.
    _, anchors = anchor_filter(None, session.touched(touched))
    return store.recall(anchors=anchors)


def cmd_pack(args: argparse.Namespace, session: Session) -> int:
    """Print the digest; 0 even when there is nothing to digest, so a
    session-start hook never fails a first session."""
    from roteiro_memory.agents.pack import select
    from roteiro_memory.cli.output import emit
    from roteiro_memory.errors import UsageError, excerpt

    budget = _budget(args.budget)
    recall = pack_recall(session, args.touched)
    if recall is None:
        recall = Recall(0, sem.Decay.none(), [], 0, 0)
    try:
        pack = select(recall, budget, args.touched)
    except ValueError as error:
        raise UsageError(f"invalid --budget {excerpt(args.budget)}: {error}") from None
    if args.json:
        emit(pack.to_json())
    else:
        sys.stdout.write(pack.markdown())
    return ExitCode.OK
