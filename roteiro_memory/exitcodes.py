"""The exit status of every program this package installs: the
``roteiro-memory`` command line and the pre-commit hooks.

Documented in ``docs/cli.md``; a script may rely on them, so a member's
number never changes.
"""

from __future__ import annotations

import enum

__all__ = ["ExitCode"]


class ExitCode(enum.IntEnum):
    OK = 0
    """Success; for a hook, nothing was found."""
    NOTHING = 1
    """The command ran and the answer is no: nothing matched, or a check (or
    hook) found a problem and printed it."""
    USAGE = 2
    """Bad usage or invalid input (argparse's own status too); nothing was changed."""
    STORE = 3
    """The store is corrupt or cannot be read (not a store, a newer schema, a
    damaged row, a failing database); nothing was changed."""
    UNREPORTED = 4
    """The command's change was stored, but standard output failed before
    its report was whole: the change stays, only what it printed is lost."""
    INTERRUPTED = 130
    """Interrupted by Ctrl-C, as a shell reports a SIGINT."""
