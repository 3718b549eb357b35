"""One exception tree, rooted at :class:`RoteiroError`.

Each class carries its consequences, as click's exceptions carry
``exit_code``: ``kind``, the PROTOCOL error kind it is reported as on every
surface (the wire, the ``--json`` envelope, an MCP tool result), and
``exit_status``, the :class:`~roteiro_memory.exitcodes.ExitCode` a command
ends with.  Each also inherits the built-in it resembles, so callers can
catch it either way.  Messages name the offending value, what is allowed, and
where it came from.

The classes are defined in PROTOCOL's order of kinds, so :data:`ERROR_KINDS`
is read off them.
"""

from __future__ import annotations

import re

from roteiro_memory.exitcodes import ExitCode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "ERROR_KINDS",
    "Absent",
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
    "InvalidStoreName",
    "LoginRefused",
    "NotFound",
    "ReanchorRefused",
    "ReportLost",
    "ResetRefused",
    "RoteiroError",
    "ServerUnreachable",
    "SourceTooLarge",
    "StoreBusy",
    "StoreUnavailable",
    "StreamClosed",
    "SymbolError",
    "SymbolsUnavailable",
    "Unsupported",
    "UsageError",
    "bounded_line",
    "byte_order_mark",
    "excerpt",
    "given_excerpt",
    "json_excerpt",
    "lone_surrogate",
    "strict_json",
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
    return _cut(repr(value), limit)


def json_excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """A parsed JSON value as JSON writes it (``null``, ``true``,
    ``{"a": 1}``; a number beyond a double as ``Infinity``), cut as
    :func:`excerpt` cuts: what a sender of JSON recognises, where a Python
    repr (``None``, ``inf``) would not be what it sent."""
    import json

    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not parsed JSON after all
        return excerpt(value, limit)
    return _cut(text, limit)


def given_excerpt(value: object, limit: int = EXCERPT_CHARS) -> str:
    """A value as a command line or a JSON request gives it, for a message:
    text as :func:`excerpt` quotes it (``'20x'``, as every refusal quotes a
    string), anything else -- which only JSON gives -- as
    :func:`json_excerpt` writes it (``true``, ``null``, ``[1]``)."""
    return excerpt(value, limit) if isinstance(value, str) else json_excerpt(value, limit)


def _cut(text: str, limit: int) -> str:
    if len(text) > limit:
        return f"{text[:limit]}... ({len(text)} characters in all)"
    return text


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate of ``text`` as a refusal names it (``a lone
    surrogate (U+D800 at character 5)``); None when UTF-8 can carry ``text``."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as problem:
        at = problem.start
        return f"a lone surrogate (U+{ord(text[at]):04X} at character {at})"
    return None


def byte_order_mark(text: str | bytes) -> str | None:
    """Why JSON text ``text`` (or the bytes that carry it) is refused, when
    it starts with a byte-order mark (U+FEFF, UTF-8's EF BB BF): RFC 8259
    forbids one before JSON text, and Python's reader says only "Unexpected
    UTF-8 BOM (decode using utf-8-sig)", which names neither the character
    nor the fix.  None when there is none."""
    marked = (
        text.startswith("\ufeff") if isinstance(text, str) else text.startswith(b"\xef\xbb\xbf")
    )
    if not marked:
        return None
    return "starts with a byte-order mark (U+FEFF): expected UTF-8 JSON text without one"


def bounded_line(readline: Callable[[int], bytes], limit: int) -> bytes:
    """One line read by ``readline`` (b"" at the end of input), at most
    ``limit`` + 1 bytes of it: a longer line is read on to its end and the
    rest dropped, so the server reading it refuses it by its length (over
    ``limit``) and reads the next line where it starts, and an input that
    never ends a line (``/dev/zero``) holds no more than that in memory."""
    line = readline(limit + 1)
    if len(line) <= limit or line.endswith(b"\n"):
        return line
    while True:
        rest = readline(min(limit, 1 << 20))
        if not rest or rest.endswith(b"\n"):
            return line
        # The excess is dropped, a mebibyte at a time: only its length matters.


def strict_json(text: str) -> str:
    """JSON text (written with ``ensure_ascii=False``) as UTF-8 carries it and
    a strict parser reads it.  An answer may quote text from the request that
    holds a lone surrogate (an object's name, a value, an id), which UTF-8
    cannot carry and a strict parser (serde_json, Go's) refuses as the escape
    ``\\ud800`` too: the string shows the six characters of that escape
    instead.  A lone surrogate sits in a JSON string only, so the text stays
    JSON, on one line when it was."""
    if text.isascii() or lone_surrogate(text) is None:
        return text
    return re.sub("[\ud800-\udfff]", lambda found: f"\\\\u{ord(found[0]):04x}", text)


_CLASSES: list[type[RoteiroError]] = []
"""Every error class, in the order defined."""


class RoteiroError(Exception):
    """Base of every error this package raises on purpose; never raised itself."""

    kind: str = "BadRequest"
    """The PROTOCOL error kind it is reported as."""
    exit_status: ExitCode = ExitCode.USAGE
    """The status a command that fails with it exits with: by default, a
    request that was refused and changed nothing."""
    cause: str | None = None
    """What failed, without the advice the message ends with ("nothing was
    changed; try again ..."): set by a store's failure, for a caller whose
    request had committed a write before it, which that advice would deny."""

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        _CLASSES.append(cls)


class InvalidKind(RoteiroError, ValueError):
    """A memory kind outside the closed vocabulary."""

    kind = "InvalidKind"


class InvalidScope(RoteiroError, ValueError):
    """A scope that is empty, too long, padded, or carries a control character."""

    kind = "InvalidScope"


class InvalidBody(RoteiroError, ValueError):
    """A body that is empty, blank, or over the byte limit."""

    kind = "InvalidBody"


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


class Absent(NotFound):
    """The record or cache entry a command names to read or forget is not
    there: an answer, not a refusal, so its exit status says "nothing"."""

    exit_status = ExitCode.NOTHING


class AlreadySuperseded(RoteiroError, ValueError):
    """A record named as superseded that another record already supersedes."""

    kind = "AlreadySuperseded"


class Corrupt(RoteiroError):
    """Stored data that cannot be interpreted, or a file that is not a store,
    or a store written by a newer schema than this version knows."""

    kind = "Corrupt"
    exit_status = ExitCode.STORE


class Unsupported(RoteiroError):
    """An operation outside a backend's declared capabilities."""

    kind = "Unsupported"


class BadRequest(RoteiroError, ValueError):
    """A protocol request that is malformed: not JSON, an unknown op, a missing
    or mistyped argument, or a negative count."""

    kind = "BadRequest"


class StoreUnavailable(RoteiroError):
    """A store that is not damaged but cannot be used now: busy beyond the
    wait, a server that is down, a file that cannot be opened or created, a
    missing driver, no repository to find it in.  Never reported as
    ``Corrupt``, so nobody repairs a store that is sound."""

    kind = "Unavailable"
    exit_status = ExitCode.STORE


class StoreBusy(StoreUnavailable):
    """A store another process held the write lock of for longer than this
    one would wait: sound, and free again once that process is done."""

    waited = 0
    """How long this one waited, in milliseconds."""


class ServerUnreachable(StoreUnavailable):
    """A database server that could not be connected to: down, starting or
    stopping, out of connections, unreachable, or refusing the connection
    (not the login, which is :class:`LoginRefused`).
    A later attempt can succeed once the server is up and willing, with
    nothing changed in this process, so a long-running one (``mcp``) tries
    again on its next call rather than giving up."""


class InvalidAnchor(RoteiroError, ValueError):
    """An anchor over the size limit; reported as ``BadRequest``, the kind
    PROTOCOL gives a malformed argument, as no kind of its own exists."""

    kind = "BadRequest"


class StreamClosed(RoteiroError, OSError):
    """Standard input or output closed (or failing) where a command needs it."""

    kind = "BadRequest"
    output_lost = False
    """True when standard output itself failed (a full disk): the failure
    is then reported on stderr, since stdout takes nothing more."""


class ReportLost(StreamClosed):
    """Standard output failed after the command's change was committed: the
    change is stored, and only its report is incomplete."""

    exit_status = ExitCode.UNREPORTED
    output_lost = True


# Refusals of the command line and the repository: reported as BadRequest,
# since each is a request naming something malformed or absent.


class UsageError(RoteiroError, ValueError):
    """A command-line value that is malformed; the message names it."""

    kind = "BadRequest"


class InvalidStoreName(RoteiroError, ValueError):
    """A store named wrongly: an empty ``--db``, SQLite's name for a database
    in memory, a malformed DSN or schema, an unknown backend, or two names
    that contradict each other.  Nothing was opened."""

    kind = "BadRequest"


class LoginRefused(InvalidStoreName):
    """A database server that answered, and refused this login: a wrong or
    missing password, a role or database that does not exist, no rule of the
    server's admitting it.  Trying again changes nothing until the name (the
    DSN, a ``PG*`` variable, the password file) or the server's roles are
    put right, so it is not :class:`ServerUnreachable`: no server is served
    "anyway" on it.  Nothing was opened."""


class AnchorError(RoteiroError, ValueError):
    """An ``--anchor`` that names nothing anchorable."""

    kind = "BadRequest"


class ReanchorRefused(RoteiroError, ValueError):
    """A re-anchoring or a confirmation that does not fit the record named:
    its anchor is in a state the operation does not take, or no one place
    holds its code now.  Nothing was written."""

    kind = "BadRequest"


class GitError(RoteiroError, ValueError):
    """A git command failed: not a repository, an unknown revision, no git."""

    kind = "BadRequest"


class SymbolError(RoteiroError, ValueError):
    """Source that cannot be parsed into definitions; the message names where and why."""

    kind = "BadRequest"


class SymbolsUnavailable(SymbolError):
    """Source whose language's parser is not installed (the ``symbols`` extra);
    the message names the language and the install line."""

    kind = "BadRequest"


class SourceTooLarge(SymbolError):
    """Source over the size whose definitions are read
    (:data:`~roteiro_memory.repo.symbols.MAX_PARSED_BYTES`); the message
    names its size and the limit."""

    kind = "BadRequest"


class ImportRefused(RoteiroError, ValueError):
    """An import that would not reproduce a store: a bad line, or a store
    that is not empty."""

    kind = "BadRequest"


class ResetRefused(RoteiroError, PermissionError):
    """A ``reset`` the protocol server will not do: its store held data when
    the server started, and the server was not told it may erase it."""

    kind = "BadRequest"


ERROR_KINDS: tuple[str, ...] = tuple(dict.fromkeys(cls.kind for cls in _CLASSES))
"""Every error kind PROTOCOL names, in its order: the kinds of the classes,
in the order they are defined."""


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
