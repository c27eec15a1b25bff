"""``@frozen``: a record the type checker holds immutable, at the cost of a plain one; ``@hashable``:
a value compared and hashed by its fields, at a sixth of a frozen dataclass's cost to define.

``@dataclass(frozen=True)`` sets every field through ``object.__setattr__`` in ``__init__``: four
times the cost of a plain slots dataclass here (0.77 µs against 0.19 µs for six fields), paid for
each mutation of every commit and each record every read decodes. ``@frozen`` makes a slots
dataclass that mypy treats as frozen (PEP 681's ``frozen_default``): assigning to a field is a type
error, as before; nothing checks it again at run time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field, dataclass, field, fields
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def frozen(cls: type[T]) -> type[T]:
    return dataclass(slots=True)(cls)


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def hashable(cls: type[T]) -> type[T]:
    """As ``@dataclass(frozen=True, slots=True)`` for a value compared and hashed by its fields (a
    syntax tree's node, a plan's step): the same ``__init__``, ``__eq__``, ``__hash__``, ``__repr__``,
    ``fields()`` and ``replace()``, at a sixth of its cost to make (issue #37: the Cypher syntax tree's
    49 classes were 26 ms of a one-shot ``drsg cypher``). A dataclass compiles six methods per class;
    this compiles ``__init__`` alone and gives every class the same three functions below. Frozen to
    the type checker, as ``@frozen``; nothing checks it again at run time."""
    made = dataclass(slots=True, eq=False, repr=False)(cls)
    own = made.__dict__
    every = fields(made)  # type: ignore[arg-type]  # a dataclass now
    made._compared = staticmethod(_getter(tuple(f.name for f in every if f.compare)))  # type: ignore[attr-defined]
    made._shown = tuple(f.name for f in every if f.repr)  # type: ignore[attr-defined]
    if "__eq__" not in own:
        made.__eq__ = _eq  # type: ignore[method-assign]
        explicit_hash = "__hash__" in own and own["__hash__"] is not None
        if not explicit_hash:
            made.__hash__ = _hash  # type: ignore[method-assign]
    if "__repr__" not in own:
        made.__repr__ = _repr  # type: ignore[method-assign]
    return made


def _getter(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """The compared fields' values as a tuple, as a dataclass's ``__eq__`` and ``__hash__`` take them."""
    if len(names) >= 2:
        return attrgetter(*names)
    if names:
        (name,) = names
        return lambda obj: (getattr(obj, name),)
    return lambda obj: ()


def _eq(self: Any, other: Any) -> Any:  # bool, or NotImplemented for another class
    if other.__class__ is not self.__class__:
        return NotImplemented
    return self._compared(self) == other._compared(other)


def _hash(self: Any) -> int:
    return hash(self._compared(self))


def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown)
    return f"{self.__class__.__qualname__}({shown})"
