"""The semantics rendered as SQL expressions, for backends that rank in SQL.

Nothing here states a rule: the anchor rule comes from
:data:`~roteiro_memory.semantics.ANCHOR_RULE`, the penalties from
:data:`~roteiro_memory.semantics.ANCHOR_PENALTY`, and decay from
:class:`~roteiro_memory.semantics.Decay`.  Arithmetic is written in the same
order as the Python so both produce the same doubles, which a test pins.
Numbers that vary are bound as named parameters, never formatted in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from roteiro_memory.semantics import (
    ANCHOR_PENALTY,
    ANCHOR_RULE,
    DEFAULT_BASE_CONFIDENCE,
    AnchorState,
    Decay,
)

__all__ = ["POSTGRES", "SQLITE", "Dialect", "anchor_case", "applies_expr", "score_expr"]


@dataclass(frozen=True)
class Dialect:
    """The few spellings that differ between the SQL engines we speak."""

    greatest: str
    power: str
    real: str
    param: str
    """How a named parameter ``x`` is written, as a format with ``{name}``."""


SQLITE = Dialect(greatest="max", power="pow", real="REAL", param=":{name}")
POSTGRES = Dialect(greatest="GREATEST", power="power", real="double precision", param="%({name})s")


def anchor_case(
    values: Mapping[AnchorState, str],
    *,
    anchor_key: str,
    anchor_blob: str,
    node_key: str,
    node_blob: str,
) -> str:
    """A CASE expression yielding ``values[state]`` for the anchor state the
    rule assigns, given the column names of the recorded anchor and of the
    left-joined node (``node_key`` is NULL when there is no such node)."""
    conditions = {
        "no_anchor": f"{anchor_key} IS NULL",
        "no_node": f"{node_key} IS NULL",
        "blob_missing": f"{anchor_blob} IS NULL OR {node_blob} IS NULL",
        "blob_equal": f"{anchor_blob} = {node_blob}",
    }
    parts = ["CASE"]
    for condition, state in ANCHOR_RULE:
        if condition == "otherwise":
            parts.append(f"ELSE {values[state]}")
        else:
            parts.append(f"WHEN {conditions[condition]} THEN {values[state]}")
    parts.append("END")
    return " ".join(parts)


def penalty_values() -> dict[AnchorState, str]:
    """The penalty table as SQL literals (``repr`` round-trips a double)."""
    return {state: repr(value) for state, value in ANCHOR_PENALTY.items()}


def applies_values() -> dict[AnchorState, str]:
    """1 for states that apply, 0 for the rest."""
    return {state: "1" if state.applies else "0" for state in AnchorState}


def decay_expr(decay: Decay, dialect: Dialect, *, id_column: str) -> tuple[str, dict[str, object]]:
    """The decay factor of a row as SQL, with the parameters it binds.

    Binds ``generation`` (the memory generation) and ``decay_parameter`` (the
    clamped parameter as a double, as :meth:`Decay.factor` divides by it).
    """
    if decay.mode == "none":
        return "1.0", {}
    generation = dialect.param.format(name="generation")
    parameter = dialect.param.format(name="decay_parameter")
    ratio = f"(CAST({generation} - {id_column} AS {dialect.real}) / {parameter})"
    params: dict[str, object] = {"decay_parameter": float(decay.effective_parameter)}
    if decay.mode == "linear":
        return f"{dialect.greatest}(0.0, 1.0 - {ratio})", params
    return f"{dialect.power}(0.5, {ratio})", params


def score_expr(
    decay: Decay,
    dialect: Dialect,
    *,
    confidence: str,
    id_column: str,
    anchor_key: str,
    anchor_blob: str,
    node_key: str,
    node_blob: str,
) -> tuple[str, dict[str, object]]:
    """``base * penalty * decay`` as SQL, multiplied left to right like
    :func:`roteiro_memory.semantics.score`."""
    penalty = anchor_case(
        penalty_values(),
        anchor_key=anchor_key,
        anchor_blob=anchor_blob,
        node_key=node_key,
        node_blob=node_blob,
    )
    factor, params = decay_expr(decay, dialect, id_column=id_column)
    base = f"COALESCE({confidence}, {DEFAULT_BASE_CONFIDENCE!r})"
    return f"{base} * ({penalty}) * {factor}", params


def applies_expr(*, anchor_key: str, anchor_blob: str, node_key: str, node_blob: str) -> str:
    """1 when the anchor state applies, else 0."""
    return anchor_case(
        applies_values(),
        anchor_key=anchor_key,
        anchor_blob=anchor_blob,
        node_key=node_key,
        node_blob=node_blob,
    )
