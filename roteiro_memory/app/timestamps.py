"""One timestamp format on every surface: ISO 8601 in UTC, with the zone.

The stores keep ``created_at`` and ``superseded_at`` as PROTOCOL's
``YYYY-MM-DD HH:MM:SS`` in UTC (and so do ``export`` and the protocol
server); what a person or an agent is shown -- the command line's ``--json``
envelope, the MCP tools' results -- carries them as ``YYYY-MM-DDTHH:MM:SSZ``,
converted here and only here.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["TIMESTAMP_FIELDS", "iso_utc", "zone"]

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


def zone(value: Any) -> None:
    """Convert every timestamp field in ``value``, in place: a result is
    built fresh for the envelope, and copying 10,000 records to change two
    fields in each would cost as much as encoding them."""
    if type(value) is dict:
        for key, item in value.items():
            if key in TIMESTAMP_FIELDS:
                if type(item) is str:
                    value[key] = iso_utc(item)
            elif type(item) is dict or type(item) is list:
                zone(item)
    elif type(value) is list:
        for item in value:
            if type(item) is dict or type(item) is list:
                zone(item)
