"""A writer process for the crash test: it appends commits until it is killed.

Run as ``python crash_writer.py DB RUN SEED``. Several threads write at once, so group commit
batches them: single-node commits, multi-node commits (nodes + a chain of edges, sometimes deleting
an older node), and bulk writes that make many commits inside one LMDB transaction via
``commit_point``. After ``db.write`` has returned — never before — a thread prints one line
(``os.write`` of a short line is atomic on a pipe, so lines never interleave):

    S <seq> <key>                       one node
    M <seq> <key,key,…> <deleted key|->  several nodes + edges (+ a delete) in one commit
    B <seq,seq,…> <key,key,…>           one bulk write: commit i created node i

Every commit's origin names its run and what it should contain, so the checker can prove that an
unacknowledged commit that did reach the log is whole. The text of a node is a pure function of its
key (:func:`expected_text`), so the checker knows what each node must hold.
"""

from __future__ import annotations

import itertools
import os
import random
import sys
import threading
import zlib
from pathlib import Path

PLANE = "crash"
SINGLE_THREADS = 4
BULK_SIZE = 20

_CORPUS: list[str] = []


def corpus() -> list[str]:
    """Lines of real prose from the seed documents shipped in tests/data (the same in every process)."""
    if _CORPUS:
        return _CORPUS
    lines: list[str] = []
    for path in sorted((Path(__file__).resolve().parents[1] / "data").glob("*.txt")):
        lines += [ln.strip() for ln in path.read_text(errors="replace").splitlines() if len(ln.strip()) > 20]
    _CORPUS.extend(sorted(set(lines)))
    return _CORPUS


def expected_text(key: str) -> str:
    lines = corpus()
    return lines[zlib.crc32(key.encode()) % len(lines)]


def props_for(key: str) -> dict[str, object]:
    text = expected_text(key)
    return {"text": text, "cid": key, "crc": zlib.crc32(text.encode())}


def ack(line: str) -> None:
    os.write(1, (line + "\n").encode())


def main() -> None:
    db_path, run, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    import drsg

    # Start small so the map grows (and can be killed while growing) during the run.
    db = drsg.open(db_path, map_size=1 << 20, group_max=rng.choice([4, 64, 1000]))
    db.write(lambda tx: tx.ensure_plane(PLANE), {"via": "crash", "run": run, "kind": "plane"})
    plane = db.plane(PLANE)
    corpus()
    ack("READY")
    stop = threading.Event()
    failures: list[BaseException] = []

    def guarded(fn):  # type: ignore[no-untyped-def]
        def run_it(*args: object) -> None:
            try:
                fn(*args)
            except BaseException as exc:  # pragma: no cover - reported to the parent
                failures.append(exc)
                ack(f"ERROR {type(exc).__name__}: {exc}")
                stop.set()

        return run_it

    @guarded
    def single(t: int) -> None:
        i = 0
        while not stop.is_set():
            key = f"r{run}-s{t}-{i}"
            origin = {"via": "crash", "run": run, "kind": "S", "key": key}
            r = db.write(lambda tx, key=key: tx.create_node(plane, key, ["Doc"], props_for(key)), origin)
            ack(f"S {r.seq} {key}")
            i += 1

    @guarded
    def multi() -> None:
        i = 0
        mine: list[str] = []
        local = random.Random(seed + 1)
        while not stop.is_set():
            n = local.randint(2, 6)
            new = [f"r{run}-m{i}-{j}" for j in range(n)]
            victim = mine.pop(local.randrange(len(mine))) if mine and local.random() < 0.4 else None
            origin = {"via": "crash", "run": run, "kind": "M", "keys": new, "del": victim}

            def fn(tx, new=new, victim=victim):  # type: ignore[no-untyped-def]
                for key in new:
                    tx.create_node(plane, key, ["Doc", "Multi"], props_for(key))
                for a, b in itertools.pairwise(new):
                    tx.create_edge(plane, "@" + a, "@" + b, "NEXT", {"w": len(a)})
                if victim is not None:
                    tx.delete_node(plane, "@" + victim)

            r = db.write(fn, origin)
            ack(f"M {r.seq} {','.join(new)} {victim or '-'}")
            mine += new
            i += 1

    @guarded
    def bulk() -> None:
        i = 0
        local = random.Random(seed + 2)
        while not stop.is_set():
            new = [f"r{run}-b{i}-{j}" for j in range(BULK_SIZE)]
            origin = {"via": "crash", "run": run, "kind": "B", "batch": i}

            def fn(tx, new=new):  # type: ignore[no-untyped-def]
                for key in new:
                    tx.create_node(plane, key, ["Doc", "Bulk"], props_for(key))
                    tx.commit_point()

            r = db.write(fn, origin)
            ack(f"B {','.join(map(str, r.seqs))} {','.join(new)}")
            i += 1
            stop.wait(local.uniform(0, 0.02))

    threads = [threading.Thread(target=single, args=(t,), daemon=True) for t in range(SINGLE_THREADS)]
    threads += [threading.Thread(target=multi, daemon=True), threading.Thread(target=bulk, daemon=True)]
    for th in threads:
        th.start()
    stop.wait(float(os.environ.get("DRSG_CRASH_WRITER_SECONDS", "60")))
    stop.set()
    for th in threads:
        th.join()
    ack("DONE" if not failures else "FAILED")
    os._exit(0 if not failures else 3)


if __name__ == "__main__":
    main()
