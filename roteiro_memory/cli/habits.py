"""Refusals of a command line that is almost right, naming what was meant.

A misspelt command (``recal``) or option (``--limt``) is refused with the
closest one (:mod:`difflib`), and an option of a command given before the
command (``roteiro-memory --kind lesson add x``) is refused saying whose
option it is and where it goes -- rather than argparse's list of every
command or its ``invalid choice: 'lesson'``.  Loaded only when a command
line is refused, so it costs a run that parses nothing.
"""

from __future__ import annotations

import argparse
import difflib
import shlex
from collections.abc import Callable, Sequence

from roteiro_memory.cli import commands
from roteiro_memory.cli.parser import GLOBAL_FLAGS, GLOBAL_VALUES, Parser, UsageFailure
from roteiro_memory.errors import excerpt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.cli.commands import Command

__all__ = ["closest", "misplaced", "unrecognized"]

PROG = "roteiro-memory"

_TOP_LEVEL = frozenset({"-h", "--help", "--version", *GLOBAL_FLAGS, *GLOBAL_VALUES})


def closest(word: str, choices: Sequence[str]) -> str | None:
    """The choice ``word`` most likely meant, if one is close enough."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.7)
    return found[0] if found else None


def _options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for o in parser._option_string_actions if o.startswith("--")]


def misplaced(rest: list[str], parser_of: Callable[[str, Command], Parser]) -> None:
    """Refuse ``rest`` (the command line after the global options, naming no
    command first) when it is a misspelt command or a command's option put
    before it; else return, for the full parser to report."""
    if not rest:
        return
    first = rest[0]
    names = commands.names()
    if not first.startswith("-"):
        meant = closest(first, names)
        hint = f"did you mean {meant!r}?" if meant else f"`{PROG} --help` lists the commands"
        raise UsageFailure(f"unknown command {excerpt(first)}; {hint}")
    option = first.partition("=")[0]
    if option in _TOP_LEVEL:
        return
    later = [i for i, word in enumerate(rest) if word in names]
    if later:
        index = later[0]
        name = rest[index]
        known = _options(parser_of(name, commands.load(name)))
        if option in known:
            moved = [PROG, name, *rest[index + 1 :], *rest[:index]]
            raise UsageFailure(
                f"{option} is an option of {name}, so it goes after the command: "
                f"{shlex.join(moved)}"
            )
        meant = closest(option, known)
        if meant is not None:
            raise UsageFailure(
                f"{option} is not an option of {name}; did you mean {meant} (after the command)?"
            )
    meant = closest(option, sorted(_TOP_LEVEL))
    hint = f"; did you mean {meant}?" if meant else ""
    raise UsageFailure(
        f"unknown option {excerpt(option)} before the command{hint} "
        "(a command's own options go after it)"
    )


def _chosen(
    parser: argparse.ArgumentParser, args: argparse.Namespace, name: str
) -> tuple[argparse.ArgumentParser, str]:
    """The parser that parsed the last of the command line, and its name:
    an action's (``cache stats``) when the command has actions."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = getattr(args, action.dest, None)
            if chosen in action.choices:
                return _chosen(action.choices[chosen], args, f"{name} {chosen}")
    return parser, name


def _shown(word: str) -> str:
    """``word`` as typed when it is plain printable ASCII, else quoted."""
    return word if word.isascii() and word.isprintable() and len(word) <= 64 else excerpt(word)


def unrecognized(
    unknown: Sequence[str], parser: argparse.ArgumentParser, name: str, args: argparse.Namespace
) -> str:
    """What to say of the words ``name``'s parser did not take: the closest
    option to a misspelt one (naming the action that did not take it, for a
    command with actions), and for a command that takes free words, how to
    give it one that starts with a dash; else argparse's own words."""
    parser, name = _chosen(parser, args, name)
    for word in unknown:
        if word.startswith("-") and word != "-":
            option = word.partition("=")[0] if word.startswith("--") else word
            meant = closest(option, _options(parser)) if word.startswith("--") else None
            if meant is not None:
                return f"{name} has no option {option}; did you mean {meant}?"
            said = (
                f"{name} has no option {_shown(option)}; `{PROG} {name} --help` lists its options"
            )
            if any(not a.option_strings and not a.choices for a in parser._actions):
                import shlex

                typed = shlex.quote(word) if _shown(word) == word else excerpt(word)
                said += (
                    f" (a word that starts with a dash goes after `--`: "
                    f"`{PROG} {name} [OPTIONS] -- {typed}`)"
                )
            return said
    return f"unrecognized arguments: {' '.join(unknown)}"
