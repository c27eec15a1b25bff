"""A snapshot of a Kafka node's copy (store/backup.py, workers/backup.py) against a real tansu broker:
`drsg --log … snapshot` and `GET /snapshot` of `drsg serve` on the log both restore into an embedded
database holding the same graph as the copy at the snapshot's seq, with the indexes it carried."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest

import drsg
from drsg.kernel.errors import Conflict
from drsg.kernel.values import Vector
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.transaction import WriteTx
from drsg.workers.manager import IndexSet
from tests.support.kafka_broker import Broker
from tests.support.kafka_nodes import serve_on_kafka
from tests.support.server import clean_env, cli, drsg_argv

pytestmark = pytest.mark.timeout(180)
PLANES = ("startup", "docs")


def fill(node: KafkaDatabase, name: str) -> None:
    """Plane `docs` with Docs (text, a vector), an edge, a keyword and a vector index, written from
    ``node``; then a refused write (a decided refusal is a commit of the log too)."""

    def docs(tx: WriteTx) -> None:
        plane = tx.ensure_plane("docs")
        tx.declare_index(plane, "keyword", "Doc", "text", {})
        tx.declare_index(plane, "vector", "Doc", "emb", {})
        made = [
            tx.create_node(plane, f"{name}{i}", ["Doc"], {"text": f"log copy {i}", "emb": Vector.of([1.0, i, 0.5])})
            for i in range(6)
        ]
        tx.link(plane, made[0].id, made[1].id, "CITES")

    node.write(docs)
    with pytest.raises(Conflict):
        node.write(lambda tx: tx.create_node(tx.plane("docs"), f"{name}0", ["Doc"], {}))


def export(db: Path, plane: str, *extra: str) -> str:
    ran = cli(db, "export", "--canonical", "-p", plane, *extra)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def on_log(db: Path, url: str, *args: str) -> dict[str, object]:
    """`drsg --db DB --log URL ARGS --json` in its own process, its one JSON answer."""
    ran = subprocess.run(
        [*drsg_argv(), "--db", str(db), "--log", url, *args, "--json"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr
    answer: dict[str, object] = json.loads(ran.stdout.splitlines()[0])
    return answer


def restored_as(snapshot: Path, target: Path, copy: Path, seq: int) -> None:
    """``snapshot`` restored as the embedded ``target``: the copy's graph at ``seq``, whole and checked."""
    ran = cli(target, "restore", str(snapshot), "--json")
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["seq"] == seq
    for plane in PLANES:
        assert export(target, plane) == export(copy, plane, "--as-of", str(seq)), plane
    checked = cli(target, "check", "--json")
    assert checked.returncode == 0 and json.loads(checked.stdout)["ok"] is True, checked.stdout + checked.stderr


def test_a_nodes_copy_snapshotted_by_the_cli_restores_as_an_embedded_database(
    tmp_path: Path, kafka_broker: Broker
) -> None:
    url = kafka_broker.url(f"snap-{uuid.uuid4().hex[:12]}")
    copy, other = tmp_path / "a.drsg", tmp_path / "b.drsg"
    with drsg.open(copy, log=url) as a, drsg.open(other, log=url) as b:
        assert isinstance(a, KafkaDatabase) and isinstance(b, KafkaDatabase)
        fill(b, "b")  # written through the other node: in a's copy only as the topic brought it
        a.catch_up(b.head())
    for statement in ('SEARCH (d:Doc) ON text MATCHING "copy" TOPK 3', "SEARCH (d:Doc) ON emb NEAR [1, 1, 0.5] TOPK 3"):
        on_log(copy, url, "search", statement, "-p", "docs")  # a read saves the copy's sidecars beside it
    taken = on_log(copy, url, "snapshot", str(tmp_path / "a.snap"))
    seq = taken["seq"]
    assert isinstance(seq, int) and isinstance(taken["sidecars"], list) and len(taken["sidecars"]) == 2
    restored_as(tmp_path / "a.snap", tmp_path / "restored.drsg", copy, seq)

    with drsg.open(tmp_path / "restored.drsg") as restored:
        assert not isinstance(restored, KafkaDatabase)
        indexes = IndexSet(restored)
        assert indexes.catch_up() == seq
        for worker in indexes.workers.values():  # loaded from the sidecars it carried (a rebuild's is 0)
            assert worker.sidecar.in_force_seq > 0 and len(worker) == 6, worker.describe()
        made = restored.write(lambda tx: tx.create_node(tx.plane("docs"), "after", ["Doc"], {}))
        assert made.seq == seq + 1  # an embedded database now: it writes on from there


def test_get_snapshot_of_a_server_on_the_log_restores_as_an_embedded_database(
    tmp_path: Path, kafka_broker: Broker
) -> None:
    url = kafka_broker.url(f"snap-{uuid.uuid4().hex[:12]}")
    with serve_on_kafka(tmp_path, url) as (server, other):
        fill(other, "o")
        server.call("node.create", {"plane": "docs", "key": "by-server", "labels": ["Doc"], "properties": {}})
        seq = server.head()
        other.catch_up(seq)  # the server's own write too
        got = server.request("GET", "/snapshot", headers={"Authorization": f"Bearer {server.token}"})
        assert got.status == 200, got.body[:200]
        (tmp_path / "served.snap").write_bytes(got.body)
        assert server.head() == seq  # nothing written meanwhile: the snapshot is at seq
    restored_as(tmp_path / "served.snap", tmp_path / "restored.drsg", tmp_path / "other.drsg", seq)
