"""As-of reads at 1M commits: current reads vs reads as of random earlier seqs.

Builds (once; reused while its stamp matches) a database of 1,000,000 commits made in bulk — one
mutation per commit via ``commit_point``, 10,000 commits per ``db.write``: 25% node creations (keyed,
labelled, a line of real text), 25% edge creations, 50% updates of earlier nodes, so a node has
several versions and old seqs really see old state. Then, for node get by id, node get by key and
neighbors, it times current reads against reads as of a random seq where the node exists. Raw
py-lmdb does the same ordered-key seek (``set_range(group + ~seq)``) plus msgpack decoding on the
same file, as the floor. Target: as-of ≤ 2× current (p50 and p99).

    .venv/bin/python -m tests.bench.bench_asof [--commits 1000000] [--samples 20000] [--rebuild]
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Callable
from typing import Any

import msgpack

import drsg
import drsg.kernel.errors
from drsg.store import keys
from drsg.store.snapshot import Snapshot
from tests.bench import common

PER_WRITE = 10_000
EDGE_TYPES = ("NEXT", "CITES", "SEE_ALSO")


def build(path: Any, commits: int, seed: int) -> dict[str, Any]:
    lines, vocab = common.text_lines(), common.words()
    rng = random.Random(seed)
    db = drsg.open(path, map_size=8 << 30)
    plane = db.plane("startup")
    node_ids: list[int] = []
    node_keys: list[str] = []
    created_at: list[int] = []  # seq at which node_ids[i] was created (increasing)
    made = 0
    start = time.perf_counter()
    while made < commits:
        todo = min(PER_WRITE, commits - made)

        def fn(tx: Any, todo: int = todo) -> None:
            for _ in range(todo):
                roll = rng.random()
                if roll < 0.25 or len(node_ids) < 100:
                    key = f"{rng.choice(vocab)}-{len(node_ids)}"
                    node = tx.create_node(
                        plane, key, [rng.choice(("Line", "Doc", "Note"))], {"text": rng.choice(lines), "rev": 0}
                    )
                    node_ids.append(node.id)
                    node_keys.append(key)
                    created_at.append(tx.seq)
                elif roll < 0.5:
                    # mostly near neighbours (a chain of text), some long-range links
                    a = len(node_ids) - 1 - min(int(rng.expovariate(0.05)), len(node_ids) - 1)
                    b = rng.randrange(len(node_ids)) if rng.random() < 0.3 else max(0, a - 1)
                    tx.create_edge(plane, node_ids[a], node_ids[b], rng.choice(EDGE_TYPES), {"w": rng.random()})
                else:
                    i = rng.randrange(len(node_ids))
                    tx.update_node(plane, node_ids[i], {"text": rng.choice(lines), "rev": tx.seq})
                tx.commit_point()

        db.write(fn)
        made += todo
        if made % 100_000 == 0:
            print(f"  built {made:,} commits ({made / (time.perf_counter() - start):,.0f}/s)", flush=True)
    secs = time.perf_counter() - start
    meta = {
        "commits": commits,
        "seed": seed,
        "head": db.head(),
        "build_secs": secs,
        "node_ids": node_ids,
        "node_keys": node_keys,
        "created_at": created_at,
        "file_size": db.env.file_size(),
    }
    db.close()
    return meta


def timed(samples: list[Any], op: Callable[[Any], Any]) -> list[float]:
    out = []
    clock = time.perf_counter_ns
    for sample in samples:
        t0 = clock()
        op(sample)
        out.append((clock() - t0) / 1000)  # µs
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--commits", type=int, default=1_000_000)
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    common.text_lines()
    work = common.OUT / "asof"
    work.mkdir(parents=True, exist_ok=True)
    name = f"graph-{args.commits}-{args.seed}"  # one database per size, so a quick run keeps the big one
    path, stamp = work / f"{name}.drsg", work / f"{name}.json"
    meta = json.loads(stamp.read_text()) if stamp.exists() and path.exists() and not args.rebuild else None
    if meta is not None:
        try:  # reuse only a database this drsg still reads as built (the engine's format may move on)
            with drsg.open(path) as probe:
                if probe.head() != meta["head"]:
                    meta = None
        except drsg.kernel.errors.DrsgError:
            meta = None
    if meta is None or meta["commits"] != args.commits or meta["seed"] != args.seed:
        for p in (path, path.with_name(path.name + "-lock"), stamp):
            p.unlink(missing_ok=True)
        print(f"building {args.commits:,} commits …", flush=True)
        meta = build(path, args.commits, args.seed)
        stamp.write_text(json.dumps(meta))
    node_ids, node_keys, created_at = meta["node_ids"], meta["node_keys"], meta["created_at"]
    head = meta["head"]
    rng = random.Random(args.seed + 1)

    db = drsg.open(path)
    plane = db.plane("startup")
    pid = plane.id
    dbs = db.env.dbs

    def pick(as_of: bool) -> tuple[int, int, str]:
        """(seq, node id, key): a random node, and for as-of a random seq at which it exists."""
        if not as_of:
            i = rng.randrange(len(node_ids))
            return head, node_ids[i], node_keys[i]
        seq = rng.randrange(created_at[0], head + 1)
        import bisect

        last = bisect.bisect_right(created_at, seq) - 1
        i = rng.randrange(last + 1)
        return seq, node_ids[i], node_keys[i]

    results: dict[str, dict[str, list[float]]] = {}
    with db.env.read() as txn:
        nodes_cur = txn.cursor(db=dbs["nodes"])
        keys_cur = txn.cursor(db=dbs["keys"])

        def raw_by_id(s: tuple[int, int, str]) -> Any:
            group = keys.node_group(pid, s[1])
            assert nodes_cur.set_range(group + keys.inv(s[0]))
            return msgpack.unpackb(nodes_cur.value(), raw=False, strict_map_key=False)

        def raw_by_key(s: tuple[int, int, str]) -> Any:
            assert keys_cur.set_range(keys.key_group(pid, s[2]) + keys.inv(s[0]))
            node_id = keys.read_u64(keys_cur.value())
            assert nodes_cur.set_range(keys.node_group(pid, node_id) + keys.inv(s[0]))
            return msgpack.unpackb(nodes_cur.value(), raw=False, strict_map_key=False)

        def by_id(s: tuple[int, int, str]) -> Any:
            node = Snapshot(txn, dbs, s[0]).node(pid, s[1])
            assert node is not None
            return node

        def by_key(s: tuple[int, int, str]) -> Any:
            node = Snapshot(txn, dbs, s[0]).node_by_key(pid, s[2])
            assert node is not None and node.id == s[1]
            return node

        def neighbors(s: tuple[int, int, str]) -> Any:
            return list(Snapshot(txn, dbs, s[0]).neighbors(pid, s[1]))

        ops = {"node by id": by_id, "node by key": by_key, "neighbors": neighbors}
        raw_ops = {"node by id": raw_by_id, "node by key": raw_by_key}
        for name in ("nodes", "keys", "edges", "out", "in"):  # fault the map in: no cold-cache skew
            for _ in txn.cursor(db=dbs[name]).iternext(values=True):
                pass
        current = [pick(False) for _ in range(args.samples)]
        as_of = [pick(True) for _ in range(args.samples)]
        for name, op in ops.items():
            cells = [("current", op, current), ("as-of", op, as_of)]
            if name in raw_ops:
                cells += [("raw current", raw_ops[name], current), ("raw as-of", raw_ops[name], as_of)]
            cell_times: dict[str, list[float]] = {label: [] for label, _, _ in cells}
            for start in range(0, args.samples, 500):  # interleave the cells in slices of 500
                for label, fn, samples in cells:
                    cell_times[label] += timed(samples[start : start + 500], fn)
            results[name] = cell_times
        neighbor_counts = {
            m: [len(neighbors(s)) for s in v[:2000]] for m, v in (("current", current), ("as-of", as_of))
        }

    # End to end: open the snapshot (read txn, resolve as-of) and read one node.
    def e2e(s: tuple[int, int, str], as_of: bool) -> None:
        with db.snapshot(s[0] if as_of else None) as snap:
            assert snap.node(pid, s[1]) is not None

    e2e_times: dict[str, list[float]] = {"current": [], "as-of": []}
    for start in range(0, args.samples, 500):
        for mode, samples in (("current", current), ("as-of", as_of)):
            e2e_times[mode] += timed(samples[start : start + 500], lambda s, m=mode: e2e(s, m == "as-of"))
    results["snapshot + node by id"] = e2e_times
    db.close()

    def fmt(v: list[float]) -> str:
        return f"p50 {common.pct(v, 50):.1f} / p99 {common.pct(v, 99):.1f} µs"

    rows = []
    for name in ("node by id", "node by key", "neighbors", "snapshot + node by id"):
        r = results[name]
        ratio50 = common.pct(r["as-of"], 50) / common.pct(r["current"], 50)
        ratio99 = common.pct(r["as-of"], 99) / common.pct(r["current"], 99)
        raw = ""
        if "raw current" in r:
            raw = f"current {fmt(r['raw current'])}; as-of {fmt(r['raw as-of'])}"
        rows.append(
            (
                f"{name}: current → as-of",
                f"{fmt(r['current'])} → {fmt(r['as-of'])}",
                raw or "—",
                f"as-of/current {ratio50:.2f}× p50, {ratio99:.2f}× p99 (target ≤ 2×)",
            )
        )
    by_id = {mode: common.pct(v, 50) for mode, v in results["node by id"].items()}
    rows.append(
        (
            "engine / raw seek (node by id, current; as-of)",
            "",
            "",
            f"{by_id['current'] / by_id['raw current']:.2f}×; {by_id['as-of'] / by_id['raw as-of']:.2f}× (p50)",
        )
    )
    n_cur, n_old = neighbor_counts["current"], neighbor_counts["as-of"]
    common.record(
        f"(c) as-of vs current reads at {head:,} commits",
        rows,
        [
            f"Database: {meta['commits']:,} commits ({len(node_ids):,} nodes, 25% creations / 25% edges / 50% "
            f"updates), {meta['file_size'] / 2**20:,.0f} MiB, built in bulk at "
            f"{meta['commits'] / meta['build_secs']:,.0f} commits/s ({meta['build_secs']:.0f} s).",
            f"{args.samples:,} random samples per cell; as-of seqs uniform over the log where the node exists. "
            f"Rows 1–3 run inside one read transaction (a Snapshot per read); the last opens "
            f"`db.snapshot()` per read. Mean neighbors per read: current {sum(n_cur) / len(n_cur):.1f}, "
            f"as-of {sum(n_old) / len(n_old):.1f}.",
        ],
    )


if __name__ == "__main__":
    main()
