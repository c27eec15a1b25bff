"""What the import parity tests share (tests/property/test_bulk_import_parity.py,
test_import_records.py): random lines and records of a JSONL import, the import's three paths, a
database seeded for them, and every table of one dumped to compare.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

import drsg
from drsg.store import bulkwrite, importahead
from drsg.store.database import Database
from drsg.store.environment import DB_NAMES

KEYS = ["k0", "k1", "k2", "ключ", "鍵", "k\u00e9", "n9"]
SEEDED = KEYS[:2]
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**64 - 1), st.floats(allow_nan=False, allow_infinity=False), text
)
json_value = st.recursive(
    scalar, lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(text, inner, max_size=3)), max_leaves=6
)
edge_ints = st.sampled_from([-(2**63) - 1, -(2**63), -(2**31) - 1, -(2**31), -32769, -32768, -129, -128, -33, -32, -1])
plain = st.one_of(  # what the C line loop (store/_bulklines.c) packs itself: its edges and just past them
    scalar, edge_ints, st.sampled_from([2**63 - 1, 2**63, -0.0, 5e-324, 1.7976931348623157e308, "\U0001f600"])
)
nested_props = st.dictionaries(st.sampled_from(["x", "y", "名前", "v"]), json_value, max_size=3)  # all storable
props = st.one_of(
    nested_props,
    st.dictionaries(st.sampled_from(["x", "y", "名前", "v", "p" * 401]), plain, max_size=17),
)
vector = st.fixed_dictionaries(
    {"v": st.fixed_dictionaries({"$vector": st.lists(st.floats(-1, 1, width=32), min_size=2, max_size=2)})}
)
labels = st.one_of(
    st.lists(st.sampled_from(["A", "B", "Ω", "A"]), max_size=3),
    st.lists(st.sampled_from(["A", "B", "C", ""]), max_size=3).map(lambda got: sorted(set(got))),  # as kept
)

keyed_node = st.fixed_dictionaries(
    {"labels": labels, "external_key": st.sampled_from(KEYS)}, optional={"properties": props}
)
keyless_node = st.fixed_dictionaries({"id": st.integers(1, 6), "labels": labels}, optional={"properties": props})
vector_node = st.fixed_dictionaries(
    {"labels": st.just(["A"]), "external_key": st.sampled_from(KEYS), "properties": vector}
)
end_by_key = st.sampled_from(KEYS)
edge_by_key = st.fixed_dictionaries(
    {"src_key": end_by_key, "dst_key": end_by_key, "type": st.sampled_from(["R", "S", "→"])},
    optional={"properties": props},
)
edge_by_id = st.fixed_dictionaries(
    {"src": st.integers(0, 12), "dst": st.integers(0, 12), "type": st.sampled_from(["R", "S"])},
    optional={"properties": props},
)
good_line = st.one_of(keyed_node, keyless_node, edge_by_key, edge_by_id, vector_node).map(
    lambda obj: json.dumps(obj, ensure_ascii=False)
)
raw_line = st.sampled_from(
    [
        '{"labels": "A"}',
        "{not json",
        '{"labels": [], "colour": 1}',
        '{"type": "R", "src_key": 5, "dst_key": "k0"}',
        '{"type": "R", "src_key": "k0", "dst_key": "\\ud800"}',  # a lone surrogate: no key can hold it
        "[1]",
        # JSON the C loop must read as the json module does, or leave to it
        '{"labels": ["A"], "external_key": "n9", "properties": {"x": 1e400}}',
        '{"labels": ["A"], "external_key": "k0", "external_key": "k1"}',  # the last one counts
        '{"labels": ["B"], "external_key": "k\\u0032", "properties": {"s": "\\ud83d\\ude00\\n\\"", "t": "\\udc00"}}',
        '{"labels": ["B"], "external_key": "k2", "properties": {"s": "\\ud83d\\ude00\\n\\"", "f": -0.0}}',
        '{"type": "R", "src_key": "k0", "dst_key": "k1", "type": "S", "properties": {"n": -9223372036854775808}}',
    ]
)
lines = st.one_of(
    st.lists(st.one_of(good_line, good_line, good_line, raw_line, st.just("")), min_size=1, max_size=24),
    st.lists(st.one_of(good_line, raw_line), min_size=6, max_size=24),  # 5 bad lines stop the reading
)


def dump(db: Database) -> dict[str, list[tuple[bytes, bytes]]]:
    """Every table's entries; the clock's readings masked (a log record's timestamp and the checksum
    over it, the head's timestamp in ``meta``: a file's first commit is the clock's now) and the
    file's own uuid left out."""
    with db.env.read() as txn:
        tables = {name: list(txn.cursor(db=db.env.dbs[name])) for name in DB_NAMES}
    tables["log"] = [(seq, record[:1] + bytes(12) + record[13:]) for seq, record in tables["log"]]
    meta = [(k, v[:8] + bytes(8) + v[16:] if k == b"state" else v) for k, v in tables["meta"]]
    tables["meta"] = [(k, v) for k, v in meta if k != b"uuid"]  # each file's own name
    return tables


PATHS = ("reference", "bulk", "ahead")  # every record through WriteTx; sorted runs in the transaction; made ahead


@contextmanager
def import_path(path: str) -> Iterator[None]:
    bulkwrite.use_bulk(path != "reference")
    importahead.use_ahead(path == "ahead")
    try:
        yield
    finally:
        bulkwrite.use_bulk(True)
        importahead.use_ahead(True)


def open_seeded(path: Path, seeded: bool) -> Database:
    db = drsg.open(path)
    if seeded:

        def seed(tx: Any) -> None:
            plane = tx.ensure_plane("p")
            ends = [tx.create_node(plane, key, ["A"], {"x": i}) for i, key in enumerate(SEEDED)]
            tx.create_node(plane, None, ["B"], {})
            tx.create_edge(plane, ends[0].id, ends[1].id, "R")
            tx.create_edge(plane, ends[0].id, ends[1].id, "R")  # parallel: matched one per line
            tx.declare_index(plane, "vector", "A", "v", {"metric": "cosine"})
            newer = tx.ensure_plane("q")  # a newer plane: p's runs land before its keys
            tx.create_node(newer, "k0", ["A"], {})

        db.write(seed)
    return db


INTS = [-(2**63), -(2**63) + 1, -(2**31) - 1, -(2**31), -32769, -32768, -129, -128, -33, -32, -1, 0, 127, 128]
INTS += [255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1]
plain_key = st.sampled_from([*SEEDED, *(f"n{i}" for i in range(12))])
plain_props = st.dictionaries(st.sampled_from(["x", "y", "v", "w"]), plain, max_size=5)
plain_line = st.one_of(  # the shapes store/_bulklines.c takes, mostly: few repeats, few misses
    st.fixed_dictionaries(
        {"labels": labels.map(lambda got: sorted(set(got))), "external_key": plain_key},
        optional={"properties": plain_props},
    ),
    st.fixed_dictionaries(
        {"src_key": plain_key, "dst_key": plain_key, "type": st.sampled_from(["R", "S"])},
        optional={"properties": plain_props},
    ),
).map(json.dumps)
