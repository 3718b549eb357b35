"""LongMemEval (``longmemeval_{oracle,s,m}.json`` and the ``_cleaned``
files, MIT): each instance is one question with its own haystack.

As the authors' retrieval evaluation does, only user turns are indexed: at
``session`` granularity one record per session (its user turns joined by
spaces, under the session id), at ``turn`` granularity one per user turn
(``{session_id}_{i+1}``, i counting every turn).  Gold is the evidence
sessions (ids starting ``answer_``) with a user turn marked ``has_answer``,
or at turn level those user turns.  Abstention questions (``_abs``) and
questions with no user-side evidence are excluded and counted.  Instances
are streamed one at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from roteiro_memory.evaluation.datasets.corpus import (
    Dataset,
    DatasetInfo,
    Haystack,
    Item,
    Query,
    Source,
)
from roteiro_memory.evaluation.datasets.jsonfile import (
    DatasetFileError,
    read_objects,
    sha256,
    text,
)

__all__ = ["GRANULARITIES", "LICENCE", "longmemeval"]

LICENCE = "MIT"
GRANULARITIES = ("session", "turn")


def _haystack(instance: dict[str, Any], granularity: str, info: DatasetInfo) -> Haystack | None:
    question_id = str(instance.get("question_id"))
    sessions = instance.get("haystack_sessions")
    session_ids = instance.get("haystack_session_ids")
    if not isinstance(sessions, list) or not isinstance(session_ids, list):
        raise DatasetFileError(
            f"instance {question_id!r}: expected lists 'haystack_sessions' and "
            "'haystack_session_ids'"
        )
    if question_id.endswith("_abs"):
        info.exclude("abstention (_abs)")
        return None
    items: list[Item] = []
    gold: set[str] = set()
    for session_id, turns in zip(session_ids, sessions, strict=True):
        evidence = str(session_id).startswith("answer_")
        user = [(i, t) for i, t in enumerate(turns) if t.get("role") == "user"]
        said = [
            text(t.get("content", ""), f"session {session_id!r} turn {i} 'content'")
            for i, t in user
        ]
        if granularity == "session":
            items.append(Item(str(session_id), " ".join(said)))
            if evidence and any(t.get("has_answer") for _, t in user):
                gold.add(str(session_id))
        else:
            for (i, turn), content in zip(user, said, strict=True):
                key = f"{session_id}_{i + 1}"
                items.append(Item(key, content))
                if evidence and turn.get("has_answer"):
                    gold.add(key)
    if not gold:
        info.exclude("no user-side evidence")
        return None
    query = Query(
        question_id,
        text(instance["question"], "'question'"),
        frozenset(gold),
        text(instance["question_type"], "'question_type'"),
    )
    return Haystack(tuple(items), (query,))


def longmemeval(path: Path, granularity: str = "session", sample: int | None = None) -> Dataset:
    """LongMemEval from ``path``; ``sample`` keeps the first N instances."""
    if granularity not in GRANULARITIES:
        raise ValueError(
            f"unknown granularity {granularity!r}: expected one of {', '.join(GRANULARITIES)}"
        )
    info = DatasetInfo(
        "longmemeval",
        LICENCE,
        sample,
        None,
        Source(path.name, sha256(path)) if path.is_file() else None,
        options={"granularity": granularity},
    )

    def read(instance: dict[str, Any]) -> Haystack | None:
        return _haystack(instance, granularity, info)

    def stream() -> Iterator[Haystack]:
        found = read_objects(path, "a LongMemEval instance", read, sample)
        yield from (haystack for haystack in found if haystack is not None)

    return Dataset(info, stream())
