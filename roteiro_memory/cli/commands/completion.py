"""``roteiro-memory completion SHELL``: a completion script for bash, zsh or fish."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session

SUMMARY = "print a shell completion script for bash, zsh or fish"
EXAMPLE = (
    "roteiro-memory completion bash > ~/.local/share/bash-completion/completions/"
    "roteiro-memory\n"
    '  roteiro-memory completion zsh > "${fpath[1]}/_roteiro-memory"\n'
    "  roteiro-memory completion fish > ~/.config/fish/completions/roteiro-memory.fish"
)
SYNCS = False
"""No store, nothing to sync."""


def configure(parser: argparse.ArgumentParser) -> None:
    from roteiro_memory.cli.completion import SHELLS

    parser.add_argument("shell", metavar="SHELL", choices=SHELLS, help="bash, zsh or fish")
    parser.add_argument(
        "--json", action="store_true", help="print the envelope, the script in its result"
    )


def run(args: argparse.Namespace, session: Session) -> int:
    from roteiro_memory.cli.completion import emit_script
    from roteiro_memory.cli.main import full_parser

    return emit_script(args.shell, full_parser(), as_json=args.json)
