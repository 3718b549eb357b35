"""What no revision name is, refused before git runs (so before a
repository is needed): a rule on the name alone, no I/O."""

from __future__ import annotations

import os

from roteiro_memory.errors import GitError, excerpt

__all__ = ["check_rev_name"]


def check_rev_name(rev: str) -> None:
    """Refuse what no revision name is, without running git (so before a
    repository is needed): nothing at all, a leading ``-`` (an option to
    git), a NUL byte (git takes its arguments as C strings), or a lone
    surrogate (no argument can carry one)."""
    if not rev or rev.startswith("-"):
        raise GitError(f"invalid revision {excerpt(rev)}: expected a commit, branch or tag name")
    if "\x00" in rev:
        raise GitError(
            f"unknown revision {excerpt(rev)}: a revision name holds no NUL byte; "
            "expected a commit, branch or tag"
        )
    try:
        os.fsencode(rev)  # as git is given it
    except UnicodeEncodeError as error:
        raise GitError(
            f"unknown revision {excerpt(rev)}: it holds {rev[error.start]!r} at "
            f"{error.start}, a lone surrogate, which no revision name holds; "
            "expected a commit, branch or tag"
        ) from None
