"""Running a command where a folder is read-only, or its disk is full: real
failures of the filesystem, not patched ones.

As root, permissions stop nothing, so the command runs in a mount namespace
of its own (``unshare --mount``) where the folder is bind-mounted read-only
onto itself, or a small tmpfs is mounted on it; nothing outside that one
process sees either.  As another user, a folder made 0555 is read-only.
Where neither can be had, the test is skipped, except under ``CI``, where
that is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

__all__ = ["full_disk", "read_only"]

_IN_NAMESPACE = ("unshare", "--mount", "--propagation", "private", "sh", "-c")


def _unavailable(why: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI is set, so this test must run, but: {why}")
    pytest.skip(why)


def _namespace(script: str, folder: Path) -> list[str]:
    """A command prefix running what follows after ``script`` has set up
    ``folder`` (``$0`` in it) in a mount namespace of its own."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        _unavailable("mounting needs root and unshare(1)")
    prefix = [*_IN_NAMESPACE, f'{script} && exec "$@"', str(folder)]
    probe = subprocess.run([*prefix, "true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        _unavailable(f"cannot mount in a namespace of our own: {probe.stderr.strip()}")
    return prefix


@contextmanager
def read_only(folder: Path) -> Iterator[list[str]]:
    """A prefix for a command that sees ``folder`` read-only."""
    if os.geteuid() != 0:
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        try:
            yield []
        finally:
            folder.chmod(mode)
        return
    yield _namespace('mount --bind -o ro "$0" "$0"', folder)


def full_disk(folder: Path, size: str = "64k") -> list[str]:
    """A prefix for a command that sees ``folder`` as a filesystem of
    ``size`` that a file fills before the command runs: nothing more fits."""
    return _namespace(
        f'mount -t tmpfs -o size={size} tmpfs "$0" && '
        '(dd if=/dev/zero of="$0/filler" bs=4k 2>/dev/null; true)',
        folder,
    )
