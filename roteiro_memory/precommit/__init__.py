"""The pre-commit hooks this project offers, one module per hook.

* :mod:`.check_store` -- ``roteiro-check-store``: a store's integrity and invariants.
* :mod:`.forbid_store` -- ``roteiro-forbid-store``: keep stores, their companions
  and exports out of git.
* :mod:`.lint_cases` -- ``roteiro-lint-cases``: conformance case files.
* :mod:`.conformance` -- ``roteiro-conformance``: the suite against a backend.

Files are recognised by content (:mod:`.sniff`), never by name.  Each hook is a
``main(argv) -> int`` that prints one line per finding and nothing on success
(:mod:`.report`).  This module imports nothing, so a hook starts fast.
"""

from __future__ import annotations

__all__: list[str] = []
