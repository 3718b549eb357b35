"""The use cases, below every front end.

The command line (:mod:`roteiro_memory.cli`), the MCP server
(:mod:`roteiro_memory.agents`) and the hooks turn what they were given into a
call here and render what comes back; nothing here parses a command line,
speaks MCP or prints.  So a person and an agent see the same store, the same
anchor states and the same refusals.

* :mod:`.session` -- the repository and store one request works on, found,
  opened and synced lazily;
* :mod:`.anchors` -- what an anchor names (a path, ``PATH::QUALNAME``, a raw
  key) and the anchor filter of a read;
* :mod:`.values` -- numbers as a person or an agent writes them;
* :mod:`.records` -- remember, get, forget, list, and ranked reads (recall,
  search, touched);
* :mod:`.cache` -- the cache tier's operations;
* :mod:`.reanchor` -- where stale records' code is now, re-anchoring them
  there, and confirming drifted ones;
* :mod:`.pack` -- the session digest;
* :mod:`.maintenance` -- check, export and import of a whole store.
"""
