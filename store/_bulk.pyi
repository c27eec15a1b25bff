"""store/_bulk.c: an import's new records as the projection's entries (store/bulkwrite.py)."""

from collections.abc import Sequence

from drsg.store.bulkwrite import Runs

def node(
    runs: Runs,
    plane: int,
    node_id: int,
    key: str | None,
    labels: list[str],
    inv: bytes,
    props: bytes,
    /,
) -> None: ...
def edge(
    runs: Runs,
    plane: int,
    edge_id: int,
    src: int,
    dst: int,
    edge_type: str,
    inv: bytes,
    props: bytes,
    /,
) -> None: ...

class Run:
    """One table's run of entries in one buffer (store/_bulkrun.c)."""

    def add(self, key: bytes, value: bytes, /) -> None: ...
    def sort(self) -> None: ...
    def entries(self) -> list[tuple[bytes, bytes]]: ...
    def clear(self) -> None: ...
    def cut(self, n: int, /) -> None: ...
    def nbytes(self) -> int: ...
    def packed(self) -> Run: ...
    def write(self, txn: object, db: object, /) -> int | bool | tuple[int, int]: ...
    def __len__(self) -> int: ...

class Scan:
    """A commit's raw lines of the common shapes read in C (store/_bulkscan.c)."""

    def __init__(self, raws: list[bytes], /) -> None: ...
    def kinds(self) -> bytes: ...
    @staticmethod
    def of_records(records: list[object], /) -> Scan: ...

class KeyMap:
    """The keys an import made, answered without a seek once published (store/_bulkmap.c)."""

    def __init__(self, max_keys: int, /) -> None: ...
    def add(self, key_ids: dict[str, int], /) -> None: ...
    def publish(self) -> None: ...
    def drop(self) -> None: ...
    def get(self, name: str, /) -> int | None: ...
    @property
    def complete(self) -> bool: ...
    def __len__(self) -> int: ...

def bind_lmdb(api: object, /) -> None: ...
def mutation_slots(
    node_put: type[object], node_fields: tuple[str, ...], edge_put: type[object], edge_fields: tuple[str, ...], /
) -> None: ...
def strerror(code: int, /) -> str: ...
def write_runs(txn: object, pairs: Sequence[tuple[object, object]], /) -> int | bool | tuple[int, int, int]: ...
def write_merged(txn: object, db: object, runs: Sequence[object], /) -> int | bool | tuple[int, int]: ...
def merged(runs: Sequence[object], /) -> Run: ...  # (packed Runs: TypeError else)
def look_up(
    lines: list[object],
    txn: object,
    keys_db: object,
    plane_group: bytes,
    inv: bytes,
    known: dict[str, int | None],
    scan: object = None,
    keymap: object = None,
    map_only: bool = False,
    /,
) -> bool: ...
def seek_order(names: list[str], /) -> list[str]: ...
def key_groups(lines: list[object], plane_group: bytes, /) -> tuple[list[str], list[bytes]]: ...
def lines(
    parsed: list[object],
    start: int,
    node_runs: Runs,
    edge_runs: Runs,
    plane: int,
    inv: bytes,
    next_node: int,
    next_edge: int,
    new_nodes_from: int,
    key_ids: dict[str, int],
    known: dict[str, int | None],
    mutations: list[object] | None,
    wires: list[bytes] | None,
    node_put: object,
    edge_put: object,
    label_counts: dict[str, int],
    type_counts: dict[str, int],
    scan: object = None,
    /,
) -> tuple[int, int, int]: ...
