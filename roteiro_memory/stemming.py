"""The tokenizer's stemming step (:class:`~roteiro_memory.lexical.Tokenizer`'s
``stem``): a light suffix stripper, its rules as data."""

from __future__ import annotations

__all__ = ["KEEP_DOUBLE", "MIN_STEM", "STEM_RULES", "stem"]

STEM_RULES: tuple[tuple[str, str], ...] = (
    ("ies", "y"),
    ("sses", "ss"),
    ("ss", "ss"),
    ("ing", ""),
    ("ed", ""),
    ("es", "e"),
    ("s", ""),
)
"""The suffix step of :func:`stem`: the first rule whose suffix ends the word
is the only one tried, and replaces the suffix when at least :data:`MIN_STEM`
letters remain.  ``ss`` maps
to itself so ``class`` keeps its final ``s``."""

MIN_STEM = 3
"""Fewest letters a stemming step may leave."""

KEEP_DOUBLE = frozenset("lsz")
"""Doubled final letters that :func:`stem` keeps (``call``, ``pass``, ``buzz``)."""

_VOWELS = frozenset("aeiou")


def stem(word: str) -> str:
    """A light suffix stripper for lower-case ASCII words, in three steps:
    one :data:`STEM_RULES` suffix, then a doubled final consonant undoubled
    (``runn`` -> ``run``), then one final ``e`` dropped -- so ``cache``,
    ``caches``, ``cached`` and ``caching`` all become ``cach``.  Any other
    token (digits, capitals, non-ASCII, punctuation) is returned unchanged."""
    if not (word.isascii() and word.isalpha() and word.islower()):
        return word
    for suffix, replacement in STEM_RULES:
        if word.endswith(suffix):
            shorter = word[: len(word) - len(suffix)] + replacement
            if len(shorter) >= MIN_STEM:
                word = shorter
            break
    if (
        len(word) > MIN_STEM
        and word[-1] == word[-2]
        and word[-1] not in _VOWELS
        and word[-1] not in KEEP_DOUBLE
    ):
        word = word[:-1]
    if word.endswith("e") and len(word) - 1 >= MIN_STEM:
        word = word[:-1]
    return word
