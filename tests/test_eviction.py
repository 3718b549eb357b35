"""The cache tier's rules (:mod:`roteiro_memory.eviction`): the budget
variable, the eviction order and count, what a sweep pins, an entry's size."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roteiro_memory import eviction
from roteiro_memory.errors import InvalidBudget
from roteiro_memory.semantics import U64_MAX

MIB = 1024 * 1024

# --- The cache budget variable ---------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (None, 256 * MIB),
        ("256", 256 * MIB),
        (" 64 ", 64 * MIB),
        ("\u00a064\u3000", 64 * MIB),
        ("+1", MIB),
        ("0", 0),
        ("0064", 64 * MIB),
        (str(U64_MAX // MIB), (U64_MAX // MIB) * MIB),
    ],
)
def test_parse_cache_budget_accepts_whole_megabytes(env: str | None, expected: int) -> None:
    assert eviction.parse_cache_budget(env) == expected


@pytest.mark.parametrize(
    "env",
    [
        "",
        "   ",
        "-1",
        "1.5",
        "1_0",
        "64MB",
        "\u0661\u0662",
        "18446744073709551615",
        str(U64_MAX // MIB + 1),
        "1 0",
        "+",
        "++1",
    ],
)
def test_parse_cache_budget_refuses_anything_else_naming_the_value(env: str) -> None:
    """Never defaulted: an operator who asked for a bound must hear it did not land."""
    with pytest.raises(InvalidBudget) as raised:
        eviction.parse_cache_budget(env)
    assert repr(env) in str(raised.value)
    assert eviction.CACHE_BUDGET_ENV in str(raised.value)


# --- The eviction count -----------------------------------------------------------


def test_eviction_matches_the_model_cache_policy_it_ports() -> None:
    """The seed's parity numbers: three 100-byte entries, the newest pinned."""
    assert eviction.evict_count([100, 100], 100, 250) == 1
    assert eviction.evict_count([100, 100], 100, 0) == 2
    assert eviction.evict_count([100, 100], 100, 1000) == 0
    assert eviction.evict_count([100, 100], 100, 300) == 0, "exactly at the budget is not over"


def test_nothing_evictable_means_nothing_evicted_however_small_the_budget() -> None:
    assert eviction.evict_count([], 500, 10) == 0, "the sole entry survives"
    assert eviction.evict_count([], 0, 0) == 0, "an empty tier sweeps to nothing"
    assert eviction.evict_count([100], 500, 10) == 1, "and everything else still goes"


def test_eviction_stops_as_soon_as_the_remainder_fits() -> None:
    assert eviction.evict_count([10, 20, 30], 40, 70) == 2
    assert eviction.evict_count([10, 20, 30], 40, 90) == 1
    assert eviction.evict_count([10, 20, 30], 40, 100) == 0, "it already fits"
    assert eviction.evict_count([10, 20, 30], 40, 40) == 3


def test_pinned_bytes_are_counted_but_never_freed() -> None:
    assert eviction.evict_count([10, 10], 1000, 100) == 2


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=1_000), max_size=12),
    pinned=st.integers(min_value=0, max_value=3_000),
    budget=st.integers(min_value=0, max_value=6_000),
)
def test_eviction_stops_as_soon_as_the_tier_fits(
    sizes: list[int], pinned: int, budget: int
) -> None:
    """The count is minimal: one fewer would not fit, and the count fits unless
    everything evictable is already gone."""
    evicted = eviction.evict_count(sizes, pinned, budget)

    def held_after(count: int) -> int:
        return pinned + sum(sizes[count:])

    assert 0 <= evicted <= len(sizes)
    if evicted > 0:
        assert held_after(evicted - 1) > budget, "evicted an entry it did not need to"
    if evicted < len(sizes):
        assert held_after(evicted) <= budget, "stopped while still over budget"


def test_eviction_order_is_non_applying_then_least_recently_used_then_key() -> None:
    keys = [
        eviction.eviction_key(True, 1, "a"),
        eviction.eviction_key(False, 9, "z"),
        eviction.eviction_key(False, 3, "b"),
        eviction.eviction_key(False, 3, "a"),
        eviction.eviction_key(True, 0, "b"),
    ]
    assert sorted(keys) == [
        (False, 3, "a"),
        (False, 3, "b"),
        (False, 9, "z"),
        (True, 0, "b"),
        (True, 1, "a"),
    ]


@pytest.mark.parametrize(
    ("mru", "entry_generation", "current", "applies", "pinned"),
    [
        (True, 0, 5, False, True),
        (False, 5, 5, True, True),
        (False, 5, 5, False, False),
        (False, 4, 5, True, False),
        (False, 0, 0, True, True),
    ],
)
def test_is_pinned_keeps_the_mru_and_the_current_generations_applying_entries(
    mru: bool, entry_generation: int, current: int, applies: bool, pinned: bool
) -> None:
    assert eviction.is_pinned(mru, entry_generation, current, applies) is pinned


def test_cache_entry_bytes_is_the_utf8_length_of_key_fingerprint_and_json() -> None:
    assert eviction.cache_entry_bytes("k", "fp", "{}") == 5
    assert eviction.cache_entry_bytes("\u043a\u043b\u044e\u0447", "\u00e9", '"\u65e5"') == 8 + 2 + 5
    assert eviction.cache_entry_bytes("", "", "") == 0
