"""The keys an import's commit names are sought in the order of their UTF-8 bytes (store/_bulk.c's
radix sort on their first 8 bytes, then the rest), so that each seek lands near the last and a key
named twice is sought once: the order Python gives the same bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from drsg.store import bulkwrite

# keys sharing their first 8 bytes or a prefix, NULs and bytes above 0x7f: every way heads tie or differ
key = st.one_of(
    st.text(st.sampled_from("ab\x00é\U0001f600"), max_size=12),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=10),
    st.sampled_from(["", "a", "aaaaaaaa", "aaaaaaaaa", "aaaaaaaa\x00", "n1", "n10", "n100000000"]),
)


@settings(max_examples=300, deadline=None)
@given(names=st.lists(key, max_size=300))
def test_the_keys_are_sought_in_the_order_of_their_bytes(names: list[str]) -> None:
    assert bulkwrite._native is not None
    assert bulkwrite._native.seek_order(names) == sorted(names, key=lambda name: name.encode())
