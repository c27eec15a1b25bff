from typing import Literal

def bind(path: str, transaction: type, database: type, error: type[BaseException], /) -> None: ...
def probe(txn: object, db: object, /) -> tuple[int, int, int, int, int, bool]: ...
def neighbors(
    txn: object,
    tables: tuple[tuple[object, str], ...],
    edges: object,
    prefix: bytes,
    plane_group: bytes,
    inv_at: bytes,
    /,
) -> list[tuple[int, int, str, bytes]] | None: ...
def node_by_key(
    txn: object, keys: object, nodes: object, group: bytes, plane_group: bytes, inv_at: bytes, /
) -> tuple[int, bytes] | Literal[False] | None: ...
