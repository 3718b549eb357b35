"""Start-up is paid on every call, so each command imports only what it
needs.  Pinned by module names, not by timing: a run of the command line in
a fresh interpreter must not load the modules below, beyond what the
interpreter itself loads for ``python -c pass`` here."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

HEAVY = frozenset(
    {
        "dataclasses",
        "inspect",
        "ast",
        "typing",
        "shutil",
        "tempfile",
        "roteiro_memory.cli.render",
    }
)
"""Never needed to answer ``--json``: each costs as much as a query."""

GIT = frozenset({"roteiro_memory.repo.graph", "roteiro_memory.repo.symbols", "subprocess"})
"""The git machinery: only for what syncs, finds the repository or reads a revision."""

PROBE = """
import json, sys
sys.argv = ["roteiro-memory", *json.loads(sys.argv[1])]
from {module} import main
try:
    status = main(sys.argv[1:])
finally:
    sys.stdout.flush()
    sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def _floor() -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", "import json, sys; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(json.loads(done.stdout))


def _loaded(module: str, argv: list[str], cwd: Path) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module), json.dumps(argv)],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )
    marker = done.stderr.rindex("MODULES ")
    return set(json.loads(done.stderr[marker + len("MODULES ") :]))


@pytest.mark.parametrize(
    "argv",
    [
        ["recall", "--json", "--no-sync", "--db", "x.db"],
        ["list", "--json", "--no-sync", "--db", "x.db", "--kind", "lesson", "--kind", "pattern"],
        ["--json", "--db", "x.db", "--no-sync", "add", "a lesson", "--anchor", "file:a.py"],
        ["--json", "--db", "x.db", "--no-sync", "show", "1"],
        ["--json", "--db", "x.db", "--no-sync", "confirm", "1"],
        ["--json", "--db", "x.db", "cache", "stats"],
        ["--json", "--db", "x.db", "--no-sync", "pack"],
    ],
)
def test_json_commands_on_a_named_store_load_no_git_and_nothing_heavy(
    tmp_path: Path, argv: list[str]
) -> None:
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    SQLiteStore(tmp_path / "x.db").close()  # a store to read, so each command opens it
    loaded = _loaded("roteiro_memory.cli", argv, tmp_path) - _floor()
    assert not loaded & HEAVY, sorted(loaded & HEAVY)
    assert not loaded & GIT, sorted(loaded & GIT)
    assert "sqlite3" in loaded, "the probe ran the command"


def test_recall_that_syncs_first_loads_nothing_heavy(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "T",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "T",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }
    (tmp_path / "mod.py").write_text("def f():\n    return 1\n")
    for step in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "init"]):
        subprocess.run(["git", *step], cwd=tmp_path, env=env, check=True)
    first = _loaded("roteiro_memory.cli", ["sync"], tmp_path)
    assert "ast" in first, "the first sync parsed mod.py; the next one has nothing to parse"
    _no_stat_cache(tmp_path)
    loaded = _loaded("roteiro_memory.cli", ["recall", "--json"], tmp_path) - _floor()
    assert "roteiro_memory.repo.graph" in loaded, "the probe synced"
    assert not loaded & HEAVY, sorted(loaded & HEAVY)


def test_recall_in_a_settled_repository_runs_no_git(tmp_path: Path) -> None:
    """The stat cache vouches for the tree: no git, and no pathlib (beyond
    the floor: an editable install's finder loads it for ``python -c pass``)."""
    _committed_module(tmp_path)
    _loaded("roteiro_memory.cli", ["sync"], tmp_path)
    _no_stat_cache(tmp_path)
    time.sleep(2.2)  # the stat cache's racy window
    asked = _loaded("roteiro_memory.cli", ["recall", "--json"], tmp_path)
    assert "roteiro_memory.repo.graph" in asked, "no cache yet: this one asks git and writes it"
    assert (tmp_path / ".git" / "roteiro" / "statcache.json").exists()
    loaded = _loaded("roteiro_memory.cli", ["recall", "--json"], tmp_path) - _floor()
    assert "roteiro_memory.repo.statcache" in loaded, "the probe read the cache"
    assert not loaded & (GIT | HEAVY | {"pathlib"}), sorted(loaded & (GIT | HEAVY | {"pathlib"}))


def _no_stat_cache(root: Path) -> None:
    """Remove the stat cache a command may have written in ``root``.  The
    first command after the commit writes one too when its sync starts more
    than the racy window (2 s) after the commit, as it may on a loaded
    machine; with none there, the next command asks git, as the test says,
    however late it runs."""
    (root / ".git" / "roteiro" / "statcache.json").unlink(missing_ok=True)


def _committed_module(root: Path) -> dict[str, str]:
    """A repository at ``root`` with ``mod.py`` committed; the environment git ran in."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    (root / "mod.py").write_text("def f():\n    return 1\n")
    for step in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "init"],
    ):
        subprocess.run(["git", *step], cwd=root, env=env, check=True)
    return env


@pytest.mark.parametrize(
    "module",
    ["roteiro_memory.precommit.forbid_store", "roteiro_memory.precommit.check_store"],
)
def test_a_hook_given_an_ordinary_file_loads_nothing_heavy(tmp_path: Path, module: str) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("an ordinary file\n")
    loaded = _loaded(module, [str(text)], tmp_path) - _floor()
    assert not loaded & (HEAVY | GIT | {"sqlite3", "json", "shlex", "argparse", "pathlib"}), sorted(
        loaded
    )
    assert "roteiro_memory.precommit.sniff" in loaded, "the probe ran the hook"


def test_main_in_process_leaves_the_collector_as_it_was(capsys: pytest.CaptureFixture[str]) -> None:
    from roteiro_memory.cli import main

    before = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
    assert main(["--version"]) == 0
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before
    assert capsys.readouterr().out.startswith("roteiro-memory ")


def test_the_console_script_tunes_the_collector_and_exits_with_mains_status(
    tmp_path: Path,
) -> None:
    # What the collector looks like once the command has returned, as an
    # exit handler sees it: young generation every 10,000, everything frozen.
    probe = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print(gc.get_threshold()[0], gc.get_freeze_count() > 0,"
        " file=sys.stderr))\n"
        "from roteiro_memory.cli import console\n"
        f"sys.argv = ['roteiro-memory', 'list', '--json', '--db', {str(tmp_path / 'm.db')!r}]\n"
        "console()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr  # an empty store: nothing listed
    assert json.loads(done.stdout)["ok"] is True
    assert done.stderr.split() == ["10000", "True"]


def test_the_agent_hook_in_a_settled_repository_loads_nothing_heavy(tmp_path: Path) -> None:
    """A hook runs on every file the agent reads: it pays the command line's
    start-up and the read, nothing more (bench/hooks.py times it)."""
    env = _committed_module(tmp_path)
    _loaded("roteiro_memory.cli", ["add", "f returns 1", "--anchor", "mod.py::f"], tmp_path)
    time.sleep(2.2)  # the stat cache's racy window
    _loaded("roteiro_memory.cli", ["list"], tmp_path)
    event = {
        "session_id": "s",
        "transcript_path": "/tmp/s.jsonl",
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": str(tmp_path / "mod.py")},
        "tool_use_id": "toolu_1",
    }
    probe = PROBE.format(module="roteiro_memory.cli").replace(
        "status = main(sys.argv[1:])",
        "import io, os; sys.stdin = io.TextIOWrapper(io.BytesIO(os.environ['EVENT'].encode()));"
        " status = main(['hook'])",
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, json.dumps(["hook"])],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in env.items() if not k.startswith("ROTEIRO_")}
        | {"EVENT": json.dumps(event)},
        check=False,
    )
    assert "f returns 1" in done.stdout, done.stderr
    marker = done.stderr.rindex("MODULES ")
    loaded = set(json.loads(done.stderr[marker + len("MODULES ") :])) - _floor()
    assert not loaded & HEAVY, sorted(loaded & HEAVY)
    assert "roteiro_memory.agents.server" not in loaded
