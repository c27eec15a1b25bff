"""The value model (DESIGN.md §3) and its two encodings.

Values are null, bool, int (signed 64-bit), float (finite), str, bytes, list, map (string keys),
:class:`Vector` (float32) and :class:`Described` (a value with a description, upstream's
``PropDesc``). Two encodings exist:

* the **JSON dialect** shared with upstream: ``{"$vector": [...]}``, ``{"$bytes": [...]}``,
  ``{"$desc": "...", "$value": ...}``; everything else is plain JSON;
* the **storage codec** (msgpack, with extension types for vectors and described values).

This module is pure: no I/O.
"""

from __future__ import annotations

import math
import struct
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import msgpack

from drsg.kernel.errors import BadValue

#: the largest node or edge id: ids are unsigned 64-bit (the store's keys hold them so)
MAX_ID = (1 << 64) - 1
_INT_MIN = -(2**63)
_INT_MAX = 2**63 - 1
_EXT_VECTOR = 1
EXT_VECTOR = _EXT_VECTOR  # store/_records.c decodes this code to a Vector as _ext_hook does
_EXT_DESCRIBED = 2


@dataclass(frozen=True, slots=True)
class Vector:
    """A float32 vector, stored as little-endian bytes so equality is exact."""

    data: bytes

    @classmethod
    def of(cls, values: Any) -> Vector:
        try:
            floats = [float(v) for v in values]
        except (TypeError, ValueError, OverflowError) as exc:
            raise BadValue(f"a $vector must be a list of numbers ({exc})") from None
        if not floats:
            raise BadValue("a $vector must not be empty")
        if not all(math.isfinite(f) for f in floats):
            raise BadValue("a $vector must contain only finite numbers (no NaN or infinity)")
        try:
            return cls(struct.pack(f"<{len(floats)}f", *floats))
        except OverflowError:
            raise BadValue("a $vector component is too large for float32") from None

    @property
    def dims(self) -> int:
        return len(self.data) // 4

    def tolist(self) -> list[float]:
        return list(struct.unpack(f"<{self.dims}f", self.data))

    def __repr__(self) -> str:
        return f"Vector({self.dims} dims)"


@dataclass(frozen=True, slots=True)
class Described:
    """A property value carrying a human description (upstream ``PropDesc``)."""

    description: str
    value: Value


#: A property value inside the data model (what :func:`check_value` admits).
Value: TypeAlias = "bool | int | float | str | bytes | Vector | Described | list[Value] | dict[str, Value] | None"
#: The properties of a node, an edge or a plane.
Props: TypeAlias = "dict[str, Value]"
#: Plain JSON, as :func:`to_json` gives it (upstream's dialect) and as commit origins hold it.
Json: TypeAlias = "bool | int | float | str | list[Json] | dict[str, Json] | None"


# --------------------------------------------------------------------------- validation


#: How deeply lists and maps may nest (msgpack's own limit is 512; Python's recursion, about 1000).
MAX_DEPTH = 100


def json_depth(value: Any, stop: int = MAX_DEPTH) -> int:
    """Nesting depth of a parsed JSON value, without recursion (stops counting past ``stop``): a value
    deeper than Python's recursion must be measured before anything walks it."""
    if type(value) is not dict and type(value) is not list:
        return 0
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if level > deepest:
            deepest = level
            if level > stop:
                return level
        for child in item.values() if type(item) is dict else item:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, level + 1))
    return deepest


def _nested(where: str, depth: int) -> int:
    if depth >= MAX_DEPTH:
        raise BadValue(f"{where}: lists and maps nest deeper than {MAX_DEPTH} levels; flatten the value")
    return depth + 1


def value_type(value: Any) -> str:
    """Upstream's ``ValueType`` name for a value (the plan language's literal tags); a described
    value is named by the type of what it holds."""
    if isinstance(value, Described):
        value = value.value
    if value is None:
        return "Null"
    if isinstance(value, bool):  # before int: a bool is an int to isinstance
        return "Bool"
    for kind, name in _VALUE_TYPES:
        if isinstance(value, kind):
            return name
    return type(value).__name__


_VALUE_TYPES: tuple[tuple[type, str], ...] = (
    (int, "Int"),
    (float, "Float"),
    (str, "Str"),
    (bytes, "Bytes"),
    (list, "List"),
    (dict, "Map"),
    (Vector, "Vector"),
)


def check_value(value: Any, where: str = "value", _depth: int = 0) -> Any:
    """Return ``value`` if it is inside the data model, else raise :class:`BadValue`."""
    if isinstance(value, str):
        check_utf8(value, where)
        return value
    if value is None or isinstance(value, (bool, bytes, Vector)):
        return value
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise BadValue(f"{where}: integer {value} does not fit in 64 bits; store it as a string")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise BadValue(f"{where}: {value} is not a finite number; store null instead")
        return value
    if isinstance(value, list):
        depth = _nested(where, _depth)
        for item in value:
            check_value(item, where, depth)
        return value
    if isinstance(value, dict):
        depth = _nested(where, _depth)
        for k, item in value.items():
            if not isinstance(k, str):
                raise BadValue(f"{where}: map keys must be strings, got {type(k).__name__}")
            check_utf8(k, where)
            check_value(item, where, depth)
        return value
    if isinstance(value, Described):
        if not isinstance(value.description, str):
            raise BadValue(f"{where}: a description must be a string")
        check_utf8(value.description, where)
        check_value(value.value, where, _nested(where, _depth))
        return value
    raise BadValue(f"{where}: {type(value).__name__} is not a storable value")


def check_utf8(text: str, where: str) -> None:
    """Lone surrogates (e.g. JSON "\\ud800") are str in Python but cannot be stored as UTF-8."""
    if text.isascii():  # a flag CPython keeps on the string: no need to encode it to know
        return
    try:
        text.encode()
    except UnicodeEncodeError:
        raise BadValue(f"{where}: {text!r} is not valid Unicode (a lone surrogate); fix the text") from None


def check_props(props: Mapping[str, Any] | None) -> Props:
    if props is None:
        return {}
    if type(props) is not dict and not isinstance(props, Mapping):  # (an ABC check costs ~1 µs)
        raise BadValue("properties must be a JSON object")
    out: Props = {}
    for name, value in props.items():
        check_name("a property name", name)  # the same rule the index commands apply
        if type(value) is str and value.isascii():  # the common case, without making its message
            out[name] = value
        else:
            out[name] = check_value(value, f"property {name!r}")
    return out


def check_name(kind: str, name: Any) -> str:
    """Keys, labels, edge types and plane names: non-empty strings without NUL."""
    if not isinstance(name, str) or not name:
        raise BadValue(f"{kind} must be a non-empty string")
    if name.isascii() and len(name) <= 400 and "\x00" not in name:
        return name  # the common case, in a third of the time: ASCII is valid UTF-8, a byte a character
    if "\x00" in name:
        raise BadValue(f"{kind} {name!r} contains a NUL character; remove it")
    check_utf8(name, kind)
    if len(name.encode()) > 400:
        raise BadValue(f"{kind} is longer than 400 bytes; shorten it")
    return name


# --------------------------------------------------------------------------- JSON dialect


def from_json(value: Any, where: str = "value", _depth: int = 0) -> Value:
    """Decode the upstream JSON dialect into values (validating as it goes)."""
    if isinstance(value, dict):
        depth = _nested(where, _depth)
        if "$vector" in value:
            if len(value) != 1:
                raise BadValue(f"{where}: a $vector object has no other fields")
            if not isinstance(value["$vector"], list):
                raise BadValue(f"{where}: a $vector must be a list of numbers")
            return Vector.of(value["$vector"])
        if "$bytes" in value:
            raw = value["$bytes"]
            if len(value) != 1 or not isinstance(raw, list):
                raise BadValue(f"{where}: $bytes takes a list of integers 0-255")
            try:
                return bytes(raw)
            except (TypeError, ValueError):
                raise BadValue(f"{where}: $bytes takes a list of integers 0-255") from None
        if "$desc" in value or "$value" in value:
            if set(value) != {"$desc", "$value"} or not isinstance(value["$desc"], str):
                raise BadValue(f'{where}: a described value is {{"$desc": "text", "$value": ...}}')
            return Described(value["$desc"], from_json(value["$value"], where, depth))
        for k in value:
            if not isinstance(k, str):  # (JSON's keys are strings; a record's in memory may not be)
                raise BadValue(f"{where}: map keys must be strings, got {type(k).__name__}")
            check_utf8(k, where)
        return {k: from_json(v, where, depth) for k, v in value.items()}
    if isinstance(value, list):
        depth = _nested(where, _depth)
        return [from_json(v, where, depth) for v in value]
    checked: Value = check_value(value, where, _depth)
    return checked


def to_json(value: Value) -> Json:
    """Encode values into the upstream JSON dialect."""
    if isinstance(value, Vector):
        return {"$vector": [*value.tolist()]}
    if isinstance(value, bytes):
        return {"$bytes": [*value]}
    if isinstance(value, Described):
        return {"$desc": value.description, "$value": to_json(value.value)}
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_json(v) for v in value]
    return value


def props_to_json(props: Mapping[str, Value]) -> dict[str, Json]:
    """Properties in the JSON dialect (an object, where :func:`to_json` of any value may be anything)."""
    return {name: to_json(value) for name, value in props.items()}


def props_from_json(props: Any, where: str = "properties") -> Props:
    if props is None:
        return {}
    if not isinstance(props, dict):
        raise BadValue(f"{where} must be a JSON object")
    # from_json checks every value as it decodes it: check_props would only check them again.
    return {check_name("a property name", k): from_json(v, f"property {k!r}") for k, v in props.items()}


def strip_vectors(props: Mapping[str, Value]) -> Props:
    return {k: v for k, v in props.items() if not isinstance(v, Vector)}


def lean_vectors(props: Mapping[str, Value]) -> Props:
    """Vectors replaced by upstream's placeholder ``$vector(N dims, omitted)`` (its ``lean`` output)."""
    return {k: f"$vector({v.dims} dims, omitted)" if isinstance(v, Vector) else v for k, v in props.items()}


# --------------------------------------------------------------------------- storage codec


def _ext_default(obj: Any) -> msgpack.ExtType:
    if isinstance(obj, Vector):
        return msgpack.ExtType(_EXT_VECTOR, obj.data)
    if isinstance(obj, Described):  # packb: pack() is in the middle of this thread's packer
        return msgpack.ExtType(_EXT_DESCRIBED, msgpack.packb([obj.description, obj.value], **_packer_opts))
    if isinstance(obj, int):  # what msgpack hands back when an integer does not fit its 64 bits
        raise BadValue("an integer does not fit in 64 bits; store it as a string")
    raise BadValue(f"{type(obj).__name__} is not a storable value")


_new_vector = object.__new__
_set_vector_data = Vector.__dict__["data"].__set__  # the slot itself: Vector(data) pays frozen __setattr__


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _EXT_VECTOR:  # a vector per node read: built without the dataclass __init__
        vector = _new_vector(Vector)
        _set_vector_data(vector, data)
        return vector
    if code == _EXT_DESCRIBED:
        description, value = unpack(data)
        return Described(description, value)
    return msgpack.ExtType(code, data)


_packer_opts: dict[str, Any] = {"default": _ext_default, "use_bin_type": True}


_packers = threading.local()  # one Packer per thread: packb makes a new one per call (~0.7 µs)


def pack(obj: Any) -> bytes:
    packer = getattr(_packers, "packer", None)
    if packer is None:
        packer = _packers.packer = msgpack.Packer(**_packer_opts)
    return packer.pack(obj)  # type: ignore[no-any-return]  # (an integer past 64 bits: see _ext_default)


def unpacker(data: bytes) -> msgpack.Unpacker:
    """A reader of what :func:`pack` wrote, one item per call (``read_array_header``, ``unpack``):
    a large record decoded in many short calls instead of one that holds the GIL throughout."""
    reader = msgpack.Unpacker(ext_hook=_ext_hook, raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1))
    reader.feed(data)
    return reader


class Undecodable(ValueError):
    """Bytes that are not a value this codec wrote: a damaged record (the store reports it as one)."""


def unpack(data: bytes) -> Any:
    try:
        return msgpack.unpackb(data, ext_hook=_ext_hook, raw=False, strict_map_key=False)
    except Undecodable:
        raise
    except (ValueError, TypeError, BadValue, msgpack.UnpackException) as exc:  # msgpack raises the first and last
        raise Undecodable(f"a stored value does not decode: {exc}") from None
