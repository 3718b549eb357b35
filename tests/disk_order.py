"""The order in which files reach the disk: each ``fsync`` and each rename,
recorded as they happen, for the tests that pin that a file is flushed
before it replaces another and its folder after."""

from __future__ import annotations

import os
import stat

import pytest

Event = tuple[str, tuple[int, int], bool]
"""``(what, (device, inode), is a folder)``: ``"fsync"`` or ``"replace"``,
of the file (its identity) flushed or renamed."""


def flushes_and_renames(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    """Each ``os.fsync`` and ``os.replace`` from now on, in order; both
    still do what they do."""
    events: list[Event] = []
    fsync, replace = os.fsync, os.replace

    def synced(fd: int) -> None:
        info = os.fstat(fd)
        events.append(("fsync", (info.st_dev, info.st_ino), stat.S_ISDIR(info.st_mode)))
        fsync(fd)

    def replaced(source: str, target: str) -> None:
        info = os.stat(source)
        events.append(("replace", (info.st_dev, info.st_ino), False))
        replace(source, target)

    monkeypatch.setattr(os, "fsync", synced)
    monkeypatch.setattr(os, "replace", replaced)
    return events
