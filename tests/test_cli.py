"""The ``roteiro-memory`` console script, driven as a subprocess in real git
repositories: anchors drift exactly when the code they describe changes."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from wire_servers import RECORD_FIELDS

from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.repo import statcache

SCRIPT = shutil.which("roteiro-memory")

RETRY = """\
import time


class Retry:
    def __init__(self, attempts):
        self.attempts = attempts

    def run(self, call):
        for attempt in range(self.attempts):
            try:
                return call()
            except OSError:
                time.sleep(2**attempt)
        raise RuntimeError("gave up")


def jitter(value):
    return value * 1.1
"""

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


class Repo:
    """A temporary git repository and the console script run inside it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
        self.env.update(GIT_ENV)

    @classmethod
    def committed(cls, root: Path, files: dict[str, str]) -> Repo:
        """A new repository at ``root`` holding ``files`` (path: text), committed on main."""
        root.mkdir()
        made = cls(root)
        made.git("init", "-q", "-b", "main")
        for path, text in files.items():
            made.write(path, text)
        made.commit("initial")
        return made

    def git(self, *args: str, cwd: Path | None = None) -> str:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd or self.root,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def write(self, path: str, text: str) -> None:
        full = self.root / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)

    def commit(self, message: str = "change") -> None:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)

    def run(
        self, *args: str, cwd: Path | None = None, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        assert SCRIPT is not None, "the roteiro-memory console script is not installed"
        return subprocess.run(
            [SCRIPT, *args],
            cwd=cwd or self.root,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            check=False,
        )

    def ok(self, *args: str, cwd: Path | None = None) -> str:
        done = self.run(*args, cwd=cwd)
        assert done.returncode == 0, (args, done.returncode, done.stderr)
        assert "Traceback" not in done.stderr
        return done.stdout

    def json(self, *args: str, cwd: Path | None = None) -> Any:
        """The ``result`` of the command's ``--json`` envelope."""
        envelope = json.loads(self.ok(*args, "--json", cwd=cwd))
        assert list(envelope) == ["schema", "ok", "result"], envelope
        assert (envelope["schema"], envelope["ok"]) == ("roteiro.cli/v1", True)
        return envelope["result"]

    def add(self, body: str, anchor: str | None = None, *extra: str) -> int:
        args = ["add", body, *(["--anchor", anchor] if anchor else []), *extra]
        return int(self.json(*args)["id"])

    def state(self, record_id: int, *extra: str) -> str:
        return str(self.json("show", str(record_id), *extra)["anchor_state"])

    @property
    def db(self) -> Path:
        return self.root / ".git" / "roteiro" / "memory.db"

    def snapshot(self) -> dict[str, Any]:
        from roteiro_memory.stores.sqlite.store import SQLiteStore

        with SQLiteStore(self.db) as store:
            return store.snapshot()


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo.committed(tmp_path / "repo", {"src/app/retry.py": RETRY, "README.txt": "hello\n"})


def use_cases_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """A repository at ``folder`` with ``a.py`` committed, made this process's
    working folder, with git's test identity and no ``ROTEIRO_`` setting: the
    use cases (``roteiro_memory.app``) called in-process, as a tool call does."""
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    for name in [n for n in os.environ if n.startswith("ROTEIRO_")]:
        monkeypatch.delenv(name)
    repo = Repo(folder)
    repo.git("init", "-q", "-b", "main")
    repo.write("a.py", "def f():\n    return 1\n")
    repo.commit("initial")
    monkeypatch.chdir(folder)
    return repo


def test_script_is_installed() -> None:
    assert SCRIPT is not None


# --- Anchors through edits ----------------------------------------------------


def test_anchor_on_a_function_is_valid_when_written(repo: Repo) -> None:
    lesson = repo.add("Retry.run sleeps exponentially", "src/app/retry.py::Retry.run")
    record = repo.json("show", str(lesson))
    assert record["anchor_state"] == "valid"
    assert record["anchor"]["key"] == "py:src/app/retry.py::Retry.run"
    assert record["anchor"]["path"] == "src/app/retry.py"


def test_editing_another_function_of_the_file_keeps_the_anchor_valid(repo: Repo) -> None:
    lesson = repo.add("Retry.run sleeps exponentially", "src/app/retry.py::Retry.run")
    on_file = repo.add("the retry module is small", "src/app/retry.py")
    repo.write("src/app/retry.py", RETRY.replace("value * 1.1", "value * 1.25"))
    assert repo.state(lesson) == "valid"
    assert repo.state(on_file) == "drifted"


def test_editing_its_function_drifts_the_anchor(repo: Repo) -> None:
    lesson = repo.add("Retry.run sleeps exponentially", "src/app/retry.py::Retry.run")
    repo.write("src/app/retry.py", RETRY.replace("2**attempt", "min(2**attempt, 30)"))
    assert repo.state(lesson) == "drifted"
    recalled = repo.json("recall", "exponentially")["results"]
    assert [r["record"]["id"] for r in recalled] == [lesson]
    assert recalled[0]["anchor_penalty"] == 0.25


def test_reformatting_its_function_drifts_the_anchor(repo: Repo) -> None:
    lesson = repo.add("Retry.run sleeps exponentially", "src/app/retry.py::Retry.run")
    repo.write("src/app/retry.py", RETRY.replace("def run(self, call):", "def run(self,  call):"))
    assert repo.state(lesson) == "drifted"


def test_a_decorator_belongs_to_its_definition(repo: Repo) -> None:
    lesson = repo.add("jitter is linear", "src/app/retry.py::jitter")
    repo.write("src/app/retry.py", RETRY.replace("def jitter", "@staticmethod\ndef jitter"))
    assert repo.state(lesson) == "drifted"


def test_deleting_its_function_vanishes_the_anchor_and_keeps_the_record(repo: Repo) -> None:
    lesson = repo.add("jitter is linear", "src/app/retry.py::jitter")
    repo.write("src/app/retry.py", RETRY.split("\n\ndef jitter")[0] + "\n")
    assert repo.state(lesson) == "vanished"
    listed = repo.json("list")["records"]
    assert [(r["id"], r["anchor_state"]) for r in listed] == [(lesson, "vanished")]


def test_renaming_the_file_vanishes_file_and_symbol_anchors(repo: Repo) -> None:
    on_symbol = repo.add("Retry.run sleeps exponentially", "src/app/retry.py::Retry.run")
    on_file = repo.add("retry lives here", "src/app/retry.py")
    repo.git("mv", "src/app/retry.py", "src/app/backoff.py")
    assert repo.state(on_symbol) == "vanished"
    assert repo.state(on_file) == "vanished"
    assert len(repo.json("list")["records"]) == 2


def test_restoring_the_code_makes_a_drifted_anchor_valid_again(repo: Repo) -> None:
    lesson = repo.add("Retry.run sleeps exponentially", "src/app/retry.py::Retry.run")
    repo.write("src/app/retry.py", RETRY.replace("2**attempt", "3**attempt"))
    assert repo.state(lesson) == "drifted"
    repo.git("checkout", "--", "src/app/retry.py")
    assert repo.state(lesson) == "valid"


def test_an_untracked_file_is_in_the_graph(repo: Repo) -> None:
    repo.write("notes/todo.py", "def later():\n    pass\n")
    lesson = repo.add("later is a placeholder", "notes/todo.py::later")
    assert repo.state(lesson) == "valid"
    repo.write("notes/todo.py", "def later():\n    return 1\n")
    assert repo.state(lesson) == "drifted"


def test_a_store_inside_the_working_tree_is_not_in_its_graph(repo: Repo) -> None:
    """``--db`` inside the working tree: the store's file and its WAL are not
    code, so no node is made of them; one line says the store is not
    ignored, none once it is; every other untracked file is in the graph."""
    first = repo.run("--db", "memory.db", "add", "stores may live in the tree")
    assert first.returncode == 0, first.stderr
    repo.write("notes.txt", "an untracked note\n")
    done = repo.run("--db", "memory.db", "list")
    assert done.returncode == 0, done.stderr
    # The -wal and -shm exist while list syncs: only the store itself is named.
    assert done.stderr.splitlines() == [
        "roteiro-memory: warning: memory.db is this command's store, inside the working "
        "tree and not ignored by git; add it to .gitignore so that it is never committed"
    ]
    repo.write(".gitignore", "memory.db*\n")
    ignored = repo.run("--db", "memory.db", "list")
    assert ignored.returncode == 0, ignored.stderr
    assert ignored.stderr == ""
    with contextlib.closing(sqlite3.connect(repo.root / "memory.db")) as conn:
        keys = {row[0] for row in conn.execute("SELECT key FROM nodes")}
    assert {"file:README.txt", "file:notes.txt"} <= keys
    assert not [key for key in keys if key.startswith("file:memory.db")]


def test_a_python_file_that_does_not_parse_keeps_its_records(repo: Repo) -> None:
    lesson = repo.add("Retry.run sleeps exponentially", "src/app/retry.py::Retry.run")
    repo.write("src/app/retry.py", RETRY + "\ndef broken(:\n")
    done = repo.run("sync")
    assert done.returncode == 0
    assert "src/app/retry.py does not parse" in done.stderr
    assert repo.state(lesson) == "unverifiable"
    assert repo.json("list")["records"][0]["id"] == lesson
    graph_keys = _node_keys(repo)
    assert "file:src/app/retry.py" in graph_keys
    repo.write("src/app/retry.py", RETRY)
    assert repo.state(lesson) == "valid"


def _node_keys(repo: Repo) -> set[str]:
    conn = sqlite3.connect(repo.db)
    try:
        return {row[0] for row in conn.execute("SELECT key FROM nodes")}
    finally:
        conn.close()


def test_anchor_paths_are_read_from_the_repository_top_level(repo: Repo) -> None:
    """One root on every surface: from a subfolder, a path from the top
    level is taken (and an absolute one); a path from the subfolder is
    refused, naming its form from the top level."""
    here = repo.root / "src/app"
    done = repo.run("add", "jitter", "--anchor", "retry.py::jitter", cwd=here)
    assert done.returncode == 2
    assert done.stderr == (
        "roteiro-memory: error: --anchor 'retry.py::jitter': anchors are paths from the "
        f"repository's top level ({repo.root}), and there is no 'retry.py' there; the file in "
        "this folder is 'src/app/retry.py' from the top level\n"
    )
    from_top = repo.ok("add", "jitter", "--anchor", "src/app/retry.py::jitter", "--json", cwd=here)
    absolute = repo.ok(
        "add", "run", "--anchor", f"{repo.root}/src/app/retry.py::Retry.run", "--json", cwd=here
    )
    keys = [json.loads(out)["result"]["record"]["anchor"]["key"] for out in (from_top, absolute)]
    assert keys == ["py:src/app/retry.py::jitter", "py:src/app/retry.py::Retry.run"]


# --- Sync ----------------------------------------------------------------------


def test_sync_is_incremental(repo: Repo) -> None:
    first = repo.json("sync")
    assert first["parsed"] == 1
    assert first["files"] == 2
    again = repo.json("sync")
    assert again["up_to_date"] is True
    repo.write("src/app/other.py", "def f():\n    pass\n")
    third = repo.json("sync")
    assert (third["parsed"], third["files"], third["up_to_date"]) == (1, 3, False)


def test_sync_tree_witness_is_the_tree_git_would_write(repo: Repo) -> None:
    repo.write("src/app/new.py", "x = 1\n")
    report = repo.json("sync")
    repo.git("add", "-A")
    assert report["tree"] == repo.git("write-tree").strip()


def test_no_progress_bar_when_output_is_not_a_terminal(repo: Repo) -> None:
    for index in range(300):
        repo.write(f"pkg/mod{index}.py", f"def f{index}():\n    return {index}\n")
    done = repo.run("sync")
    assert done.returncode == 0
    assert done.stderr == ""
    assert "\r" not in done.stdout


# --- Revisions -----------------------------------------------------------------


def test_rev_gives_the_branch_verdict_and_leaves_the_working_verdict(repo: Repo) -> None:
    lesson = repo.add("Retry.run sleeps exponentially", "src/app/retry.py::Retry.run")
    repo.git("checkout", "-q", "-b", "feature")
    repo.write("src/app/retry.py", RETRY.replace("2**attempt", "min(2**attempt, 30)"))
    repo.commit("cap the backoff")
    assert repo.state(lesson) == "drifted"
    before = repo.snapshot()
    assert repo.state(lesson, "--rev", "main") == "valid"
    on_main = repo.json("recall", "--rev", "main")["results"]
    assert [r["record"]["anchor_state"] for r in on_main] == ["valid"]
    assert repo.snapshot() == before
    assert repo.state(lesson) == "drifted"


def test_rev_that_does_not_exist_is_a_usage_error(repo: Repo) -> None:
    repo.add("something", "src/app/retry.py")
    before = repo.snapshot()
    done = repo.run("recall", "--rev", "no-such-branch")
    assert done.returncode == 2
    assert "no-such-branch" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert repo.snapshot() == before


@pytest.mark.parametrize("option", ["--rev", "--touched"])
def test_unknown_rev_is_refused_before_the_sync(repo: Repo, option: str) -> None:
    repo.add("something", "src/app/retry.py")
    repo.write("src/app/retry.py", RETRY.replace("1.1", "1.2"))
    before = repo.snapshot()
    done = repo.run("recall", f"{option}=no-such-rev")
    assert done.returncode == 2
    assert "no-such-rev" in done.stderr
    assert repo.snapshot() == before


def test_touched_returns_exactly_the_records_on_changed_files_and_symbols(repo: Repo) -> None:
    repo.write("src/app/other.py", "def untouched():\n    return 0\n")
    repo.commit("another module")
    on_run = repo.add("run sleeps", "src/app/retry.py::Retry.run")
    on_file = repo.add("retry module", "src/app/retry.py")
    on_jitter = repo.add("jitter scales", "src/app/retry.py::jitter")
    on_other = repo.add("other is untouched", "src/app/other.py::untouched")
    on_readme = repo.add("readme greets", "README.txt")
    repo.add("unanchored lesson")
    repo.write("src/app/retry.py", RETRY.replace("2**attempt", "3**attempt"))
    repo.write("README.txt", "hello again\n")
    touched = {r["record"]["id"] for r in repo.json("recall", "--touched")["results"]}
    assert touched == {on_run, on_file, on_readme}
    assert on_jitter not in touched
    assert on_other not in touched
    repo.commit("edit")
    assert repo.run("recall", "--touched").returncode == 1
    since_initial = repo.json("recall", "--touched=HEAD~1")["results"]
    assert {r["record"]["id"] for r in since_initial} == {on_run, on_file, on_readme}


def test_touched_and_anchor_path_filter_in_the_store_before_its_limit(repo: Repo) -> None:
    on_run = repo.add("run sleeps", "src/app/retry.py::Retry.run")
    on_file = repo.add("retry module", "src/app/retry.py")
    repo.add("readme greets", "README.txt")
    newest = repo.add("newest, about the readme", "README.txt")
    repo.write("src/app/retry.py", RETRY.replace("2**attempt", "3**attempt"))
    repo.write("README.txt", "hello again\n")
    under_path = repo.json("recall", "--touched", "--anchor", "src/app/retry.py", "--limit", "1")
    assert [r["record"]["id"] for r in under_path["results"]] == [on_file]
    listed = repo.json("list", "--anchor", "src/app/retry.py", "--limit", "1")["records"]
    assert [r["id"] for r in listed] == [on_file]
    both = repo.json("list", "--anchor", "src/app/retry.py", "--limit", "2")["records"]
    assert [r["id"] for r in both] == [on_file, on_run]
    exact = repo.json("recall", "--touched", "--anchor", "README.txt", "--limit", "1")["results"]
    assert [r["record"]["id"] for r in exact] == [newest]


# --- Where the store lives -----------------------------------------------------


def test_store_lives_in_the_git_common_dir_private(repo: Repo) -> None:
    repo.add("a lesson")
    assert repo.db.exists()
    assert stat.S_IMODE(repo.db.stat().st_mode) == 0o600
    assert stat.S_IMODE(repo.db.parent.stat().st_mode) == 0o700
    assert repo.git("status", "--porcelain") == ""


def test_a_repository_store_is_made_private_again_and_a_private_one_left_untouched(
    repo: Repo,
) -> None:
    repo.add("a lesson")
    repo.db.chmod(0o644)
    repo.db.parent.chmod(0o755)
    repo.ok("list")
    assert stat.S_IMODE(repo.db.stat().st_mode) == 0o600
    assert stat.S_IMODE(repo.db.parent.stat().st_mode) == 0o700
    # Already private: a read leaves the file as it is, not even its ctime
    # changes (the folder's do, as SQLite makes and removes its WAL files).
    before = repo.db.stat().st_ctime_ns
    repo.ok("list")
    assert repo.db.stat().st_ctime_ns == before


def test_worktrees_share_one_store(repo: Repo, tmp_path: Path) -> None:
    other = tmp_path / "other"
    repo.git("worktree", "add", "-q", "-b", "side", str(other))
    lesson = repo.add("jitter scales", "src/app/retry.py::jitter")
    listed = json.loads(repo.ok("list", "--json", cwd=other))["result"]["records"]
    assert [r["id"] for r in listed] == [lesson]
    assert listed[0]["anchor_state"] == "valid"
    (other / "src/app/retry.py").write_text(RETRY.replace("1.1", "1.5"))
    in_other = json.loads(repo.ok("show", str(lesson), "--json", cwd=other))["result"]
    assert in_other["anchor_state"] == "drifted"
    assert repo.state(lesson) == "valid"
    assert not (other / ".git" / "roteiro").exists()


def test_a_repository_git_cannot_be_run_in_is_not_called_outside_one(tmp_path: Path) -> None:
    """Inside a repository with no git on ``PATH`` (and no stat cache yet),
    the store cannot be found, and the one line says why: not "run it
    inside one", which it is."""
    repo = Repo.committed(tmp_path / "repo", {"a.py": "x = 1\n"})
    repo.env["PATH"] = str(tmp_path / "no-such-folder")
    for args in (("list",), ("add", "a lesson")):
        done = repo.run(*args)
        assert done.returncode == ExitCode.STORE, done.stderr
        assert done.stderr.splitlines() == [
            "roteiro-memory: error: cannot tell which git repository this is: git is not "
            "installed or not on PATH; install git to use it; or choose a store with --db PATH "
            "or ROTEIRO_MEMORY_DB"
        ]
    refused = json.loads(repo.run("list", "--json").stdout)["error"]
    assert refused["kind"] == "Unavailable"
    assert "not inside a git repository" not in refused["message"]


def test_outside_a_repository_without_a_store_is_a_one_line_error(tmp_path: Path) -> None:
    """No repository to find the store in: the store cannot be reached, which
    is not a damaged store (kind Unavailable, the store's exit status)."""
    outside = Repo(tmp_path)
    done = outside.run("list")
    assert done.returncode == ExitCode.STORE
    assert "not inside a git repository" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    refused = outside.run("list", "--json")
    assert json.loads(refused.stdout)["error"]["kind"] == "Unavailable"


def test_db_and_environment_choose_the_store(repo: Repo, tmp_path: Path) -> None:
    chosen = tmp_path / "elsewhere.db"
    repo.ok("add", "in the chosen store", "--db", str(chosen))
    assert stat.S_IMODE(chosen.stat().st_mode) == 0o600
    repo.env["ROTEIRO_MEMORY_DB"] = str(chosen)
    listed = repo.json("list")["records"]
    assert [r["body"] for r in listed] == ["in the chosen store"]
    assert not repo.db.exists()


def test_db_outside_a_repository_works_without_sync(tmp_path: Path) -> None:
    outside = Repo(tmp_path)
    db = str(tmp_path / "m.db")
    outside.ok("add", "portable lesson", "--anchor", "file:src/x.py", "--db", db)
    record = outside.json("show", "1", "--db", db)
    assert record["anchor_state"] == "vanished"


def test_a_read_finding_nothing_in_a_repository_leaves_no_store(repo: Repo) -> None:
    """The sync a read runs on its own is no change of the request's: a new
    store that only it wrote to is removed when the read finds nothing, as
    outside a repository.  The stat cache it wrote vouches for that store's
    tree, which a store made afresh does not have, so the next one syncs."""
    db = repo.root.parent / "memory.db"
    done = repo.run("recall", "nothing", "--db", str(db))
    assert done.returncode == ExitCode.NOTHING, done.stderr
    assert not db.exists()
    assert not [p for p in repo.root.parent.iterdir() if p.name.startswith("memory.db")]
    assert SCRIPT is not None
    with open("/dev/full", "wb") as full:  # the report lost: said as nothing changed, and so
        lost = subprocess.run(
            [SCRIPT, "recall", "x", "--db", str(db)],
            cwd=repo.root,
            env=repo.env,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert lost.stderr.endswith("is incomplete (nothing stored was changed)\n"), lost.stderr
    assert not db.exists()
    lesson = repo.add("Retry.run sleeps", "src/app/retry.py::Retry.run", "--db", str(db))
    assert repo.state(lesson, "--db", str(db)) == "valid"
    done = repo.run("recall", "nothing", "--db", str(db))
    assert done.returncode == ExitCode.NOTHING
    assert db.exists()  # a store the request did not make is kept


def test_a_read_finding_nothing_leaves_no_store_folder_or_stat_cache(repo: Repo) -> None:
    """At the repository's own location the read made the store's folder
    and, the tree having settled, wrote the stat cache there for the store:
    both go with it.  A write, which keeps its store, keeps both."""
    time.sleep(statcache.RACY_NS / 1e9 + 0.2)  # settled: a sync writes the cache
    folder = repo.root / ".git" / statcache.CACHE_DIR
    done = repo.run("recall", "nothing")
    assert done.returncode == ExitCode.NOTHING, done.stderr
    assert not folder.exists()
    repo.add("Retry.run sleeps")
    assert sorted(p.name for p in folder.iterdir()) == ["memory.db", statcache.CACHE_FILE]


@pytest.mark.parametrize(
    ("why", "said"),
    [
        ("outside", "sync needs a git repository: run it inside one"),
        (
            "bad-config",
            "sync needs a git repository: git cannot tell where one is here (fatal: bad config"
            " line 1 in file ",
        ),
        (
            "no-git",
            "sync needs a git repository: git is not installed or not on PATH; install git to"
            " use it",
        ),
    ],
)
def test_sync_without_a_repository_says_why_there_is_none(
    tmp_path: Path, why: str, said: str
) -> None:
    """Outside a repository, with a git config git cannot read, and with no
    git on PATH are three different fixes, so three different messages."""
    outside = Repo(tmp_path)
    outside.env["GIT_CEILING_DIRECTORIES"] = str(tmp_path)
    if why == "bad-config":
        (tmp_path / "bad.gitconfig").write_text("[core\nbroken")
        outside.env["GIT_CONFIG_GLOBAL"] = str(tmp_path / "bad.gitconfig")
    if why == "no-git":
        outside.env["PATH"] = str(Path(SCRIPT or "").parent)
    done = outside.run("sync", "--db", str(tmp_path / "m.db"))
    assert done.returncode == ExitCode.USAGE
    assert done.stderr.startswith(f"roteiro-memory: error: {said}"), done.stderr
    assert done.stderr.count("\n") == 1


# --- Output and exit codes -----------------------------------------------------


def test_json_prints_the_protocol_shapes(repo: Repo) -> None:
    lesson = repo.add("Retry.run sleeps", "src/app/retry.py::Retry.run", "--confidence", "0.9")
    recall = repo.json("recall")
    assert set(recall) == {
        "schema",
        "generation",
        "decay",
        "reproducible",
        "results",
        "live",
        "superseded",
    }
    assert recall["schema"] == "roteiro.recall/v1"
    assert set(recall["results"][0]) == {
        "score",
        "base_confidence",
        "anchor_penalty",
        "decay_factor",
        "age",
        "record",
    }
    listing = repo.json("list")
    assert listing["schema"] == "roteiro.memory/v1"
    record = listing["records"][0]
    assert list(record) == list(RECORD_FIELDS)
    assert record["id"] == lesson
    assert record["confidence"] == 0.9
    assert record["tree"] == repo.json("sync")["tree"]
    assert repo.json("forget", str(lesson)) == {"id": lesson, "restored": []}


def test_human_table_shows_a_mark_per_state(repo: Repo) -> None:
    valid = repo.add("run sleeps", "src/app/retry.py::Retry.run")
    repo.add("gone", "py:src/app/retry.py::Nope.nothing")
    repo.add("repo-wide")
    out = repo.ok("recall")
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "KIND", "STATE", "ANCHOR", "SCORE", "BODY"]
    assert any(line.split()[:3] == [str(valid), "lesson", "+"] for line in lines)
    assert "x vanished" in out
    assert ". unanchored" in out
    assert "+ valid" in out
    assert lines[-1].startswith("3 results")


def test_exit_status_one_when_nothing_is_found(repo: Repo) -> None:
    assert repo.run("recall", "nothing-matches-this").returncode == 1
    assert repo.run("list").returncode == 1
    assert repo.run("show", "7").returncode == 1
    assert repo.run("forget", "7").returncode == 1
    assert repo.run("cache", "get", "missing").returncode == 1


def test_supersession_and_forget_through_the_command_line(repo: Repo) -> None:
    old = repo.add("first idea")
    new = repo.add("better idea", None, "--supersedes", str(old))
    assert [r["id"] for r in repo.json("list")["records"]] == [new]
    assert {r["id"] for r in repo.json("list", "--all")["records"]} == {old, new}
    assert repo.json("forget", str(new)) == {"id": new, "restored": [old]}


def test_add_reads_the_body_from_stdin(repo: Repo) -> None:
    done = repo.run("add", "-", "--json", stdin="a lesson\nwith two lines\n")
    assert done.returncode == 0
    record = repo.json("show", str(json.loads(done.stdout)["result"]["id"]))
    assert record["body"] == "a lesson\nwith two lines\n"


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["add"],
        ["list"],
        ["recall"],
        ["show"],
        ["forget"],
        ["sync"],
        ["cache"],
        ["cache", "stats"],
        ["cache", "sweep"],
        ["cache", "list"],
        ["cache", "get"],
        ["cache", "put"],
        ["cache", "forget"],
        ["check"],
        ["export"],
        ["import"],
        ["protocol"],
    ],
)
def test_help_on_every_subcommand_has_an_example(repo: Repo, command: list[str]) -> None:
    out = repo.ok(*command, "--help")
    assert "usage: roteiro-memory" in out
    assert "example" in out


BAD_INPUT = [
    (["add", "x", "--kind", "rumour"], "rumour"),
    (["add", "   "], "body"),
    (["add", "x", "--scope", " padded"], "scope"),
    (["add", "x", "--confidence", "1.5"], "confidence"),
    (["add", "x", "--confidence", "high"], "confidence"),
    (["add", "x", "--supersedes", "99"], "99"),
    (["add", "x", "--supersedes", "-1"], "--supersedes"),
    (["add", "x", "--anchor", "src/app/missing.py"], "missing.py"),
    (["add", "x", "--anchor", "src/app/retry.py::Nope"], "Nope"),
    (["add", "x", "--anchor", "../outside.py"], "outside"),
    (["list", "--kind", "rumour"], "rumour"),
    (["list", "--limit", "-3"], "--limit"),
    (["list", "--rev", "nope"], "nope"),
    (["recall", "--decay", "clock"], "clock"),
    (["recall", "--limit", "ten"], "--limit"),
    (["recall", "--kind", "x"], "'x'"),
    (["recall", "--touched=nope"], "nope"),
    (["recall", "--rev", "--oops"], "--rev"),
    (["show", "abc"], "abc"),
    (["show", "1", "--rev", "nope"], "nope"),
    (["forget", "0"], "ID"),
    (["forget", "abc"], "abc"),
    (["cache", "stats", "--budget-mb", "-1"], "--budget-mb"),
    (["cache", "sweep", "--budget-mb", "lots"], "--budget-mb"),
    (["cache", "put", "k", "fp", "{not json"], "JSON"),
    (["cache", "put", "k", "fp", "{}", "--anchor", "nowhere.txt"], "nowhere.txt"),
    (["cache", "frobnicate"], "frobnicate"),
    (["import", "no-such-file.jsonl"], "no-such-file.jsonl"),
    (["show"], "ID"),
    (["cache", "get"], "KEY"),
    (["export", "-o", "/no-such-dir/dump.jsonl"], "/no-such-dir/dump.jsonl"),
    (["export", "-o", ".git/roteiro/memory.db"], "the store being exported"),
    (["export", "-o", ".git/roteiro/memory.db-wal"], "the store being exported"),
    (["export", "-o", ".git/roteiro/../roteiro/memory.db"], "the store being exported"),
    (["export", "-o", "."], "'.'"),
    (["export", "-o", "src/."], "'src/.'"),
    (["export", "-o", "src"], "it is a directory"),
    (["check", "--db", "no-such.db"], "no-such.db"),
    (["sync", "--db", ""], "--db"),
    (["add", "x", "--db", ":memory:"], "--db names ':memory:'"),
    (["add", "x", "--anchor", ""], "--anchor"),
    (["frobnicate"], "frobnicate"),
    (["list", "--no-such-option"], "--no-such-option"),
]


@pytest.mark.parametrize(("command", "named"), BAD_INPUT, ids=[" ".join(c) for c, _ in BAD_INPUT])
def test_bad_input_exits_two_with_one_line_and_changes_nothing(
    repo: Repo, command: list[str], named: str
) -> None:
    repo.add("a lesson on run", "src/app/retry.py::Retry.run")
    repo.ok("cache", "put", "k0", "fp", "{}")
    before = repo.snapshot()
    done = repo.run(*command)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert named in lines[0]
    assert done.stdout == ""
    assert repo.snapshot() == before


def test_a_store_in_memory_is_refused_and_no_file_is_made(repo: Repo) -> None:
    """``:memory:`` would keep nothing from one command to the next (nor, for
    the MCP server, after it), and opening it made an empty file of that name
    where the command ran."""
    repo.env["ROTEIRO_MEMORY_DB"] = ":memory:"
    for command in (["add", "a lesson"], ["mcp"]):
        done = repo.run(*command)
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            "roteiro-memory: error: ROTEIRO_MEMORY_DB names ':memory:', a database in memory, "
            "which keeps nothing once the process ends and shares nothing with another; "
            "choose the path of a store file"
        ]
    assert not (repo.root / ":memory:").exists()


@pytest.mark.parametrize(
    "named",
    [
        "host=127.0.0.1 port=1 user=u password=s3cr3t dbname=x",
        "dbname=x password='s3cr3t'",
        "POSTGRESQL://u:s3cr3t@127.0.0.1:1/x",
        "postgresql+psycopg://u:s3cr3t@127.0.0.1:1/x",
        "postgre://u:s3cr3t@127.0.0.1:1/x",
        "jdbc:postgresql://h:5432/x?user=u&password=s3cr3t",
        " postgresql://u:s3cr3t@127.0.0.1:1/x",
        "sslpassword=s3cr3t host=h",
        "schema=team host=h dbname=x",
        "memory.db?password=s3cr3t",
    ],
)
def test_a_connection_named_as_the_store_file_is_refused_and_its_password_never_shown(
    repo: Repo, named: str
) -> None:
    """A DSN that is not a postgresql:// URI, given where a store file is
    named, was taken as a file's name: the command made a file of that name
    in the working tree and printed it, password and all (a server started
    with it too).  Refused, naming where it was given, with nothing made."""

    def files() -> list[Path]:
        return sorted(path for path in repo.root.rglob("*") if ".git" not in path.parts)

    before = files()
    for where, command in (("--db", ["--db", named, "add", "x"]), ("ROTEIRO_MEMORY_DB", ["list"])):
        env = {"ROTEIRO_MEMORY_DB": named} if where == "ROTEIRO_MEMORY_DB" else {}
        repo.env.update(env)
        try:
            for json_flag in ([], ["--json"]):
                done = repo.run(*json_flag, *command)
                assert done.returncode == ExitCode.USAGE, done.stderr
                said = done.stdout + done.stderr
                assert "s3cr3t" not in said
                assert f"{where} names " in said
                assert "give a store file's path" in said
                if not json_flag:
                    assert len(done.stderr.splitlines()) == 1
        finally:
            repo.env.pop("ROTEIRO_MEMORY_DB", None)
    assert files() == before
    assert not repo.db.exists()


def test_a_file_named_like_a_connection_is_a_file_when_written_as_a_path(repo: Repo) -> None:
    """``./NAME`` names the file so named, as the refusal says."""
    done = repo.run("--db", "./host=x.db", "add", "a lesson")
    assert done.returncode == 0, done.stderr
    assert (repo.root / "host=x.db").is_file()


def _small_files() -> None:
    """In the child: a file may grow to 16 KiB only, as on a full disk
    (the write fails with EFBIG rather than killing the process)."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16_384, 16_384))


def test_a_store_the_disk_has_no_room_to_open_is_unavailable_not_corrupt(repo: Repo) -> None:
    """Opening a store writes (its WAL index, a new store's schema): when the
    disk refuses, the store is not damaged, and saying it was sent people
    to repair a sound file.  Reported as Unavailable, in one line, with no
    file left behind."""
    for said in _unavailable_either_way(repo, ["add", "a lesson"], _small_files):
        assert "not a usable" not in said
        assert "the SQLite store is unavailable" in said
        assert not (repo.root / "full.db").exists()


def _unavailable_either_way(
    repo: Repo, command: list[str], limit: Callable[[], None]
) -> Iterator[str]:
    """Run ``command`` on ``full.db`` in a child limited by ``limit``, plain
    and under --json: each fails Unavailable (exit 3) in one line, or one
    envelope; what each said, for the caller to judge."""
    assert SCRIPT is not None
    for json_flag in ([], ["--json"]):
        done = subprocess.run(
            [SCRIPT, *json_flag, "--db", "full.db", *command],
            cwd=repo.root,
            env=repo.env,
            capture_output=True,
            text=True,
            check=False,
            preexec_fn=limit,
        )
        said = done.stdout + done.stderr
        assert done.returncode == ExitCode.STORE, said
        if json_flag:
            assert json.loads(done.stdout)["error"]["kind"] == "Unavailable"
        else:
            assert len(done.stderr.splitlines()) == 1
        yield said


_UNCHECKPOINTED = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint = 0")
conn.execute("UPDATE agent_memory SET confidence = confidence")
os._exit(0)  # no checkpoint on close: the WAL and its index stay
"""


def test_a_check_the_disk_has_no_room_to_read_is_unavailable_not_a_finding(repo: Repo) -> None:
    """Reading a store whose WAL holds commits needs room for the WAL's
    index: when the disk refuses it, the store is sound, and a finding
    (exit 1) would say it was not.  ``check`` fails as every read does
    (Unavailable, exit 3); the pre-commit hook still fails, saying nothing
    was checked."""
    assert SCRIPT is not None
    repo.ok("--db", "full.db", "add", "a lesson")
    store = repo.root / "full.db"
    subprocess.run([sys.executable, "-c", _UNCHECKPOINTED, str(store)], check=True)
    assert (repo.root / "full.db-wal").stat().st_size > 0
    kept = ("full.db", "full.db-wal")  # the WAL's index (-shm) is SQLite's to rebuild
    before = {name: (repo.root / name).read_bytes() for name in kept}
    for said in _unavailable_either_way(repo, ["check"], _no_room):
        assert "full.db: the SQLite store is unavailable" in said
    hook = subprocess.run(
        [shutil.which("roteiro-check-store") or "roteiro-check-store", "full.db"],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=_no_room,
    )
    assert hook.returncode == 1, hook.stdout + hook.stderr
    (line,) = hook.stdout.splitlines()
    assert "full.db: the SQLite store is unavailable" in line
    assert line.endswith("nothing was checked")
    assert {name: (repo.root / name).read_bytes() for name in kept} == before
    assert repo.ok("--db", "full.db", "check").strip() == "full.db: ok"


def _no_room() -> None:
    """In the child: no file may grow at all, as on a full disk."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))


def test_bad_budget_in_the_environment_is_refused(repo: Repo) -> None:
    repo.env["ROTEIRO_CACHE_BUDGET_MB"] = "lots"
    done = repo.run("cache", "stats")
    assert done.returncode == 2
    assert "ROTEIRO_CACHE_BUDGET_MB" in done.stderr


def test_budget_option_overrides_the_environment(repo: Repo) -> None:
    repo.env["ROTEIRO_CACHE_BUDGET_MB"] = "5"
    assert repo.json("cache", "stats")["budget_bytes"] == 5 * 1024 * 1024
    assert repo.json("cache", "stats", "--budget-mb", "2")["budget_bytes"] == 2 * 1024 * 1024


def test_cache_commands_round_trip(repo: Repo) -> None:
    repo.ok("cache", "put", "summary", "v1", '{"lines": 19}', "--anchor", "src/app/retry.py")
    assert repo.ok("cache", "get", "summary").strip() == '{"lines": 19}'
    entry = repo.json("cache", "get", "summary")
    assert entry["hits"] == 1
    assert entry["anchor"] == "file:src/app/retry.py"
    assert entry["anchor_state"] == "valid"
    stats = repo.json("cache", "stats")
    assert (stats["entries"], stats["bytes"]) == (
        1,
        len("summary") + len("v1") + len('{"lines": 19}'),
    )
    swept = repo.json("cache", "sweep", "--budget-mb", "0")
    assert swept["schema"] == "roteiro.cache/v1"
    assert swept["generation"] == 1
    assert repo.json("cache", "forget", "summary") == {"key": "summary"}
    assert repo.run("cache", "forget", "summary").returncode == 1


def test_a_store_this_version_cannot_read_is_a_one_line_error(repo: Repo, tmp_path: Path) -> None:
    junk = tmp_path / "junk.db"
    junk.write_text("not a database at all, just text\n")
    done = repo.run("list", "--db", str(junk))
    assert done.returncode == ExitCode.STORE == 3
    assert "not a roteiro-memory store" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert junk.read_text() == "not a database at all, just text\n"


def test_export_then_import_reproduces_the_store(repo: Repo, tmp_path: Path) -> None:
    old = repo.add("first", "src/app/retry.py::Retry.run", "--confidence", "0.3")
    repo.add("second", None, "--supersedes", str(old), "--kind", "decision")
    gone = repo.add("forgotten later")
    repo.ok("forget", str(gone))
    repo.ok("cache", "put", "k", "fp", "[1, 2]", "--anchor", "README.txt")
    repo.ok("cache", "get", "k")
    repo.ok("cache", "sweep", "--budget-mb", "1")
    dump = tmp_path / "dump.jsonl"
    repo.ok("export", "-o", str(dump))
    fresh = tmp_path / "fresh.db"
    assert repo.ok("import", str(dump), "--db", str(fresh)) == (
        "imported 2 records and 1 cache entry\n"
    )
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    with SQLiteStore(fresh) as imported:
        assert imported.snapshot() == repo.snapshot()
    again = repo.run("import", str(dump), "--db", str(fresh))
    assert again.returncode == 2
    assert "not empty" in again.stderr


def test_check_passes_a_healthy_store_and_fails_a_corrupt_one(repo: Repo) -> None:
    lesson = repo.add("a lesson")
    assert repo.ok("check").strip().endswith(": ok")
    conn = sqlite3.connect(repo.db)
    conn.execute(
        "UPDATE agent_memory SET superseded_by = 42, superseded_at = 'x' WHERE id = ?", (lesson,)
    )
    conn.commit()
    conn.close()
    done = repo.run("check")
    assert done.returncode == 1
    assert f"agent_memory id {lesson}: superseded by 42" in done.stdout
    findings = json.loads(repo.run("check", "--json").stdout)["result"]["findings"]
    assert findings[0]["row"] == f"id {lesson}"


def test_protocol_still_serves(tmp_path: Path) -> None:
    outside = Repo(tmp_path)
    done = outside.run("protocol", stdin='{"id": 1, "op": "hello"}\n')
    assert done.returncode == 0
    reply = json.loads(done.stdout)
    assert reply["ok"] is True
    assert reply["result"]["protocol"] == "roteiro.conformance/v1"


def _umask(mask: int) -> Any:
    return lambda: os.umask(mask)


def test_stores_and_exports_are_private_whatever_the_umask(repo: Repo, tmp_path: Path) -> None:
    """A store made by the Python API, by ``protocol --db`` or through a
    symlink, and an export written with -o, are 0600 under umask 000."""
    from roteiro_memory.stores.sqlite.store import SQLiteStore

    old = os.umask(0)
    try:
        api = tmp_path / "api.db"
        SQLiteStore(api).close()
        (tmp_path / "link.db").symlink_to(tmp_path / "target.db")
        with SQLiteStore(tmp_path / "link.db") as linked:
            linked.record("lesson", "through a symlink")
            assert stat.S_IMODE((tmp_path / "target.db-wal").stat().st_mode) == 0o600
    finally:
        os.umask(old)
    assert stat.S_IMODE(api.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "target.db").stat().st_mode) == 0o600
    served = tmp_path / "served.db"
    assert SCRIPT is not None
    done = subprocess.run(
        [SCRIPT, "protocol", "--db", str(served)],
        input='{"id": 1, "op": "memory.record", "args": {"kind": "lesson", "body": "x"}}\n',
        capture_output=True,
        text=True,
        env=repo.env,
        preexec_fn=_umask(0),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(served.stat().st_mode) == 0o600
    out = tmp_path / "memory.jsonl"
    out.write_text("")
    out.chmod(0o666)
    done = subprocess.run(
        [SCRIPT, "export", "-o", str(out), "--db", str(served)],
        capture_output=True,
        text=True,
        env=repo.env,
        preexec_fn=_umask(0),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_text().count("\n") == 3  # the header, the record, the trailer


def test_export_never_puts_a_file_in_place_of_a_fifo_or_the_stores_hard_link(
    repo: Repo, tmp_path: Path
) -> None:
    """What ``-o`` names is replaced only when it is a regular file (or a
    symlink to one): a FIFO, a symlink to one (as ``/dev/stdout`` may be), or
    a device such as ``/dev/null`` stays what it was, and a hard link to the
    store is a name of the store."""
    repo.add("a lesson")
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    fifo = outputs / "pipe"
    os.mkfifo(fifo)
    (outputs / "link-to-the-fifo").symlink_to(fifo)
    os.link(repo.db, outputs / "also-the-store.db")
    before = repo.snapshot()
    for output, named in (
        (fifo, "it is a FIFO"),
        (outputs / "link-to-the-fifo", "it is a FIFO"),
        (outputs / "also-the-store.db", "a name of the store"),
    ):
        done = repo.run("export", "-o", str(output))
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert named in done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert repo.snapshot() == before
    assert sorted(p.name for p in outputs.iterdir()) == [
        "also-the-store.db",
        "link-to-the-fifo",
        "pipe",
    ]


def test_export_never_takes_the_place_of_a_file_that_is_no_export(
    repo: Repo, tmp_path: Path
) -> None:
    """``-o`` naming a source file by a slip, or another store, replaced it
    with the export; only an earlier export (or an empty file) is replaced,
    and a symlink is replaced itself, what it points to left alone."""
    repo.add("a lesson")
    source = repo.root / "src" / "app" / "retry.py"
    other = tmp_path / "other.db"
    shutil.copyfile(repo.db, other)
    kept = {path: path.read_bytes() for path in (source, other)}
    for output, held in ((source, "bytes of something else"), (other, "a roteiro-memory store")):
        done = repo.run("export", "-o", str(output))
        assert done.returncode == ExitCode.USAGE, done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert f"{held}, not an export" in done.stderr
    assert {path: path.read_bytes() for path in kept} == kept
    earlier = tmp_path / "memory.jsonl"
    repo.ok("export", "-o", str(earlier))
    repo.add("another lesson")
    repo.ok("export", "-o", str(earlier))
    assert "another lesson" in earlier.read_text()
    link = tmp_path / "link.jsonl"
    link.symlink_to(source)
    repo.ok("export", "-o", str(link))
    assert not link.is_symlink()
    assert source.read_bytes() == kept[source]


def test_a_dangling_symlink_as_the_repositorys_store_is_created_at_its_target(
    repo: Repo, tmp_path: Path
) -> None:
    folder = repo.db.parent
    folder.mkdir(mode=0o700, exist_ok=True)
    repo.db.symlink_to(tmp_path / "real.db")
    repo.add("a lesson through the link")
    assert repo.db.is_symlink()
    assert stat.S_IMODE((tmp_path / "real.db").stat().st_mode) == 0o600
    assert [r["body"] for r in repo.json("list")["records"]] == ["a lesson through the link"]
    repo.db.unlink()
    repo.db.symlink_to(tmp_path / "no such folder" / "real.db")
    done = repo.run("list")
    assert done.returncode == ExitCode.STORE, done.stderr  # sound, but it cannot be made
    assert done.stderr.splitlines() == [
        f"roteiro-memory: error: {repo.db}: cannot create the store (No such file or directory); "
        "choose another with --db PATH or ROTEIRO_MEMORY_DB"
    ]


def test_export_to_a_file_others_can_read_warns(repo: Repo, tmp_path: Path) -> None:
    repo.add("a lesson")
    shell_made = tmp_path / "out.jsonl"
    with shell_made.open("w") as out:
        shell_made.chmod(0o644)
        assert SCRIPT is not None
        done = subprocess.run(
            [SCRIPT, "export"],
            cwd=repo.root,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
            env=repo.env,
            check=False,
        )
    assert done.returncode == 0
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert "mode 0644" in lines[0]
    assert "-o FILE" in lines[0]
    assert "a lesson" in shell_made.read_text()
    assert repo.run("export").stderr == ""


def test_add_anchor_refuses_git_internals_and_paths_inside_a_submodule(repo: Repo) -> None:
    """Neither is in the code graph, so an anchor there would read vanished at
    once; like a missing path, it is refused and nothing is written."""
    inner = repo.root / "vendor" / "lib"
    inner.mkdir(parents=True)
    nested = Repo(inner)
    nested.git("init", "-q", "-b", "main")
    nested.write("mod.py", "def f():\n    pass\n")
    nested.commit("inner")
    repo.git("add", "vendor/lib")
    repo.commit("add a submodule")
    for path in (".git/config", "vendor/lib/mod.py"):
        done = repo.run("add", "a lesson", "--anchor", path)
        assert done.returncode == 2, (path, done.stderr)
        lines = done.stderr.splitlines()
        assert len(lines) == 1, lines
        assert "not in the code graph" in lines[0]
    assert not repo.db.exists() or repo.json("list")["records"] == []


def test_add_anchor_refuses_an_untracked_file_sync_leaves_out_of_the_graph(repo: Repo) -> None:
    """An untracked binary file, or one over 16 MiB, gets no node (the rule
    sync applies), so an anchor there would read vanished from the moment
    it was written: refused as an ignored file is, saying why, and nothing
    is written; tracked, the same file is anchored."""
    repo.write("bin.dat", "ab\0cd")
    with (repo.root / "big.log").open("wb") as big:
        big.truncate(16 * 1024 * 1024 + 1)
    for path, why in (("bin.dat", "untracked binary file"), ("big.log", "over the 16 MiB")):
        for argv in (["add", "a lesson"], ["cache", "put", "k", "f", "1"]):
            done = repo.run(*argv, "--anchor", path)
            assert done.returncode == 2, (path, done.stderr)
            lines = done.stderr.splitlines()
            assert len(lines) == 1, lines
            assert why in lines[0], lines
            assert "so it is not in the code graph" in lines[0], lines
    assert not repo.db.exists() or repo.json("list")["records"] == []
    repo.git("add", "bin.dat")
    assert repo.run("add", "a lesson", "--anchor", "bin.dat").returncode == 0
    assert repo.state(1) == "valid"


def test_anchor_path_component_over_255_bytes_is_one_line(repo: Repo) -> None:
    done = repo.run("add", "a lesson", "--anchor", "src/" + "a" * 300 + ".py")
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert "over the 255" in done.stderr


@pytest.mark.parametrize("rev", ["HEAD", "nope"])
def test_a_revision_on_an_orphan_branch_is_not_said_to_be_of_a_repository_with_no_commits(
    tmp_path: Path, rev: str
) -> None:
    """``git checkout --orphan`` leaves HEAD on a branch with no commits in a
    repository with many: "the repository has no commits yet; commit once"
    would be false, so the refusal says it is the current branch that has none."""
    repo = Repo.committed(tmp_path / "repo", {"a.py": "x = 1\n"})
    repo.git("checkout", "-q", "--orphan", "fresh")
    done = repo.run("list", "--rev", rev)
    assert done.returncode == 2
    assert done.stderr == (
        f"roteiro-memory: error: unknown revision {rev!r}: expected a commit, branch or tag "
        f"of {repo.root}, whose current branch has no commits yet\n"
    )
    on_main = repo.run("list", "--rev", "main")
    assert (on_main.returncode, on_main.stderr) == (1, ""), "the branch with commits is read"
    assert on_main.stdout.startswith("0 records")


def test_touched_in_a_repository_with_no_commits_says_so(tmp_path: Path) -> None:
    fresh = Repo(tmp_path / "fresh")
    fresh.root.mkdir()
    fresh.git("init", "-q", "-b", "main")
    fresh.write("a.py", "x = 1\n")
    done = fresh.run("recall", "--touched")
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 1
    assert "no commits yet" in lines[0]
    assert "unknown revision 'HEAD'" in lines[0]
