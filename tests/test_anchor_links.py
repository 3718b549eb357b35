"""An anchor names only what sync holds, checked without following links:
a symbol anchor on a symbolic link, on a file below a symlinked folder, or
on what is not a regular file is refused in one line (exit 2, nothing
written) before anything is read -- never a file outside the repository,
never a crash on a loop or a dangling link, never a wait on a FIFO, never a
read of a device without end."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_cli import SCRIPT, Repo

from roteiro_memory.app.session import Session
from roteiro_memory.repo.graph import MAX_UNTRACKED_BYTES

SOURCE = "def f():\n    return 1\n"


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    made = Repo.committed(tmp_path / "repo", {"a.py": SOURCE})
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "sec.py").write_text("def secret_token():\n    return 42\n")
    return made


def _refused(repo: Repo, anchor: str) -> str:
    """The one line ``add --anchor anchor`` is refused with (in time: a FIFO
    opened for reading would wait for ever); the store holds no record after
    it."""
    assert SCRIPT is not None
    done = subprocess.run(
        [SCRIPT, "add", "a lesson", "--anchor", anchor],
        cwd=repo.root,
        env=repo.env,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert "unexpected failure" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    listed = repo.run("list", "--no-sync")
    assert (listed.returncode, listed.stdout) == (1, "0 records (store: 0 live, 0 superseded)\n")
    return done.stderr


def test_a_symbol_of_a_file_outside_the_repository_is_not_read_through_a_link(
    repo: Repo,
) -> None:
    os.symlink("../outside/sec.py", repo.root / "out.py")
    repo.commit()
    for anchor in ("out.py::secret_token", "out.py::nope"):
        refusal = _refused(repo, anchor)
        assert "'out.py' is a symbolic link" in refusal
        assert "secret_token" not in refusal.replace(anchor, "")


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("loop.py", "loop.py"),
        ("dir.py", "."),
        ("dangling.py", "nowhere.py"),
        ("fifo_link.py", "fifo"),
        ("zero.py", "/dev/zero"),
    ],
    ids=["loop", "directory", "dangling", "fifo", "device"],
)
def test_a_symbol_anchor_on_any_symlink_is_refused_before_its_target_is_read(
    repo: Repo, name: str, target: str
) -> None:
    os.mkfifo(repo.root / "fifo")
    os.symlink(target, repo.root / name)
    refusal = _refused(repo, f"{name}::f")
    assert f"'{name}' is a symbolic link" in refusal


def test_a_symlink_is_still_anchored_as_a_file(repo: Repo) -> None:
    os.symlink("../outside/sec.py", repo.root / "out.py")
    repo.commit()
    lesson = repo.add("the link must keep pointing outside", "out.py")
    assert repo.state(lesson) == "valid"


def test_a_fifo_is_refused_as_what_it_is_without_waiting_for_a_writer(repo: Repo) -> None:
    os.mkfifo(repo.root / "pipe.py")
    for anchor in ("pipe.py", "pipe.py::f"):
        assert "'pipe.py' is a FIFO, not a file" in _refused(repo, anchor)


def test_a_file_below_a_symlinked_folder_is_refused_naming_the_link(repo: Repo) -> None:
    os.symlink("../outside", repo.root / "outdir")
    for anchor in ("outdir/sec.py", "outdir/sec.py::secret_token"):
        refusal = _refused(repo, anchor)
        assert "'outdir/sec.py' is inside 'outdir', a symbolic link" in refusal
        assert ".git or a submodule" not in refusal


def test_an_untracked_file_too_big_to_be_source_is_refused_unread(repo: Repo) -> None:
    with open(repo.root / "big.py", "wb") as handle:
        handle.truncate(MAX_UNTRACKED_BYTES + 1)  # sparse: nothing written, nothing read
    for anchor in ("big.py", "big.py::f"):
        refusal = _refused(repo, anchor)
        assert f"'big.py' is an untracked file of {MAX_UNTRACKED_BYTES + 1:,} bytes" in refusal


every_anchor_command = pytest.mark.parametrize(
    "argv",
    [
        ["add", "a lesson"],
        ["cache", "put", "k", "fp", "{}"],
        ["list"],
        ["recall"],
        ["recall", "words"],
    ],
    ids=["add", "cache-put", "list", "recall", "recall-words"],
)
"""Each command that takes ``--anchor``: the writes and the read filters."""


@every_anchor_command
@pytest.mark.parametrize("anchor", ["a.py/", "a.py/::f", "a.py//", "a.py/.", "./a.py/"])
def test_an_anchor_path_with_a_trailing_slash_is_refused(
    repo: Repo, argv: list[str], anchor: str
) -> None:
    """A path ending in '/' names a folder: no command takes it for the file
    'a.py' (add wrote a record on a.py, list and recall kept a.py's)."""
    done = repo.run(*argv, "--anchor", anchor)
    tail = "/" + anchor.partition("::")[0].rpartition("/")[2]
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"roteiro-memory: error: --anchor {anchor!r}: a path ending in "
        f"{tail!r} names a folder, and an anchor is a file (tracked, "
        "or untracked and not ignored) or PATH::QUALNAME, a symbol in one: give a file's "
        "path, with no '/' at its end"
    ]
    assert repo.run("list", "--no-sync").stdout.startswith("0 records")
    assert repo.run("cache", "list").stdout == "0 entries\n"


def test_an_anchor_path_with_a_trailing_slash_is_refused_by_the_agent_tools(
    session: Session,
) -> None:
    from roteiro_memory.agents import tools

    calls: list[tuple[str, dict[str, object]]] = [
        ("remember", {"kind": "lesson", "body": "b", "anchor": "src/app/retry.py/"}),
        ("search", {"query": "retry", "anchor": "src/app/retry.py/"}),
        ("list", {"anchor": "src/app/retry.py/::Retry.run"}),
    ]
    for name, arguments in calls:
        with pytest.raises(tools.ToolError) as raised:
            tools.call(session, name, arguments)
        assert raised.value.kind == "BadRequest", name
        assert "argument 'anchor'" in raised.value.message
        assert "a path ending in '/' names a folder" in raised.value.message
    assert tools.call(session, "list", {"limit": 0}).structured["live"] == 0


FOLDER_REFUSAL = (
    "is a folder of the working tree, and an anchor is a file (tracked, or untracked and "
    "not ignored) or PATH::QUALNAME, a symbol in one: give a file's path (one in the folder)"
)


@every_anchor_command
@pytest.mark.parametrize("anchor", ["pkg", "./pkg", "pkg::f", "a.py/../pkg", "<root>/pkg"])
def test_an_anchor_path_that_is_a_folder_of_the_work_tree_is_refused(
    tmp_path: Path, argv: list[str], anchor: str
) -> None:
    """A folder given without its '/' is refused as one ending in '/' is: a
    read filtered by it answered nothing, as if no record were about it."""
    repo = Repo.committed(tmp_path / "repo", {"a.py": SOURCE, "pkg/b.py": SOURCE})
    kept = repo.add("about b", "pkg/b.py")
    anchor = anchor.replace("<root>", str(repo.root))
    done = repo.run(*argv, "--anchor", anchor)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    # A write may go without an anchor; a read is told the raw key that finds
    # records about a file once there, which a symbol of a file of no
    # language has none of.
    if argv[0] in ("add", "cache"):
        remedy = ", or none at all"
    else:
        remedy = "" if "::" in anchor else f"{ONCE_A_FILE} 'file:pkg'"
    assert done.stderr.splitlines() == [
        f"roteiro-memory: error: --anchor {anchor!r}: 'pkg' {FOLDER_REFUSAL}{remedy}"
    ]
    assert [r["id"] for r in repo.json("list", "--no-sync")["records"]] == [kept]
    assert repo.run("cache", "list").stdout == "0 entries\n"


ONCE_A_FILE = "; records about a file once at that path are found by its raw key"


@pytest.mark.parametrize(
    ("was", "anchor", "key"),
    [("bin/run", "bin/run", "file:bin/run"), ("lib.py", "lib.py::f", "py:lib.py::f")],
)
def test_a_file_replaced_by_a_folder_is_refused_naming_the_key_its_records_are_found_by(
    tmp_path: Path, was: str, anchor: str, key: str
) -> None:
    """Its old records can no longer be named by the path, which is a folder
    now: the refusal says which raw key finds them, and that key does."""
    repo = Repo.committed(tmp_path / "repo", {was: SOURCE})
    lesson = repo.add("about what was there", anchor)
    repo.git("rm", "-q", was)
    repo.write(f"{was}/main.py", SOURCE)
    repo.commit("a folder now")
    done = repo.run("list", "--anchor", anchor)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    (line,) = done.stderr.splitlines()
    assert line.endswith(f"(one in the folder){ONCE_A_FILE} {key!r}"), line
    found = repo.json("list", "--anchor", key)["records"]
    assert [(r["id"], r["anchor_state"]) for r in found] == [(lesson, "vanished")]


def test_an_anchor_that_is_a_folder_from_the_current_folder_is_refused(tmp_path: Path) -> None:
    repo = Repo.committed(tmp_path / "repo", {"src/lib/c.py": SOURCE})
    done = repo.run("list", "--anchor", "lib", cwd=repo.root / "src")
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        f"roteiro-memory: error: --anchor 'lib': anchors are paths from the repository's top "
        f"level ({repo.root}), and there is no 'lib' there; in this folder it is 'src/lib' "
        "from the top level, a folder, and an anchor is a file (tracked, or untracked and not "
        "ignored) or PATH::QUALNAME, a symbol in one: give a file's path (one in the folder)"
    ]


def test_a_read_filter_takes_a_path_that_names_nothing_or_a_link_to_a_folder(
    tmp_path: Path,
) -> None:
    """Only an existing folder is refused: a deleted file's records are read
    by its path, and a symbolic link to a folder is a file to git."""
    repo = Repo.committed(tmp_path / "repo", {"a.py": SOURCE, "pkg/b.py": SOURCE})
    os.symlink("pkg", repo.root / "link")
    repo.commit()
    on_link = repo.add("about the link", "link")
    on_gone = repo.add("about a", "a.py")
    (repo.root / "a.py").unlink()
    repo.commit()
    assert [r["id"] for r in repo.json("list", "--anchor", "a.py")["records"]] == [on_gone]
    assert [r["id"] for r in repo.json("list", "--anchor", "link")["records"]] == [on_link]
    nothing = repo.run("list", "--anchor", "never/was.py")
    assert (nothing.returncode, nothing.stderr) == (1, "")
    assert nothing.stdout == "0 records (store: 2 live, 0 superseded)\n"


def test_an_anchor_that_is_a_folder_is_refused_by_the_agent_tools(session: Session) -> None:
    """A write is told it may go without an anchor; a read, the raw key that
    finds the records about a file once at that path."""
    from roteiro_memory.agents import tools

    calls: list[tuple[str, dict[str, object], str]] = [
        ("remember", {"kind": "lesson", "body": "b", "anchor": "src/app"}, ", or none at all"),
        ("search", {"query": "retry", "anchor": "src/app"}, f"{ONCE_A_FILE} 'file:src/app'"),
        ("list", {"anchor": "src/app"}, f"{ONCE_A_FILE} 'file:src/app'"),
        ("list", {"anchor": "src/app::Retry.run"}, ""),  # no language: no key
    ]
    for name, arguments, remedy in calls:
        with pytest.raises(tools.ToolError) as raised:
            tools.call(session, name, arguments)
        assert raised.value.kind == "BadRequest", name
        said = raised.value.message
        assert f"'src/app' {FOLDER_REFUSAL}{remedy}" in said, said
        assert ("raw key" in said) == (name != "remember" and remedy != ""), said
        assert ("none at all" in said) == (name == "remember"), said
        assert "argument 'anchor'" in raised.value.message
    assert tools.call(session, "list", {"limit": 0}).structured["live"] == 0


@pytest.mark.parametrize("argv", [["add", "a lesson"], ["list"]], ids=["add", "list"])
@pytest.mark.parametrize("anchor", ["lib", "lib::f"])
def test_an_anchor_path_that_is_a_submodule_is_refused_saying_to_run_inside_it(
    tmp_path: Path, argv: list[str], anchor: str
) -> None:
    """Not "give a file's path (one in the folder)": every file in a
    submodule is refused, as it is another repository's, not in this graph."""
    sub = Repo.committed(tmp_path / "sub", {"s.py": SOURCE})
    repo = Repo.committed(tmp_path / "repo", {"a.py": SOURCE})
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub.root), "lib")
    repo.commit("the submodule")
    done = repo.run(*argv, "--anchor", anchor)
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.splitlines() == [
        f"roteiro-memory: error: --anchor {anchor!r}: 'lib' is a repository of its own (a "
        "submodule, or one nested in the working tree), whose files are not in this "
        "repository's code graph: run the command inside it to anchor to them"
    ]
    inside = repo.run("add", "about s", "--anchor", "s.py", cwd=repo.root / "lib")
    assert inside.returncode == 0, inside.stderr
