"""``@valueclass`` behaves as the ``@dataclass`` it replaces on the start-up
path: the same construction, equality, hashing, frozenness and repr."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from roteiro_memory.results import GraphNode, MemoryForgotten
from roteiro_memory.semantics import Decay
from roteiro_memory.valueclass import (
    COMPILE_AFTER,
    FrozenInstanceError,
    field,
    fields,
    replace,
    valueclass,
)


@valueclass
class Point:
    x: int
    y: int = 0


@valueclass(frozen=False)
class Bag:
    name: str
    items: list[str] = field(default_factory=list)
    label: str = field(default="bag")


@dataclasses.dataclass(frozen=True)
class DataPoint:
    x: int
    y: int = 0


def test_construction_by_position_and_name_with_defaults() -> None:
    assert Point(1) == Point(x=1, y=0)
    assert Point(1, 2).y == 2
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Point(1, z=3)  # type: ignore[call-arg]


def test_equality_hash_and_repr_match_a_frozen_dataclass() -> None:
    assert repr(Point(1, 2)) == repr(DataPoint(1, 2)).replace("DataPoint", "Point")
    assert hash(Point(1, 2)) == hash(Point(1, 2))
    assert Point(1, 2) != Point(2, 1)
    same_values: object = (1, 2)
    assert Point(1, 2) != same_values, "only the same class compares equal"
    assert len({Point(1), Point(1), Point(2)}) == 2


def test_frozen_instances_refuse_assignment_and_deletion() -> None:
    point = Point(1)
    with pytest.raises(FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del point.x
    assert point.x == 1


def test_mutable_instances_get_a_fresh_factory_default_and_no_hash() -> None:
    first, second = Bag("a"), Bag("b")
    first.items.append("x")
    assert second.items == []
    assert first.label == "bag"
    first.name = "renamed"
    assert first.name == "renamed"
    with pytest.raises(TypeError):
        hash(first)


def test_replace_and_fields() -> None:
    assert replace(Point(1, 2), y=5) == Point(1, 5)
    assert fields(Point) == ("x", "y")
    assert fields(GraphNode("k")) == ("key", "kind", "name", "path", "blob")
    with pytest.raises(TypeError, match="no field 'z'"):
        replace(Point(1), z=1)


def test_post_init_runs_and_can_refuse() -> None:
    assert Decay("linear", 5).parameter == 5
    with pytest.raises(ValueError, match="unknown decay mode"):
        Decay("clock")


def test_match_args_follow_the_fields() -> None:
    match MemoryForgotten(3, [1]):
        case MemoryForgotten(found, restored):
            assert (found, restored) == (3, [1])


def _fresh_bag() -> Any:
    @valueclass(frozen=False)
    class Fresh:
        name: str
        items: list[str] = field(default_factory=list)
        label: str = field(default="bag")

    return Fresh


def _outcome(make: Callable[[], object]) -> str:
    try:
        return repr(make()).removeprefix("_fresh_bag.<locals>.")
    except TypeError:
        return "TypeError"


@pytest.mark.parametrize(
    "call",
    [
        lambda cls: cls("n"),
        lambda cls: cls("n", ["i"]),
        lambda cls: cls(name="n", label="l"),
        lambda cls: cls("n", label="l", items=["i"]),
        lambda cls: cls(),
        lambda cls: cls("n", ["i"], "l", "extra"),
        lambda cls: cls("n", name="again"),
        lambda cls: cls("n", colour="red"),
    ],
    ids=["one", "two", "names", "mixed", "none", "too-many", "twice", "unknown"],
)
def test_the_first_instance_is_bound_as_the_compiled_init_binds_the_rest(
    call: Callable[[Any], object],
) -> None:
    # A value class binds its first instances without compiling anything,
    # and then compiles its __init__: both agree on every call.
    first = _fresh_bag()
    compiled = _fresh_bag()
    for number in range(COMPILE_AFTER):
        compiled(f"warm-up {number}")
    assert "name" not in compiled.__init__.__code__.co_varnames, "bound, not compiled, so far"
    compiled("one more")
    assert compiled.__init__.__code__.co_varnames[:4] == ("self", "name", "items", "label")
    assert _outcome(lambda: call(first)) == _outcome(lambda: call(compiled))


def test_a_factory_default_is_fresh_for_the_first_instance_too() -> None:
    cls = _fresh_bag()
    made = [cls(f"bag {number}") for number in range(COMPILE_AFTER + 2)]
    made[0].items.append("x")
    made[-1].items.append("y")
    assert [bag.items for bag in made[1:-1]] == [[]] * COMPILE_AFTER


@pytest.mark.parametrize("name", ["self", "_d_", "_f_", "_v_", "_MISSING"])
def test_a_field_named_as_the_compiled_init_names_its_own_is_refused_at_once(name: str) -> None:
    with pytest.raises(TypeError, match=f"may not be named '{name}'"):
        valueclass(type("Clash", (), {"__annotations__": {name: "int"}}))
