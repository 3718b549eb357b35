"""The working tree's graph built in memory and never written: what anchors
are resolved against when the store cannot take a sync -- it was opened
read-only, or another process held its write lock longer than the request
would wait (:meth:`roteiro_memory.app.session.Session.sync`).  Built as
:func:`~.graph.sync` builds the graph it writes, so a record's anchor state
is the one a sync would have given it."""

from __future__ import annotations

from roteiro_memory.repo.graph import file_reader, graph_blobs, tree_id, working_files
from roteiro_memory.repo.nodes import Stored, build

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from roteiro_memory.repo.graph import Repo
    from roteiro_memory.store import Graph, Store

__all__ = ["working_graph"]


def working_graph(
    store: Store, repo: Repo, skip: Mapping[str, str | None] | None = None
) -> Graph | None:
    """The graph of ``repo``'s working tree as key -> blob, its symbols taken
    from ``store``'s graph where a file's blob is the stored one and parsed
    where it is not; None when the store's graph is the working tree's
    already.  ``skip``: as for :func:`~.graph.working_files`."""
    hashed: set[str] = set()
    files = working_files(repo, None, None, skip, hashed)
    if store.tree() == tree_id(files.values(), repo.object_format):
        return None
    stored = Stored.of(store.export_graph())
    built = build(files, stored, file_reader(repo, files, hashed), repo.object_format, None)
    return graph_blobs(built.nodes)
