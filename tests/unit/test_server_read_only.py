"""A read-only server (`serve --read-only`, `mcp --read-only`, `[server] read_only`) refuses every write.

The promise is an allow-list: :data:`WRITES` names every method upstream's schema (or drsg's) marks
write or admin, and the three it marks read that write (:data:`WRITES_MARKED_READ`), with a valid
call of each; a method added later with write access fails
:func:`test_every_write_method_is_listed` until it is listed here and refused. Each is refused with
-32001 and the line naming the setting, and nothing is written; reads (a Cypher read included) still
answer, and the same calls write on a server that is not read-only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drsg
from drsg.api.database import Database
from drsg.kernel.errors import UNAUTHORIZED, RpcError
from drsg.kernel.settings import load
from drsg.surfaces.server import served  # noqa: F401  (every method, registered)
from drsg.surfaces.server.config import server_config
from drsg.surfaces.server.registry import REGISTRY
from drsg.surfaces.server.state import READ_ONLY, ServerState

WRITES: dict[str, dict[str, Any]] = {
    "plane.create": {"name": "more"},
    "plane.rename": {"plane": "people", "to": "folk"},
    "plane.set_props": {"plane": "people", "properties": {"a": 1}},
    "plane.delete": {"plane": "people"},
    "node.create": {"plane": "people", "key": "bob", "labels": ["Person"]},
    "node.update": {"plane": "people", "key": "ada", "set": {"x": 1}},
    "node.delete": {"plane": "people", "key": "ada"},
    "edge.create": {"plane": "people", "src": "ada", "dst": "ada", "type": "SELF"},
    "edge.update": {"plane": "people", "edge": 1, "set": {"w": 1}},
    "edge.delete": {"plane": "people", "edge": 1},
    "index.ensure": {"plane": "people", "label": "Person", "property": "bio"},
    "index.drop": {"plane": "people", "label": "Person", "property": "bio", "kind": "keyword"},
    "digest.write": {"plane": "people", "nodes": [{"key": "x", "label": "Thing", "properties": {}}]},
    "plane.cypher": {"plane": "people", "query": "CREATE (:Thing {name: 'z'})"},
    "catalog.index": {"connection": "app"},
    "plane.vectorize": {"plane": "people"},
    "plugin.install": {"url": "http://127.0.0.1:9/echo.wasm"},
    "plugin.remove": {"name": "echo"},
}
#: marked read by upstream, but they write: vectors (commits), the server's parsers (its plugin folder)
WRITES_MARKED_READ = {"plane.vectorize", "plugin.install", "plugin.remove"}
#: marked write by upstream, but only proposes (digest.write is what writes a proposal)
PROPOSES = {"digest.run"}


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    opened = drsg.open(tmp_path / "g.drsg")
    opened.create_plane("people").put("ada", ["Person"], {"bio": "wrote the first program"})
    yield opened
    opened.close()


def state_of(db: Database, read_only: bool) -> ServerState:
    return ServerState(db, server_config(load(environ={"DRSG_SERVER_READ_ONLY": "1" if read_only else "0"})))


def run(state: ServerState, method: str, params: dict[str, Any]) -> Any:
    spec = REGISTRY[method]
    return asyncio.run(spec.handler(state, spec.bind(params)))


def test_every_write_method_is_listed() -> None:
    writing = {name for name, method in REGISTRY.items() if method.access != "read"}
    assert writing | WRITES_MARKED_READ == set(WRITES) | PROPOSES


@pytest.mark.parametrize("method", sorted(WRITES))
def test_a_read_only_server_refuses_each_write_and_writes_nothing(db: Database, method: str) -> None:
    state = state_of(db, read_only=True)
    try:
        head = run(state, "db.stats", {})["commit_seq"]
        with pytest.raises(RpcError) as refused:
            run(state, method, WRITES[method])
        assert refused.value.rpc_code == UNAUTHORIZED and refused.value.message == READ_ONLY
        assert "--read-only" in READ_ONLY and "read_only = false" in READ_ONLY and "\n" not in READ_ONLY
        assert run(state, "db.stats", {})["commit_seq"] == head
        rows = run(state, "plane.cypher", {"plane": "people", "query": "MATCH (p:Person) RETURN key(p)"})
        assert rows["rows"] == [["ada"]]  # reads answer
    finally:
        state.reads.shutdown()


def test_the_same_calls_write_when_writes_are_allowed(db: Database) -> None:
    state = state_of(db, read_only=False)
    try:
        head = run(state, "db.stats", {})["commit_seq"]
        for method in ("node.create", "edge.create", "plane.cypher", "digest.write", "plane.create"):
            run(state, method, WRITES[method])
        assert run(state, "db.stats", {})["commit_seq"] == head + 5
    finally:
        state.reads.shutdown()
