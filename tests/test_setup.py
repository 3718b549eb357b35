"""``roteiro-memory setup HOST`` in a scratch repository: what it writes,
that a second run changes nothing and says so, that what the user has is
kept, and that a file it cannot read is refused with nothing written."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from agent_repo import GitRepo, run_hook

from roteiro_memory.app.hostconfig import HOOK_EVENTS, HOSTS, SERVER_NAME, ConfigRefused, merge
from roteiro_memory.cli.commands.setup import installed_command


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "repo")


def setup(repo: GitRepo, *args: str) -> subprocess.CompletedProcess[str]:
    return repo.cli("setup", *args)


def files(repo: GitRepo, host: str) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in HOSTS[host].files:
        path = repo.root / name
        out[name] = path.read_text() if path.exists() else None
    return out


def test_claude_code_gets_the_server_and_every_hook_with_the_commands_absolute_path(
    repo: GitRepo,
) -> None:
    done = setup(repo, "claude-code")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "wrote .mcp.json\nwrote .claude/settings.json\n"
    command = installed_command()
    assert Path(command).is_absolute()
    servers = json.loads((repo.root / ".mcp.json").read_text())["mcpServers"]
    assert servers == {
        SERVER_NAME: {"type": "stdio", "command": command, "args": ["mcp"], "env": {}}
    }
    hooks = json.loads((repo.root / ".claude/settings.json").read_text())["hooks"]
    assert list(hooks) == [event for event, _ in HOOK_EVENTS]
    for event, matcher in HOOK_EVENTS:
        (group,) = hooks[event]
        assert group.get("matcher") == matcher
        assert group["hooks"] == [{"type": "command", "command": f"{shlex.quote(command)} hook"}]


@pytest.mark.parametrize("host", sorted(HOSTS))
def test_a_second_run_changes_nothing_and_says_so(repo: GitRepo, host: str) -> None:
    assert setup(repo, host).returncode == 0
    before = files(repo, host)
    again = setup(repo, host)
    assert again.returncode == 0, again.stderr
    assert (
        again.stdout.splitlines()[0]
        == f"nothing to change: {host} is already set up in {repo.root}"
    )
    assert files(repo, host) == before


def test_what_the_user_has_is_kept(repo: GitRepo) -> None:
    repo.write(
        ".mcp.json",
        json.dumps({"mcpServers": {"other": {"command": "other-server"}}, "extra": [1, 2]}),
    )
    mine = {"type": "command", "command": "./scripts/lint.sh"}
    repo.write(
        ".claude/settings.json",
        json.dumps(
            {
                "permissions": {"allow": ["Bash(pytest:*)"]},
                "hooks": {
                    "PreToolUse": [{"matcher": "Bash", "hooks": [mine]}],
                    "Stop": [
                        {"hooks": [{"type": "command", "command": "/old/bin/roteiro-memory hook"}]}
                    ],
                },
            }
        ),
    )
    assert setup(repo, "claude-code").returncode == 0
    servers = json.loads((repo.root / ".mcp.json").read_text())
    assert servers["mcpServers"]["other"] == {"command": "other-server"}
    assert servers["extra"] == [1, 2]
    settings = json.loads((repo.root / ".claude/settings.json").read_text())
    assert settings["permissions"] == {"allow": ["Bash(pytest:*)"]}
    assert settings["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [mine]}
    # An earlier install's hook (another path) is ours: replaced where it stands, not doubled.
    (stop,) = settings["hooks"]["Stop"]
    assert stop["hooks"] == [{"type": "command", "command": f"{installed_command()} hook"}]


def test_codex_table_is_appended_then_replaced_where_it_stands(repo: GitRepo) -> None:
    repo.write(
        ".codex/config.toml",
        'model = "o3"\n\n[mcp_servers."roteiro-memory"]\ncommand = "/old/roteiro-memory"\n'
        'args = ["serve"]\n\n[mcp_servers."roteiro-memory".env]\nX = "1"\n\n'
        '[mcp_servers.other]\ncommand = "other"\n',
    )
    assert setup(repo, "codex").returncode == 0
    text = (repo.root / ".codex/config.toml").read_text()
    config = tomllib.loads(text)
    assert config["model"] == "o3"
    assert config["mcp_servers"]["other"] == {"command": "other"}
    assert config["mcp_servers"][SERVER_NAME] == {"command": installed_command(), "args": ["mcp"]}
    assert text.startswith('model = "o3"\n\n[mcp_servers."roteiro-memory"]\n')
    empty = GitRepo(repo.root.parent / "empty")
    assert setup(empty, "codex").returncode == 0
    assert tomllib.loads((empty.root / ".codex/config.toml").read_text()) == {
        "mcp_servers": {SERVER_NAME: {"command": installed_command(), "args": ["mcp"]}}
    }


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        (".mcp.json", "{not json", ".mcp.json is not JSON"),
        (
            ".mcp.json",
            '\ufeff{"mcpServers": {}}',
            ".mcp.json starts with a byte-order mark (U+FEFF): expected UTF-8 JSON text",
        ),
        (".mcp.json", "[1, 2]", ".mcp.json: the file is [1, 2], not an object"),
        (".mcp.json", '{"mcpServers": []}', '.mcp.json: "mcpServers" is [], not an object'),
        (".claude/settings.json", '{"hooks": {"Stop": {}}}', '"hooks"."Stop" is {}, not a list'),
        # What could not be written back as the same JSON, refused before any file is.
        (".claude/settings.json", '{"x": "\\udfff"}', "a lone surrogate ('\\udfff')"),
        (".mcp.json", '{"x": "\\ud800"}', "a lone surrogate ('\\ud800')"),
        (".mcp.json", '{"x": 1e999}', "holds the number '1e999', which no double holds"),
        (".mcp.json", '{"y": NaN}', "is not JSON (NaN is not a JSON value)"),
        (".mcp.json", '{"y": -Infinity}', "is not JSON (-Infinity is not a JSON value)"),
        (".mcp.json", "[" * 100_000 + "]" * 100_000, "nests arrays or objects too deeply"),
        (
            ".claude/settings.json",
            '{"permissions": {"allow": ["a"]}, "permissions": {"deny": ["b"]}}',
            'holds the key "permissions" twice in one object',
        ),
        (".mcp.json", '{"mcpServers": {"x": {}, "x": {}}}', 'holds the key "x" twice'),
    ],
)
def test_a_file_it_cannot_merge_is_one_line_and_nothing_is_written(
    repo: GitRepo, name: str, text: str, said: str
) -> None:
    repo.write(name, text)
    before = files(repo, "claude-code")
    done = setup(repo, "claude-code")
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert said in line, line
    assert line.endswith("nothing was written"), line
    assert files(repo, "claude-code") == before


@pytest.mark.parametrize("blocker", ["file", "dangling symlink"])
def test_a_file_it_cannot_write_refuses_the_whole_setup_and_every_file_is_as_it_was(
    repo: GitRepo, blocker: str
) -> None:
    """Every file is written beside its target before any is replaced: the
    .mcp.json that could be merged is not, when .claude/settings.json cannot
    be written because .claude is not a folder."""
    repo.write(".mcp.json", '{"mcpServers": {"other": {"command": "x"}}}\n')
    if blocker == "file":
        repo.write(".claude", "not a folder\n")
    else:
        (repo.root / ".claude").symlink_to(repo.root / "nowhere")
    listing = sorted(p.name for p in repo.root.iterdir())
    before = (repo.root / ".mcp.json").read_bytes()
    for json_flag in ((), ("--json",)):
        done = setup(repo, *json_flag, "claude-code")
        assert done.returncode == 2, done.stderr
        said = json.loads(done.stdout)["error"]["message"] if json_flag else done.stderr
        assert f"{repo.root / '.claude'} is not a folder" in said
        assert said.rstrip("\n").endswith("nothing was written")
        if not json_flag:
            assert done.stdout == ""
            assert len(done.stderr.splitlines()) == 1
        assert (repo.root / ".mcp.json").read_bytes() == before
        assert sorted(p.name for p in repo.root.iterdir()) == listing


def test_folders_made_for_a_setup_that_is_refused_are_removed(tmp_path: Path) -> None:
    from roteiro_memory.app.hostconfig import Edit
    from roteiro_memory.cli.commands.setup import _write_all

    (tmp_path / "blocked").write_text("a file\n")
    edits = [Edit("new/deeper/a.json", None, "{}\n"), Edit("blocked/b.json", None, "{}\n")]
    with pytest.raises(ConfigRefused, match="blocked is not a folder"):
        _write_all(tmp_path, edits)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocked"]


@pytest.mark.parametrize("host", ["cursor", "claude-code"])
def test_a_symlinked_config_is_written_through_and_stays_a_link(
    repo: GitRepo, tmp_path: Path, host: str
) -> None:
    """As an editor saves: the file the link names is replaced, the link kept."""
    shared = tmp_path / "shared" / "mcp.json"
    shared.parent.mkdir()
    shared.write_text('{"mcpServers": {"other": {"command": "x"}}}\n')
    name = HOSTS[host].files[0]
    link = repo.root / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(shared)
    done = setup(repo, host)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink()
    assert link.resolve() == shared
    servers = json.loads(shared.read_text())["mcpServers"]
    assert set(servers) == {"other", SERVER_NAME}
    assert sorted(p.name for p in shared.parent.iterdir()) == ["mcp.json"]


def test_a_codex_server_written_inline_is_not_rewritten() -> None:
    text = 'mcp_servers = { "roteiro-memory" = { command = "x" } }\n'
    with pytest.raises(ConfigRefused, match="not one"):
        merge(HOSTS["codex"], ".codex/config.toml", text, "/bin/roteiro-memory")
    with pytest.raises(ConfigRefused, match="is not TOML"):
        merge(HOSTS["codex"], ".codex/config.toml", "[[[", "/bin/roteiro-memory")


@pytest.mark.parametrize("value", ["nan", "+inf", "-nan", "1.50", "6.02e23"])
def test_a_codex_config_holding_any_float_is_merged_keeping_it_as_written(value: str) -> None:
    """TOML takes ``nan``, which equals no float: the check that a merge
    changed nothing else compares floats as written, so it does not refuse
    them, and the value is kept character for character."""
    text = f"[model]\nb = {value}\n"
    merged = merge(HOSTS["codex"], ".codex/config.toml", text, "/bin/roteiro-memory")
    assert merged.startswith(text)
    assert tomllib.loads(merged)["mcp_servers"][SERVER_NAME]["command"] == "/bin/roteiro-memory"
    again = merge(HOSTS["codex"], ".codex/config.toml", merged, "/bin/roteiro-memory")
    assert again == merged


def test_print_shows_every_file_and_writes_nothing(repo: GitRepo) -> None:
    done = setup(repo, "claude-code", "--print")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# .mcp.json (would change)\n{\n")
    assert "# .claude/settings.json (would change)\n" in done.stdout
    assert files(repo, "claude-code") == {name: None for name in HOSTS["claude-code"].files}
    shown = json.loads(setup(repo, "cursor", "--print", "--json").stdout)["result"]
    assert shown["written"] is False
    (entry,) = shown["files"]
    assert json.loads(entry["text"])["mcpServers"][SERVER_NAME]["args"] == ["mcp"]


def test_the_hook_setup_writes_runs_as_the_host_would_run_it(repo: GitRepo) -> None:
    """The command string in settings.json, run by a shell with an event on stdin."""
    assert repo.cli("add", "about run", "--anchor", "src/app/retry.py::Retry.run").returncode == 0
    assert setup(repo, "claude-code").returncode == 0
    settings = json.loads((repo.root / ".claude/settings.json").read_text())
    command = settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
    event: dict[str, Any] = {
        "session_id": "abc123",
        "transcript_path": "/tmp/abc123.jsonl",
        "cwd": str(repo.root),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": str(repo.root / "src/app/retry.py")},
        "tool_use_id": "toolu_01ABC123",
    }
    done = run_hook(repo, event, ["sh", "-c", command])
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)["hookSpecificOutput"]
    assert "about run" in answer["additionalContext"]


def test_setup_outside_a_repository_says_where_to_run_it(tmp_path: Path, repo: GitRepo) -> None:
    away = GitRepo.__new__(GitRepo)
    away.root, away.env = tmp_path, {**repo.env, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)}
    done = away.cli("setup", "cursor")
    assert done.returncode == 2
    assert "setup needs a git repository" in done.stderr
    elsewhere = away.cli("setup", "cursor", "--repo", str(repo.root))
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert (repo.root / ".cursor/mcp.json").exists()


CHANGED_HOOKS = [
    "{command} hook --budget 800",
    "{command} hook --all --no-sync",
    "{command} --db /elsewhere/memory.db hook",
    "roteiro-memory hook --db '/a path/memory.db'",
    "python3 -m roteiro_memory hook",
    "ROTEIRO_MEMORY_DB=/x/memory.db {command} hook",
]


def _ours(settings: dict[str, Any], event: str) -> list[str]:
    return [
        handler["command"]
        for group in settings["hooks"][event]
        for handler in group["hooks"]
        if "hook" in handler["command"]
    ]


@pytest.mark.parametrize("changed", CHANGED_HOOKS)
def test_setup_twice_keeps_one_hook_per_event_and_the_users_options(
    repo: GitRepo, changed: str
) -> None:
    """A hook command the user changed with ``hook``'s own options (or
    another interpreter, or an environment variable) is still ours: setup,
    run twice, adds no second handler beside it and keeps it as written."""
    mine = changed.format(command=shlex.quote(installed_command()))
    repo.write(
        ".claude/settings.json",
        json.dumps(
            {
                "hooks": {
                    event: [
                        {
                            **({"matcher": matcher} if matcher else {}),
                            "hooks": [{"type": "command", "command": mine}],
                        }
                    ]
                    for event, matcher in HOOK_EVENTS
                }
            }
        ),
    )
    before = (repo.root / ".claude/settings.json").read_text()
    for _ in range(2):
        done = setup(repo, "claude-code")
        assert done.returncode == 0, done.stderr
        assert (repo.root / ".claude/settings.json").read_text() == before
        settings = json.loads((repo.root / ".claude/settings.json").read_text())
        for event, _matcher in HOOK_EVENTS:
            assert _ours(settings, event) == [mine], event


def test_a_copy_setup_added_beside_the_users_hook_is_dropped() -> None:
    """What an earlier setup appended beside a hook the user changed (two
    handlers, one notice twice) is dropped, group and all; the user's stays."""
    mine = {"type": "command", "command": "/old/bin/roteiro-memory hook --budget 800"}
    copy = {"type": "command", "command": "/old/bin/roteiro-memory hook"}
    text = json.dumps(
        {
            "hooks": {
                "SessionStart": [{"hooks": [mine]}, {"hooks": [copy]}],
                "Stop": [{"hooks": [copy, {"type": "command", "command": "./notify.sh"}]}],
            }
        }
    )
    merged = json.loads(merge(HOSTS["claude-code"], ".claude/settings.json", text, "/new/rm"))
    assert merged["hooks"]["SessionStart"] == [{"hooks": [mine]}]
    assert merged["hooks"]["Stop"] == [
        {
            "hooks": [
                {"type": "command", "command": "/new/rm hook"},
                {"type": "command", "command": "./notify.sh"},
            ]
        }
    ]


@pytest.mark.parametrize("order", ["copy first", "copy after"])
def test_a_copy_beside_the_users_hook_is_dropped_wherever_it_stands(order: str) -> None:
    """Where the plain copy stands, before or after the command the user
    changed, one handler is left: the user's."""
    mine = {"type": "command", "command": "/old/bin/roteiro-memory hook --budget 800"}
    copy = {"type": "command", "command": "/old/bin/roteiro-memory hook"}
    handlers = [copy, mine] if order == "copy first" else [mine, copy]
    text = json.dumps({"hooks": {"Stop": [{"hooks": handlers}]}})
    merged = json.loads(merge(HOSTS["claude-code"], ".claude/settings.json", text, "/new/rm"))
    assert merged["hooks"]["Stop"] == [{"hooks": [mine]}]


@pytest.mark.parametrize(
    "theirs",
    [
        "my-roteiro-memory hook",
        "/opt/roteiro-memory-dev hook",
        "roteiro-memory mcp",
        "roteiro-memory add hook",
        "echo roteiro-memory hook",
        "python3 -m roteiro_memory_fork hook",
        "roteiro-memory --db hook",
        "roteiro-memory 'hook",
    ],
)
def test_a_command_that_does_not_run_our_hook_is_not_taken_for_ours(theirs: str) -> None:
    """Kept as it is, and ours added beside it."""
    mine = {"type": "command", "command": theirs}
    text = json.dumps({"hooks": {"Stop": [{"hooks": [mine]}]}})
    merged = json.loads(merge(HOSTS["claude-code"], ".claude/settings.json", text, "/new/rm"))
    assert merged["hooks"]["Stop"] == [
        {"hooks": [mine]},
        {"hooks": [{"type": "command", "command": "/new/rm hook"}]},
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('{"hooks": null}', '"hooks" is null, not an object'),
        ('{"hooks": {"Stop": true}}', '"hooks"."Stop" is true, not a list'),
        ('{"hooks": {"Stop": [false]}}', 'an entry of "hooks"."Stop" is false, not an object'),
        ('{"hooks": "all"}', '"hooks" is "all", not an object'),
    ],
)
def test_a_setting_setup_refuses_is_quoted_as_json_writes_it(text: str, said: str) -> None:
    with pytest.raises(ConfigRefused) as refused:
        merge(HOSTS["claude-code"], ".claude/settings.json", text, "/bin/roteiro-memory")
    assert said in str(refused.value), str(refused.value)


@pytest.mark.parametrize(
    "text",
    [
        'mcp_servers = { other = { command = "x" } }\n',
        'model = "o3"\nmcp_servers = {}\n\n[tools]\nweb = true\n',
    ],
)
def test_setup_refuses_a_codex_config_its_table_cannot_be_added_to(
    repo: GitRepo, text: str
) -> None:
    """``mcp_servers`` written inline takes no ``[mcp_servers.NAME]`` table
    after it: one line saying so, not an unexpected failure, and the file
    as it was."""
    repo.write(".codex/config.toml", text)
    for json_flag in ((), ("--json",)):
        done = setup(repo, *json_flag, "codex")
        assert done.returncode == 2, done.stderr
        said = json.loads(done.stdout)["error"]["message"] if json_flag else done.stderr
        assert "unexpected" not in said
        assert ".codex/config.toml" in said
        assert said.rstrip("\n").endswith("nothing was written")
        if not json_flag:
            assert len(done.stderr.splitlines()) == 1
        assert (repo.root / ".codex/config.toml").read_text() == text


@pytest.mark.parametrize(
    "text",
    [
        # A string that shows a config, our table's header in it, before our table.
        'notes = """\nAdd this:\n[mcp_servers."roteiro-memory"]\n"""\n\n'
        '[mcp_servers."roteiro-memory"]\ncommand = "/old/roteiro-memory"\nargs = ["mcp"]\n',
        # Lines of our table's own string and array that read as headers alone
        # (a table that does not run `roteiro-memory mcp`: replaced whole).
        '[mcp_servers."roteiro-memory"]\ncommand = "/old/roteiro-memory"\nargs = ["serve"]\n'
        'note = """\n[model]\n"""\nnested = [\n  ["a"],\n]\n\n[model]\nname = "o3"\n',
        # The same in a table that does (its command alone rewritten).
        '[mcp_servers."roteiro-memory"]\nnote = """\ncommand = 1\n[model]\n"""\n'
        'nested = [\n  ["a"],\n]\ncommand = "/old/roteiro-memory"\nargs = ["mcp"]\n'
        '\n[model]\nname = "o3"\n',
    ],
)
def test_setup_takes_no_line_inside_a_codex_string_or_array_for_a_table_header(
    text: str,
) -> None:
    """Only a header (or a ``command`` line) that starts a line of the file's
    own opens a table (or sets the command): one inside a multi-line string
    or array is text, so our table is found, its command rewritten (or the
    table replaced whole), and every other setting kept."""
    merged = merge(HOSTS["codex"], ".codex/config.toml", text, "/new/roteiro-memory")
    config, before = tomllib.loads(merged), tomllib.loads(text)
    entry = before["mcp_servers"][SERVER_NAME]
    if entry["args"] == ["mcp"]:
        assert config["mcp_servers"][SERVER_NAME] == {**entry, "command": "/new/roteiro-memory"}
    else:
        wanted = {"command": "/new/roteiro-memory", "args": ["mcp"]}
        assert config["mcp_servers"][SERVER_NAME] == wanted
    assert {k: v for k, v in config.items() if k != "mcp_servers"} == {
        k: v for k, v in before.items() if k != "mcp_servers"
    }
    assert merge(HOSTS["codex"], ".codex/config.toml", merged, "/new/roteiro-memory") == merged


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (
            '[mcp_servers."roteiro-memory"]\ncommand = "/old/roteiro-memory"\nargs = ["mcp"]\n'
            '\n# The model every session starts with.\n[model]\nname = "o3"\n',
            '\n# The model every session starts with.\n[model]\nname = "o3"\n',
        ),
        (
            '[mcp_servers."roteiro-memory"]\ncommand = "/old/roteiro-memory"\nargs = ["mcp"]\n'
            "# Servers above: keep them sorted.\n",
            "# Servers above: keep them sorted.\n",
        ),
    ],
)
def test_setup_keeps_the_comments_that_follow_the_codex_table_it_replaces(
    text: str, kept: str
) -> None:
    """The comments after our table's settings, before the next table or the
    end, are the user's, about what follows: replacing the table keeps them."""
    merged = merge(HOSTS["codex"], ".codex/config.toml", text, "/new/roteiro-memory")
    assert merged.endswith(kept), merged
    assert tomllib.loads(merged)["mcp_servers"][SERVER_NAME]["command"] == "/new/roteiro-memory"
    assert merge(HOSTS["codex"], ".codex/config.toml", merged, "/new/roteiro-memory") == merged


@pytest.mark.parametrize(
    "text",
    [
        '# Codex\r\nmodel = "o3"\r\n',
        '[mcp_servers."roteiro-memory"]\r\ncommand = "/old/roteiro-memory"\r\n\r\n[model]\r\n'
        'name = "o3"\r\n',
    ],
)
def test_setup_writes_a_crlf_codex_config_with_crlf_line_ends_only(text: str) -> None:
    """A file whose lines end in CRLF gets our table's lines ending so too,
    not a mix of both."""
    merged = merge(HOSTS["codex"], ".codex/config.toml", text, "/new/roteiro-memory")
    assert merged.count("\n") == merged.count("\r\n"), repr(merged)
    assert tomllib.loads(merged)["mcp_servers"][SERVER_NAME]["command"] == "/new/roteiro-memory"
    assert merge(HOSTS["codex"], ".codex/config.toml", merged, "/new/roteiro-memory") == merged


def test_setup_refuses_a_command_path_that_is_not_utf8(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JSON and TOML hold text, so a path of bytes that are not UTF-8 cannot
    be given to a host: one line saying so, not an unexpected failure when
    the file is written."""
    import sys

    from roteiro_memory.errors import UsageError

    scripts = Path(os.fsdecode(os.fsencode(tmp_path) + b"/env\xff/bin"))
    scripts.mkdir(parents=True)
    (scripts / "roteiro-memory").write_text("#!/bin/sh\n")
    (scripts / "roteiro-memory").chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(scripts / "python"))
    with pytest.raises(UsageError, match="not UTF-8") as refused:
        installed_command()
    assert "\\xff" in str(refused.value)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_setup_keeps_the_owner_of_a_file_it_replaces(repo: GitRepo) -> None:
    """Run as root (sudo), setup gives the file it writes in place of the
    user's the user's owner and group, and the mode: a 0600 file does not
    become root's, which the user could no longer read."""
    repo.write(".mcp.json", '{"mcpServers": {"other": {"command": "x"}}}\n')
    path = repo.root / ".mcp.json"
    os.chown(path, 65534, 65534)
    path.chmod(0o600)
    done = setup(repo, "claude-code")
    assert done.returncode == 0, done.stderr
    status = path.stat()
    assert (status.st_uid, status.st_gid, status.st_mode & 0o777) == (65534, 65534, 0o600)
    assert SERVER_NAME in json.loads(path.read_text())["mcpServers"]


def test_setup_refuses_two_host_files_that_are_one_file(repo: GitRepo) -> None:
    """.claude/settings.json a symlink to .mcp.json: each merge would be
    written over the other's, the servers or the hooks lost while setup said
    it wrote both; refused, naming both, with the file as it was."""
    repo.write(".mcp.json", '{"permissions": {}}\n')
    (repo.root / ".claude").mkdir()
    (repo.root / ".claude/settings.json").symlink_to("../.mcp.json")
    done = setup(repo, "claude-code")
    assert done.returncode == 2, done.stdout
    (line,) = done.stderr.splitlines()
    assert f"{repo.root / '.claude/settings.json'} and another" in line, line
    assert f"one file, {repo.root / '.mcp.json'}," in line, line
    assert line.endswith("nothing was written"), line
    assert (repo.root / ".mcp.json").read_text() == '{"permissions": {}}\n'
    assert (repo.root / ".claude/settings.json").is_symlink()
    assert sorted(p.name for p in (repo.root / ".claude").iterdir()) == ["settings.json"]


def test_setup_keeps_the_settings_the_user_gave_its_hook_handler() -> None:
    """A handler of ours as setup wrote it, to which the user added a
    ``timeout`` (or any other setting of the host's), gets this
    installation's command and keeps the rest as written."""
    mine = {"type": "command", "command": "/old/bin/roteiro-memory hook", "timeout": 10}
    text = json.dumps({"hooks": {"Stop": [{"hooks": [mine]}]}})
    merged = json.loads(merge(HOSTS["claude-code"], ".claude/settings.json", text, "/new/rm"))
    assert merged["hooks"]["Stop"] == [
        {"hooks": [{"type": "command", "command": "/new/rm hook", "timeout": 10}]}
    ]


def test_setup_shows_control_characters_of_a_file_or_folder_escaped(tmp_path: Path) -> None:
    """What setup prints for a person -- the files under ``--print``, the
    repository's folder -- reaches a terminal: an escape sequence or a
    bidirectional override in them is shown as an escape, not obeyed."""
    repo = GitRepo(tmp_path / "re\x1b[2Jpo")
    repo.write(".codex/config.toml", '# a \u009b2J note \u202e\nmodel = "o3"\n')
    shown = setup(repo, "codex", "--print")
    assert shown.returncode == 0, shown.stderr
    assert "# a \\x9b2J note \\u202e\n" in shown.stdout
    assert setup(repo, "codex").returncode == 0
    again = setup(repo, "codex")
    assert again.returncode == 0, again.stderr
    for said in (shown.stdout, again.stdout):
        assert not any(c in said for c in "\x1b\u009b\u202e"), said
    assert "already set up in " in again.stdout
    assert "re\\x1b[2Jpo" in again.stdout


def test_setup_takes_a_folder_another_setup_made_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two setups at once both find no .claude and make it: the one whose
    mkdir finds it made already writes into it, rather than refusing."""
    from roteiro_memory.app.hostconfig import Edit
    from roteiro_memory.cli.commands.setup import _write_all

    mkdir = Path.mkdir

    def raced(self: Path, *args: Any, **kwargs: Any) -> None:
        os.mkdir(self)  # the other setup, first
        mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", raced)
    _write_all(tmp_path, [Edit(".claude/settings.json", None, "{}\n")])
    assert (tmp_path / ".claude/settings.json").read_text() == "{}\n"


@pytest.mark.parametrize("host", ["claude-code", "cursor"])
def test_setup_keeps_the_store_and_options_the_user_gave_our_server(host: str) -> None:
    """Our server entry at an earlier install's path, to which the user gave
    the store (an ``env`` naming a team's PostgreSQL), options after
    ``mcp`` and a host setting, gets this installation's command and keeps
    the rest: a second setup must not move a team back to a local store."""
    path = HOSTS[host].files[0]
    given = {
        "type": "stdio",
        "command": "/old/venv/bin/roteiro-memory",
        "args": ["mcp", "--no-sync"],
        "env": {"ROTEIRO_MEMORY_DB": "postgresql://team-db/memory"},
        "timeout": 30,
    }
    text = json.dumps({"mcpServers": {SERVER_NAME: given, "other": {"command": "x"}}})
    merged = json.loads(merge(HOSTS[host], path, text, "/new/bin/roteiro-memory"))
    assert merged["mcpServers"] == {
        SERVER_NAME: {**given, "command": "/new/bin/roteiro-memory"},
        "other": {"command": "x"},
    }


def test_setup_rewrites_only_the_command_line_of_a_codex_table_that_serves_ours() -> None:
    """The table's other keys and its ``env`` subtable stay byte for byte."""
    text = (
        'model = "o3"\r\n\r\n[mcp_servers."roteiro-memory"]\r\n'
        'command = "/old/roteiro-memory"  # pinned by hand\r\nargs = ["mcp", "--no-sync"]\r\n'
        "startup_timeout_sec = 20\r\n\r\n"
        '[mcp_servers."roteiro-memory".env]\r\nROTEIRO_MEMORY_DB = "postgresql://team-db/m"\r\n'
    )
    merged = merge(HOSTS["codex"], ".codex/config.toml", text, "/new/roteiro-memory")
    assert merged == text.replace(
        'command = "/old/roteiro-memory"  # pinned by hand\r\n',
        'command = "/new/roteiro-memory"\r\n',
    )
    assert merge(HOSTS["codex"], ".codex/config.toml", merged, "/new/roteiro-memory") == merged


@pytest.mark.parametrize(
    "entry",
    [
        {"command": "uvx", "args": ["roteiro-memory", "mcp"]},
        {"command": "/old/roteiro-memory", "args": ["serve"]},
        {"command": "/old/roteiro-memory"},
        "roteiro-memory mcp",
    ],
)
def test_a_server_entry_that_does_not_run_our_server_is_replaced_whole(entry: object) -> None:
    text = json.dumps({"mcpServers": {SERVER_NAME: entry}})
    merged = json.loads(merge(HOSTS["cursor"], ".cursor/mcp.json", text, "/new/roteiro-memory"))
    assert merged["mcpServers"][SERVER_NAME] == {"command": "/new/roteiro-memory", "args": ["mcp"]}


def test_setup_refuses_a_read_only_config_and_every_file_is_as_it_was(repo: GitRepo) -> None:
    """A file no one may write says it is not to be changed; setup would
    replace it (renaming over it needs only its folder's write bit), so it
    refuses the whole setup instead, naming the file and its mode."""
    repo.write(".mcp.json", '{"mcpServers": {"other": {"command": "x"}}}\n')
    settings = repo.root / ".claude" / "settings.json"
    repo.write(".claude/settings.json", "{}\n")
    settings.chmod(0o444)
    done = setup(repo, "claude-code")
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert f"{settings} is read-only (mode 0444)" in line
    assert line.endswith("nothing was written")
    assert (repo.root / ".mcp.json").read_text() == '{"mcpServers": {"other": {"command": "x"}}}\n'
    assert settings.read_text() == "{}\n"
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]


def test_setup_flushes_each_file_before_it_replaces_one_and_its_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file renamed over a host's configuration before its bytes reach the
    disk can be an empty file after a crash: each new file is flushed
    (fsync) before its rename, and each folder a file is renamed or a
    folder made in after every rename."""

    from disk_order import flushes_and_renames

    from roteiro_memory.app.hostconfig import Edit
    from roteiro_memory.cli.commands.setup import _write_all

    (tmp_path / "old.json").write_text("{}\n")
    events = flushes_and_renames(monkeypatch)
    _write_all(
        tmp_path,
        [Edit("old.json", "{}\n", '{"a": 1}\n'), Edit(".claude/settings.json", None, "{}\n")],
    )
    assert (tmp_path / "old.json").read_text() == '{"a": 1}\n'
    assert (tmp_path / ".claude/settings.json").read_text() == "{}\n"
    renamed = [identity for name, identity, _ in events if name == "replace"]
    assert len(renamed) == 2
    for identity in renamed:
        at = events.index(("replace", identity, False))
        assert ("fsync", identity, False) in events[:at], events
    folders = {
        (info.st_dev, info.st_ino) for info in (os.stat(tmp_path), os.stat(tmp_path / ".claude"))
    }
    last = max(events.index(("replace", identity, False)) for identity in renamed)
    assert {i for name, i, is_dir in events[last:] if name == "fsync" and is_dir} == folders


def test_setup_says_a_folder_it_cannot_flush_after_replacing_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import stat

    from roteiro_memory.app.hostconfig import Edit
    from roteiro_memory.cli.commands.setup import _write_all
    from roteiro_memory.errors import UsageError

    fsync = os.fsync

    def failing(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(UsageError) as raised:
        _write_all(tmp_path, [Edit("new.json", None, "{}\n")])
    assert str(raised.value) == (
        f"{tmp_path} cannot be flushed to disk (Input/output error); every file was "
        "replaced, but a crash before the system writes the folder may undo that"
    )
    assert (tmp_path / "new.json").read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.json"]  # no file left beside
