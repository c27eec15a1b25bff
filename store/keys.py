"""Byte layouts of every LMDB key (DESIGN.md §3 "one way to lay out the keys").

Integers are big-endian and fixed-width so byte order is numeric order. Versioned records end in
the *inverted* commit seq (``~seq``), so the newest version of a record sorts first: a current
read is the first key under the record's prefix, and an as-of-``s`` read is the first key at or
after ``prefix + ~s``. Names (keys, labels, edge types, plane names) end with a NUL byte, which
they may not contain, so one name is never a prefix of another's group.
"""

from __future__ import annotations

import functools
import struct

U32 = struct.Struct(">I")
U64 = struct.Struct(">Q")
_MAX64 = 2**64 - 1
SEQ_WIDTH = 8


def u32(n: int) -> bytes:
    return U32.pack(n)


def u64(n: int) -> bytes:
    return U64.pack(n)


def read_u64(b: bytes, offset: int = 0) -> int:
    return U64.unpack_from(b, offset)[0]  # type: ignore[no-any-return]


def inv(seq: int) -> bytes:
    """The inverted seq suffix: newer versions sort first."""
    return U64.pack(_MAX64 - seq)


def seq_of(key: bytes) -> int:
    """The commit seq encoded in the last 8 bytes of a versioned key."""
    return _MAX64 - U64.unpack_from(key, len(key) - SEQ_WIDTH)[0]  # type: ignore[no-any-return]


def name(s: str) -> bytes:
    return s.encode() + b"\x00"


#: labels and edge types are a small vocabulary named on every write: encoded once each
_vocabulary = functools.lru_cache(maxsize=1 << 16)(name)


# Record groups. Each function returns the group prefix; the versioned key is prefix + inv(seq).


def plane_group(plane_id: int) -> bytes:
    return U32.pack(plane_id)


def plane_name_group(plane_name: str) -> bytes:
    return name(plane_name)


_PLANE_ID = struct.Struct(">IQ")


def node_group(plane_id: int, node_id: int) -> bytes:
    return _PLANE_ID.pack(plane_id, node_id)


#: A node's or an edge's group and an inverted seq in one pack: where the record's version in force
#: at a seq is sought.
RECORD_AT = struct.Struct(">IQQ")


def inv_int(seq: int) -> int:
    """:func:`inv` as the integer it packs."""
    return _MAX64 - seq


def key_group(plane_id: int, key: str) -> bytes:
    return U32.pack(plane_id) + name(key)


def label_prefix(plane_id: int, label: str) -> bytes:
    return U32.pack(plane_id) + _vocabulary(label)


def label_group(plane_id: int, label: str, node_id: int) -> bytes:
    return U32.pack(plane_id) + _vocabulary(label) + U64.pack(node_id)


def edge_group(plane_id: int, edge_id: int) -> bytes:
    return _PLANE_ID.pack(plane_id, edge_id)


def adjacency_prefix(plane_id: int, node_id: int, edge_type: str | None = None) -> bytes:
    base = _PLANE_ID.pack(plane_id, node_id)
    return base if edge_type is None else base + _vocabulary(edge_type)


def adjacency_group(plane_id: int, node_id: int, edge_type: str, edge_id: int) -> bytes:
    return _PLANE_ID.pack(plane_id, node_id) + _vocabulary(edge_type) + U64.pack(edge_id)


@functools.lru_cache(maxsize=1 << 16)
def tally_key(plane_id: int, kind: bytes, label_or_type: str) -> bytes:
    return U32.pack(plane_id) + kind + name(label_or_type)


def counts_key(plane_id: int) -> bytes:
    """The plane's live node and edge counts, kept among its tallies."""
    return U32.pack(plane_id) + b"C"


def index_group(plane_id: int, kind: str, label: str, prop: str) -> bytes:
    return U32.pack(plane_id) + name(kind) + name(label) + name(prop)


#: Fusion profiles share the declarations' table, under a kind no index has.
FUSION_KIND = "fusion"


def fusion_group(plane_id: int, label: str, vector: str, keyword: str) -> bytes:
    return index_group(plane_id, FUSION_KIND, label, vector) + name(keyword)
