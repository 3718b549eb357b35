"""``roteiro-memory mcp``: serve this memory to a coding agent over MCP (stdio),
with the tools of :mod:`roteiro_memory.agents.tools`.

The repository served is the one named by ``--repo`` or
:data:`REPO_ENV`, else the one the server is started in: a host that starts
its servers somewhere else can still name it.  A server that cannot start
says why on stderr in one line, and answers the client's ``initialize``
with the same words (:mod:`roteiro_memory.agents.refusal`), so the host
shows them rather than "connection closed".  A database server that is
down is no such reason: the server starts, and each call says why it
cannot be served until the database is back.  One that refuses the login
(:class:`~roteiro_memory.errors.LoginRefused`: a wrong password, a database
that does not exist) is: waiting would never mend it."""

from __future__ import annotations

import argparse
import os

from roteiro_memory.cli.parser import add_common, once

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "serve this memory to a coding agent over MCP (stdio)"
EXAMPLE = "roteiro-memory mcp --repo ~/src/app   # in a host's MCP server entry"

REPO_ENV = "ROTEIRO_MEMORY_REPO"
"""The repository to serve, when ``--repo`` is not given."""

STDOUT_IS_WIRE = True
"""Standard output carries MCP messages only (the stdio transport allows
nothing else there): a refusal to start is said on stderr, in one line,
whatever ``--json`` says, and to the client as the answer to its first
request."""

SDK = "mcp"
"""The import name of the MCP SDK, the ``[mcp]`` extra."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repo",
        metavar="DIR",
        action=once("one server serves one repository"),
        help=f"serve the repository DIR is in (default: ${REPO_ENV}, else the one the server "
        "is started in)",
    )
    add_common(parser, syncs=True)


def install_line() -> str:
    """The command installing the SDK into the environment running this one:
    the requirement as this package declares it, for this very interpreter
    (the project is installed from a checkout, so the extra of a release on
    the package index would not resolve)."""
    import sys
    from importlib.metadata import PackageNotFoundError, requires

    try:
        declared = requires("roteiro-memory") or []
    except PackageNotFoundError:
        declared = []  # run from a source tree: the bare name is the requirement
    wanted = SDK
    for requirement in declared:
        name, _, marker = requirement.partition(";")
        if name.strip().startswith(SDK) and "extra" in marker and SDK in marker:
            wanted = name.strip()
    return f"{sys.executable} -m pip install '{wanted}'"


def _serve_here(args: argparse.Namespace, session: Session) -> None:
    """Move to the repository ``--repo`` (or :data:`REPO_ENV`) names, keeping
    a relative store name what it meant where the server was started; refuse
    to start with nothing to serve."""
    from roteiro_memory.errors import StoreUnavailable, UsageError, excerpt
    from roteiro_memory.repo.location import DB_ENV

    named = args.repo if args.repo is not None else os.environ.get(REPO_ENV) or None
    origin = "--repo" if args.repo is not None else REPO_ENV
    store = session.db if session.db is not None else os.environ.get(DB_ENV)
    if named is not None:
        if not named:
            raise UsageError(f"{origin} is empty: expected a folder of a git repository")
        if not os.path.isdir(named):
            raise UsageError(f"{origin} {excerpt(named)}: no such folder")
        if store is not None and "://" not in store:
            session.db = os.path.abspath(store)
        os.chdir(named)
    if store is None and session.place() is None:
        where = f"{origin} {named}" if named is not None else f"started in {os.getcwd()}, which"
        raise StoreUnavailable(
            f"mcp: {where} is not inside a git repository, so there is no store to serve: "
            f"start it in one, name one with --repo DIR or {REPO_ENV}, or choose a store "
            "with --db PATH"
        )


def _open_store(session: Session) -> None:
    """Open the store.  One that cannot be used is a refusal to start, but
    a database server that cannot be reached now is said in one line and
    served anyway: each call connects again, as every call does after the
    database restarts mid-session, so a server started while its database
    was down serves once the database is back."""
    from roteiro_memory.errors import ServerUnreachable

    try:
        session.store()
    except ServerUnreachable as error:
        session.warn(f"mcp: {error}; serving anyway: each call tries the server again")


def run(args: argparse.Namespace, session: Session) -> int:
    """Serve MCP on stdin/stdout until the client closes it."""
    import importlib.util
    import sys

    from roteiro_memory.errors import RoteiroError, StreamClosed, Unsupported

    if sys.stdin is None:
        # As protocol refuses it: with no input, a server would serve nothing
        # and exit 0, the host told nothing and a store made for no one.
        raise StreamClosed(
            "standard input is closed (<&-), but mcp reads its requests there; "
            "run it with stdin open"
        )
    try:
        if importlib.util.find_spec(SDK) is None:
            raise Unsupported(
                f"roteiro-memory mcp needs the MCP SDK (the [mcp] extra): {install_line()}"
            )
        _serve_here(args, session)
        try:
            from roteiro_memory.agents.server import serve
        except ImportError as error:
            raise Unsupported(
                f"the MCP SDK is installed but cannot be imported ({error}): "
                f"{install_line()} --force-reinstall"
            ) from None
        _open_store(session)
    except RoteiroError as error:
        from roteiro_memory.agents.refusal import answer_first_request

        answer_first_request(f"roteiro-memory: {error}")
        raise
    from roteiro_memory.cli.output import serving

    serving(session)
    return serve(session)
