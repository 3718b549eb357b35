"""The rules PROTOCOL.md states, by their stable tags.

Each rule of ``PROTOCOL.md`` is introduced by a tag in brackets and backticks,
`` `[P-args-unknown]` ``; the rule's text runs to the next tag or the end of
its paragraph.  Cases cite the tags in their ``rules`` field: the loader
refuses a tag this page does not define, and a test fails when a tag is cited
by no case.  :func:`unquoted_phrases` finds the phrases a ``clause`` quotes
from PROTOCOL that the page does not hold word for word.

This module does not import pytest.
"""

from __future__ import annotations

import re
from functools import cache

from roteiro_memory.suite.data import builtin_dir

__all__ = [
    "PROTOCOL_FILE",
    "RULE_TAG",
    "protocol_rules",
    "protocol_sections",
    "protocol_text",
    "unquoted_phrases",
]

PROTOCOL_FILE = "PROTOCOL.md"
RULE_TAG = re.compile(r"^P-[a-z0-9]+(-[a-z0-9]+)*$")
_DEFINITION = re.compile(r"`\[(P-[a-z0-9-]+)\]`")
_QUOTED = re.compile(r'"([^"]+)"')


@cache
def protocol_text() -> str:
    """PROTOCOL.md as shipped."""
    return (builtin_dir() / PROTOCOL_FILE).read_text(encoding="utf-8")


def _plain(text: str) -> str:
    """Text with Markdown emphasis and code marks dropped and spaces collapsed."""
    return " ".join(text.replace("`", "").replace("**", "").replace("*", "").split())


@cache
def protocol_rules() -> dict[str, str]:
    """Every rule tag PROTOCOL.md defines, with the rule's text, in page order."""
    text = protocol_text()
    rules: dict[str, str] = {}
    matches = list(_DEFINITION.finditer(text))
    for index, match in enumerate(matches):
        tag = match.group(1)
        if tag in rules:
            raise ValueError(f"{PROTOCOL_FILE}: rule {tag} is defined twice")
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        body = text[match.end() : end].split("\n\n", 1)[0]
        rules[tag] = _plain(body.split("\n- ", 1)[0])
    return rules


@cache
def protocol_sections() -> tuple[str, ...]:
    """The titles of PROTOCOL.md's sections (``##`` headings)."""
    return tuple(
        line[3:].strip() for line in protocol_text().splitlines() if line.startswith("## ")
    )


def unquoted_phrases(clause: str) -> list[str]:
    """The phrases ``clause`` quotes from PROTOCOL that PROTOCOL.md does not
    hold word for word (Markdown marks and line breaks aside).

    A clause is read as ``;``-separated citations, each naming its source
    first (``PROTOCOL``, ``ADR-0013``, ``memory.rs``) or, when it starts with a
    quote, continuing the one before; the phrases quoted from PROTOCOL are
    checked.  Section titles count as text.
    """
    page = _plain(protocol_text())
    missing = []
    source = ""
    for citation in clause.split(";"):
        words = citation.split()
        if words and not words[0].startswith('"'):
            source = words[0]
        if source != "PROTOCOL":
            continue
        for phrase in _QUOTED.findall(citation):
            if _plain(phrase) not in page:
                missing.append(phrase)
    return missing
