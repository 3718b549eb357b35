"""The stat cache vouches for a working tree only while nothing git would list
differently has changed; anything it cannot vouch for is asked of git."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_cli import GIT_ENV, RETRY, SCRIPT

from roteiro_memory.app.session import Session
from roteiro_memory.errors import GitError
from roteiro_memory.repo import graph, statcache
from roteiro_memory.repo.graph import SyncReport, find_repo, tree_id, working_files
from roteiro_memory.stores.sqlite.store import SQLiteStore

QUIET_S = 0.06
"""How long a test waits for its tree to settle, with :data:`RACY_NS` made 50 ms."""


@pytest.fixture(autouse=True)
def short_racy_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(statcache, "RACY_NS", 50_000_000)
    for name in [n for n in os.environ if n.startswith(("GIT_", "ROTEIRO_"))]:
        monkeypatch.delenv(name)
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    made = tmp_path / "repo"
    (made / "src" / "app").mkdir(parents=True)
    (made / "src" / "app" / "retry.py").write_text(RETRY)
    (made / "README.txt").write_text("hello\n")
    (made / ".gitignore").write_text("*.log\n")
    (made / "logs").mkdir()
    (made / "logs" / "run.log").write_text("ignored\n")
    git(made, "init", "-q", "-b", "main")
    git(made, "add", "-A")
    git(made, "commit", "-q", "-m", "initial")
    monkeypatch.chdir(made)
    return made


def command(db: str | None = None) -> Session:
    """The session one command of the command line works in."""
    return Session(db)


def sync_once(db: str | None = None) -> SyncReport | None:
    """What one command's sync did: a report when it asked git, None when the
    stat cache vouched for the tree."""
    session = command(db)
    try:
        return session.sync()
    finally:
        session.close()


def settled_cache(db: str | None = None) -> None:
    """Sync through git once the tree has settled, writing the cache."""
    time.sleep(QUIET_S)
    assert sync_once(db) is not None
    assert cache_file().exists()


def cache_file() -> Path:
    """The cache of the worktree the test is in."""
    git_dir = git(Path.cwd(), "rev-parse", "--absolute-git-dir").strip()
    return Path(git_dir, "roteiro", "statcache.json")


def witness_matches_the_tree(root: Path) -> bool:
    """The invariant: the store's tree witness is the tree git lists now."""
    return witness_matches_the_tree_of(root, str(root / ".git" / "roteiro" / "memory.db"))


def witness_matches_the_tree_of(root: Path, db: str) -> bool:
    repo = find_repo(root)
    assert repo is not None
    with SQLiteStore(db) as store:
        return store.tree() == tree_id(working_files(repo).values())


def test_a_settled_tree_is_vouched_for_without_git(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled_cache()

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError("git was asked although the cache vouches for the tree")

    monkeypatch.setattr(graph, "find_repo", no_git)
    monkeypatch.setattr(graph, "sync", no_git)
    assert sync_once() is None
    session = command()
    place = session.place()
    assert place is not None
    assert Path(place.root) == root.resolve()
    assert Path(place.common_dir) == (root / ".git").resolve()
    session.close()


def test_a_tree_that_changed_within_the_racy_window_gets_no_cache(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A window a loaded machine cannot outlast between the edit and the sync.
    monkeypatch.setattr(statcache, "RACY_NS", 60_000_000_000)
    (root / "README.txt").write_text("changed just now\n")
    assert sync_once() is not None
    assert not cache_file().exists()
    assert sync_once() is not None  # still asks git


def test_a_cache_that_no_longer_holds_is_removed_when_the_tree_moves(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled_cache()
    monkeypatch.setattr(statcache, "RACY_NS", 60_000_000_000)
    (root / "README.txt").write_text("changed just now\n")
    assert sync_once() is not None
    assert not cache_file().exists()


def _same_size_edit(root: Path) -> None:
    path = root / "src" / "app" / "retry.py"
    path.write_text(path.read_text().replace("1.1", "1.2"))


def _edit_keeping_mtime(root: Path) -> None:
    path = root / "README.txt"
    before = path.stat()
    path.write_text("HELLO\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


def _new_file(root: Path) -> None:
    (root / "NEW.txt").write_text("new\n")


def _new_file_in_a_new_folder(root: Path) -> None:
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "docs" / "deep" / "notes.md").write_text("notes\n")


def _new_file_beside_ignored_ones(root: Path) -> None:
    (root / "logs" / "summary.txt").write_text("not ignored\n")


def _removed_file(root: Path) -> None:
    (root / "README.txt").unlink()


def _made_executable(root: Path) -> None:
    path = root / "src" / "app" / "retry.py"
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _unignored(root: Path) -> None:
    (root / ".gitignore").write_text("")


def recached() -> None:
    """Let the tree settle and sync, so the cache stands on it as it is now."""
    time.sleep(QUIET_S)
    sync_once()
    assert sync_once() is None


def _excluded(root: Path) -> None:
    (root / "scratch.txt").write_text("scratch\n")
    recached()
    (root / ".git" / "info" / "exclude").write_text("scratch.txt\n")


def _staged(root: Path) -> None:
    path = root / "README.txt"
    path.write_text("staged\n")
    recached()
    git(root, "add", "README.txt")  # the same content, a new index: the tree is unchanged


def _untracked_by_the_index(root: Path) -> None:
    git(root, "rm", "-q", "--cached", "README.txt")


def _ignore_file_named_in_the_configuration(root: Path) -> None:
    ignore = root.parent / "global-ignore"
    ignore.write_text("")
    git(root, "config", "core.excludesFile", str(ignore))
    (root / "draft.txt").write_text("draft\n")
    recached()
    ignore.write_text("draft.txt\n")


CHANGES: dict[str, Callable[[Path], None]] = {
    "same-size-edit": _same_size_edit,
    "edit-keeping-mtime": _edit_keeping_mtime,
    "new-file": _new_file,
    "new-file-in-a-new-folder": _new_file_in_a_new_folder,
    "new-file-beside-ignored-ones": _new_file_beside_ignored_ones,
    "removed-file": _removed_file,
    "made-executable": _made_executable,
    "gitignore-emptied": _unignored,
    "info-exclude": _excluded,
    "staged-same-content": _staged,
    "rm-cached": _untracked_by_the_index,
    "configured-excludes-file": _ignore_file_named_in_the_configuration,
}


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_every_change_to_what_git_lists_is_seen(root: Path, change: str) -> None:
    settled_cache()
    CHANGES[change](root)
    assert sync_once() is not None, "the cache vouched for a tree that changed"
    assert witness_matches_the_tree(root)


@pytest.mark.parametrize(
    ("name", "trusted"),
    [
        ("GIT_DIR", False),
        ("GIT_INDEX_FILE", False),
        ("GIT_WORK_TREE", False),
        ("GIT_CONFIG_COUNT", False),
        ("GIT_CEILING_DIRECTORIES", False),
        ("GIT_AUTHOR_NAME", True),
        ("GIT_SSL_CAINFO", True),
    ],
)
def test_a_git_variable_that_changes_what_git_lists_turns_the_cache_off(
    root: Path, monkeypatch: pytest.MonkeyPatch, name: str, trusted: bool
) -> None:
    settled_cache()
    monkeypatch.setenv(name, "1" if name == "GIT_CONFIG_COUNT" else "x")
    assert (statcache.discover(os.environ) is not None) is trusted


def test_moving_the_global_configuration_turns_the_cache_off(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled_cache()
    other = root.parent / "other-gitconfig"
    other.write_text("")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(other))
    assert sync_once() is not None


DAMAGE: dict[str, bytes] = {
    "not-json": b"{not json",
    "deeply-nested": b"[" * 100_000 + b"]" * 100_000,
    "another-version": json.dumps({"version": 99}).encode(),
    "a-list": b"[1, 2]",
    "place-of-numbers": json.dumps(
        {"version": 1, "place": {"root": 1, "git_dir": 2, "common_dir": 3, "object_format": 4}}
    ).encode(),
    "blank": b"\n",
    # Filled in from the real cache:
    "a-path-that-is-a-number": b"",
    "stats-one-short": b"",
    "stats-of-text": b"",
    "watched-of-the-wrong-shape": b"",
}


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_a_damaged_cache_is_asked_past_and_rewritten(root: Path, damage: str) -> None:
    settled_cache()
    body = DAMAGE[damage]
    data = json.loads(cache_file().read_text())
    if damage == "a-path-that-is-a-number":
        data["paths"][0] = 1
    elif damage == "stats-one-short":
        data["stats"].pop()
    elif damage == "stats-of-text":
        data["stats"] = [str(number) for number in data["stats"]]
    elif damage == "watched-of-the-wrong-shape":
        data["watched"] = [[1, "a"], ["README.txt", [1, 2]], "x"]
    if not body:
        body = json.dumps(data).encode()
    cache_file().write_bytes(body)
    assert sync_once() is not None
    assert json.loads(cache_file().read_text())["version"] == statcache.VERSION
    assert sync_once() is None


def test_a_cache_path_that_is_a_folder_leaves_every_command_working(root: Path) -> None:
    settled_cache()
    cache_file().unlink()
    cache_file().mkdir()
    assert sync_once() is not None
    assert sync_once() is not None
    assert cache_file().is_dir()


def test_a_cache_written_for_another_store_is_not_trusted(root: Path) -> None:
    settled_cache()
    assert sync_once(db=str(root.parent / "other.db")) is not None


def test_inside_the_git_directory_the_cache_is_not_trusted(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled_cache()
    monkeypatch.chdir(root / ".git" / "refs")
    assert statcache.discover(os.environ) is None
    monkeypatch.chdir(root / "src" / "app")
    assert statcache.discover(os.environ) is not None


def test_a_tree_of_more_entries_than_the_limit_gets_no_cache(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(statcache, "MAX_ENTRIES", 4)
    time.sleep(QUIET_S)
    assert sync_once() is not None
    assert not cache_file().exists()


@pytest.fixture
def worktree(root: Path) -> Path:
    other = root.parent / "other"
    git(root, "worktree", "add", "-q", str(other))
    return other


def test_each_worktree_keeps_its_own_cache_and_they_share_the_store(
    root: Path, worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled_cache()
    monkeypatch.chdir(worktree)
    (worktree / "only-here.txt").write_text("x\n")
    time.sleep(QUIET_S)
    assert sync_once() is not None  # the shared store now holds this worktree's tree
    mine = Path(git(worktree, "rev-parse", "--absolute-git-dir").strip())
    assert (mine / "roteiro" / "statcache.json").exists()
    assert sync_once() is None
    monkeypatch.chdir(root)
    assert sync_once() is not None  # the store's witness is the other worktree's
    assert witness_matches_the_tree(root)


def test_recall_after_a_quiet_moment_runs_no_git(tmp_path: Path, root: Path) -> None:
    """The command line end to end: a fake ``git`` first on PATH counts the
    calls, and the real ``RACY_NS`` (this runs in its own processes)."""
    assert SCRIPT is not None
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "git-calls"
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, text=True)
    fake = bin_dir / "git"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {calls}\nexec {real.stdout.strip()} "$@"\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROTEIRO_")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"

    def recall() -> list[str]:
        calls.write_text("")
        done = subprocess.run(
            [SCRIPT, "recall", "--json"], cwd=root, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["ok"] is True
        return calls.read_text().splitlines()

    subprocess.run(
        [SCRIPT, "add", "retries back off", "--anchor", "src/app/retry.py::Retry.run"],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )
    # The add writes the cache too when its sync starts more than the racy
    # window after the fixture's commit, as it may on a loaded machine.
    (root / ".git" / statcache.CACHE_DIR / statcache.CACHE_FILE).unlink(missing_ok=True)
    time.sleep(2.2)  # the command's own racy window (2 s): this runs in its processes
    assert recall(), "the first call after the quiet moment asks git and writes the cache"
    assert recall() == []
    (root / "src" / "app" / "retry.py").write_text(RETRY.replace("OSError", "ValueError"))
    assert recall(), "an edit is seen: git is asked again"
    done = subprocess.run(
        [SCRIPT, "show", "1", "--json"], cwd=root, env=env, capture_output=True, text=True
    )
    assert json.loads(done.stdout)["result"]["anchor_state"] == "drifted"


def test_a_long_lived_session_goes_on_with_the_cache_it_wrote(root: Path) -> None:
    """The MCP server keeps one session: its next call trusts the cache its
    last sync wrote, without reading the file again."""
    time.sleep(QUIET_S)
    session = command()
    try:
        assert session.sync() is not None
        cache_file().unlink()  # this process no longer needs the file
        assert session.sync() is None
        (root / "README.txt").write_text("edited\n")
        assert session.sync() is not None
    finally:
        session.close()


def test_a_cache_that_cannot_be_written_leaves_the_command_working(
    root: Path, tmp_path: Path
) -> None:
    (root / ".git" / "roteiro").write_text("a file where the folder would be\n")
    db = str(tmp_path / "elsewhere.db")
    time.sleep(QUIET_S)
    assert sync_once(db) is not None
    assert sync_once(db) is not None
    assert witness_matches_the_tree_of(root, db)
    assert not list((root / ".git").rglob("*.tmp"))


def test_a_folder_that_cannot_be_listed_gets_no_cache_and_no_failure(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = os.scandir

    def refuse_logs(path: str) -> object:
        if str(path).endswith("logs"):
            raise PermissionError(13, "Permission denied", path)
        return listed(path)

    monkeypatch.setattr(os, "scandir", refuse_logs)
    time.sleep(QUIET_S)
    assert sync_once() is not None
    assert not cache_file().exists()


def test_git_failing_after_the_sync_costs_only_the_cache(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(repo: object) -> None:
        raise GitError("git config failed: bad config line 1")

    monkeypatch.setattr(statcache, "_git_facts", broken)
    time.sleep(QUIET_S)
    assert sync_once() is not None
    assert not cache_file().exists()
    assert witness_matches_the_tree(root)


# --- Where git would look elsewhere, or read more than the tree ----------------


def test_a_dot_git_that_is_a_link_is_left_to_git(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git follows a ``.git`` link to another repository; so must the
    command, and not take the cache of the one around it."""
    settled_cache()
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    inner = root / "inner"
    inner.mkdir()
    (inner / ".git").symlink_to(other / ".git")
    monkeypatch.chdir(inner)
    assert statcache.discover(os.environ) is None
    session = command()
    place = session.place()
    session.close()
    assert place is not None
    assert Path(place.root) == inner.resolve()


def test_inside_a_bare_repository_in_the_tree_the_cache_is_not_trusted(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(root, "clone", "-q", "--bare", str(root), str(root / "backup.git"))
    settled_cache()
    monkeypatch.chdir(root / "backup.git")
    assert statcache.discover(os.environ) is None


@pytest.fixture
def global_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$XDG_CONFIG_HOME/git``, where git looks for the global ignore and
    attributes files."""
    made = tmp_path / "xdg" / "git"
    made.mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(made.parent))
    return made


def test_an_ignore_file_reached_through_a_link_is_watched_through_it(
    root: Path, tmp_path: Path, global_git: Path
) -> None:
    real = tmp_path / "dotfiles-ignore"
    real.write_text("notes.txt\n")
    (global_git / "ignore").symlink_to(real)
    (root / "notes.txt").write_text("ignored for now\n")
    settled_cache()
    assert sync_once() is None
    real.write_text("")
    assert sync_once() is not None
    assert witness_matches_the_tree(root)


def test_an_ignore_file_that_ignores_itself_is_watched(root: Path) -> None:
    (root / "gen").mkdir()
    (root / "gen" / ".gitignore").write_text("*\n")
    (root / "gen" / "out.py").write_text("x = 1\n")
    settled_cache()
    with open(root / "gen" / ".gitignore", "r+") as handle:  # in place: the folder is untouched
        handle.truncate(0)
        handle.write("")
    assert sync_once() is not None
    assert witness_matches_the_tree(root)


def test_an_included_configuration_that_appears_is_seen(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "gitconfig"
    config.write_text("[include]\n\tpath = gitconfig.local\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    (root / "draft.txt").write_text("draft\n")
    excludes = tmp_path / "excludes"
    excludes.write_text("draft.txt\n")
    settled_cache()
    (tmp_path / "gitconfig.local").write_text(f"[core]\n\texcludesFile = {excludes}\n")
    assert sync_once() is not None
    assert witness_matches_the_tree(root)


def test_a_global_attributes_file_is_watched(root: Path, global_git: Path) -> None:
    (global_git / "attributes").write_text("*.txt text\n")
    settled_cache()
    (global_git / "attributes").write_text("")
    assert sync_once() is not None


def test_a_relative_excludes_file_is_read_from_the_top_level(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / ".git" / "myignore").write_text("scratch.txt\n")
    git(root, "config", "core.excludesFile", ".git/myignore")
    (root / "scratch.txt").write_text("scratch\n")
    monkeypatch.chdir(root / "src")
    settled_cache()
    (root / ".git" / "myignore").write_text("")
    assert sync_once() is not None
    assert witness_matches_the_tree(root)


def test_a_tree_holding_a_repository_of_its_own_gets_no_cache(root: Path) -> None:
    """Whether git leaves a nested repository's files out depends on more
    than any stat the cache could keep."""
    nested = root / "vendor" / "lib"
    nested.mkdir(parents=True)
    git(nested, "init", "-q", "-b", "main")
    time.sleep(QUIET_S)
    assert sync_once() is not None
    assert not cache_file().exists()


def test_a_cache_naming_a_file_no_file_can_have_is_asked_past(root: Path) -> None:
    settled_cache()
    data = json.loads(cache_file().read_text())
    data["paths"][0] = "a\0b"
    data["watched"][0][0] = "c\0d"
    cache_file().write_text(json.dumps(data))
    assert sync_once() is not None


def test_system_attributes_are_watched_whatever_git_config_nosystem() -> None:
    """git reads the system attributes file unless GIT_ATTR_NOSYSTEM (which
    turns the cache off), even when GIT_CONFIG_NOSYSTEM skips the system
    configuration."""
    named = statcache._config_candidates({"GIT_CONFIG_NOSYSTEM": "1", "HOME": "/h"}, "/r")
    assert "/etc/gitattributes" in named
    assert "/etc/gitconfig" not in named


def test_a_folder_named_like_pathspec_magic_is_not_taken_for_an_ignored_one(
    root: Path,
) -> None:
    (root / ".gitignore").write_text("*.log\n/build/\n*.o\n")
    (root / "build").mkdir()
    (root / "build" / "a.o").write_text("")
    (root / ":build").mkdir()
    (root / ":build" / "x.o").write_text("")
    settled_cache()
    (root / ":build" / "new.py").write_text("x = 1\n")
    assert sync_once() is not None
    assert witness_matches_the_tree(root)


def test_a_repository_someone_else_owns_is_left_to_git(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git refuses it unless safe.directory lets it through: only git can say."""
    settled_cache()
    assert statcache.discover(os.environ) is not None
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(root).st_uid + 1)
    assert statcache.discover(os.environ) is None


def test_a_worktree_pointed_at_another_clone_finds_that_clone(
    root: Path, worktree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other-clone"
    git(root, "clone", "-q", str(root), str(other))
    monkeypatch.chdir(worktree)
    settled_cache()
    mine = Path(git(worktree, "rev-parse", "--absolute-git-dir").strip())
    (mine / "commondir").write_text(f"{other / '.git'}\n")
    session = command()
    place = session.place()
    session.close()
    assert place is not None
    assert Path(place.common_dir) == (other / ".git").resolve()


def test_a_dot_git_git_would_not_take_is_left_to_git(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = root / "inner"
    inner.mkdir()
    git(inner, "init", "-q", "-b", "main")
    (inner / "i.py").write_text("y = 2\n")
    git(inner, "add", "-A")
    git(inner, "commit", "-q", "-m", "inner")
    monkeypatch.chdir(inner)
    settled_cache()
    assert statcache.discover(os.environ) is not None
    git(inner, "pack-refs", "--all")
    for folder in sorted((inner / ".git" / "refs").rglob("*"), reverse=True):
        folder.rmdir() if folder.is_dir() else folder.unlink()
    (inner / ".git" / "refs").rmdir()  # git now takes inner/.git for no repository
    assert statcache.discover(os.environ) is None


def test_a_bare_repository_with_a_linked_head_on_the_way_up_is_left_to_git(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled_cache()
    bare = root / "sub"
    for folder in ("objects", "refs"):
        (bare / folder).mkdir(parents=True)
    (bare / "HEAD").symlink_to("refs/heads/main")  # dangling, as git allows
    monkeypatch.chdir(bare)
    assert statcache.discover(os.environ) is None


def test_a_gitfile_is_read_as_git_reads_it(
    root: Path, worktree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(worktree)
    settled_cache()
    assert statcache.discover(os.environ) is not None
    gitfile = worktree / ".git"
    text = gitfile.read_text().rstrip("\n")
    with open(gitfile, "r+") as handle:  # in place: the same inode
        handle.write(text + " \n")  # a trailing space is part of the path for git
    assert statcache.discover(os.environ) is None


def test_a_folder_named_like_an_ignore_file_is_walked(root: Path) -> None:
    (root / "odd" / ".gitignore" / "sub").mkdir(parents=True)
    (root / "odd" / ".gitignore" / "sub" / "kept.txt").write_text("x\n")
    settled_cache()
    (root / "odd" / ".gitignore" / "sub" / "new.py").write_text("y = 1\n")
    assert sync_once() is not None
    assert witness_matches_the_tree(root)


def test_a_tree_git_asks_an_fsmonitor_about_gets_no_cache(root: Path, tmp_path: Path) -> None:
    """What the hook answers can change with no stat the cache keeps."""
    hook = tmp_path / "fsmonitor-hook"
    hook.write_text("#!/bin/sh\nexit 1\n")  # "no answer": git looks at every file itself
    hook.chmod(0o755)
    git(root, "config", "core.fsmonitor", str(hook))
    time.sleep(QUIET_S)
    assert sync_once() is not None
    assert not cache_file().exists()


def test_a_fifo_where_the_cache_would_be_holds_nothing_up(root: Path) -> None:
    settled_cache()
    cache_file().unlink()
    os.mkfifo(cache_file())
    found: list[object] = []
    reader = threading.Thread(target=lambda: found.append(statcache.discover(os.environ)))
    reader.start()
    reader.join(10)
    assert not reader.is_alive(), "discover blocked on a FIFO"
    assert found == [None]


def test_a_split_index_is_watched_through_its_index(root: Path) -> None:
    """A split index's shared part is never rewritten in place (git names a
    new one, and rewrites the index that points at it), and git touches it
    whenever it reads it: the index alone is watched."""
    git(root, "config", "core.splitIndex", "true")
    git(root, "update-index", "--split-index")
    settled_cache()
    assert sync_once() is None
    (root / "README.txt").write_text("staged with a split index\n")
    git(root, "add", "README.txt")
    assert sync_once() is not None
    assert witness_matches_the_tree(root)


def test_a_relative_store_means_where_the_command_started(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MCP server opens its store, then works from the top level: the
    store it names, and leaves out of the graph, stays the one it opened."""
    monkeypatch.chdir(root / "src")
    (root / ".gitignore").write_text("*.log\n")
    session = command(db="mem.db")
    try:
        session.store()
        monkeypatch.chdir(root)
        time.sleep(QUIET_S)
        session.sync()
        session.sync()
        keys = {node.key for node in session.store().export_graph()}
    finally:
        session.close()
    assert not any("mem.db" in key for key in keys), sorted(keys)
    assert (root / "src" / "mem.db").exists()
    assert not (root / "mem.db").exists()
    written = json.loads(cache_file().read_text())
    assert written["store"] == os.path.realpath(root / "src" / "mem.db")
