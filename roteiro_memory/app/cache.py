"""The cache tier's use cases: what it holds, the sweep, and one entry's
put, get and forget.

The tier is re-derivable, bounded by a byte budget and swept oldest-first
(ADR-0013); an entry may be anchored, and whether its anchor still applies
decides whether a sweep keeps it, so reads that see anchors sync first.
The store resolves an entry's anchor against its own graph: where it takes
no sync (opened read-only), the states are those of the last sync, and the
warning says so (``stored`` of :meth:`~roteiro_memory.app.session.Session.sync`).
"""

from __future__ import annotations

import json

from roteiro_memory import eviction
from roteiro_memory.app import values
from roteiro_memory.app.records import anchor_spec
from roteiro_memory.errors import Absent, UsageError, excerpt
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.app.session import Session
    from roteiro_memory.results import CacheEntry, CacheStats, CacheSweep

__all__ = ["Cached", "entries", "forget", "get", "put", "stats", "sweep"]


def stats(session: Session, budget_mb: str | None = None) -> CacheStats:
    """What the tier holds against the budget (``budget_mb`` whole megabytes,
    else the environment's, else the default)."""
    budget = values.budget_bytes(budget_mb, session.spell("budget_mb"))
    return session.store().cache_stats(budget)


def sweep(session: Session, budget_mb: str | None = None) -> CacheSweep:
    """Evict down to the budget, then advance the generation."""
    budget = values.budget_bytes(budget_mb, session.spell("budget_mb"))
    store = session.writable_store()
    session.sync(stored=True)
    return store.cache_sweep(budget)


def entries(session: Session) -> list[CacheEntry]:
    """Every entry by key, recording no access."""
    store = session.store()
    session.sync(stored=True)
    return store.cache_entries()


def get(session: Session, key: str) -> CacheEntry:
    """The entry, recording the access; Absent when there is none."""
    store = session.writable_store()
    session.sync(stored=True)
    entry = store.cache_get(key)
    if entry is None:
        raise Absent(f"no cache entry {excerpt(key)}")
    return entry


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not a JSON value")


def check_payload(payload: str) -> None:
    """Refuse a payload that is not one JSON value (NaN and Infinity are
    none): ``cache put`` stores JSON, as ``cache get`` prints it.  The
    store itself takes any text (PROTOCOL's ``cache.put``), so this is the
    command line's rule, not the store's, and ``check`` does not apply it."""
    try:
        json.loads(payload, parse_constant=_not_json)
    except ValueError as error:
        raise UsageError(f"invalid cache payload: it is not JSON ({error})") from None
    except RecursionError:
        raise UsageError(
            "invalid cache payload: it nests arrays or objects too deeply to read "
            f"({len(payload)} characters); store a flatter value"
        ) from None


@valueclass
class Cached:
    """What a put stored: the entry's key, fingerprint, size and anchor key."""

    key: str
    fingerprint: str
    bytes: int
    anchor: str | None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "key": self.key,
            "fingerprint": self.fingerprint,
            "bytes": self.bytes,
        }
        if self.anchor is not None:
            out["anchor"] = self.anchor
        return out


def put(
    session: Session, key: str, fingerprint: str, payload: str, anchor: str | None = None
) -> Cached:
    """Store ``payload`` (JSON text) under ``key``, anchored when ``anchor``
    names a path, symbol or key; the payload and anchor checked first."""
    check_payload(payload)
    spec = anchor_spec(session, anchor, verify=True)
    store = session.writable_store()
    session.sync(stored=True)
    key_of_anchor = spec.key if spec else None
    store.cache_put(key, fingerprint, payload, key_of_anchor)
    return Cached(
        key, fingerprint, eviction.cache_entry_bytes(key, fingerprint, payload), key_of_anchor
    )


def forget(session: Session, key: str) -> None:
    """Delete one entry; Absent when there is none."""
    if not session.store().cache_forget(key):
        raise Absent(f"no cache entry {excerpt(key)}")
