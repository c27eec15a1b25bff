"""One name per value type, upstream's ``ValueType`` (the plan language's literal tags): the
soft-schema catalog (`plane.catalog`, `db.catalog`, MCP `describe_plane`) and the schema `ask` shows
a model name a property's type the same way, and a described value by the type of what it holds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import drsg
from drsg.kernel.values import Described, Vector, value_type
from drsg.store.database import Database
from drsg.surfaces.server.queries import catalog
from drsg.workers.schema import soft_schema

PROPS = {
    "s": "Ada",
    "d": Described("the person's name", "Ada"),
    "dn": Described("a count", 3),
    "i": 1,
    "f": 1.5,
    "b": True,
    "n": None,
    "l": [1, 2],
    "m": {"a": 1},
    "by": b"\x00\x01",
    "v": Vector.of([0.5, 0.25]),
}
NAMES = {
    "s": "Str",
    "d": "Str",
    "dn": "Int",
    "i": "Int",
    "f": "Float",
    "b": "Bool",
    "n": "Null",
    "l": "List",
    "m": "Map",
    "by": "Bytes",
    "v": "Vector",
}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = drsg.open(tmp_path / "t.drsg")
    plane = database.plane("startup")
    database.write(lambda tx: tx.create_node(plane, "ada", ["Person"], PROPS))
    yield database
    database.close()


def test_the_kernel_names_each_value_type_as_upstream_does() -> None:
    assert {name: value_type(value) for name, value in PROPS.items()} == NAMES


def test_the_catalog_and_the_ask_schema_name_types_alike(db: Database) -> None:
    with db.snapshot() as snap:
        plane = snap.plane("startup").id
        served = catalog(snap, [plane])["labels"]["Person"]["properties"]
        shown = soft_schema(snap, plane).labels["Person"].properties
    assert {name: next(iter(entry["types"])) for name, entry in served.items()} == NAMES
    assert {name: info.type for name, info in shown.items()} == NAMES
    assert served["d"]["descriptions"] == {"the person's name": 1}
