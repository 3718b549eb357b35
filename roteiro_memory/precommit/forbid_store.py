"""``roteiro-forbid-store``: keep memory stores, their companions and exports
out of git.

Memory is per-clone and unredacted: an agent's prose can hold pasted tokens,
stack traces or customer names, and nothing redacts it on the way in.  So a
store (recognised by its SQLite header and schema, whatever its name), its
``-wal`` / ``-shm`` / ``-journal`` companions, and an export of it are refused,
each with the reason and the command that unstages it.  A file that cannot
be read is a finding too, naming the reason: what was not examined is never
passed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from roteiro_memory.errors import StoreUnavailable
from roteiro_memory.precommit.report import Finding, cannot_read, files, report
from roteiro_memory.precommit.sniff import recognise, unreadable

__all__ = ["forbidden", "main"]

_WHY = "memory is per-clone, unredacted prose"


def forbidden(paths: Iterable[str]) -> Iterator[Finding]:
    """One finding for each of ``paths`` that must stay out of git, or that
    cannot be read or examined (and so cannot be told apart from one that
    must: a database beside a hot journal with no room to read its last
    commit in)."""
    for path in paths:
        reason = unreadable(path)
        if reason is not None:
            yield cannot_read(path, reason)
            continue
        try:
            found = recognise(path)
        except StoreUnavailable as error:
            yield Finding("roteiro-forbid-store", f"{error}; it was not examined")
            continue
        if found is None:
            continue
        what = found.what.value
        if found.detail:
            what = f"{what} ({found.detail})"
        yield Finding(
            path,
            f"{what} must not be committed ({_WHY}); "
            f"unstage it with: git rm --cached -- {_shell_word(path)}",
        )


def _shell_word(path: str) -> str:
    """``path`` as one word a shell reads back as ``path``: quoted as
    :func:`shlex.quote` quotes, or, holding a control character (a newline),
    in ``$'...'`` with that character escaped, so the command stays on the
    finding's one line (bash, zsh and ksh read ``$'...'``)."""
    import shlex  # only for a finding: most commits have none

    from roteiro_memory.terminal import printable

    if printable(path, one_line=True) == path:
        return shlex.quote(path)
    escaped = path.replace("\\", "\\\\").replace("'", "\\'")
    return f"$'{printable(escaped, one_line=True)}'"


def main(argv: Sequence[str] | None = None) -> int:
    given = files(
        argv,
        "roteiro-forbid-store",
        "Refuse memory stores, their WAL/SHM companions and exports, recognised by content.",
    )
    return report(forbidden(given))


if __name__ == "__main__":
    raise SystemExit(main())
