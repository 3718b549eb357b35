"""LoCoMo (``locomo10.json``, CC BY-NC 4.0): one haystack per conversation.

Each turn is a record under its ``dia_id`` (``speaker: text``, an image
turn's caption appended); sessions are found by ``session_<n>`` and taken in
numeric order.  Questions of category 5 (adversarial) are left out, as most
retrieval reports do; an evidence string may hold several ids separated by
``;``; ids naming no turn are counted and dropped, and a question left with
no evidence is excluded.  The file is read from the operator's path only.
"""

from __future__ import annotations

import re
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
    kind,
    read_objects,
    sha256,
    text,
)

__all__ = ["CATEGORIES", "LICENCE", "locomo"]

LICENCE = "CC BY-NC 4.0"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_SESSION = re.compile(r"^session_(\d+)$")
_CAPTION = "blip_caption"
"""A turn's member holding what its shared image shows."""


def _holding(value: object, where: str, members: str, key: str, what: str) -> None:
    """Refuse ``value``, the element ``where`` names, unless it is an object
    (``members`` says which it should hold) holding ``key`` (``what`` it is)."""
    if not isinstance(value, dict):
        raise DatasetFileError(f"{where} is {kind(value)}, expected an object with {members}")
    if key not in value:
        raise DatasetFileError(f"{where} has no {key!r}, {what}")


def _turns(conversation: dict[str, Any]) -> Iterator[Item]:
    """Each session's turns, in order; a session that is no array of turns,
    a turn that is no object, and one with no ``dia_id`` are refused, named
    by the session and the turn's place in it."""
    sessions = sorted((int(m.group(1)), key) for key in conversation if (m := _SESSION.match(key)))
    for _, key in sessions:
        turns = conversation[key] or []
        if not isinstance(turns, list):
            raise DatasetFileError(f"{key!r} is {kind(turns)}, expected an array of turns")
        for number, turn in enumerate(turns):
            where = f"{key!r} turn {number}"
            _holding(turn, where, "'dia_id', 'speaker' and 'text'", "dia_id", "its id")
            dia_id = str(turn["dia_id"])
            said = text(turn.get("text", ""), f"turn {dia_id!r} 'text'")
            caption = turn.get(_CAPTION)
            if caption:
                said = f"{said} [image: {text(caption, f'turn {dia_id!r} {_CAPTION!r}')}]"
            speaker = text(turn.get("speaker", ""), f"turn {dia_id!r} 'speaker'")
            yield Item(dia_id, f"{speaker}: {said}")


def _haystack(sample: dict[str, Any], info: DatasetInfo) -> Haystack:
    if not isinstance(sample.get("conversation"), dict) or not isinstance(sample.get("qa"), list):
        raise DatasetFileError(
            f"conversation {sample.get('sample_id')!r}: expected 'conversation' and 'qa'"
        )
    items = tuple(_turns(sample["conversation"]))
    known = {item.key for item in items}
    queries: list[Query] = []
    for number, qa in enumerate(sample["qa"]):
        _holding(qa, f"question {number}", "'question' and 'evidence'", "question", "its text")
        category = qa.get("category")
        if category == 5:
            info.exclude("adversarial (category 5)")
            continue
        evidence = qa.get("evidence") or []
        if not isinstance(evidence, list):
            # A string would be read a character at a time, each one an id.
            raise DatasetFileError(
                f"question {number} 'evidence' is {kind(evidence)}, expected an array of turn ids"
            )
        ids = [part.strip() for entry in evidence for part in str(entry).split(";") if part.strip()]
        unresolved = [i for i in ids if i not in known]
        if unresolved:
            info.exclude("evidence ids naming no turn", len(unresolved))
        gold = frozenset(i for i in ids if i in known)
        if not gold:
            info.exclude("no resolvable evidence")
            continue
        style = (
            CATEGORIES.get(category, f"category-{category}") if isinstance(category, int) else "?"
        )
        queries.append(
            Query(
                f"{sample.get('sample_id')}:{number}",
                text(qa["question"], f"question {number} 'question'"),
                gold,
                style,
            )
        )
    return Haystack(items, tuple(queries))


def locomo(path: Path, sample: int | None = None) -> Dataset:
    """LoCoMo from ``path``; ``sample`` keeps the first N conversations."""
    info = DatasetInfo(
        "locomo", LICENCE, sample, None, Source(path.name, sha256(path)) if path.is_file() else None
    )

    def read(conversation: dict[str, Any]) -> Haystack:
        return _haystack(conversation, info)

    return Dataset(info, read_objects(path, "a LoCoMo conversation", read, sample))
