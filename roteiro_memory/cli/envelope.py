"""The one JSON envelope every ``--json`` command prints.

Success and failure alike are one line, one object, on stdout::

    {"schema": "roteiro.cli/v1", "ok": true, "result": ...}
    {"schema": "roteiro.cli/v1", "ok": false, "error": {"kind": "NotFound", "message": "..."}}

``result`` is the command's PROTOCOL shape; ``error.kind`` is one of the
PROTOCOL error kinds (:data:`roteiro_memory.errors.ERROR_KINDS`).  The exit
status is the same as without ``--json``.

Timestamps are ISO 8601 with the zone, ``YYYY-MM-DDTHH:MM:SSZ``, converted
by :func:`roteiro_memory.app.timestamps.zone`, as in the MCP tools' results.
"""

from __future__ import annotations

import sys

from roteiro_memory.app.timestamps import TIMESTAMP_FIELDS, iso_utc, zone

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SCHEMA", "TIMESTAMP_FIELDS", "failure", "iso_utc", "line", "success", "write"]

SCHEMA = "roteiro.cli/v1"
"""The envelope's own schema; the shapes inside ``result`` keep theirs."""


def success(result: Any) -> dict[str, Any]:
    """The envelope around ``result`` (a fresh JSON value, converted in place)."""
    zone(result)
    return {"schema": SCHEMA, "ok": True, "result": result}


def failure(kind: str, message: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "ok": False, "error": {"kind": kind, "message": message}}


def line(envelope: dict[str, Any]) -> str:
    """An envelope as the one line printed (ASCII-escaped, so any locale
    prints it, and no control character reaches a terminal raw)."""
    import json

    return json.dumps(envelope) + "\n"


def write(envelope: dict[str, Any]) -> None:
    """Print an envelope on one line of stdout (:func:`line`)."""
    sys.stdout.write(line(envelope))
    sys.stdout.flush()
