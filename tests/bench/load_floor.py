"""The floor under a graph load: raw py-lmdb writing exactly the B-tree entries a drsg import wrote.

A reference database (a finished ``import_jsonl`` of the same file) is read table by table, untimed;
then its entries are written into a fresh LMDB file opened as drsg opens its own, in one write
transaction, timed from its start to its durable commit:

- ``import-order``: one put per entry in the order the import wrote them — a line's entries
  together (a node: nodes, keys, labels; an edge: edges, out, in), lines in file order, a log record
  every 10,000 lines: the adjacency and key inserts land at random places in their trees;
- ``sorted``: each table's entries, in import order, sorted (timed: a bulk path would sort) and written with
  ``putmulti(append=True)``, which appends to the tree's last leaf without a search;
- ``commit-runs``: what a streamed import cannot avoid — each commit's entries (10,000 lines, as
  drsg commits them) as one sorted run per table, written by store/_bulkrun.c's C writes (appended
  past a table's last key, else put in key order: a commit's ``out``/``in`` keys land all over their
  trees) with the log record after them, the ``out``/``in`` runs held for TXN_COMMITS commits (the
  commits an import's LMDB transaction holds, store/bulkwrite.py's flush): drsg's bulk path with
  everything but LMDB's work taken away;
- ``txn-runs``: the same, in a transaction of TXN_COMMITS commits each, committed (and synced) as
  the import commits its own: what an import whose memory stays bounded cannot avoid either — each
  transaction's ``out``/``in`` inserts land all over trees the transactions before it wrote.

Run by bench_load in a fresh process per pass: ``python -m tests.bench.load_floor REF OUT MODE
[TXN_COMMITS [DROP]]``; DROP, tables left out of the runs modes (``in,edges``): what a layout without
them would cost; prints one JSON line (``secs``; of it ``sort_secs`` and ``commit_secs``; ``entries``).
"""

from __future__ import annotations

import json
import sys
import time
from operator import itemgetter
from pathlib import Path
from typing import Any

import lmdb

from drsg.store.environment import DB_NAMES

MODES = ("import-order", "sorted", "commit-runs", "txn-runs")
COMMIT_LINES = 10_000  # the import's lines per log record
Entry = tuple[bytes, bytes]


def _open(path: Path, readonly: bool) -> lmdb.Environment:
    """As store/environment.py opens a database (a big map: no growth inside the timed write)."""
    return lmdb.open(
        str(path), subdir=False, map_size=4 << 30, max_dbs=len(DB_NAMES) + 2, readonly=readonly, readahead=False
    )


def read_tables(ref: Path) -> dict[str, list[Entry]]:
    """Every entry of every table of the reference database, in key order."""
    env = _open(ref, readonly=True)
    tables: dict[str, list[Entry]] = {}
    with env.begin() as txn:
        for name in DB_NAMES:
            db = env.open_db(name.encode(), txn=txn, create=False)
            tables[name] = list(txn.cursor(db=db).iternext())
    env.close()
    return tables


def import_order(tables: dict[str, list[Entry]]) -> list[tuple[str, bytes, bytes]]:
    """The entries as the import put them: per node line nodes, keys, labels (id order; a key entry's
    value is its node id); per edge line edges, out, in (edge id order; an adjacency key ends with
    the edge id, then the inverted seq); a log record after every ``COMMIT_LINES`` lines; the few
    others (meta, plane, tallies) last."""
    by_node = sorted(tables["keys"], key=lambda e: e[1])  # value: the node id
    nodes, labels = tables["nodes"], tables["labels"]
    assert len(nodes) == len(by_node) == len(labels), "the floor expects one key and one label a node"
    edge_id = lambda e: e[0][-16:-8]  # noqa: E731
    outs, ins = sorted(tables["out"], key=edge_id), sorted(tables["in"], key=edge_id)
    ops: list[tuple[str, bytes, bytes]] = []
    logs = iter(tables["log"])
    for n, (node, key, label) in enumerate(zip(nodes, by_node, labels, strict=True), 1):
        ops += [("nodes", *node), ("keys", *key), ("labels", *label)]
        if n % COMMIT_LINES == 0:
            ops.append(("log", *next(logs)))
    for e, (edge, out, inn) in enumerate(zip(tables["edges"], outs, ins, strict=True), len(nodes) + 1):
        ops += [("edges", *edge), ("out", *out), ("in", *inn)]
        if e % COMMIT_LINES == 0:
            ops.append(("log", *next(logs)))
    ops += [("log", *entry) for entry in logs]
    for name in ("meta", "planes", "plane_names", "tally", "indexes"):
        ops += [(name, *entry) for entry in tables[name]]
    return ops


Batch = tuple[dict[str, Any], Entry | None]  # a commit's runs by table (store/_bulkrun.c's Run), its log record


def _commit_batches(ops: list[tuple[str, bytes, bytes]], txn_commits: int, drop: set[str]) -> list[Batch]:
    """Each commit's entries (up to its log record) as one run per table, the adjacency's held for
    ``txn_commits`` commits, made before the clock starts; the tables in ``drop`` left out."""
    from drsg.store import bulkwrite

    batches: list[Batch] = []
    runs: dict[str, Any] = {}
    held: dict[str, Any] = {}  # out, in: written with a transaction's last commit
    for name, key, value in ops:
        if name == "log":
            if len(batches) % txn_commits == txn_commits - 1:
                runs.update(held)
                held = {}
            batches.append((runs, (key, value)))
            runs = {}
        elif name not in drop:
            (held if name in ("out", "in") else runs).setdefault(name, bulkwrite.NATIVE.Run()).add(key, value)
    batches.append(({**runs, **held}, None))  # (meta, planes, tallies: after the last record)
    return batches


def _write_batches(
    env: lmdb.Environment, txn: lmdb.Transaction, dbs: dict[str, Any], batches: list[Batch], txn_commits: int
) -> tuple[lmdb.Transaction, float, float]:
    """Each commit's runs sorted and written from C, then its log record; with ``txn_commits``, the
    transaction committed after every that many and another begun. The transaction open at the end,
    the sorts' time and the commits'."""
    from drsg.store import bulkwrite

    bulkwrite._bind_lmdb()
    sort_secs = commit_secs = 0.0
    for n, (runs, record) in enumerate(batches):
        for table, run in runs.items():
            sort_start = time.perf_counter()
            run.sort()
            sort_secs += time.perf_counter() - sort_start
            bulkwrite.put_sorted(txn, dbs[table], run)
        if record is not None:
            txn.put(*record, db=dbs["log"], append=True)
        if txn_commits and n % txn_commits == txn_commits - 1 and n < len(batches) - 1:
            committing = time.perf_counter()
            txn.commit()
            commit_secs += time.perf_counter() - committing
            txn = env.begin(write=True)
    return txn, sort_secs, commit_secs


def main() -> None:
    ref, out, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    if mode not in MODES:
        raise SystemExit(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    tables = read_tables(ref)
    ops = import_order(tables)
    written: dict[str, list[Entry]] = {name: [] for name in DB_NAMES}  # each table's, in import order
    for name, key, value in ops:
        written[name].append((key, value))
    env = _open(out, readonly=False)
    dbs = {name: env.open_db(name.encode()) for name in DB_NAMES}
    txn_commits = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    drop = set(filter(None, sys.argv[5].split(","))) if len(sys.argv) > 5 else set()
    batches = _commit_batches(ops, txn_commits, drop) if mode in ("commit-runs", "txn-runs") else []
    sort_secs = earlier_commits = 0.0
    start, cpu = time.perf_counter(), time.process_time()
    txn = env.begin(write=True)
    try:
        if mode == "import-order":
            put = txn.put
            for name, key, value in ops:
                put(key, value, db=dbs[name])
        elif mode in ("commit-runs", "txn-runs"):
            txn, sort_secs, earlier_commits = _write_batches(
                env, txn, dbs, batches, txn_commits if mode == "txn-runs" else 0
            )
        else:
            for name, entries in written.items():
                sort_start = time.perf_counter()
                ordered = sorted(entries, key=itemgetter(0))  # keys are unique: by key alone, cheaper
                sort_secs += time.perf_counter() - sort_start
                txn.cursor(db=dbs[name]).putmulti(ordered, append=True)
    except BaseException:
        txn.abort()
        raise
    committing = time.perf_counter()
    txn.commit()  # writes every page and syncs the file
    secs, cpu = time.perf_counter() - start, time.process_time() - cpu
    env.close()
    commit_secs = secs - (committing - start) + earlier_commits
    print(
        json.dumps({"secs": secs, "cpu": cpu, "sort_secs": sort_secs, "commit_secs": commit_secs, "entries": len(ops)})
    )


if __name__ == "__main__":
    main()
