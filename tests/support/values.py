"""Hypothesis strategies for drsg's values (kernel/values.py): every kind the data model holds —
null, booleans, 64-bit integers with their edges, finite floats, UTF-8 text, bytes, float32
vectors, and lists, maps and described values of them — shared by the property tests."""

from __future__ import annotations

import hypothesis.strategies as st

from drsg.kernel.values import Described, Vector

text = st.text(alphabet=st.characters(codec="utf-8"), max_size=6)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from([0, 1, -1, 2**63 - 1, -(2**63)]),
    st.floats(allow_nan=False, allow_infinity=False),
    text,
    st.binary(max_size=6),
    st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=4).map(Vector.of),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(text, inner, max_size=3),
        st.builds(Described, text, inner),
    ),
    max_leaves=5,
)
