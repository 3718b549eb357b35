"""``roteiro-memory hook``: answer a coding agent host's hook event.

The host writes the event's JSON on standard input; the answer, when there
is one, is one JSON object on standard output, in the host's terms
(:mod:`roteiro_memory.app.hooks` says what each event gets).  Configured for
Claude Code by ``roteiro-memory setup claude-code``.

A hook never breaks the agent: the exit status is 0 whatever happens
(``NEVER_FAILS``: Claude Code takes 2 as "block this tool call", and shows
nothing of a hook that exits 0 but what its JSON says).  So what fails -- the
event, the store, an option -- is said to the person in the answer's
``systemMessage`` (:func:`refused`), and in one line on stderr, which the
host keeps for its debug output, both carrying what was warned of before
the failure; what the person should know of an answer given (a store that
could not be synced, a session state not kept) is one line on stderr, the
first few warnings and a count of the rest.
Git missing from ``PATH`` or failing, where the stat cache still found the
repository, fails every event that needs git to list a changed tree: it is
said at each session start and at the first other event of a session
(the session's state keeps it as said), and the events after it say
nothing, as where no repository is found at all.

A hook runs before every read and edit, so it waits at most
:data:`BUSY_WAIT_MS` for another process's lock on the store
(``ROTEIRO_MEMORY_BUSY_TIMEOUT_MS``, when set, is the wait instead): a sync
still locked out then resolves anchors against the working tree in memory
(:meth:`~roteiro_memory.app.session.Session.sync`), and a store that cannot
even be read then is a failure, said as above; so is a PostgreSQL store
that cannot be connected to within :data:`CONNECT_WAIT_S`.
"""

from __future__ import annotations

import argparse

from roteiro_memory.cli.parser import add_budget, add_common, add_unfolded
from roteiro_memory.terminal import printable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.hookstate import SessionState
    from roteiro_memory.app.session import Session

SUMMARY = "answer a coding agent host's hook event (JSON on stdin) with what to tell the agent"
EXAMPLE = (
    "roteiro-memory hook   # a Claude Code hook command; roteiro-memory setup claude-code "
    "writes them"
)

NEVER_FAILS = True
BUSY_WAIT_MS = 1000
"""How long a hook waits for another process's lock on the store, in
milliseconds (the command line waits a minute)."""
CONNECT_WAIT_S = 5
"""How long a hook waits to connect to a PostgreSQL store, in seconds, when
its DSN (``connect_timeout``) or ``PGCONNECT_TIMEOUT`` does not say: libpq
would wait for ever on a server that does not answer, and the agent waits
on the hook."""
REFUSES = {"json": "the answer is the host's JSON already"}

MAX_EVENT_BYTES = 64 * 1024 * 1024
"""The longest event read: a Write's event carries the whole file written."""


def configure(parser: argparse.ArgumentParser) -> None:
    add_budget(parser, json=False, hook=True)  # of all said at session start
    add_unfolded(parser)  # in the digest and in what is said about a file
    add_common(parser, syncs=True, json=False)


def _event() -> object:
    """The event on standard input, parsed."""
    import json

    from roteiro_memory.cli.output import read_stdin
    from roteiro_memory.errors import UsageError, byte_order_mark

    text = read_stdin("the hook event", MAX_EVENT_BYTES)
    marked = byte_order_mark(text)
    if marked is not None:
        raise UsageError(f"the hook event on standard input {marked}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as error:
        raise UsageError(f"the hook event on standard input is not JSON ({error})") from None


def run(args: argparse.Namespace, session: Session) -> int:
    import json
    import os
    import sys

    from roteiro_memory.app import hookstate
    from roteiro_memory.app.hooks import read_event, respond
    from roteiro_memory.cli.output import held, shown_warnings
    from roteiro_memory.errors import GitError
    from roteiro_memory.exitcodes import ExitCode
    from roteiro_memory.terminal import to_stderr

    event = read_event(_event())
    if event.cwd is not None and os.path.isdir(event.cwd):
        os.chdir(event.cwd)  # where the host's session works, as it would start us
    place = session.place()
    state = hookstate.load(place.git_dir, event.session_id) if place else hookstate.SessionState()
    try:
        answer = respond(session, event, state, args.budget, every=args.all)
    except GitError:
        told = state.git_fault
        if place is None or not _said_already(session, event.name, state):
            if place is not None and state.git_fault != told:
                _keep(session, place.git_dir, event.session_id, state)  # kept as said, below
            raise
        answer = None  # said at an earlier event of the session
    if place is not None:
        _keep(session, place.git_dir, event.session_id, state)
    # Said together, in one line, the first few and the rest counted; a
    # failure's line carries them instead.
    warnings = held(session)
    notes, rest = shown_warnings(warnings.take() if warnings is not None else [])
    if notes:
        said = "; ".join([*notes, *([rest] if rest else [])])
        to_stderr(printable(f"roteiro-memory: hook: {said}", one_line=True) + "\n")
    if answer is not None:
        sys.stdout.write(json.dumps(answer) + "\n")
    return ExitCode.OK


def _said_already(session: Session, event: str, state: SessionState) -> bool:
    """Whether the git failure a hook met, where the stat cache found the
    repository, is git missing from ``PATH`` or failing here
    (:meth:`~roteiro_memory.app.session.Session.git_fault`) and the person
    was told so at an earlier event of this session, so this one says
    nothing: it is said at every session start, as where no repository is
    found, and at the first other event that meets it.  When it is to be
    said, ``state`` keeps it as said."""
    why = session.git_fault()
    if why is None:
        return False  # git runs here: the failure is another, said each time
    if event != "SessionStart" and state.git_fault == why:
        return True
    state.git_fault = why
    return False


def _keep(session: Session, git_dir: str, session_id: str, state: SessionState) -> None:
    from roteiro_memory.app import hookstate

    try:
        hookstate.save(git_dir, session_id, state)
    except OSError as error:
        session.warn(f"session state not kept: {error}")


def refused(line: str) -> None:
    """Tell the person the hook failed (``line`` says why, as stderr does):
    the answer's ``systemMessage``, the one field Claude Code shows of a hook
    that exits 0, which any event takes.  A failure comes before any
    answer is written (writing it is the hook's last act), so standard
    output stays one JSON object."""
    import json
    import sys

    from roteiro_memory.terminal import discard

    if sys.stdout is None:
        return
    said = f"{printable(line, one_line=True)} (the hook gave the agent nothing)"
    try:
        sys.stdout.write(json.dumps({"systemMessage": said}) + "\n")
        sys.stdout.flush()
    except OSError:  # the host went away, or the pipe broke: nothing more to tell
        discard(sys.stdout)
