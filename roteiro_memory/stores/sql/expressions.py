"""The semantics rendered as SQL expressions in a store's
:class:`~.dialects.Dialect`.

The renderings state no rule: the anchor rule comes from
:data:`~roteiro_memory.semantics.ANCHOR_RULE`, the penalties from
:data:`~roteiro_memory.semantics.ANCHOR_PENALTY`, and decay from
:class:`~roteiro_memory.semantics.Decay`.  Arithmetic is written in the same
order as the Python so both produce the same doubles, which a test pins.
Numbers that vary are bound as named parameters, never formatted in.
"""

from __future__ import annotations

from collections.abc import Mapping

from roteiro_memory import semantics as sem
from roteiro_memory.eviction import EVICTION_ORDER, MOST_RECENTLY_USED
from roteiro_memory.semantics import (
    ANCHOR_PENALTY,
    ANCHOR_RULE,
    DEFAULT_BASE_CONFIDENCE,
    AnchorState,
    Decay,
    MemoryKind,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from roteiro_memory.store import KindFilter
    from roteiro_memory.stores.sql.dialects import Dialect

__all__ = [
    "anchor_case",
    "applies_expr",
    "eviction_order",
    "evidence_parts_expr",
    "most_recently_used",
    "pinned_expr",
    "record_filters",
    "score_expr",
]


_HALF_POWER_ZERO = 1075.0
"""``0.5 ** x`` rounds to 0 exactly when ``x >= 1075``: 2**-1075 is half the
smallest subnormal and ties go to the even neighbour, 0."""
_SAFE_EXPONENT = 500
"""Products of factors in [0, 1] each at least 2**-502 stay normal."""


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
    generation = dialect.named("generation")
    parameter = dialect.named("decay_parameter")
    ratio = f"(CAST({generation} - {id_column} AS {dialect.real}) / {parameter})"
    params: dict[str, object] = {"decay_parameter": float(decay.effective_parameter)}
    if decay.mode == "linear":
        return f"{dialect.greatest}(0.0, 1.0 - {ratio})", params
    if dialect.traps_underflow:
        zero = _real(0.0, dialect)
        return (
            f"CASE WHEN {ratio} >= {_real(_HALF_POWER_ZERO, dialect)} THEN {zero}"
            f" ELSE {dialect.power}(0.5, {ratio}) END",
            params,
        )
    return f"{dialect.power}(0.5, {ratio})", params


def _real(value: float, dialect: Dialect) -> str:
    """A double as a typed SQL literal (``repr`` round-trips it)."""
    return f"CAST({value!r} AS {dialect.real})"


PRODUCT = "roteiro_product"
"""The function of a store's schema that multiplies two factors in [0, 1] as
IEEE does where the dialect would refuse a product that rounds to 0
(PostgreSQL's migration 12): :func:`_times` calls it for the rows near the
bottom of the double range only."""


def _times(a: str, b: str, dialect: Dialect) -> str:
    """``a * b`` for ``a`` and ``b`` in [0, 1], the IEEE product, without ever
    multiplying to a zero from non-zero operands.

    The product rounds to 0 exactly when it is at most 2**-1075.  Scaling
    both by 2**537 is exact and keeps them normal, so the scaled product
    (at least 2**-1074) is on the side of 0.5 the true one is of 2**-1075,
    unless it rounded to 0.5 itself: that tie, which no other row reaches,
    is :data:`PRODUCT`'s to decide, from Dekker's exact error of the scaled
    product."""
    zero, low, up = _real(0.0, dialect), _real(2.0**-511, dialect), _real(2.0**537, dialect)
    half = _real(0.5, dialect)
    scaled = f"({a} * {up}) * ({b} * {up})"
    return (
        f"(CASE WHEN {a} = {zero} OR {b} = {zero} THEN {zero}"
        f" WHEN {a} >= {low} AND {b} >= {low} THEN {a} * {b}"
        f" WHEN {scaled} < {half} THEN {zero}"
        f" WHEN {scaled} > {half} THEN {a} * {b}"
        f" ELSE {PRODUCT}({a}, {b}) END)"
    )


def _evidence_terms(
    decay: Decay,
    dialect: Dialect,
    typed_penalties: bool,
    *,
    confidence: str,
    id_column: str,
    anchor: tuple[str, str, str, str],
) -> tuple[str, str, str, dict[str, object]]:
    """A row's base confidence, anchor penalty (each value a typed double
    when ``typed_penalties``) and decay factor as SQL, with the parameters
    they bind; ``anchor`` is ``(anchor key, anchor blob, node key, node blob)``."""
    values = penalty_values()
    if typed_penalties:
        values = {state: f"CAST({value} AS {dialect.real})" for state, value in values.items()}
    anchor_key, anchor_blob, node_key, node_blob = anchor
    penalty = anchor_case(
        values,
        anchor_key=anchor_key,
        anchor_blob=anchor_blob,
        node_key=node_key,
        node_blob=node_blob,
    )
    factor, params = decay_expr(decay, dialect, id_column=id_column)
    return f"COALESCE({confidence}, {DEFAULT_BASE_CONFIDENCE!r})", penalty, factor, params


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
    :func:`roteiro_memory.semantics.score`.

    In a dialect that traps underflow the same product is guarded: rows whose
    factors keep it normal (the common case) multiply directly, and the rest
    go through :func:`_times`, so the doubles are still Python's.
    """
    base, penalty, factor, params = _evidence_terms(
        decay,
        dialect,
        dialect.traps_underflow,
        confidence=confidence,
        id_column=id_column,
        anchor=(anchor_key, anchor_blob, node_key, node_blob),
    )
    if not dialect.traps_underflow:
        return f"{base} * ({penalty}) * {factor}", params
    base_penalty = f"{base} * ({penalty})"
    safe = f"{base} >= {_real(2.0**-_SAFE_EXPONENT, dialect)}"
    # A base below 2**-500 (a confidence no one states): each factor named once.
    slow = f"{PRODUCT}({PRODUCT}({base}, ({penalty})), ({factor}))"
    if decay.mode != "exponential":
        # The factor is 1, 0, or at least 2**-64: with a safe base the
        # product stays normal or is an exact 0.
        return f"CASE WHEN {safe} THEN {base_penalty} * {factor} ELSE {slow} END", params
    generation = dialect.named("generation")
    parameter = dialect.named("decay_parameter")
    ratio = f"(CAST({generation} - {id_column} AS {dialect.real}) / {parameter})"
    half = f"{dialect.power}(0.5, {ratio})"
    return (
        f"CASE WHEN {safe} AND {ratio} <= {_real(float(_SAFE_EXPONENT), dialect)}"
        f" THEN {base_penalty} * {half}"
        f" WHEN {ratio} >= {_real(_HALF_POWER_ZERO, dialect)} THEN {_real(0.0, dialect)}"
        f" WHEN {safe} THEN {_times(base_penalty, half, dialect)}"
        f" ELSE {slow} END",
        params,
    )


def evidence_parts_expr(
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
    """A row's evidence terms as three SQL columns -- base confidence, anchor
    penalty, decay factor -- for a search to combine in Python
    (:func:`roteiro_memory.lexical.search_evidence`): no product is taken in
    SQL, so no dialect's underflow rules come into it."""
    base, penalty, factor, params = _evidence_terms(
        decay,
        dialect,
        False,
        confidence=confidence,
        id_column=id_column,
        anchor=(anchor_key, anchor_blob, node_key, node_blob),
    )
    # Typed, so a dialect whose bare literals are exact numerics still gives doubles.
    columns = (f"CAST({part} AS {dialect.real})" for part in (base, f"({penalty})", factor))
    return ", ".join(columns), params


def applies_expr(*, anchor_key: str, anchor_blob: str, node_key: str, node_blob: str) -> str:
    """1 when the anchor state applies, else 0."""
    return anchor_case(
        applies_values(),
        anchor_key=anchor_key,
        anchor_blob=anchor_blob,
        node_key=node_key,
        node_blob=node_blob,
    )


def eviction_order(columns: Mapping[str, str]) -> str:
    """An ORDER BY list putting eviction candidates first-to-go first, from
    :data:`~roteiro_memory.eviction.EVICTION_ORDER`; ``columns`` maps each
    field (``applies``, ``last_used``, ``key``) to its SQL."""
    return ", ".join(f"{columns[name]} ASC" for name in EVICTION_ORDER)


def most_recently_used(columns: Mapping[str, str]) -> str:
    """An ORDER BY list putting the most-recently-used entry first."""
    return ", ".join(f"{columns[name]} DESC" for name in MOST_RECENTLY_USED)


def pinned_expr(dialect: Dialect, *, applies: str, key: str, generation: str) -> str:
    """1 when a sweep must keep the entry, else 0, as
    :func:`roteiro_memory.eviction.is_pinned` decides: the most-recently-used
    entry, or an entry of the current generation whose anchor applies.

    Binds ``mru`` (that entry's key, NULL in an empty tier) and
    ``cache_generation``.
    """
    mru = dialect.named("mru")
    current = dialect.named("cache_generation")
    return (
        f"CASE WHEN {key} = {mru} OR ({generation} >= {current} AND ({applies}) = 1)"
        " THEN 1 ELSE 0 END"
    )


def record_filters(
    d: Dialect,
    scope: str | None,
    kind: KindFilter,
    anchor_key: str | None,
    include_superseded: bool,
    anchors: sem.AnchorFilter | None = None,
) -> tuple[list[str], dict[str, object]]:
    """The WHERE conditions of a listing over ``m``, and the parameters they bind."""
    kinds = sem.parse_filters(scope, kind, anchor_key, include_superseded, anchors)
    where: list[str] = []
    params: dict[str, object] = {}
    if anchors is not None:
        either = []
        if anchors.keys:
            keys = sorted(anchors.keys)
            either.append(d.member("m.anchor_key", "anchor_keys", keys, params))
        if anchors.prefixes:
            prefixes = anchors.prefixes
            either.append(d.prefixed("m.anchor_key", "anchor_prefixes", prefixes, params))
        where.append("(" + " OR ".join(either) + ")" if either else "0 = 1")
    if scope is not None:
        where.append(f"m.scope = {d.named('scope')}")
        params["scope"] = d.text(scope)
    if kinds is not None:
        # In the vocabulary's order, so the same filter is the same statement.
        names = [k.value for k in MemoryKind if k in kinds]
        marks = ", ".join(d.named(f"kind{n}") for n in range(len(names)))
        where.append(f"m.kind IN ({marks})")
        params.update({f"kind{n}": name for n, name in enumerate(names)})
    if anchor_key is not None:
        where.append(f"m.anchor_key = {d.named('anchor_key')}")
        params["anchor_key"] = d.text(anchor_key)
    if not include_superseded:
        where.append("m.superseded_by IS NULL")
    return where, params
