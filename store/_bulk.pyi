"""store/_bulk.c: an import's new records as the projection's entries (store/bulkwrite.py)."""

def node(
    runs: tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]],
    plane: int,
    node_id: int,
    key: str | None,
    labels: list[str],
    inv: bytes,
    props: bytes,
    /,
) -> None: ...
def edge(
    runs: tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]],
    plane: int,
    edge_id: int,
    src: int,
    dst: int,
    edge_type: str,
    inv: bytes,
    props: bytes,
    /,
) -> None: ...
def sort_run(run: list[tuple[bytes, bytes]], /) -> None: ...
def key_groups(lines: list[object], plane_group: bytes, /) -> tuple[list[str], list[bytes]]: ...
def lines(
    parsed: list[object],
    start: int,
    node_runs: tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]],
    edge_runs: tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]],
    plane: int,
    inv: bytes,
    next_node: int,
    next_edge: int,
    new_nodes_from: int,
    key_ids: dict[str, int],
    known: dict[str, int | None],
    mutations: list[object],
    wires: list[bytes],
    node_put: object,
    edge_put: object,
    label_counts: dict[str, int],
    type_counts: dict[str, int],
    /,
) -> tuple[int, int, int]: ...
