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
    "quoted_phrases",
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
        rules[tag] = _plain(_rule_body(text[match.end() : end]))
    return rules


def _rule_body(after_tag: str) -> str:
    """A rule's text: its paragraph (or list item), and when that ends with
    a colon, the numbered steps or indented formula that follow, and the
    paragraph after a formula."""
    paragraphs = after_tag.split("\n\n")
    body = paragraphs[0].split("\n- ", 1)[0]
    if not body.rstrip().endswith(":"):
        return body
    parts = [body]
    for paragraph in paragraphs[1:]:
        if re.match(r"\d+\. ", paragraph) or paragraph.startswith("    "):
            parts.append(paragraph)
        elif parts[-1].startswith("    ") and not paragraph.startswith(("`[", "**", "#")):
            parts.append(paragraph)
            break
        else:
            break
    return "\n".join(parts)


@cache
def protocol_sections() -> tuple[str, ...]:
    """The titles of PROTOCOL.md's sections (``##`` headings), Markdown marks aside."""
    return tuple(
        _plain(line[3:]) for line in protocol_text().splitlines() if line.startswith("## ")
    )


def _citations(clause: str) -> list[str]:
    """``clause`` split at the ``;`` that stand outside parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(clause):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ";" and depth == 0:
            parts.append(clause[start:index])
            start = index + 1
    parts.append(clause[start:])
    return parts


def _parenthesized(citation: str) -> list[str]:
    """The outermost ``(...)`` groups of ``citation``, without their marks."""
    found, depth, start = [], 0, 0
    for index, char in enumerate(citation):
        if char == "(":
            if depth == 0:
                start = index + 1
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                found.append(citation[start:index])
    return found


def quoted_phrases(clause: str) -> list[str]:
    """The phrases ``clause`` quotes from PROTOCOL: in a citation naming
    PROTOCOL, the text in parentheses and the text in double quotes (a
    section title, or words of a rule).

    A clause is read as ``;``-separated citations, each naming its source
    first (``PROTOCOL``, ``ADR-0013``, ``memory.rs``) or, when it starts with a
    quote, continuing the one before.
    """
    phrases = []
    source = ""
    for citation in _citations(clause):
        words = citation.split()
        if words and not words[0].startswith('"'):
            source = words[0]
        if source != "PROTOCOL":
            continue
        groups = _parenthesized(citation)
        phrases += groups
        outside = citation
        for group in groups:
            outside = outside.replace(f"({group})", " ")
        phrases += _QUOTED.findall(outside)
    return phrases


def unquoted_phrases(clause: str) -> list[str]:
    """The phrases ``clause`` quotes from PROTOCOL (:func:`quoted_phrases`)
    that PROTOCOL.md does not hold word for word (Markdown marks and line
    breaks aside).  Section titles count as text."""
    page = _plain(protocol_text())
    return [phrase for phrase in quoted_phrases(clause) if _plain(phrase) not in page]
