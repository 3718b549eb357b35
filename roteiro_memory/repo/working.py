"""The working tree's graph built in memory and never written: what anchors
are resolved against when the store cannot take a sync -- it was opened
read-only, or another process held its write lock longer than the request
would wait (:meth:`roteiro_memory.app.session.Session.sync`).  Built as
:func:`~.graph.sync` builds the graph it writes, so a record's anchor state
is the one a sync would have given it; and built again at every read, as a
sync runs at every read, so a session that lasts (the MCP server's) sees
each edit."""

from __future__ import annotations

from roteiro_memory.repo.graph import build_working, graph_blobs, tree_id, working_files
from roteiro_memory.valueclass import valueclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from roteiro_memory.repo.graph import Repo
    from roteiro_memory.store import Graph, Store

__all__ = ["Working", "working_graph"]


@valueclass
class Working:
    """The working tree's graph as one read found it."""

    tree: str
    """The working tree's tree id."""
    base: str | None
    """The store's witness it was built beside."""
    graph: Graph | None
    """Key -> blob; None when the store's graph is the working tree's already."""


def working_graph(
    store: Store,
    repo: Repo,
    skip: Mapping[str, str | None] | None = None,
    last: Working | None = None,
) -> Working:
    """The graph of ``repo``'s working tree, its symbols taken from
    ``store``'s graph where a file's blob is the stored one and parsed where
    it is not.  ``last``, the one an earlier read built, is answered again
    when neither the working tree nor the store's witness changed since:
    git still lists the tree, but nothing is parsed.  ``skip``: as for
    :func:`~.graph.working_files`."""
    hashed: set[str] = set()
    files = working_files(repo, None, None, skip, hashed)
    tree = tree_id(files.values(), repo.object_format)
    base = store.tree()
    if base == tree:
        return Working(tree, base, None)
    if last is not None and (last.tree, last.base) == (tree, base):
        return last
    return Working(tree, base, graph_blobs(build_working(store, repo, files, hashed).nodes))
