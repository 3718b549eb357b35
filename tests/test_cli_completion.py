"""``roteiro-memory completion bash|zsh|fish`` prints a script generated from
the parser: it names every subcommand and cache action, and bash's parses and
completes."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from roteiro_memory.cli import completion
from roteiro_memory.cli.commands import cache, names
from roteiro_memory.cli.completion import SHELLS
from roteiro_memory.cli.main import full_parser as _parser
from roteiro_memory.cli.main import main

COMMANDS = list(names())
ACTIONS = [name for name, *_ in cache.ACTIONS]


@pytest.mark.parametrize("shell", SHELLS)
def test_each_script_names_every_subcommand_and_cache_action(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["completion", shell]) == 0
    text = capsys.readouterr().out
    for name in COMMANDS + ACTIONS:
        assert f" {name} " in text or f" {name}'" in text or f"'{name} " in text, name
    for option in ("--anchor", "--kind", "--decay", "--budget-mb", "--applicable-only"):
        assert option.lstrip("-") in text, option


def test_levels_follow_the_parser() -> None:
    by_path = {level.path: level for level in completion.levels(_parser())}
    assert [name for name, _ in by_path[""].commands] == COMMANDS
    assert [name for name, _ in by_path["cache"].commands] == ACTIONS
    add_flags = {flag for option in by_path["add"].options for flag in option.flags}
    assert {"--kind", "--anchor", "--confidence", "--db", "--json", "--no-sync"} <= add_flags
    assert by_path["completion"].positionals == ["shell"]


def test_bash_script_parses(tmp_path: Path) -> None:
    script = tmp_path / "roteiro-memory.bash"
    script.write_text(completion.script("bash", _parser()))
    done = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        (["roteiro-memory", ""], COMMANDS),
        (["roteiro-memory", "--db", "x.db", ""], COMMANDS),
        (["roteiro-memory", "cache", ""], ACTIONS),
        (
            ["roteiro-memory", "--json", "add", "--kind", ""],
            list(completion._word_values()["kind"]),
        ),
        (["roteiro-memory", "recall", "--decay", "e"], ["exponential"]),
        (["roteiro-memory", "completion", ""], list(SHELLS)),
        (["roteiro-memory", "list", "--k"], ["--kind"]),
    ],
)
def test_bash_completes_from_the_words_typed(
    tmp_path: Path, words: list[str], expected: list[str]
) -> None:
    script = tmp_path / "roteiro-memory.bash"
    script.write_text(completion.script("bash", _parser()))
    array = " ".join(shlex.quote(word) for word in words)
    probe = (
        f"source {shlex.quote(str(script))}; COMP_WORDS=({array}); "
        f"COMP_CWORD={len(words) - 1}; _roteiro_memory; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == expected


def test_completion_under_json_carries_the_script(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    assert main(["completion", "fish", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["result"]
    assert result["shell"] == "fish"
    assert result["script"] == completion.script("fish", _parser())
