"""Decay: how age, in generations, is priced into recall (PROTOCOL
[P-decay-tokens], [P-decay-factors]).  A pure value with no I/O, one of the
rules of :mod:`roteiro_memory.semantics`, which names it beside the others;
its factor is rendered into SQL by :mod:`roteiro_memory.stores.sql.expressions`.
"""

from __future__ import annotations

import math

from roteiro_memory.arguments import U64_MAX, is_integer, parse_whole_number
from roteiro_memory.errors import InvalidDecay, excerpt
from roteiro_memory.valueclass import valueclass

__all__ = ["DEFAULT_DECAY_SPAN", "DEFAULT_HALF_LIFE", "Decay"]

DEFAULT_DECAY_SPAN = 200
"""Generations over which ``linear`` decay reaches zero when no span is given."""

DEFAULT_HALF_LIFE = 50
"""Generations per halving for ``exponential`` decay when none is given."""


@valueclass
class Decay:
    """How age, in generations, is priced into recall.

    ``mode`` is ``none`` (the default, and the only reproducible mode),
    ``linear`` (falls to zero over ``parameter`` generations and stays) or
    ``exponential`` (halves every ``parameter`` generations, never zero).
    A parameter of 0 is kept as given and clamped to 1 when computing; one
    that is not an ``int`` (a ``bool``, a ``float``) is InvalidDecay, so
    :meth:`token` always parses back.  Decay ranks; it never filters.
    """

    mode: str = "none"
    parameter: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.mode, str) or self.mode not in _DECAY_DEFAULTS:
            raise InvalidDecay(
                f"unknown decay mode {excerpt(self.mode)}: expected none, linear or exponential"
            )
        if not is_integer(self.parameter):
            raise InvalidDecay(
                f"invalid decay parameter {excerpt(self.parameter)}: expected a whole number "
                "of generations (an int)"
            )
        if self.mode == "none" and self.parameter != 0:
            raise InvalidDecay("decay 'none' takes no parameter: it has no age term")
        if not 0 <= self.parameter <= U64_MAX:
            raise InvalidDecay(f"decay parameter {self.parameter} is outside 0..{U64_MAX}")

    @classmethod
    def none(cls) -> Decay:
        return cls("none", 0)

    @classmethod
    def linear(cls, span: int = DEFAULT_DECAY_SPAN) -> Decay:
        return cls("linear", span)

    @classmethod
    def exponential(cls, half_life: int = DEFAULT_HALF_LIFE) -> Decay:
        return cls("exponential", half_life)

    @classmethod
    def parse(cls, token: Decay | str) -> Decay:
        """The decay a token names: ``none``, ``linear[:N]``, ``exponential[:N]``.

        Matched exactly, untrimmed; anything else, of any type, is
        :class:`InvalidDecay`.
        """
        if isinstance(token, Decay):
            return token
        if not isinstance(token, str):
            raise InvalidDecay(
                f"invalid decay {excerpt(token)}: expected a Decay or a decay token (a str)"
            )
        mode, sep, param = token.partition(":")
        if mode not in _DECAY_DEFAULTS:
            raise InvalidDecay(
                f"unknown decay {excerpt(token)}: expected none, linear, linear:N, "
                "exponential or exponential:N (N a whole number of generations)"
            )
        if not sep:
            return cls(mode, _DECAY_DEFAULTS[mode])
        if mode == "none":
            raise InvalidDecay(
                f"invalid decay {excerpt(token)}: 'none' takes no parameter, it has no age term"
            )
        value = parse_whole_number(param)
        if value is None:
            raise InvalidDecay(
                f"invalid decay {excerpt(token)}: the parameter {excerpt(param)} is not a whole "
                f"number of generations (ASCII digits, at most {U64_MAX})"
            )
        return cls(mode, value)

    @property
    def effective_parameter(self) -> int:
        """The parameter as computed with: a degenerate 0 is clamped to 1."""
        return max(self.parameter, 1)

    def factor(self, age: int) -> float:
        """The age factor for a record ``age`` generations old, in [0, 1].

        ``none`` is exactly 1 at every age.  Ratios are taken between floats so
        the result matches the reference and the rendering in SQL bit for bit.
        """
        if self.mode == "none":
            return 1.0
        ratio = float(age) / float(self.effective_parameter)
        if self.mode == "linear":
            return max(0.0, 1.0 - ratio)
        return math.pow(0.5, ratio)

    @property
    def is_reproducible(self) -> bool:
        """True only for ``none``: no age term, so recall is byte-identical."""
        return self.mode == "none"

    def token(self) -> str:
        """The token that parses back to this decay."""
        return "none" if self.mode == "none" else f"{self.mode}:{self.parameter}"

    def __str__(self) -> str:
        return self.token()

    def to_json(self) -> object:
        """``"none"``, ``{"linear": {"span": N}}`` or ``{"exponential": {"half_life": N}}``."""
        if self.mode == "none":
            return "none"
        name = "span" if self.mode == "linear" else "half_life"
        return {self.mode: {name: self.parameter}}


_DECAY_DEFAULTS = {"none": 0, "linear": DEFAULT_DECAY_SPAN, "exponential": DEFAULT_HALF_LIFE}
