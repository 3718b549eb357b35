"""The pure semantics of ADR-0013, each invariant pinned by a test named after it.

Universal statements are Hypothesis properties; the seed's own numbers are
restated as examples, so the port cannot quietly drift from the reference.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roteiro_memory import semantics as sem
from roteiro_memory.errors import (
    InvalidBody,
    InvalidConfidence,
    InvalidDecay,
    InvalidKind,
    InvalidScope,
    RoteiroError,
)
from roteiro_memory.semantics import (
    ANCHOR_PENALTY,
    KIND_TOKENS,
    U64_MAX,
    WHITE_SPACE,
    AnchorState,
    Decay,
    MemoryKind,
)

MIB = 1024 * 1024
APPLYING = [s for s in AnchorState if s.applies]
NOT_APPLYING = [s for s in AnchorState if not s.applies]
AGE_MODES = ("linear", "exponential")

u64 = st.integers(min_value=0, max_value=U64_MAX)


# --- Kinds ------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(MemoryKind))
def test_kind_tokens_round_trip(kind: MemoryKind) -> None:
    assert sem.parse_kind(kind.value) is kind
    assert sem.parse_kind(kind) is kind
    assert str(kind) == kind.value


def test_kind_vocabulary_is_exactly_the_five_kinds() -> None:
    assert KIND_TOKENS == ("lesson", "attempt", "decision", "pattern", "outcome")


@pytest.mark.parametrize("token", ["note", "Lesson", "LESSON", " lesson", ""])
def test_unknown_kind_is_invalid_kind_naming_the_vocabulary(token: str) -> None:
    with pytest.raises(InvalidKind) as raised:
        sem.parse_kind(token)
    message = str(raised.value)
    assert repr(token) in message, "the message names the value"
    for known in KIND_TOKENS:
        assert known in message, "the message lists the vocabulary"


# --- Anchor states and the penalty table -------------------------------------


APPLIES_TABLE = {
    AnchorState.UNANCHORED: True,
    AnchorState.VALID: True,
    AnchorState.DRIFTED: False,
    AnchorState.VANISHED: False,
    AnchorState.UNVERIFIABLE: False,
}
STALE_TABLE = {
    AnchorState.UNANCHORED: False,
    AnchorState.VALID: False,
    AnchorState.DRIFTED: True,
    AnchorState.VANISHED: True,
    AnchorState.UNVERIFIABLE: False,
}


@pytest.mark.parametrize("state", list(AnchorState))
def test_applies_table(state: AnchorState) -> None:
    assert state.applies is APPLIES_TABLE[state]


@pytest.mark.parametrize("state", list(AnchorState))
def test_is_stale_table(state: AnchorState) -> None:
    assert state.is_stale is STALE_TABLE[state]


def test_anchor_state_tokens() -> None:
    assert [str(s) for s in AnchorState] == [
        "unanchored",
        "valid",
        "drifted",
        "vanished",
        "unverifiable",
    ]


def test_unverifiable_is_neither_applying_nor_stale() -> None:
    """Nothing was measured: it cannot be shown to hold, nor to have drifted."""
    assert not AnchorState.UNVERIFIABLE.applies
    assert not AnchorState.UNVERIFIABLE.is_stale


@pytest.mark.parametrize("state", list(AnchorState))
def test_no_penalty_is_zero(state: AnchorState) -> None:
    """Drift demotes, never silences: a zero penalty would be deletion."""
    assert 0.0 < sem.anchor_penalty(state) <= 1.0


def test_every_applying_state_outranks_every_non_applying_one() -> None:
    worst_applying = min(ANCHOR_PENALTY[s] for s in APPLYING)
    best_not_applying = max(ANCHOR_PENALTY[s] for s in NOT_APPLYING)
    assert worst_applying > best_not_applying


def test_drifted_ranks_below_vanished() -> None:
    """Drifted can mislead about code still under its key; vanished cannot."""
    assert sem.anchor_penalty(AnchorState.DRIFTED) < sem.anchor_penalty(AnchorState.VANISHED)


def test_penalty_table_is_the_references() -> None:
    assert ANCHOR_PENALTY == {
        AnchorState.VALID: 1.0,
        AnchorState.UNANCHORED: 0.9,
        AnchorState.UNVERIFIABLE: 0.5,
        AnchorState.VANISHED: 0.35,
        AnchorState.DRIFTED: 0.25,
    }


@pytest.mark.parametrize(
    ("anchor_key", "anchor_blob", "node_present", "node_blob", "expected"),
    [
        pytest.param(None, None, False, None, AnchorState.UNANCHORED, id="unanchored"),
        pytest.param(None, "b1", True, "b1", AnchorState.UNANCHORED, id="unanchored-wins"),
        pytest.param("k", "b1", True, "b1", AnchorState.VALID, id="valid"),
        pytest.param("k", "b1", True, "b2", AnchorState.DRIFTED, id="drifted"),
        pytest.param("k", "b1", False, None, AnchorState.VANISHED, id="vanished"),
        pytest.param("k", None, False, None, AnchorState.VANISHED, id="vanished-no-blob"),
        pytest.param("k", None, True, "b1", AnchorState.UNVERIFIABLE, id="unverifiable-record"),
        pytest.param("k", "b1", True, None, AnchorState.UNVERIFIABLE, id="unverifiable-node"),
        pytest.param("k", None, True, None, AnchorState.UNVERIFIABLE, id="unverifiable-both"),
    ],
)
def test_resolve_anchor_covers_all_five_states(
    anchor_key: str | None,
    anchor_blob: str | None,
    node_present: bool,
    node_blob: str | None,
    expected: AnchorState,
) -> None:
    assert sem.resolve_anchor(anchor_key, anchor_blob, node_present, node_blob) is expected


# --- Decay --------------------------------------------------------------------


@given(age=st.integers(min_value=0, max_value=2**64))
def test_decay_none_is_exactly_one_at_every_age(age: int) -> None:
    """The reproducibility claim rests on ``none`` having no age term at all."""
    assert Decay.none().factor(age) == 1.0


def test_only_decay_none_is_reproducible() -> None:
    assert Decay.none().is_reproducible
    assert not Decay.linear(10).is_reproducible
    assert not Decay.exponential(10).is_reproducible


@given(mode=st.sampled_from(AGE_MODES), parameter=u64)
def test_age_decay_starts_at_one(mode: str, parameter: int) -> None:
    assert Decay(mode, parameter).factor(0) == 1.0


@given(
    mode=st.sampled_from(AGE_MODES),
    parameter=u64,
    ages=st.tuples(u64, u64).map(sorted),
)
def test_age_decay_stays_in_unit_interval_and_never_rises(
    mode: str, parameter: int, ages: list[int]
) -> None:
    """A decay that rose anywhere would rank an older record above a newer twin."""
    decay = Decay(mode, parameter)
    younger, older = (decay.factor(age) for age in ages)
    assert 0.0 <= older <= younger <= 1.0


@given(span=st.integers(min_value=0, max_value=2**32), extra=u64)
def test_linear_decay_reaches_zero_and_stays(span: int, extra: int) -> None:
    decay = Decay.linear(span)
    assert decay.factor(decay.effective_parameter) == 0.0
    assert decay.factor(decay.effective_parameter + extra) == 0.0


@given(half_life=st.integers(min_value=0, max_value=2**32), data=st.data())
def test_exponential_decay_never_reaches_zero(half_life: int, data: st.DataObject) -> None:
    """Exactly what holds: the factor is 0.5 ** (age / half_life) in doubles, so it
    is positive wherever that ratio is at most 1074 (2**-1074 is the smallest
    positive double).  Past that the double underflows to 0.0 -- as the
    reference's ``powf`` does too -- a rounding artefact, not a zero decay."""
    decay = Decay.exponential(half_life)
    age = data.draw(st.integers(min_value=0, max_value=1074 * decay.effective_parameter))
    assert decay.factor(age) > 0.0


def test_exponential_decay_at_large_ages_the_reference_names() -> None:
    decay = Decay.exponential(10)
    assert decay.factor(10_000) > 0.0, "the seed's own example: never quite zero"
    assert Decay.exponential(1).factor(1074) == 2.0**-1074
    assert Decay.exponential(1).factor(1075) == 0.0, "double underflow, stated not hidden"


def test_decay_shapes_at_their_naming_points() -> None:
    assert Decay.linear(10).factor(5) == 0.5
    assert Decay.exponential(10).factor(10) == 0.5
    assert Decay.exponential(10).factor(20) == 0.25


def test_decay_degenerate_parameters_are_clamped_to_one() -> None:
    """A parameter of 0 is kept as given and computed as 1, never divided by."""
    assert Decay.linear(0).parameter == 0
    assert Decay.linear(0).effective_parameter == 1
    assert Decay.linear(0).factor(0) == 1.0
    assert Decay.linear(0).factor(1) == 0.0
    assert Decay.exponential(0).factor(0) == 1.0
    assert Decay.exponential(0).factor(1) == 0.5
    assert Decay.parse("linear:0") == Decay("linear", 0)


def test_decay_defaults_are_200_and_50() -> None:
    assert Decay.parse("linear") == Decay("linear", 200)
    assert Decay.parse("exponential") == Decay("exponential", 50)
    assert Decay.linear() == Decay("linear", sem.DEFAULT_DECAY_SPAN) == Decay("linear", 200)
    assert Decay.exponential() == Decay("exponential", 50)
    assert Decay() == Decay.none() == Decay.parse("none"), "reproducible by default"


@given(mode=st.sampled_from(AGE_MODES), parameter=u64)
def test_decay_tokens_round_trip(mode: str, parameter: int) -> None:
    decay = Decay(mode, parameter)
    assert decay.token() == f"{mode}:{parameter}"
    assert Decay.parse(decay.token()) == decay
    assert Decay.parse(str(decay)) == decay


@pytest.mark.parametrize("parameter", [2.5, 5.0, True, "5", None], ids=repr)
def test_a_decay_parameter_that_is_no_int_is_an_invalid_decay(parameter: object) -> None:
    """``Decay("linear", 2.5)`` was kept, and its token ``linear:2.5`` did
    not parse back; ``"5"`` raised an unnamed TypeError."""
    with pytest.raises(InvalidDecay, match="invalid decay parameter"):
        Decay("linear", parameter)  # type: ignore[arg-type]


@pytest.mark.parametrize("token", [None, 5, ["linear"]], ids=repr)
def test_a_decay_that_is_no_token_is_an_invalid_decay(token: object) -> None:
    """``Decay.parse(None)`` raised AttributeError ('partition')."""
    with pytest.raises(InvalidDecay, match=r"invalid decay .*: expected a Decay or a decay token"):
        Decay.parse(token)  # type: ignore[arg-type]


def test_decay_none_token_round_trips() -> None:
    assert Decay.none().token() == "none"
    assert Decay.parse("none") == Decay.none()


def test_decay_leading_plus_is_tolerated() -> None:
    assert Decay.parse("linear:+7") == Decay.linear(7)
    assert Decay.parse(f"exponential:{U64_MAX}") == Decay.exponential(U64_MAX)


BAD_DECAY_TOKENS = [
    "none:5",
    "linear:soon",
    "linear:",
    " none",
    "none ",
    "clock",
    "",
    "linear:-1",
    "linear:1_0",
    "linear:\u0661",
    "linear:18446744073709551616",
    "linear: 7",
    "linear:+",
    "Linear",
]


@pytest.mark.parametrize("token", BAD_DECAY_TOKENS)
def test_bad_decay_tokens_are_refused_naming_the_token(token: str) -> None:
    with pytest.raises(InvalidDecay) as raised:
        Decay.parse(token)
    assert repr(token) in str(raised.value)


@pytest.mark.parametrize(
    ("decay", "shape"),
    [
        (Decay.none(), "none"),
        (Decay.linear(7), {"linear": {"span": 7}}),
        (Decay.linear(0), {"linear": {"span": 0}}),
        (Decay.exponential(9), {"exponential": {"half_life": 9}}),
        (Decay.parse("linear"), {"linear": {"span": 200}}),
        (Decay.parse("exponential"), {"exponential": {"half_life": 50}}),
    ],
)
def test_decay_to_json_shapes(decay: Decay, shape: object) -> None:
    assert decay.to_json() == shape


# --- Write validation ---------------------------------------------------------


def validate(
    *,
    kind: str = "lesson",
    scope: str = "repo",
    body: str = "a real lesson",
    confidence: float | None = None,
) -> sem.ValidWrite:
    return sem.validate_write(kind, scope, body, confidence)


def test_a_good_write_is_valid() -> None:
    ok = validate()
    assert ok == sem.ValidWrite(MemoryKind.LESSON, "repo", "a real lesson", None)


@pytest.mark.parametrize(
    "scope",
    [
        pytest.param("s" * 128, id="128-ascii"),
        pytest.param("\u00e9" * 64, id="64x2-bytes"),
        pytest.param("\u20ac" * 42 + "ab", id="42x3-bytes-plus-2"),
        pytest.param("\U0001f600" * 32, id="32x4-bytes"),
        pytest.param("s", id="one-byte"),
        pytest.param("my scope", id="inner-space"),
    ],
)
def test_scope_of_1_to_128_utf8_bytes_is_accepted(scope: str) -> None:
    assert validate(scope=scope).scope == scope


@pytest.mark.parametrize(
    "scope",
    [
        pytest.param("", id="empty"),
        pytest.param("s" * 129, id="129-ascii"),
        pytest.param("\u00e9" * 64 + "a", id="64x2-bytes-plus-1"),
        pytest.param("a" * 127 + "\u00e9", id="127-plus-2-bytes"),
        pytest.param("\U0001f600" * 32 + "a", id="32x4-bytes-plus-1"),
    ],
)
def test_scope_outside_1_to_128_utf8_bytes_is_refused(scope: str) -> None:
    with pytest.raises(InvalidScope, match="bytes") as raised:
        validate(scope=scope)
    assert repr(scope) in str(raised.value)


@pytest.mark.parametrize(
    "scope",
    [" repo", "repo ", "\trepo", "repo\n", "\u00a0repo", "repo\u00a0", "\u3000repo", "repo\u3000"],
)
def test_scope_with_surrounding_whitespace_is_refused(scope: str) -> None:
    with pytest.raises(InvalidScope, match="whitespace") as raised:
        validate(scope=scope)
    assert repr(scope) in str(raised.value)


@pytest.mark.parametrize(
    "scope", ["re\npo", "re\x00po", "re\x7fpo", "re\x85po", "re\x1cpo", "\x1crepo", "repo\x1f"]
)
def test_scope_with_a_control_character_is_refused(scope: str) -> None:
    """U+001C..U+001F are Cc but not White_Space: refused as control characters."""
    with pytest.raises(InvalidScope, match="control character") as raised:
        validate(scope=scope)
    assert repr(scope) in str(raised.value)


def test_u001c_is_not_whitespace() -> None:
    """Python's ``str.isspace`` says otherwise; PROTOCOL fixes Unicode White_Space."""
    assert "\x1c".isspace()
    assert "\x1c" not in WHITE_SPACE
    assert "\x85" in WHITE_SPACE
    assert "\u00a0" in WHITE_SPACE
    assert "\u3000" in WHITE_SPACE


def test_a_body_of_u001c_is_not_blank_and_is_accepted() -> None:
    assert validate(body="\x1c").body == "\x1c"


@pytest.mark.parametrize(
    "body", ["", " ", "   \n\t ", "\u00a0", "\u3000\u2028", "\x85", "\u205f\r\x0b\x0c"]
)
def test_empty_or_whitespace_only_body_is_refused(body: str) -> None:
    with pytest.raises(InvalidBody, match="empty or only whitespace"):
        validate(body=body)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("x" * 65_536, id="65536-ascii"),
        pytest.param("\u00e9" * 32_768, id="32768x2-bytes"),
        pytest.param("\U0001f600" * 16_384, id="16384x4-bytes"),
    ],
)
def test_body_of_65536_bytes_is_accepted(body: str) -> None:
    assert validate(body=body).body == body


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("x" * 65_537, id="65537-ascii"),
        pytest.param("\u00e9" * 32_768 + "x", id="32768x2-bytes-plus-1"),
        pytest.param("x" * 65_535 + "\u00e9", id="65535-plus-2-bytes"),
    ],
)
def test_body_of_65537_bytes_is_refused_naming_its_size(body: str) -> None:
    with pytest.raises(InvalidBody, match="65537 bytes, over the 65536-byte limit"):
        validate(body=body)


@pytest.mark.parametrize("confidence", [0, 0.0, 1, 1.0, 0.5, None, 5e-324])
def test_confidence_in_the_unit_interval_is_accepted(confidence: float | None) -> None:
    ok = validate(confidence=confidence)
    assert ok.confidence == confidence
    assert ok.confidence is None or type(ok.confidence) is float


@pytest.mark.parametrize(
    "confidence",
    [math.nan, math.inf, -math.inf, -0.1, 1.1, 1.0000000000000002, -5e-324, True],
)
def test_confidence_outside_the_unit_interval_is_refused_naming_it(confidence: float) -> None:
    with pytest.raises(InvalidConfidence) as raised:
        validate(confidence=confidence)
    assert repr(confidence) in str(raised.value)


@pytest.mark.parametrize(
    ("write", "error"),
    [
        ({"kind": "note", "scope": "", "body": "", "confidence": 2.0}, InvalidKind),
        ({"kind": "lesson", "scope": "", "body": "", "confidence": 2.0}, InvalidScope),
        ({"kind": "lesson", "scope": " x", "body": "", "confidence": 2.0}, InvalidScope),
        ({"kind": "lesson", "scope": "repo", "body": "", "confidence": 2.0}, InvalidBody),
        ({"kind": "lesson", "scope": "repo", "body": "b", "confidence": 2.0}, InvalidConfidence),
    ],
)
def test_first_fault_is_reported_in_the_order_kind_scope_body_confidence(
    write: dict[str, object], error: type[RoteiroError]
) -> None:
    with pytest.raises(RoteiroError) as raised:
        validate(**write)  # type: ignore[arg-type]  # the fields vary per case
    assert type(raised.value) is error


# --- Query tokens -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "tokens"),
    [
        (None, []),
        ("", []),
        ("   ", []),
        ("\u3000\u00a0\n", []),
        ("::", []),
        (" :: :: ", []),
        ("Foo", ["foo"]),
        ("  Foo Bar  ", ["foo", "bar"]),
        ("crate::Module::fn_name", ["crate", "module", "fn_name"]),
        ("a::b c", ["a", "b", "c"]),
        ("a:b", ["a:b"]),
        ("a:::b", ["a", ":b"]),
        ("a\u3000b\u00a0c\u2028d\x85e", ["a", "b", "c", "d", "e"]),
        ("a\x1cb", ["a\x1cb"]),
        ("\x1c", ["\x1c"]),
        ("\u00c9COLE", ["\u00e9cole"]),
    ],
)
def test_query_tokens(query: str | None, tokens: list[str]) -> None:
    """Trimmed, lower-cased, split on ``::`` then on Unicode White_Space (U+001C
    is not); an empty query has no tokens."""
    assert sem.query_tokens(query) == tokens


@given(query=st.text())
def test_query_tokens_are_nonempty_and_hold_no_separator(query: str) -> None:
    for token in sem.query_tokens(query):
        assert token
        assert "::" not in token
        assert not WHITE_SPACE.intersection(token)
        assert token == token.lower()


def test_query_matches_when_every_token_is_in_body_anchor_key_or_path() -> None:
    text = sem.search_text("Uses the \u00c9COLE cache", "sym:Crate::run", "src/Lib.rs")
    assert sem.matches_query(text, sem.query_tokens("\u00e9cole"))
    assert sem.matches_query(text, sem.query_tokens("crate::run lib.rs CACHE"))
    assert not sem.matches_query(text, sem.query_tokens("cache missing"))
    assert sem.matches_query(text, []), "no tokens filter nothing"


# --- Ranking and the limit rule -----------------------------------------------------


def test_default_base_confidence_is_one_half() -> None:
    assert sem.base_confidence(None) == 0.5
    assert sem.base_confidence(0.0) == 0.0


def test_rank_key_puts_the_best_score_first_and_breaks_ties_by_newest_id() -> None:
    ranked = sorted([(0.5, 1), (0.9, 2), (0.5, 3), (0.0, 4)], key=lambda p: sem.rank_key(*p))
    assert ranked == [(0.9, 2), (0.5, 3), (0.5, 1), (0.0, 4)]


def test_record_age_is_generation_minus_id_never_negative() -> None:
    assert sem.record_age(10, 3) == 7
    assert sem.record_age(10, 10) == 0
    assert sem.record_age(3, 10) == 0


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(None, [1, 2, 3]), (0, [1, 2, 3]), (1, [1]), (2, [1, 2]), (9, [1, 2, 3])],
)
def test_limit_none_and_zero_mean_every_item(limit: int | None, expected: list[int]) -> None:
    assert sem.apply_limit([1, 2, 3], limit) == expected
