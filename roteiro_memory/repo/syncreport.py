"""What one sync of the code graph found, and the graph it built until
that is written (:func:`~roteiro_memory.repo.graph.sync`)."""

from __future__ import annotations

from roteiro_memory.repo import unread
from roteiro_memory.results import GraphNode
from roteiro_memory.valueclass import field, valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from roteiro_memory.store import Store

__all__ = ["SyncReport"]


@valueclass(frozen=False)
class SyncReport:
    """What one sync found and wrote."""

    tree: str
    files: int
    up_to_date: bool
    symbols: int = 0
    written: int = 0
    removed: int = 0
    parsed: list[str] = field(default_factory=list)
    unparsable: list[tuple[str, str]] = field(default_factory=list)
    listed: list[str] = field(default_factory=list)
    """Every path git listed that is not a submodule or one of ``skip``:
    what the stat cache watches (:mod:`roteiro_memory.repo.statcache`)."""
    submodules: list[str] = field(default_factory=list)
    started_ns: int = 0
    """When this sync started listing the working tree (ns since the epoch):
    a file changed after it may have been listed before its change, so the
    stat cache vouches only for what is older."""
    notices: list[str] = field(default_factory=list)
    """Lines said once about the graph as a whole: that the symbols of some
    files could not be read, by the sync that first meets them so
    (:mod:`roteiro_memory.repo.nodes`)."""
    pending: list[GraphNode] | None = None
    unread: list[str] | None = None
    """The graph built and not yet written (:meth:`write`; None when up to
    date), and the languages it leaves unread, noted once it is committed
    (:meth:`note_unread`)."""

    def to_json(self) -> dict[str, object]:
        return {
            "tree": self.tree,
            "up_to_date": self.up_to_date,
            "files": self.files,
            "symbols": self.symbols,
            "written": self.written,
            "removed": self.removed,
            "parsed": len(self.parsed),
            "unparsable": [{"path": p, "reason": r} for p, r in self.unparsable],
            "notices": self.notices,
        }

    def write(self, store: Store) -> SyncReport:
        """Write the graph held ``pending`` and its witness in one replace."""
        if self.pending is not None:
            self.written, self.removed = store.replace_graph(self.pending, self.tree)
            self.pending = None
        return self

    def note_unread(self, git_dir: Path | None) -> None:
        """Note the languages the written graph leaves unread (:mod:`.unread`),
        once it is committed: noted beside a graph that was rolled back, they
        would be taken as read by every sync after."""
        if git_dir is not None and self.unread is not None:
            unread.note(git_dir, self.unread)
        self.unread = None
