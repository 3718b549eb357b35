"""Hypothesis's storage folder, kept out of the user's working directory.

With no example database Hypothesis still caches the constants it reads from
local modules in its storage folder, which would leave a ``.hypothesis``
folder wherever the suite runs; a property runs with that folder pointed at
a temporary one instead.

This module does not import pytest.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator

__all__ = ["private_storage"]


@contextlib.contextmanager
def private_storage() -> Iterator[None]:
    """Hypothesis's storage folder pointed at a temporary one while the block
    runs, removed after it; the folder in force before is restored."""
    from hypothesis import configuration

    previous = getattr(configuration, "__hypothesis_home_directory", None)
    folder = tempfile.mkdtemp(prefix="roteiro-hypothesis-")
    configuration.set_hypothesis_home_dir(folder)
    try:
        yield
    finally:
        configuration.set_hypothesis_home_dir(previous)
        shutil.rmtree(folder, ignore_errors=True)
