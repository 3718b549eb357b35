"""The two ways a file of ours is made, private whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from disk_order import flushes_and_renames

from roteiro_memory import privatefile


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """A umask that would take the owner's write bit away (and leave others'
    read bits alone): what is made must be 0600 anyway."""
    earlier = os.umask(0o222)
    try:
        yield
    finally:
        os.umask(earlier)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_create_makes_an_empty_private_file_whatever_the_umask(
    tmp_path: Path, loose_umask: None
) -> None:
    target = tmp_path / "memory.db"
    assert privatefile.create(target) is True
    assert target.read_bytes() == b""
    assert _mode(target) == 0o600


def test_create_leaves_what_is_there_untouched(tmp_path: Path) -> None:
    target = tmp_path / "memory.db"
    target.write_text("not ours to change\n")
    target.chmod(0o644)
    assert privatefile.create(target) is False
    assert target.read_text() == "not ours to change\n"
    assert _mode(target) == 0o644


def test_create_through_a_dangling_symlink_makes_its_target(tmp_path: Path) -> None:
    link = tmp_path / "memory.db"
    link.symlink_to(tmp_path / "real.db")
    assert privatefile.create(link) is True
    assert link.is_symlink()
    assert _mode(tmp_path / "real.db") == 0o600


def test_create_raises_what_stops_it(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        privatefile.create(tmp_path / "no such folder" / "memory.db")


def test_replace_writes_the_whole_file_private(tmp_path: Path, loose_umask: None) -> None:
    target = tmp_path / "export.jsonl"
    target.write_text("an earlier export\n")
    privatefile.replace(target, lambda out: out.write("línea 1\nline 2\n"))
    assert target.read_text(encoding="utf-8") == "línea 1\nline 2\n"
    assert _mode(target) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["export.jsonl"]


@pytest.mark.parametrize("earlier", [None, "an earlier export\n"])
@pytest.mark.parametrize(
    "failure",
    [OSError(28, "No space left on device"), KeyboardInterrupt()],
    ids=["full-disk", "ctrl-c"],
)
def test_a_replace_that_fails_half_way_leaves_the_target_as_it_was(
    tmp_path: Path, earlier: str | None, failure: BaseException
) -> None:
    target = tmp_path / "export.jsonl"
    if earlier is not None:
        target.write_text(earlier)

    def write(out: object) -> None:
        out.write("half of it\n")  # type: ignore[attr-defined]
        raise failure

    with pytest.raises(type(failure)):
        privatefile.replace(target, write)
    if earlier is None:
        assert not target.exists()
    else:
        assert target.read_text() == earlier
    assert [p.name for p in tmp_path.iterdir()] == ([] if earlier is None else ["export.jsonl"])


def test_replace_removes_what_a_dead_process_of_its_id_left(tmp_path: Path) -> None:
    target = tmp_path / "statcache.json"
    stale = tmp_path / f".statcache.json.{os.getpid()}.tmp"
    stale.write_text("{half")
    privatefile.replace(target, lambda out: out.write("{}"))
    assert target.read_text() == "{}"
    assert not stale.exists()


def test_replace_never_writes_through_a_link_planted_at_its_temporary(tmp_path: Path) -> None:
    victim = tmp_path / "someone else's file"
    victim.write_text("theirs\n")
    (tmp_path / f".export.jsonl.{os.getpid()}.tmp").symlink_to(victim)
    privatefile.replace(tmp_path / "export.jsonl", lambda out: out.write("ours\n"))
    assert victim.read_text() == "theirs\n"
    assert (tmp_path / "export.jsonl").read_text() == "ours\n"


@pytest.mark.parametrize("make", [os.mkfifo, os.mkdir], ids=["fifo", "directory"])
def test_replace_refuses_what_is_not_a_regular_file(tmp_path: Path, make: object) -> None:
    target = tmp_path / "out.jsonl"
    make(target)  # type: ignore[operator]
    kind = stat.S_IFMT(os.lstat(target).st_mode)
    with pytest.raises(FileExistsError, match="only a regular file, or a symlink to one"):
        privatefile.replace(target, lambda out: out.write("x"))
    assert stat.S_IFMT(os.lstat(target).st_mode) == kind
    assert [p.name for p in tmp_path.iterdir()] == ["out.jsonl"]


def test_replace_puts_a_file_in_place_of_a_symlink_and_leaves_its_target(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs.txt"
    theirs.write_text("theirs\n")
    link = tmp_path / "out.jsonl"
    link.symlink_to(theirs)
    privatefile.replace(link, lambda out: out.write("ours\n"))
    assert not link.is_symlink()
    assert link.read_text() == "ours\n"
    assert theirs.read_text() == "theirs\n"


def test_replace_refuses_a_symlink_to_what_is_not_a_regular_file(tmp_path: Path) -> None:
    """A link to a FIFO or a terminal (``/dev/stdout``) would be replaced by a
    file, so it is refused as what it points to is."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "out.jsonl"
    link.symlink_to(fifo)
    with pytest.raises(FileExistsError, match="it is a FIFO"):
        privatefile.replace(link, lambda out: out.write("x"))
    assert link.is_symlink()
    assert stat.S_ISFIFO(os.stat(link).st_mode)


def test_replace_puts_a_file_in_place_of_a_dangling_symlink(tmp_path: Path) -> None:
    link = tmp_path / "out.jsonl"
    link.symlink_to(tmp_path / "nothing here")
    privatefile.replace(link, lambda out: out.write("ours\n"))
    assert not link.is_symlink()
    assert link.read_text() == "ours\n"
    assert not (tmp_path / "nothing here").exists()


@pytest.mark.parametrize("stream", ["/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"])
def test_replace_refuses_a_name_of_a_stream_whatever_it_leads_to(
    tmp_path: Path, stream: str
) -> None:
    """``/dev/stdout`` with standard output sent to a file leads to that
    file, yet replacing the name would put a file where the stream's link
    is: a stream's name, or a symlink through one, is refused.  (The
    system's own names are only checked, never written to, here.)"""
    if not os.path.exists(stream):
        pytest.fail(f"{stream} is missing on this system")
    own = tmp_path / "mine"
    own.symlink_to(stream)
    captured = tmp_path / "captured.txt"
    saved = os.dup(1)
    with captured.open("w") as out:
        os.dup2(out.fileno(), 1)  # what `> captured.txt` does
        try:
            assert os.path.samefile(stream, captured)
            with pytest.raises(FileExistsError, match="names an open stream"):
                privatefile.check_replaceable(stream)
            with pytest.raises(FileExistsError, match="names an open stream"):
                privatefile.replace(own, lambda out: out.write("x"))
        finally:
            os.dup2(saved, 1)
            os.close(saved)
    assert own.is_symlink()
    assert os.readlink(own) == stream
    assert captured.read_text() == ""


def test_a_replaced_file_is_on_disk_before_its_rename_and_its_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash after the rename cannot leave an empty export in the old
    one's place, nor the rename undone."""
    target = tmp_path / "export.jsonl"
    target.write_text("old\n")
    events = flushes_and_renames(monkeypatch)
    privatefile.replace(target, lambda out: out.write("new\n"))
    assert target.read_text() == "new\n"
    folder = os.stat(tmp_path)
    (renamed,) = [identity for name, identity, _ in events if name == "replace"]
    assert events == [
        ("fsync", renamed, False),
        ("replace", renamed, False),
        ("fsync", (folder.st_dev, folder.st_ino), True),
    ]


def test_a_cache_that_is_worked_out_again_is_replaced_with_no_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stat cache and a hook's session state are written at every event
    that changes them; a flush would cost each one, and losing them costs
    only their working out again."""
    target = tmp_path / "cache.json"
    events = flushes_and_renames(monkeypatch)
    privatefile.replace(target, lambda out: out.write("{}"), durable=False)
    assert target.read_text() == "{}"
    assert [name for name, _, _ in events] == ["replace"]


@pytest.mark.parametrize(("error", "refused"), [("EINVAL", False), ("EIO", True)])
def test_a_file_system_that_flushes_no_folder_still_takes_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: str, refused: bool
) -> None:
    """Some network file systems answer a folder's ``fsync`` with EINVAL:
    the export is in place, and that is no failure there.  Any other error
    of the flush is one."""
    import errno

    fsync = os.fsync

    def folder_fails(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            number = getattr(errno, error)
            raise OSError(number, os.strerror(number))
        fsync(fd)

    monkeypatch.setattr(os, "fsync", folder_fails)
    target = tmp_path / "export.jsonl"
    if refused:
        with pytest.raises(OSError, match=os.strerror(errno.EIO)) as raised:
            privatefile.replace(target, lambda out: out.write("new\n"))
        assert raised.value.errno == errno.EIO
    else:
        privatefile.replace(target, lambda out: out.write("new\n"))
    assert target.read_text() == "new\n"  # in place either way: the rename came first
