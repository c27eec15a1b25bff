"""``@hashable`` (kernel/frozen.py) behaves as ``@dataclass(frozen=True, slots=True)`` where a caller looks.

The same class written both ways, compared method by method on the same values; and the modules
whose start-up it shortens (the Cypher syntax tree, the plan steps) hold only classes made by it.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
from dataclasses import dataclass, field, fields, replace

import pytest

from drsg.kernel.frozen import hashable

NOWHERE = (0, 0)


@hashable
class Node:
    """Fields as the syntax tree has them: one left out of equality and repr, keyword-only."""

    name: str
    args: tuple[object, ...] = ()
    at: tuple[int, int] = field(default=NOWHERE, compare=False, repr=False, kw_only=True)

    def shout(self) -> str:
        return self.name.upper()


@dataclass(frozen=True, slots=True)
class Reference:
    name: str
    args: tuple[object, ...] = ()
    at: tuple[int, int] = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Empty:
    pass


@hashable
class One:
    value: float


NAN = math.nan
VALUES = [("a", ()), ("a", (1, 2)), ("b", (1, 2)), ("a", (NAN,)), ("a", ("x", None))]


@pytest.mark.parametrize(("left", "right"), [(a, b) for a in VALUES for b in VALUES])
def test_equality_hash_and_repr_are_a_frozen_dataclasss(left: tuple[object, ...], right: tuple[object, ...]) -> None:
    mine = Node(*left, at=(1, 2)), Node(*right, at=(3, 4))
    theirs = Reference(*left, at=(1, 2)), Reference(*right, at=(3, 4))
    assert (mine[0] == mine[1]) == (theirs[0] == theirs[1])
    assert (mine[0] != mine[1]) == (theirs[0] != theirs[1])
    if mine[0] == mine[1]:
        assert hash(mine[0]) == hash(mine[1])
    assert repr(mine[0]).removeprefix("Node") == repr(theirs[0]).removeprefix("Reference")


def test_a_one_field_class_compares_a_tuple_as_a_dataclass_does() -> None:
    """(nan,) == (nan,) holds for the same nan object (identity first), as a dataclass's tuple does."""
    assert One(NAN) == One(NAN)
    assert One(1.0) != One(2.0) and One(1.0) == One(1.0) and hash(One(1.0)) == hash(One(1.0))
    assert Empty() == Empty() and hash(Empty()) == hash(Empty()) and repr(Empty()) == "Empty()"


def test_the_rest_of_the_dataclass_is_there() -> None:
    node = Node("f", (1,), at=(2, 3))
    assert [f.name for f in fields(Node)] == ["name", "args", "at"]
    assert dataclasses.is_dataclass(node) and Node.__match_args__ == ("name", "args")
    assert replace(node, name="g") == Node("g", (1,)) and replace(node, name="g").at == (2, 3)
    assert node.shout() == "F"  # a method of the class body is kept
    assert not hasattr(node, "__dict__")  # slots, as before
    assert (node == Reference("f", (1,))) is False  # another class is never equal
    assert node.__eq__(Reference("f", (1,))) is NotImplemented
    with pytest.raises(TypeError):
        Node()  # type: ignore[call-arg]  # the generated __init__'s own checks


@pytest.mark.parametrize(
    "module", ["drsg.plan.cypher.ast", "drsg.plan.cypher.rows", "drsg.plan.logical", "drsg.plan.expr"]
)
def test_the_start_up_paths_value_classes_are_made_by_hashable(module: str) -> None:
    """A one-shot `drsg cypher` makes these classes at start (a frozen dataclass compiles six methods
    each: 26 ms for the syntax tree alone); one made by @dataclass again fails here."""
    loaded = importlib.import_module(module)
    classes = [c for c in vars(loaded).values() if dataclasses.is_dataclass(c) and c.__module__ == module]
    assert classes
    assert [c.__name__ for c in classes if c.__eq__ is not Node.__eq__ or c.__repr__ is not Node.__repr__] == []
