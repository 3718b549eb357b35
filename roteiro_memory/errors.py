"""One exception tree, rooted at :class:`RoteiroError`.

Each class carries ``kind``, the PROTOCOL error kind it is reported as, and
also inherits the built-in it resembles so callers can catch it either way.
Messages name the offending value, what is allowed, and where it came from.
"""

from __future__ import annotations

__all__ = [
    "ERROR_KINDS",
    "AlreadySuperseded",
    "AnchorError",
    "BadRequest",
    "Corrupt",
    "GitError",
    "ImportRefused",
    "InvalidAnchor",
    "InvalidBody",
    "InvalidBudget",
    "InvalidConfidence",
    "InvalidDecay",
    "InvalidKind",
    "InvalidScope",
    "NotFound",
    "ResetRefused",
    "RoteiroError",
    "StoreUnavailable",
    "StreamClosed",
    "SymbolError",
    "Unsupported",
    "UsageError",
    "excerpt",
    "unexpected_failure",
]

EXCERPT_CHARS = 200
"""How much of a caller's value a message quotes."""


def excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """``repr(value)``, or for a long value the repr of its first ``limit``
    characters and its length: a message quotes enough to find the value,
    never the whole of it (a body may hold a secret, and be 64 KiB)."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{value[:limit]!r}... ({len(value)} {unit} in all)"
    text = repr(value)
    if len(text) > limit:
        return f"{text[:limit]}... ({len(text)} characters in all)"
    return text


class RoteiroError(Exception):
    """Base of every error this package raises on purpose."""

    kind = "RoteiroError"


class InvalidKind(RoteiroError, ValueError):
    """A memory kind outside the closed vocabulary."""

    kind = "InvalidKind"


class InvalidScope(RoteiroError, ValueError):
    """A scope that is empty, too long, padded, or carries a control character."""

    kind = "InvalidScope"


class InvalidBody(RoteiroError, ValueError):
    """A body that is empty, blank, or over the byte limit."""

    kind = "InvalidBody"


class InvalidAnchor(RoteiroError, ValueError):
    """An anchor over the size limit; reported as ``BadRequest``, the kind
    PROTOCOL gives a malformed argument, as no kind of its own exists."""

    kind = "BadRequest"


class InvalidConfidence(RoteiroError, ValueError):
    """A confidence that is not a finite number in [0, 1]."""

    kind = "InvalidConfidence"


class InvalidDecay(RoteiroError, ValueError):
    """A decay token that names no decay."""

    kind = "InvalidDecay"


class InvalidBudget(RoteiroError, ValueError):
    """A cache budget that is not a whole number of megabytes fitting 64 bits."""

    kind = "InvalidBudget"


class NotFound(RoteiroError, LookupError):
    """A record named by id that is not in the store."""

    kind = "NotFound"


class AlreadySuperseded(RoteiroError, ValueError):
    """A record named as superseded that another record already supersedes."""

    kind = "AlreadySuperseded"


class Corrupt(RoteiroError):
    """Stored data that cannot be interpreted, or a file that is not a store,
    or a store written by a newer schema than this version knows."""

    kind = "Corrupt"


class Unsupported(RoteiroError):
    """An operation outside a backend's declared capabilities."""

    kind = "Unsupported"


class BadRequest(RoteiroError, ValueError):
    """A protocol request that is malformed: not JSON, an unknown op, a missing
    or mistyped argument, or a negative count."""

    kind = "BadRequest"


class StoreUnavailable(RoteiroError):
    """A store that cannot be opened or reached (a path, a server, a driver)."""

    kind = "Corrupt"


class StreamClosed(RoteiroError, OSError):
    """Standard input or output closed (or failing) where a command needs it."""

    kind = "BadRequest"


# Refusals of the command line and the repository: reported as BadRequest,
# since each is a request naming something malformed or absent.


class UsageError(RoteiroError, ValueError):
    """A command-line value that is malformed; the message names it."""

    kind = "BadRequest"


class AnchorError(RoteiroError, ValueError):
    """An ``--anchor`` that names nothing anchorable."""

    kind = "BadRequest"


class GitError(RoteiroError, ValueError):
    """A git command failed: not a repository, an unknown revision, no git."""

    kind = "BadRequest"


class SymbolError(RoteiroError, ValueError):
    """Source that cannot be parsed into definitions; the message names where and why."""

    kind = "BadRequest"


class ImportRefused(RoteiroError, ValueError):
    """An import that would not reproduce a store: a bad line, or a store
    that is not empty."""

    kind = "BadRequest"


class ResetRefused(RoteiroError, PermissionError):
    """A ``reset`` the protocol server will not do: its store held data when
    the server started, and the server was not told it may erase it."""

    kind = "BadRequest"


ERROR_KINDS: tuple[str, ...] = (
    "InvalidKind",
    "InvalidScope",
    "InvalidBody",
    "InvalidConfidence",
    "InvalidDecay",
    "InvalidBudget",
    "NotFound",
    "AlreadySuperseded",
    "Corrupt",
    "Unsupported",
    "BadRequest",
)
"""Every error kind PROTOCOL names, in its order."""


def unexpected_failure(error: BaseException) -> Corrupt:
    """What a failure nothing reports on purpose (not a database's, which its
    store family maps) is reported as: :class:`Corrupt`, naming it in one
    line, so that no request goes unanswered and no command ends in a
    traceback."""
    said = " ".join(str(error).split())
    return Corrupt(
        f"unexpected failure: {type(error).__name__}: {excerpt(said, 200)}; "
        "nothing reports this on purpose, so please report it as a bug"
    )
