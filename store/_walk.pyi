from collections.abc import Callable
from typing import Literal

from drsg.kernel.values import Vector
from drsg.store.records import Edge, Neighbor, Node

def bind(path: str, transaction: type, database: type, error: type[BaseException], /) -> None: ...
def probe(txn: object, db: object, expected_id: int, /) -> tuple[int, int, int, int, int, bool]: ...
def records(
    edge: type[Edge],
    neighbor: type[Neighbor],
    node: type[Node],
    edge_fields: tuple[str, ...],
    neighbor_fields: tuple[str, ...],
    node_fields: tuple[str, ...],
    finish: Callable[[int, int, int, str, bytes], Neighbor],
    finish_node: Callable[[int, int, bytes], Node],
    /,
) -> None: ...
def neighbors(
    txn: object,
    tables: tuple[tuple[object, str], ...],
    edges: object,
    prefix: bytes,
    plane_group: bytes,
    inv_at: bytes,
    plane: int,
    table: int,
    key: bytes,
    limit: int,
    /,
) -> tuple[list[Neighbor], int, bytes] | None: ...
def ends(
    txn: object,
    tables: tuple[tuple[object, str], ...],
    prefix: bytes,
    inv_at: bytes,
    table: int,
    key: bytes,
    limit: int,
    /,
) -> tuple[list[int], int, bytes] | None: ...
def node_by_key(
    txn: object, keys: object, nodes: object, plane: int, key: str, inv_at: bytes, /
) -> Node | Literal[False] | None: ...
def node_id_by_key(
    txn: object, keys: object, plane: int, key: str, inv_at: bytes, /
) -> int | Literal[False] | None: ...
def has_version(txn: object, db: object, group: bytes, inv_at: bytes, /) -> bool | None: ...
def nodes_at(
    txn: object, nodes: object, plane_group: bytes, inv_at: bytes, plane: int, ids: list[int], /
) -> list[Node | None] | None: ...
def key_ids(txn: object, keys: object, inv_at: bytes, groups: list[bytes], /) -> list[int | None] | Literal[False]: ...
def vectors(vector: type[Vector], field: str, code: int, /) -> None: ...
def lmdb_api() -> object: ...
