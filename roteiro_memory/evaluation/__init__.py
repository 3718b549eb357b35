"""``roteiro-memory eval``: a deterministic, judge-free retrieval evaluation.

Arms side by side over the same records -- the ``recall`` filter, the
``search`` ranking arm and the ``bm25s`` yardstick -- on the built-in
``coding`` dataset or a public benchmark read from the operator's path.
Run it as ``python -m roteiro_memory.evaluation``; metrics are defined in
``docs/eval.md``.
"""

from __future__ import annotations

__all__: list[str] = []
