"""The one JSON envelope every ``--json`` command prints.

Success and failure alike are one line, one object, on stdout::

    {"schema": "roteiro.cli/v1", "ok": true, "result": ...}
    {"schema": "roteiro.cli/v1", "ok": false, "error": {"kind": "NotFound", "message": "..."}}

``result`` is the command's PROTOCOL shape; ``error.kind`` is one of the
PROTOCOL error kinds (:data:`roteiro_memory.errors.ERROR_KINDS`).  The exit
status is the same as without ``--json``.

Timestamps are converted here, and only here: the stores keep ``created_at``
and ``superseded_at`` as PROTOCOL's ``YYYY-MM-DD HH:MM:SS`` in UTC, and the
envelope carries them as ISO 8601 with the zone, ``YYYY-MM-DDTHH:MM:SSZ``.
"""

from __future__ import annotations

import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SCHEMA", "TIMESTAMP_FIELDS", "failure", "iso_utc", "success", "write"]

SCHEMA = "roteiro.cli/v1"
"""The envelope's own schema; the shapes inside ``result`` keep theirs."""

TIMESTAMP_FIELDS = frozenset({"created_at", "superseded_at"})
"""The fields, at any depth of a result, that hold a stored UTC timestamp."""

_STORED = r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)"
"""A stored timestamp: a pattern, compiled when first used."""


def iso_utc(stored: str) -> str:
    """A stored UTC timestamp (``2026-03-01 12:00:05``) in ISO 8601 with its
    zone (``2026-03-01T12:00:05Z``).  A value in any other form is returned
    as it is: only an import of hand-edited data can put one in a store, and
    ``check`` is where such data is judged, not here."""
    match = re.fullmatch(_STORED, stored)
    return f"{match[1]}T{match[2]}Z" if match else stored


def _zone(value: Any) -> None:
    """Convert every timestamp field in ``value``, in place: a result is
    built fresh for the envelope, and copying 10,000 records to change two
    fields in each would cost as much as encoding them."""
    if type(value) is dict:
        for key, item in value.items():
            if key in TIMESTAMP_FIELDS:
                if type(item) is str:
                    value[key] = iso_utc(item)
            elif type(item) is dict or type(item) is list:
                _zone(item)
    elif type(value) is list:
        for item in value:
            if type(item) is dict or type(item) is list:
                _zone(item)


def success(result: Any) -> dict[str, Any]:
    """The envelope around ``result`` (a fresh JSON value, converted in place)."""
    _zone(result)
    return {"schema": SCHEMA, "ok": True, "result": result}


def failure(kind: str, message: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "ok": False, "error": {"kind": kind, "message": message}}


def write(envelope: dict[str, Any]) -> None:
    """Print an envelope on one line of stdout (ASCII-escaped, so any locale
    prints it, and no control character reaches a terminal raw)."""
    import json

    sys.stdout.write(json.dumps(envelope) + "\n")
    sys.stdout.flush()
