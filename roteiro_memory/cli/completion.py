"""Shell completion scripts for bash, zsh and fish, generated from the parser.

The parser is the one source: :func:`levels` walks it into one
:class:`Level` per command path (``""``, ``"add"``, ``"cache"``,
``"cache put"``), and each shell's script is that table rendered in the
shell's own syntax.  Every script completes the same things: the
subcommands of the path typed so far, the options that path takes, and the
values of the options (and positionals) whose values are known -- kinds,
decay modes, shells, revisions, files.

Each script walks the words typed so far the same way: an option that takes a
value skips the next word, and a word naming a subcommand of the current path
extends it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from roteiro_memory.cli.parser import BARE
from roteiro_memory.exitcodes import ExitCode

__all__ = ["SHELLS", "Level", "emit_script", "levels", "script"]

PROG = "roteiro-memory"

SHELLS = ("bash", "zsh", "fish")
"""The shells a completion script is written for."""

FILE_VALUES = frozenset({"db", "output", "file", "anchor"})
"""Option and positional destinations whose values are paths."""
REV_VALUES = frozenset({"rev"})
"""Destinations whose values are git revisions."""


def _word_values() -> dict[str, tuple[str, ...]]:
    from roteiro_memory.semantics import KIND_TOKENS

    return {
        "kind": tuple(KIND_TOKENS),
        "decay": ("none", "linear", "exponential"),
        "backend": ("sqlite", "memory"),
        "shell": SHELLS,
    }


class Option:
    """One option of one level."""

    __slots__ = ("dest", "flags", "help", "takes_value")

    def __init__(self, flags: Sequence[str], takes_value: bool, help: str, dest: str) -> None:
        self.flags = tuple(flags)
        self.takes_value = takes_value
        self.help = help
        self.dest = dest


class Level:
    """What can follow one command path: subcommands, options, positionals."""

    __slots__ = ("commands", "options", "path", "positionals")

    def __init__(self, path: str) -> None:
        self.path = path
        self.commands: list[tuple[str, str]] = []
        """(name, one-line help) of each subcommand."""
        self.options: list[Option] = []
        self.positionals: list[str] = []
        """The destinations of the positionals, in order."""


def _help(text: str | None) -> str:
    return " ".join((text or "").split()).replace("%%", "%")


def levels(parser: argparse.ArgumentParser, path: str = "") -> list[Level]:
    """Every command path of ``parser``, the top level first."""
    level = Level(path)
    below: list[Level] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: _help(choice.help) for choice in action._choices_actions}
            for name, sub in action.choices.items():
                level.commands.append((name, helps.get(name, "")))
                below.extend(levels(sub, f"{path} {name}".strip()))
        elif action.option_strings:
            # An option of BARE takes its value only after "=": the next word is not its.
            takes = action.nargs != 0 and not set(action.option_strings) & set(BARE)
            level.options.append(
                Option(action.option_strings, takes, _help(action.help), action.dest)
            )
        else:
            level.positionals.append(action.dest)
    return [level, *below]


def _quote(text: str) -> str:
    """Single-quoted for any of the three shells."""
    return "'" + text.replace("'", "'\\''") + "'"


def _cases(entries: Sequence[tuple[str, str]], *, indent: str, fish: bool = False) -> list[str]:
    """``case`` arms mapping a path to a word list."""
    lines = []
    for path, words in entries:
        if fish:
            lines.append(f"{indent}case {_quote(path)}")
            lines.append(f"{indent}    echo {words}")
        else:
            lines.append(f"{indent}{_quote(path)}) echo {_quote(words)} ;;")
    return lines


def _tables(all_levels: Sequence[Level]) -> dict[str, list[tuple[str, str]]]:
    return {
        "commands": [(lv.path, " ".join(n for n, _ in lv.commands)) for lv in all_levels],
        "options": [
            (lv.path, " ".join(f for o in lv.options for f in o.flags)) for lv in all_levels
        ],
        "valued": [
            (lv.path, " ".join(f for o in lv.options if o.takes_value for f in o.flags))
            for lv in all_levels
        ],
        "positional": [
            (lv.path, lv.positionals[0]) for lv in all_levels if lv.positionals and not lv.commands
        ],
    }


def _lookup_functions(fn: str, all_levels: Sequence[Level]) -> list[str]:
    """The bash and zsh functions (one syntax for both) that map a command
    path to its subcommands, options, valued options and positional."""
    out = []
    for name, entries in _tables(all_levels).items():
        out += [f"{fn}_{name}() {{", '    case "$1" in', *_cases(entries, indent="        ")]
        out += ["    esac", "}", ""]
    return out


def _value_dests(all_levels: Sequence[Level]) -> dict[str, str]:
    """Each value-taking flag and the destination its value is completed as."""
    flags: dict[str, str] = {}
    for level in all_levels:
        for option in level.options:
            if option.takes_value:
                for flag in option.flags:
                    flags.setdefault(flag, option.dest)
    return flags


def _value_functions(
    fn: str,
    all_levels: Sequence[Level],
    action: Callable[[str], str],
    otherwise: str | None = None,
) -> list[str]:
    """The two shell functions bash and zsh share: ``FN_dest FLAG`` names the
    value an option takes, ``FN_values DEST`` completes it by ``action(DEST)``
    (``otherwise`` for a value with no arm, when given)."""
    dests = _value_dests(all_levels)
    value_arms = [
        f"        {dest}) {action(dest)} ;;"
        for dest in sorted(set(dests.values()) | {"shell", "file"})
    ]
    if otherwise is not None:
        value_arms.append(f"        *) {otherwise} ;;")
    return [
        f"{fn}_dest() {{",
        '    case "$1" in',
        *(f"        {flag}) echo {dest} ;;" for flag, dest in sorted(dests.items())),
        "    esac",
        "}",
        "",
        f"{fn}_values() {{",
        '    case "$1" in',
        *value_arms,
        "    esac",
        "}",
    ]


def _bash(all_levels: Sequence[Level]) -> str:
    words = _word_values()
    fn = "_roteiro_memory"
    out = [
        f"# bash completion for {PROG}; generated by `{PROG} completion bash`.",
        f"# Load it with: source <({PROG} completion bash)",
        "",
    ]
    out += _lookup_functions(fn, all_levels)
    out += _value_functions(
        fn,
        all_levels,
        lambda dest: (
            'COMPREPLY=($(compgen -f -- "$cur"))'
            if dest in FILE_VALUES
            else "COMPREPLY=($(compgen -W \"$(git for-each-ref --format='%(refname:short)' "
            '2>/dev/null) HEAD" -- "$cur"))'
            if dest in REV_VALUES
            else f'COMPREPLY=($(compgen -W {_quote(" ".join(words[dest]))} -- "$cur"))'
            if dest in words
            else "COMPREPLY=()"
        ),
        otherwise="COMPREPLY=()",
    )
    out += [
        "",
        f"{fn}() {{",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" path="" word skip=0 i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        word="${COMP_WORDS[i]}"',
        "        if ((skip)); then skip=0; continue; fi",
        '        if [[ " $(' + fn + '_valued "$path") " == *" $word "* ]]; then',
        "            skip=1",
        '        elif [[ " $(' + fn + '_commands "$path") " == *" $word "* ]]; then',
        '            path="${path:+$path }$word"',
        "        fi",
        "    done",
        "    if ((skip)); then",
        '        local prev="${COMP_WORDS[COMP_CWORD-1]}"',
        f'        {fn}_values "$({fn}_dest "$prev")"',
        "        return",
        "    fi",
        '    if [[ "$cur" == -* ]]; then',
        f'        COMPREPLY=($(compgen -W "$({fn}_options "$path")" -- "$cur"))',
        f'    elif [[ -n "$({fn}_commands "$path")" ]]; then',
        f'        COMPREPLY=($(compgen -W "$({fn}_commands "$path")" -- "$cur"))',
        "    else",
        f'        {fn}_values "$({fn}_positional "$path")"',
        "    fi",
        "}",
        "",
        f"complete -o filenames -F {fn} {PROG}",
        "",
    ]
    return "\n".join(out)


def _zsh(all_levels: Sequence[Level]) -> str:
    words = _word_values()
    fn = "_roteiro_memory"
    out = [
        f"#compdef {PROG}",
        f"# zsh completion for {PROG}; generated by `{PROG} completion zsh`.",
        f"# Save it as _{PROG} in a folder on $fpath, or: source <({PROG} completion zsh)",
        "",
    ]
    out += _lookup_functions(fn, all_levels)
    described = []
    for level in all_levels:
        if level.commands:
            items = " ".join(
                _quote(f"{n}:{h.replace(':', chr(92) + ':')}") for n, h in level.commands
            )
            described.append(f"        {_quote(level.path)}) described=({items}) ;;")
    out += _value_functions(
        fn,
        all_levels,
        lambda dest: (
            "_files"
            if dest in FILE_VALUES
            else "compadd -- ${(f)\"$(git for-each-ref --format='%(refname:short)' "
            '2>/dev/null)"} HEAD'
            if dest in REV_VALUES
            else f"compadd -- {' '.join(words[dest])}"
            if dest in words
            else ":"
        ),
    )
    out += [
        "",
        f"{fn}() {{",
        '    local cur="${words[CURRENT]}" path="" word skip=0 i',
        "    local -a described",
        "    for ((i = 2; i < CURRENT; i++)); do",
        '        word="${words[i]}"',
        "        if ((skip)); then skip=0; continue; fi",
        f'        if [[ " $({fn}_valued "$path") " == *" $word "* ]]; then',
        "            skip=1",
        f'        elif [[ " $({fn}_commands "$path") " == *" $word "* ]]; then',
        '            path="${path:+$path }$word"',
        "        fi",
        "    done",
        "    if ((skip)); then",
        f'        {fn}_values "$({fn}_dest "${{words[CURRENT-1]}}")"',
        "        return",
        "    fi",
        '    if [[ "$cur" == -* ]]; then',
        f'        compadd -- ${{=$({fn}_options "$path")}}',
        "        return",
        "    fi",
        '    case "$path" in',
        *described,
        "    esac",
        "    if ((${#described})); then",
        "        _describe command described",
        "    else",
        f'        {fn}_values "$({fn}_positional "$path")"',
        "    fi",
        "}",
        "",
        f'if [[ "$funcstack[1]" == "_{PROG}" ]]; then',
        f'    {fn} "$@"',
        "else",
        f"    compdef {fn} {PROG}",
        "fi",
        "",
    ]
    return "\n".join(out)


def _fish(all_levels: Sequence[Level]) -> str:
    words = _word_values()
    tables = _tables(all_levels)
    fn = "__roteiro_memory"
    out = [
        f"# fish completion for {PROG}; generated by `{PROG} completion fish`.",
        f"# Save it as ~/.config/fish/completions/{PROG}.fish, or: {PROG} completion fish | source",
        "",
    ]
    for name in ("commands", "valued"):
        out += [f"function {fn}_{name}", "    switch $argv[1]"]
        out += _cases(tables[name], indent="        ", fish=True)
        out += ["    end", "end", ""]
    out += [
        f"function {fn}_path",
        "    set -l path",
        "    set -l skip 0",
        "    for word in (commandline -opc)[2..-1]",
        "        if test $skip = 1",
        "            set skip 0",
        "            continue",
        "        end",
        f'        if contains -- $word (string split " " -- ({fn}_valued "$path"))',
        "            set skip 1",
        f'        else if contains -- $word (string split " " -- ({fn}_commands "$path"))',
        '            set path (string trim -- "$path $word")',
        "        end",
        "    end",
        '    echo "$path"',
        "end",
        "",
        f"function {fn}_at",
        f'    test ({fn}_path) = "$argv[1]"',
        "end",
        "",
        f"complete -c {PROG} -f",
    ]
    for level in all_levels:
        at = f"-n {_quote(f'{fn}_at {_quote(level.path)}')}"
        for name, help in level.commands:
            out.append(f"complete -c {PROG} {at} -a {name} -d {_quote(help)}")
        for option in level.options:
            spec = []
            for flag in option.flags:
                spec.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
            value = ""
            if option.takes_value:
                if option.dest in FILE_VALUES:
                    value = " -r -F"
                elif option.dest in REV_VALUES:
                    value = " -x -a '(__fish_git_refs 2>/dev/null; echo HEAD)'"
                elif option.dest in words:
                    value = f" -x -a {_quote(' '.join(words[option.dest]))}"
                else:
                    value = " -x"
            out.append(f"complete -c {PROG} {at} {' '.join(spec)}{value} -d {_quote(option.help)}")
        if level.positionals and not level.commands:
            dest = level.positionals[0]
            if dest in FILE_VALUES:
                out.append(f"complete -c {PROG} {at} -F")
            elif dest in words:
                out.append(f"complete -c {PROG} {at} -a {_quote(' '.join(words[dest]))}")
    out.append("")
    return "\n".join(out)


_RENDERERS = {"bash": _bash, "zsh": _zsh, "fish": _fish}


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for ``shell`` (bash, zsh or fish)."""
    return _RENDERERS[shell](levels(parser))


def emit_script(shell: str, parser: argparse.ArgumentParser, *, as_json: bool) -> int:
    """Print the script, or under ``--json`` the envelope holding it."""
    text = script(shell, parser)
    if as_json:
        from roteiro_memory.cli.envelope import success, write

        write(success({"shell": shell, "script": text}))
    else:
        sys.stdout.write(text)
    return ExitCode.OK
