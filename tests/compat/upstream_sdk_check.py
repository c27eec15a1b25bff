"""Drive `drsg serve` with upstream's own Python client (issue #4's "upstream's SDK" check).

Upstream's SDK (`sdk/python/src/drsg`: the hand-written ``_client.py`` transport and the
``_generated.py`` methods, generated from the same ``openrpc.json``) is not on PyPI, so it cannot be
installed by CI and is not vendored here (its code is upstream's). Point this script at a checkout:

    .venv/bin/python tests/compat/upstream_sdk_check.py --sdk /path/to/dr-strange/sdk/python/src

It starts ``drsg --db TMP serve --addr 127.0.0.1:PORT`` with ``DRSG_TOKEN`` set, and with the SDK's
``Drsg`` client: a wrong token must raise its ``DrsgAuthError``; it creates, reads, updates and
deletes nodes and edges; ``plane_cypher`` writes and reads as upstream's own SDK test of it does
(a CREATE's change counts, a MATCH's subgraph, a ``$param``); and ``watch()`` (its feed helper)
must yield every change, in order. The package is named ``drsg`` like ours, so it is imported
first on ``sys.path`` and the server runs as a separate process. Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import importlib
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

TOKEN = "upstream-sdk-check-token"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdk", required=True, help="the directory that holds upstream's `drsg` SDK package")
    args = parser.parse_args()
    server_cli = Path(sys.executable).with_name("drsg")  # ours, from this virtual environment
    sys.path.insert(0, args.sdk)
    sdk = importlib.import_module("drsg")
    if not hasattr(sdk, "Drsg"):
        print(f"{args.sdk} does not hold upstream's SDK (no drsg.Drsg)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        port = _free_port()
        env = {**os.environ, "DRSG_TOKEN": TOKEN}
        server = subprocess.Popen(
            [str(server_cli), "--db", f"{tmp}/g.drsg", "serve", "--addr", f"127.0.0.1:{port}"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait(port)
            return _checks(sdk, f"http://127.0.0.1:{port}")
        finally:
            server.terminate()
            server.wait(timeout=30)


def _checks(sdk: Any, base: str) -> int:
    failures = 0

    def check(name: str, ok: bool, detail: Any = "") -> None:
        nonlocal failures
        failures += not ok
        print(f"{'PASS' if ok else 'FAIL'}  {name}  {detail if not ok else ''}")

    try:
        sdk.Drsg(base_url=base, token="wrong").db_stats()
        check("a wrong token raises DrsgAuthError", False, "no error")
    except sdk.DrsgAuthError as exc:
        check("a wrong token raises DrsgAuthError", exc.code == -32001)
    client = sdk.Drsg(base_url=base, token=TOKEN)
    check("rpc.discover", len(client.rpc_discover()["methods"]) > 20)
    check("plane.create", client.plane_create("sdk", {"k": "v"})["name"] == "sdk")
    events: list[dict[str, Any]] = []
    watching = threading.Event()

    def watch() -> None:
        feed = client.watch("sdk")
        watching.set()
        for event in feed:
            events.append(event)
            if len(events) == 7:
                break

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    watching.wait(10)
    time.sleep(0.5)  # the generator sends plane.watch on its first step
    ada = client.node_create("sdk", key="ada", labels=["Person"], properties={"born": 1815})
    bob = client.node_create("sdk", key="bob", labels=["Person"])
    check("node.create", ada["external_key"] == "ada" and ada["properties"] == {"born": 1815})
    check("node.get by key", client.node_get("sdk", key="ada")["id"] == ada["id"])
    updated = client.node_update("sdk", key="ada", set={"title": "Countess"}, unset=["born"])
    check("node.update", updated["properties"] == {"title": "Countess"})
    edge = client.edge_create("sdk", "ada", bob["id"], "KNOWS", {"since": 1833})
    check("edge.create (src by key, dst by id)", edge["src"] == ada["id"] and edge["dst"] == bob["id"])
    check("edge.update", client.edge_update("sdk", edge["id"], set={"w": 2})["properties"] == {"since": 1833, "w": 2})
    check("plane.neighbors", client.plane_neighbors("sdk", ada["id"]) == [{"node": bob["id"], "edge": edge["id"]}])
    check("edge.delete", client.edge_delete("sdk", edge["id"])["deleted"] is True)
    check("node.delete", client.node_delete("sdk", key="bob")["deleted"] is True)
    check("node.get of a deleted node is null", client.node_get("sdk", key="bob") is None)
    watcher.join(15)
    ops = [(c["kind"], c["op"]) for e in events for c in e["changes"]]
    expected = [
        ("node", "created"),
        ("node", "created"),
        ("node", "updated"),
        ("edge", "created"),
        ("edge", "updated"),
        ("edge", "deleted"),
        ("node", "deleted"),
    ]
    check("watch() yields every change in order", ops == expected, ops)
    seqs = [e["seq"] for e in events]
    check("watch() events in seq order", seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs)
    # upstream's SDK test of plane.cypher, on the plane every database has
    query = 'CREATE (a:Person {key: "carol", age: 30})-[:KNOWS]->(b:Person {key: "dave"})'
    made = client.plane_cypher(plane="startup", query=query)
    counts = (made.get("write"), made.get("nodes_created"), made.get("edges_created"))
    check("plane.cypher write answers its change counts", counts == (True, 2, 1), made)
    adults = client.plane_cypher(plane="startup", query="MATCH (n:Person) WHERE n.age >= 18 RETURN n")
    found = adults["count"] == 1 and adults["nodes"][0]["external_key"] == "carol"
    check("plane.cypher read answers the matched subgraph", found, adults)
    older = "MATCH (n:Person) WHERE n.age >= $min RETURN n"
    check("plane.cypher $params", client.plane_cypher(plane="startup", query=older, params={"min": 40})["count"] == 0)
    try:
        client.node_get("no-such-plane", key="x")
        check("an unknown plane is a DrsgError", False, "no error")
    except sdk.DrsgError as exc:
        check("an unknown plane is a DrsgError", exc.code in (-32602, -32000), exc.code)
    print(f"{'all checks passed' if not failures else f'{failures} check(s) failed'}")
    return 1 if failures else 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("drsg serve did not start within 60 s")


if __name__ == "__main__":
    raise SystemExit(main())
