"""``roteiro-memory protocol``: serve roteiro.conformance/v1 on stdin/stdout
(:mod:`roteiro_memory.protocol`), the wire form the conformance suite drives."""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_no_sync

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "serve roteiro.conformance/v1 on stdin/stdout"
EXAMPLE = "roteiro-memory protocol --backend sqlite --db /tmp/memory.db"
DESCRIPTION = (
    "Serve the conformance protocol (one JSON request per line on stdin, one "
    "response per line on stdout) over the store --backend and --db name: a new "
    "temporary SQLite file when neither names one."
)
REFUSES = {"json": "it always speaks roteiro.conformance/v1 JSON lines"}
"""Global options that do not apply, and why."""
OWN_STREAMS = True
"""Standard input and output are the wire, which the server opens itself."""
STDOUT_IS_WIRE = True
"""Standard output carries protocol responses only: a refusal to start is
said on stderr, in one line, whatever ``--json`` says."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.add_argument(
        "--backend",
        default="sqlite",
        help="sqlite (the default), memory (the in-memory model, no --db), postgres (its DSN "
        "as --db) or postgres:DSN",
    )
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="the store to serve, existing or new: a SQLite file, or a postgresql:// URI "
        "(default: the store ROTEIRO_CONFORMANCE_STORE names, declaring shared and crash; "
        "else a new temporary file)",
    )
    parser.add_argument(
        "--allow-reset",
        action="store_true",
        help="let reset erase a --db store that already holds data (refused otherwise)",
    )
    add_no_sync(parser, syncs=False)


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.app.session import announce_migration
    from roteiro_memory.cli.output import serving
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
    announce_migration(store, session.warn)
    try:
        # A store this server made (the temporary default, or a new --db) is
        # empty, and may always be reset; one that holds data is the user's.
        refusal = None if args.allow_reset else reset_refusal(store, args.db or args.backend)
        serving(session)
        return serve(store, server_capabilities=capabilities, refuse_reset=refusal)
    finally:
        store.close()
