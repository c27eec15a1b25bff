"""The value model and its two encodings (drsg/values.py): the JSON dialect and the storage codec."""

from __future__ import annotations

import json
import math
import struct

import hypothesis.strategies as st
import pytest
from hypothesis import given

from drsg.kernel.errors import BadValue, UsageError
from drsg.kernel.values import (
    Described,
    Vector,
    check_name,
    check_props,
    check_value,
    from_json,
    pack,
    props_from_json,
    strip_vectors,
    to_json,
    unpack,
)

INT_MIN, INT_MAX = -(2**63), 2**63 - 1


def canon(v: object) -> object:
    """Type-tagged form: True != 1, 0.0 != -0.0, b'' != '' when comparing."""
    if v is None or isinstance(v, (bool, str, bytes)):
        return (type(v).__name__, v)
    if isinstance(v, int):
        return ("int", v)
    if isinstance(v, float):
        return ("float", v.hex())
    if isinstance(v, Vector):
        return ("vector", v.data)
    if isinstance(v, Described):
        return ("desc", v.description, canon(v.value))
    if isinstance(v, list):
        return ("list", [canon(x) for x in v])
    if isinstance(v, dict):
        return ("map", sorted(((k, canon(x)) for k, x in v.items()), key=lambda kv: kv[0]))
    raise TypeError(type(v))


_text = st.text(alphabet=st.characters(codec="utf-8"), max_size=8)
_plain_key = _text.filter(lambda k: not k.startswith("$"))  # "$…" keys are the dialect's own
_floats32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(INT_MIN, INT_MAX),
    st.floats(allow_nan=False, allow_infinity=False),
    _text,
    st.binary(max_size=8),
    st.lists(_floats32, min_size=1, max_size=6).map(Vector.of),
)
values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_plain_key, inner, max_size=4),
        st.builds(Described, _text, inner),
    ),
    max_leaves=12,
)


# --------------------------------------------------------------------------- JSON dialect


@given(values)
def test_json_dialect_round_trips_through_real_json_text(value: object) -> None:
    text = json.dumps(to_json(value), allow_nan=False)
    assert canon(from_json(json.loads(text))) == canon(value)


def test_json_dialect_shapes() -> None:
    assert to_json(Vector.of([1, 2.5])) == {"$vector": [1.0, 2.5]}
    assert to_json(b"\x00\xff") == {"$bytes": [0, 255]}
    assert to_json(Described("born year", 1815)) == {"$desc": "born year", "$value": 1815}
    assert to_json({"a": [b"x", {"v": Vector.of([0.5])}]}) == {"a": [{"$bytes": [120]}, {"v": {"$vector": [0.5]}}]}
    assert from_json({"$vector": [1, 2]}) == Vector.of([1.0, 2.0])
    assert from_json({"$bytes": []}) == b""
    assert from_json({"$desc": "d", "$value": {"$bytes": [1]}}) == Described("d", b"\x01")
    assert from_json({"plain": {"nested": [1, "two", None, True]}}) == {"plain": {"nested": [1, "two", None, True]}}


def test_vector_is_float32_exact() -> None:
    v = Vector.of([0.1, -2, 3e38])
    assert v.dims == 3 and len(v.data) == 12
    assert v.data == struct.pack("<3f", 0.1, -2.0, 3e38)
    assert v.tolist()[0] != 0.1  # float32 rounding is real, and kept exactly
    assert Vector.of(v.tolist()) == v
    assert from_json(to_json(v)) == v


@pytest.mark.parametrize(
    "bad",
    [
        {"$vector": []},
        {"$vector": [1.0, float("nan")]},
        {"$vector": [float("inf")]},
        {"$vector": [1e39]},  # beyond float32
        {"$vector": ["x"]},
        {"$vector": [None]},
        {"$vector": 3},
        {"$vector": [1.0], "other": 1},
        {"$bytes": [256]},
        {"$bytes": [-1]},
        {"$bytes": "abc"},
        {"$bytes": [1], "x": 2},
        {"$bytes": [1.5]},
        {"$desc": "d"},
        {"$value": 1},
        {"$desc": 5, "$value": 1},
        {"$desc": "d", "$value": 1, "extra": 2},
        {"$desc": "d", "$value": float("nan")},
        {"a": [1, {"b": float("nan")}]},
        {1: "a map key that is no str"},  # (a record in memory's: JSON's keys are strs)
        {"a": {None: 1}},
    ],
)
def test_from_json_rejects_malformed_dialect(bad: object) -> None:
    with pytest.raises(BadValue):
        from_json(bad)


def test_vector_rejects_integers_too_large_for_any_float() -> None:
    # json.loads("1" + "0" * 400) is an int that float() cannot hold: this must be a BadValue,
    # not an OverflowError escaping the error tree.
    huge = json.loads('{"$vector": [1' + "0" * 400 + "]}")
    with pytest.raises(BadValue):
        from_json(huge)
    with pytest.raises(BadValue):
        Vector.of([10**400])


@pytest.mark.parametrize("not_a_list", ["12", {"1": 0, "2": 0}])
def test_vector_must_be_a_json_list(not_a_list: object) -> None:
    # A string or an object is iterable in Python; {"$vector": "12"} must not become [1.0, 2.0].
    with pytest.raises(BadValue):
        from_json({"$vector": not_a_list})


def test_props_from_json() -> None:
    assert props_from_json(None) == {}
    assert props_from_json({"v": {"$vector": [1]}, "n": 2}) == {"v": Vector.of([1]), "n": 2}
    with pytest.raises(BadValue):
        props_from_json([1, 2])
    with pytest.raises(BadValue):
        props_from_json({"": 1})
    with pytest.raises(BadValue):
        props_from_json({"big": 2**64})


def test_strip_vectors_keeps_everything_else() -> None:
    props = {"v": Vector.of([1]), "b": b"x", "n": None, "l": [Vector.of([2])]}
    assert strip_vectors(props) == {"b": b"x", "n": None, "l": [Vector.of([2])]}


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize("ok", [INT_MIN, INT_MAX, 0, -0.0, 1.7976931348623157e308, "", b"", [], {}, None, False])
def test_check_value_accepts_the_edges_of_the_model(ok: object) -> None:
    assert check_value(ok) is ok


@pytest.mark.parametrize(
    "bad",
    [
        float("nan"),
        float("inf"),
        -float("inf"),
        INT_MAX + 1,
        INT_MIN - 1,
        2**200,
        [1, [2, float("nan")]],
        {"deep": {"deeper": [2**64]}},
        {1: "non-string key"},
        (1, 2),
        {1, 2},
        object(),
        bytearray(b"x"),
        Described("d", float("nan")),
        Described(3, 1),  # type: ignore[arg-type]
    ],
)
def test_check_value_rejects_what_is_outside_the_model(bad: object) -> None:
    with pytest.raises(BadValue):
        check_value(bad)


def test_bad_value_is_a_usage_error() -> None:
    with pytest.raises(UsageError) as info:
        check_value(float("nan"))
    assert info.value.exit_code == 2
    assert "nan" in str(info.value).lower()


@pytest.mark.parametrize("name", ["a", "ünï côdé", "with space", "x" * 400, "ε" * 200])
def test_check_name_accepts(name: str) -> None:
    assert check_name("a label", name) == name


@pytest.mark.parametrize("name", ["", "a\x00b", "\x00", "x" * 401, "ε" * 201, None, 5, b"bytes"])
def test_check_name_rejects(name: object) -> None:
    with pytest.raises(BadValue):
        check_name("a label", name)


def test_nul_in_a_name_says_so() -> None:
    with pytest.raises(BadValue, match="NUL"):
        check_name("a node key", "ab\x00")


def test_lone_surrogates_are_bad_values_not_unicode_errors() -> None:
    # json.loads('"\\ud800"') yields a str that cannot be stored as UTF-8; it must be refused
    # as a BadValue (a DrsgError), never escape as UnicodeEncodeError.
    lone = json.loads('"\\ud800"')
    with pytest.raises(BadValue):
        check_name("a node key", lone)
    for bad in ({"p": lone}, {lone: 1}, {"p": {lone: 1}}, {"p": [Described(lone, 1)]}):
        with pytest.raises(BadValue):
            check_props(bad)
    with pytest.raises(BadValue):
        from_json({"p": [json.loads('"a\\udfff"')]})


def test_check_props() -> None:
    assert check_props(None) == {}
    assert check_props({"a": 1}) == {"a": 1}
    with pytest.raises(BadValue):
        check_props({"": 1})
    with pytest.raises(BadValue):
        check_props({1: 1})  # type: ignore[dict-item]
    with pytest.raises(BadValue):
        check_props([("a", 1)])  # type: ignore[arg-type]
    with pytest.raises(BadValue):
        check_props({"a": math.nan})


# --------------------------------------------------------------------------- storage codec


@given(values)
def test_storage_codec_round_trips(value: object) -> None:
    assert canon(unpack(pack(value))) == canon(value)


@given(st.dictionaries(_text, values, max_size=4))
def test_storage_codec_round_trips_maps_with_dollar_keys(value: dict[str, object]) -> None:
    # Unlike the JSON dialect, the codec has no reserved keys.
    value = {"$vector": [1], **value}
    assert canon(unpack(pack(value))) == canon(value)


def test_pack_refuses_integers_beyond_64_bits() -> None:
    with pytest.raises(BadValue):
        pack(2**64)
    with pytest.raises(BadValue):
        pack({"a": [-(2**63) - 1]})


def test_pack_refuses_what_is_not_a_value() -> None:
    with pytest.raises(BadValue):
        pack(object())
