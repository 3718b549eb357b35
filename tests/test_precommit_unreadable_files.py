"""A hook never passes a file it could not examine: ``roteiro-forbid-store``
and ``roteiro-check-store`` report each file they cannot read, on one line
naming it and the reason, and fail; a special file (a FIFO) is examined,
found to hold no store, and passed over without blocking."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from precommit_plants import plant_fifo, plant_store

from roteiro_memory.exitcodes import ExitCode
from roteiro_memory.precommit import check_store, forbid_store

HOOKS: dict[str, Callable[[list[str]], int]] = {
    "roteiro-forbid-store": forbid_store.main,
    "roteiro-check-store": check_store.main,
}

HOW = ("permission-denied", "read-fails", "directory", "dangling-symlink", "missing")
"""Ways a file given to a hook cannot be read, and the reason each prints."""

REASON = {
    "permission-denied": os.strerror(errno.EACCES),
    "read-fails": os.strerror(errno.EIO),
    "directory": os.strerror(errno.EISDIR),
    "dangling-symlink": os.strerror(errno.ENOENT),
    "missing": os.strerror(errno.ENOENT),
}


def _refuse(monkeypatch: pytest.MonkeyPatch, path: Path, *, on_open: bool, error: int) -> None:
    """Make ``path`` fail to open (``on_open``) or else to read, with
    ``error``, whoever runs the test: root reads a file of mode 000 all the same."""
    real_open, real_read = os.open, os.read
    opened: set[int] = set()

    def fake_open(name: str | os.PathLike[str], flags: int, *args: Any, **kwargs: Any) -> int:
        if os.fspath(name) == os.fspath(path):
            if on_open:
                raise OSError(error, os.strerror(error), os.fspath(path))
            handle = real_open(name, flags, *args, **kwargs)
            opened.add(handle)
            return handle
        return real_open(name, flags, *args, **kwargs)

    def fake_read(handle: int, size: int) -> bytes:
        if handle in opened:
            raise OSError(error, os.strerror(error))
        return real_read(handle, size)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "read", fake_read)


@pytest.fixture(params=HOW)
def unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[tuple[Path, str]]:
    """A path a hook is given and cannot read, made as the param says, and
    the reason a hook must print; where it is a file, it is a store, so
    passing it would let one through."""
    how: str = request.param
    path = tmp_path / "memory.db"
    if how == "permission-denied":
        plant_store(path).chmod(0)  # enough, unless root runs the test
        _refuse(monkeypatch, path, on_open=True, error=errno.EACCES)
    elif how == "read-fails":
        _refuse(monkeypatch, plant_store(path), on_open=False, error=errno.EIO)
    elif how == "directory":
        path.mkdir()
    elif how == "dangling-symlink":
        path.symlink_to(tmp_path / "gone.db")
    yield path, REASON[how]
    if path.is_file():
        path.chmod(0o600)


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_a_hook_never_passes_a_file_it_cannot_read(
    hook: str, unreadable: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, reason = unreadable
    other = path.with_name("notes.txt")
    other.write_text("an ordinary file\n")
    status = HOOKS[hook]([str(other), str(path)])
    out, err = capsys.readouterr()
    assert (status, err) == (ExitCode.NOTHING, ""), (status, out, err)
    assert out.splitlines() == [f"{path}: cannot be read ({reason}), so it was not examined"]


def test_check_store_never_passes_its_own_store_when_it_cannot_read_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no files: a directory where ``ROTEIRO_MEMORY_DB`` says the store
    is, is not "nothing recorded"."""
    own = tmp_path / "memory.db"
    own.mkdir()
    monkeypatch.setenv("ROTEIRO_MEMORY_DB", str(own))
    status = check_store.main([])
    out, err = capsys.readouterr()
    assert (status, err) == (ExitCode.NOTHING, "")
    assert out.splitlines() == [f"{own}: cannot be read (Is a directory), so it was not examined"]


def test_check_store_reports_its_own_store_unreadable_as_it_reports_a_given_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    own = plant_store(tmp_path / "memory.db")
    _refuse(monkeypatch, own, on_open=True, error=errno.EACCES)
    monkeypatch.setenv("ROTEIRO_MEMORY_DB", str(own))
    status = check_store.main([])
    out, _ = capsys.readouterr()
    assert status == ExitCode.NOTHING
    assert out.splitlines() == [
        f"{own}: cannot be read (Permission denied), so it was not examined"
    ]


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_a_hook_examines_a_fifo_and_passes_it_without_blocking(tmp_path: Path, hook: str) -> None:
    """Issue 22, item 10: a FIFO opens (without waiting for a writer) and
    holds no store; it is not a file that could not be read."""
    pipe = plant_fifo(tmp_path / "pipe.db")
    module = {"roteiro-forbid-store": "forbid_store", "roteiro-check-store": "check_store"}[hook]
    done = subprocess.run(
        [sys.executable, "-m", f"roteiro_memory.precommit.{module}", str(pipe)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


@pytest.mark.parametrize("hook", [*HOOKS, "roteiro-lint-cases"])
def test_a_hook_whose_reader_goes_away_stops_quietly_and_fails(tmp_path: Path, hook: str) -> None:
    """``hook FILES | head -1``: the findings no one reads are not looked
    for, nothing is said on stderr (no traceback), and the status is still
    that of findings."""
    script = Path(sys.executable).parent / hook
    names = [f"missing-{n}.db" for n in range(3_000)]
    with subprocess.Popen(
        [str(script), *names], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    ) as running:
        assert running.stdout is not None
        assert running.stdout.readline().startswith(b"missing-0.db: ")
        running.stdout.close()
        _, err = running.communicate(timeout=120)
    assert err == b""
    assert running.returncode == ExitCode.NOTHING


@pytest.mark.parametrize("hook", [*HOOKS, "roteiro-lint-cases"])
def test_a_hook_whose_findings_cannot_be_written_says_so_in_one_line(
    tmp_path: Path, hook: str
) -> None:
    """Standard output on a full disk: the findings are lost, which is said
    on stderr in one line (no traceback), and the hook fails with 2."""
    script = Path(sys.executable).parent / hook
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(script), "missing.db"],
            cwd=tmp_path,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert done.returncode == ExitCode.USAGE
    assert done.stderr == (
        "cannot write to standard output (No space left on device); what was written there"
        " is incomplete\n"
    )


@pytest.mark.parametrize("hook", [*HOOKS, "roteiro-lint-cases"])
def test_a_hook_whose_output_cannot_encode_a_file_name_escapes_it_never_a_traceback(
    tmp_path: Path, hook: str
) -> None:
    """Standard output in an encoding that cannot spell a finding (ASCII,
    ``PYTHONIOENCODING`` or an old locale) and a file named in another
    script, or in bytes that are not UTF-8: the finding is printed with that
    character escaped, as ``roteiro-memory`` prints it, never a traceback."""
    script = Path(sys.executable).parent / hook
    names = [os.fsdecode(b"caf\xc3\xa9-missing.db"), os.fsdecode(b"bad\xff-missing.db")]
    done = subprocess.run(
        [str(script), *names],
        cwd=tmp_path,
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
        check=False,
    )
    assert done.stderr == b""
    assert done.returncode == ExitCode.NOTHING
    lines = done.stdout.decode("ascii").splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "caf\\xe9-missing.db",
        "bad\\udcff-missing.db",
    ]
