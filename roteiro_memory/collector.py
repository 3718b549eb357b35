"""The cyclic garbage collector paused, for work that holds a whole store.

An integrity check holds a store's records, postings and values at once:
millions of containers, none of them in a cycle.  The collector starts a pass
every few hundred new containers and, as they pile up, walks all of them
again and again; at 100,000 records that is a third of a check's time.
:func:`paused` turns it off for the duration and leaves it as it found it.
(The console script's own settings, for a process that ends with its command,
are :func:`roteiro_memory.cli.main.console`'s.)
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused"]


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """No collection inside the block; afterwards the collector is enabled
    again if it was enabled before."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
