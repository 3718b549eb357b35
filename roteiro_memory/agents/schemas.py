"""JSON Schemas of the PROTOCOL shapes the MCP tools return.

Each mirrors a ``to_json`` of :mod:`roteiro_memory.results` field for field;
the SDK's client validates every structured result against them, so a shape
that drifts from its schema fails the end-to-end tests.
"""

from __future__ import annotations

from typing import Any

from roteiro_memory.app.reanchor import REANCHOR_SCHEMA
from roteiro_memory.app.shown import CONFLICTS_SCHEMA
from roteiro_memory.lexical import SEARCH_SCHEMA
from roteiro_memory.results import MEMORY_SCHEMA, RECALL_SCHEMA
from roteiro_memory.semantics import AnchorState, MemoryKind

__all__ = [
    "CONFLICTS",
    "FORGOTTEN",
    "LISTING",
    "PROPOSALS",
    "RECALL",
    "RECORD",
    "REMEMBERED",
    "REWRITTEN",
]

Schema = dict[str, Any]

_NULLABLE_STRING: Schema = {"type": ["string", "null"]}
_ID: Schema = {"type": "integer", "minimum": 1}


def _object(properties: Schema, *, optional: tuple[str, ...] = ()) -> Schema:
    return {
        "type": "object",
        "properties": properties,
        "required": [name for name in properties if name not in optional],
        "additionalProperties": False,
    }


RECORD: Schema = _object(
    {
        "id": _ID,
        "scope": {"type": "string"},
        "kind": {"enum": [k.value for k in MemoryKind]},
        "anchor": _object(
            {"key": {"type": "string"}, "blob": _NULLABLE_STRING, "path": _NULLABLE_STRING}
        ),
        "anchor_state": {"enum": [s.value for s in AnchorState]},
        "applies": {"type": "boolean"},
        "body": {"type": "string"},
        "confidence": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
        "tree": _NULLABLE_STRING,
        "created_at": {"type": "string"},
        "superseded_by": {"type": ["integer", "null"]},
        "superseded_at": _NULLABLE_STRING,
    },
    optional=("anchor",),
)
"""A record; ``anchor`` is left out when it has none."""

_DECAY: Schema = {
    "oneOf": [
        {"const": "none"},
        _object({"linear": _object({"span": {"type": "integer", "minimum": 0}})}),
        _object({"exponential": _object({"half_life": {"type": "integer", "minimum": 0}})}),
    ]
}

_RECALLED: Schema = _object(
    {
        "relevance": {"type": "number"},
        "score": {"type": "number"},
        "base_confidence": {"type": "number"},
        "anchor_penalty": {"type": "number"},
        "decay_factor": {"type": "number"},
        "age": {"type": "integer", "minimum": 0},
        "record": RECORD,
    },
    optional=("relevance",),
)
"""A ranked record; ``relevance`` only from ``memory.search``."""

_COUNTS: Schema = {
    "live": {"type": "integer", "minimum": 0},
    "superseded": {"type": "integer", "minimum": 0},
}

_IDS: Schema = {"type": "array", "items": _ID}

_PLACE: Schema = {"scope": {"type": "string"}, "anchor": {"type": "string"}, "ids": _IDS}
_CONFLICT: Schema = _object(_PLACE, optional=("scope",))
"""Live decisions at one anchor that disagree (:mod:`roteiro_memory.conflicts`)."""

_MARKS: Schema = {
    "collapsed": {
        "type": "array",
        "items": _object({"id": _ID, "count": {"type": "integer", "minimum": 2}, "ids": _IDS}),
    },
    "conflicts": {"type": "array", "items": _CONFLICT},
}
"""What a shown read carries beside the PROTOCOL shape, each only when there
is one (:mod:`roteiro_memory.app.shown`): the near-duplicates each shown
record stands for, and the conflicts of the shown decisions."""

RECALL: Schema = _object(
    {
        "schema": {"enum": [RECALL_SCHEMA, SEARCH_SCHEMA]},
        "generation": {"type": "integer", "minimum": 0},
        "decay": _DECAY,
        "reproducible": {"type": "boolean"},
        "terms": {"type": "array", "items": {"type": "string"}},
        "results": {"type": "array", "items": _RECALLED},
        **_COUNTS,
        **_MARKS,
    },
    optional=("terms", *_MARKS),
)
"""``memory.recall``'s shape, or ``memory.search``'s (a query given): its
``terms`` and each result's ``relevance`` besides."""

LISTING: Schema = _object(
    {
        "schema": {"const": MEMORY_SCHEMA},
        "records": {"type": "array", "items": RECORD},
        **_COUNTS,
        **_MARKS,
    },
    optional=tuple(_MARKS),
)

CONFLICTS: Schema = _object(
    {
        "schema": {"const": CONFLICTS_SCHEMA},
        "conflicts": {
            "type": "array",
            "items": _object(
                {
                    **_PLACE,
                    "statements": {"type": "array", "items": _IDS},
                    "settle": {"type": "string"},
                },
                optional=("scope",),
            ),
        },
        "live": {"type": "integer", "minimum": 0},
    }
)
"""``roteiro-memory conflicts``: every unresolved conflict."""

FORGOTTEN: Schema = _object({"id": _ID, "restored": {"type": "array", "items": _ID}})

REMEMBERED: Schema = _object(
    {
        "id": _ID,
        "existing": {"type": "boolean"},
        "record": RECORD,
        "conflicts": _MARKS["conflicts"],
    },
    optional=("conflicts",),
)
"""``memory.record``'s ``{"id"}``, with the record as stored, so the caller
sees the anchor state it was written with; ``existing``: true when an equal
live record answered and nothing was written; and ``conflicts``, only when
the record is a live decision others at its anchor disagree with."""

_KEY_OR_NULL: Schema = _NULLABLE_STRING
_EVIDENCE: Schema = {
    "oneOf": [
        _object({"kind": {"const": "blob"}, "key": {"type": "string"}}),
        _object({"kind": {"const": "symbol"}, "key": {"type": "string"}}),
        _object({"kind": {"const": "drift"}, "key": {"type": "string"}, "blob": _NULLABLE_STRING}),
        _object(
            {
                "kind": {"const": "rename"},
                "from": {"type": "string"},
                "to": {"type": "string"},
                "similarity": {"type": "integer", "minimum": 0, "maximum": 100},
                "before": _NULLABLE_STRING,
            }
        ),
    ]
}

PROPOSALS: Schema = _object(
    {
        "schema": {"const": REANCHOR_SCHEMA},
        "tree": _NULLABLE_STRING,
        "proposals": {
            "type": "array",
            "items": _object(
                {
                    "record": RECORD,
                    "action": {"enum": ["move", "confirm", "none"]},
                    "certainty": {"enum": ["certain", "likely", "ambiguous", None]},
                    "to": _KEY_OR_NULL,
                    "blob": _NULLABLE_STRING,
                    "candidates": {"type": "array", "items": {"type": "string"}},
                    "evidence": {"type": "array", "items": _EVIDENCE},
                }
            ),
        },
    }
)
"""``reanchor``'s listing: where each stale record's code is now, and why."""

REWRITTEN: Schema = _object(
    {
        "schema": {"const": REANCHOR_SCHEMA},
        "written": {
            "type": "array",
            "items": _object(
                {
                    "action": {"enum": ["move", "confirm"]},
                    "supersedes": _ID,
                    "from": {"type": "string"},
                    "record": RECORD,
                }
            ),
        },
    }
)
"""What re-anchoring or confirming wrote: a superseding record each."""
