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

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["SCHEMA", "TIMESTAMP_FIELDS", "failure", "iso_utc", "success", "write"]

SCHEMA = "roteiro.cli/v1"
"""The envelope's own schema; the shapes inside ``result`` keep theirs."""

TIMESTAMP_FIELDS = frozenset({"created_at", "superseded_at"})
"""The fields, at any depth of a result, that hold a stored UTC timestamp."""


def iso_utc(stored: str) -> str:
    """A stored UTC timestamp (``2026-03-01 12:00:05``, perhaps with a
    fraction of a second) in ISO 8601 with its zone
    (``2026-03-01T12:00:05Z``).  A value in any other form is returned as it
    is: only an import of hand-edited data can put one in a store, and
    ``check`` is where such data is judged, not here."""
    # Read by hand, not by a regular expression: compiling one would be a
    # noticeable part of a short command's start-up.
    date, space, clock = stored.partition(" ")
    whole, dot, fraction = clock.partition(".")
    if (
        space
        and len(date) == 10
        and date[4] == date[7] == "-"
        and _ascii_digits(date[:4] + date[5:7] + date[8:])
        and len(whole) == 8
        and whole[2] == whole[5] == ":"
        and _ascii_digits(whole[:2] + whole[3:5] + whole[6:])
        and (not dot or _ascii_digits(fraction))
    ):
        return f"{date}T{clock}Z"
    return stored


def _ascii_digits(text: str) -> bool:
    """Whether ``text`` is one or more of 0-9 (``isdigit`` alone takes other
    scripts' digits, and superscripts)."""
    return text.isascii() and text.isdigit()


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
