"""A writer process for snapshot tests: ``python snapshot_writer.py DB NAME STOP SEED``.

Writes through the Python API (``drsg.open``) until the file STOP exists (a minute at most): Docs
with a ``body`` (text, for a keyword index) and an ``emb`` (a vector, for a vector index) in plane
``load``, updates, deletes and edges among its own keys, and now and then a node in plane
``other``; one commit each, so the log moves while a snapshot is taken. Prints ``{"commits": N}``
at the end.
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

import drsg
from drsg.kernel.values import Value, Vector
from drsg.store.transaction import WriteTx

WORDS = ["graph", "log", "snapshot", "restore", "index", "vector", "keyword", "commit", "plane", "node", "edge"]


def main(path: str, name: str, stop: Path, seed: int) -> int:
    rng = random.Random(seed)
    mine: list[str] = []
    made = 0
    with drsg.open(path) as db:
        deadline = time.monotonic() + 60
        while not stop.exists() and time.monotonic() < deadline:
            made += 1
            roll = rng.random()
            props = {"body": " ".join(rng.choice(WORDS) for _ in range(6)), "n": made}
            if roll < 0.08:
                db.write(lambda tx, p=props: tx.create_node(tx.plane("other"), None, ["Robot"], p), {"via": name})
            elif roll < 0.25 and mine:
                key = rng.choice(mine)
                db.write(lambda tx, k=key, p=props: tx.update_node(tx.plane("load"), "@" + k, p), {"via": name})
            elif roll < 0.33 and len(mine) > 2:
                key = mine.pop(rng.randrange(len(mine)))
                db.write(lambda tx, k=key: tx.delete_node(tx.plane("load"), "@" + k), {"via": name})
            else:
                key, link = f"{name}-{made}", rng.random() < 0.4
                props["emb"] = Vector.of([rng.random() for _ in range(4)])

                def create(tx: WriteTx, key: str = key, link: bool = link, props: dict[str, Value] = props) -> None:
                    plane = tx.plane("load")
                    node = tx.create_node(plane, key, ["Doc"], props)
                    if mine and link:
                        tx.create_edge(plane, node.id, "@" + mine[-1], "NEXT")

                db.write(create, {"via": name})
                mine.append(key)
            time.sleep(rng.uniform(0, 0.003))
    print(json.dumps({"commits": made}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])))
