"""An import on a Kafka node as intents (store/import_intents.py) against a real tansu broker: its
lines go out in chunk records, every node holds them in its copy and decides the whole import where
its closing record lands — while another node writes steadily, refused alike on every node, and the
same on a node restarted between its chunks.
"""

from __future__ import annotations

import json
import threading
import uuid
from datetime import datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

import drsg
from drsg.kernel.errors import Conflict, DrsgError, UsageError
from drsg.store.database import Database
from drsg.store.import_intents import CHUNK, CLOSE
from drsg.store.intents import Intent, decode_intent, is_intent
from drsg.store.jsonl import export_lines
from drsg.store.kafka.database import KafkaDatabase
from drsg.surfaces.cli.main import cli
from tests.support.kafka_broker import Broker
from tests.support.kafka_nodes import keys_in, tables

Outcome = tuple[str, object]


@pytest.fixture
def url(kafka_broker: Broker) -> str:
    return kafka_broker.url(f"import-intents-{uuid.uuid4().hex[:12]}")


def node_of(folder: Path, name: str, url: str, chunk_lines: int = 10_000) -> KafkaDatabase:
    db = drsg.open(folder / f"{name}.drsg", log=url, settings={"store.import_commit_lines": chunk_lines})
    assert isinstance(db, KafkaDatabase)
    return db


def canonical(db: Database) -> list[str]:
    return list(export_lines(db, "startup", canonical=True))


def held(db: Database) -> list[bytes]:
    """The meta keys of imports' held chunks in ``db``'s copy."""
    with db.env.read() as txn:
        return [bytes(k) for k, _ in txn.cursor(db=db.env.dbs["meta"]) if bytes(k).startswith(b"import_")]


def graph_file(path: Path, n: int, prefix: str = "n") -> Path:
    """Keyed nodes, keyless ones named by the file's ``id``, and edges between them."""
    lines = [f'{{"external_key":"{prefix}{i}","labels":["Doc"],"properties":{{"i":{i}}}}}' for i in range(n)]
    lines += [f'{{"id":{9000 + i},"labels":["Anon"]}}' for i in range(n // 10)]
    lines += [f'{{"src_key":"{prefix}{i}","dst_key":"{prefix}{i + 1}","type":"NEXT"}}' for i in range(n - 1)]
    lines += [f'{{"src":{9000 + i},"dst_key":"{prefix}{i}","type":"ABOUT"}}' for i in range(n // 10)]
    path.write_text("\n".join(lines) + "\n")
    return path


def replay(db: KafkaDatabase, folder: Path) -> tuple[dict[str, Outcome], list[str]]:
    """Every intent in the topic applied in log order to a fresh embedded store: each record's
    outcome by its seq's place among the intents, and the plane's canonical export."""
    embedded = drsg.open(folder / f"replay-{uuid.uuid4().hex[:6]}.drsg")
    outcomes: dict[str, Outcome] = {}
    try:
        for record in db.kafka.records(1):
            if is_intent(record.value):
                _, origin, intent = decode_intent(record.seq, record.value or b"")
                tag = str(origin.get("call", f"{intent.op}@{record.seq}"))
                try:
                    outcomes[tag] = ("ok", embedded.submit(intent, origin).value)
                except DrsgError as exc:
                    outcomes[tag] = ("refused", (type(exc).__name__, str(exc)))
        return outcomes, canonical(embedded)
    finally:
        embedded.close()


def test_an_import_lands_while_another_node_writes_steadily(tmp_path: Path, url: str) -> None:
    a, b = node_of(tmp_path, "a", url, chunk_lines=25), node_of(tmp_path, "b", url)
    stop, written, failures = threading.Event(), [], []

    def write_steadily() -> None:
        i = 0
        while not stop.is_set():
            try:
                b.submit(Intent("node.put", {"plane": "startup", "key": f"w{i}", "labels": ["W"]}), {"call": f"w{i}"})
                written.append(i)
            except DrsgError as exc:
                failures.append(str(exc))
            i += 1

    writer = threading.Thread(target=write_steadily)
    try:
        source = graph_file(tmp_path / "in.jsonl", 200)
        writer.start()
        chunks_seen: list[int] = []
        report = a.import_jsonl("startup", source, progress=chunks_seen.append)
        stop.set()
        writer.join(60)
        assert not failures, failures
        assert len(chunks_seen) == 18  # 200 + 20 + 199 + 20 lines, 25 a chunk: all went out as records
        assert (report.nodes_created, report.edges_created, report.lines) == (220, 219, 439)
        assert report.first_seq == report.last_seq and report.commits == 1  # decided as one commit
        close_seq = report.last_seq
        assert close_seq is not None
        # other nodes' writes landed between the import's records, and it still landed
        seqs = [r.seq for r in a.kafka.records(1) if r.value and is_intent(r.value)]
        ops = {r.seq: decode_intent(r.seq, r.value or b"")[2].op for r in a.kafka.records(1) if is_intent(r.value)}
        chunk_seqs = [s for s in seqs if ops[s] == CHUNK]
        assert any(ops[s] == "node.put" for s in seqs if chunk_seqs[0] < s < close_seq), "no write between its chunks"
        head = max(a.kafka.head(), b.kafka.head())  # each knows the head as far as it has heard
        a.catch_up(head)
        b.catch_up(head)
        assert tables(a) == tables(b)  # the copies are the same file
        assert canonical(a) == canonical(b)
        assert held(a) == held(b) == []  # the chunks went with the decision
        for db in (a, b):  # nothing stale, nothing broken, nothing poison
            assert [c.origin for c in db.commits() if "skipped" in c.origin] == []
        outcomes, export = replay(a, tmp_path)
        assert export == canonical(a)  # the records applied in log order to an embedded store
        closed = outcomes[f"{CLOSE}@{close_seq}"]
        assert closed[0] == "ok" and isinstance(closed[1], dict) and closed[1]["nodes_created"] == 220
        with a.snapshot() as snap:  # the keyless nodes' file ids resolved across chunks
            assert len(list(snap.nodes(0, label="Anon"))) == 20
            assert sum(1 for _ in snap.edges(0)) == 219
    finally:
        stop.set()
        writer.join(60)
        a.close()
        b.close()


def test_an_import_refused_writes_nothing_on_either_node_and_says_what_the_embedded_one_says(
    tmp_path: Path, url: str
) -> None:
    a, b = node_of(tmp_path, "a", url, chunk_lines=10), node_of(tmp_path, "b", url, chunk_lines=10)
    source = graph_file(tmp_path / "in.jsonl", 60)
    embedded = drsg.open(tmp_path / "embedded.drsg")
    try:
        embedded.submit(Intent("node.put", {"plane": "startup", "key": "n7"}))
        with pytest.raises(Conflict) as expected:
            embedded.import_jsonl("startup", source)

        # the colliding key is made by the other node after the import's first chunk is out: it is
        # judged against the state where the import's closing record lands
        def collide(_: int) -> None:
            if not keys_in(b):
                b.submit(Intent("node.put", {"plane": "startup", "key": "n7"}))

        with pytest.raises(Conflict) as refused:
            a.import_jsonl("startup", source, progress=collide)
        assert str(refused.value) == str(expected.value)
        assert "nothing was written" in str(refused.value)
        head = a.kafka.head()
        a.catch_up(head)
        b.catch_up(head)
        assert keys_in(a) == keys_in(b) == ["n7"]  # none of the import, on either node
        assert tables(a) == tables(b)
        assert held(a) == held(b) == []
        refusals = [c.origin["refused"] for c in b.commits() if "refused" in c.origin]
        assert refusals == [{"error": "Conflict", "message": str(expected.value)}]
        # a bad line: the embedded import's UsageError, word for word
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"external_key":"x"}\nnot json\n')
        with pytest.raises(UsageError) as embedded_bad:
            embedded.import_jsonl("startup", bad)
        with pytest.raises(UsageError) as kafka_bad:
            a.import_jsonl("startup", bad)
        assert str(kafka_bad.value) == str(embedded_bad.value)
        # and the same file with --on-conflict skip lands, skipping the key the other node made
        report = b.import_jsonl("startup", source, on_conflict="skip")
        assert (report.nodes_created, report.nodes_skipped) == (65, 1)
        a.catch_up(report.last_seq)
        assert tables(a) == tables(b)
    finally:
        embedded.close()
        a.close()
        b.close()


def test_a_node_restarted_between_an_imports_chunks_decides_it_the_same(tmp_path: Path, url: str) -> None:
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    parts = graph_file(tmp_path / "in.jsonl", 30).read_text().splitlines(keepends=True)
    chunks = ["".join(parts[:20]), "".join(parts[20:45]), "".join(parts[45:])]
    import_id = uuid.uuid4().hex
    try:
        for n, text in enumerate(chunks[:2]):
            a.submit(Intent(CHUNK, {"import": import_id, "n": n, "lines": text}))
        b.catch_up(a.head())
        assert len(held(b)) == 3  # two chunks and the import's count
        b.close()  # restarted between the chunks: what it holds is in its copy
        a.submit(Intent("node.put", {"plane": "startup", "key": "between"}))
        a.submit(Intent(CHUNK, {"import": import_id, "n": 2, "lines": chunks[2]}))
        args = {"import": import_id, "chunks": 3, "plane": "startup", "on_conflict": "error"}
        done = a.submit(Intent(CLOSE, {**args, "create_plane": False, "source": "in.jsonl"}))
        assert isinstance(done.value, dict) and done.value["nodes_created"] == 33
        b = node_of(tmp_path, "b", url)
        c = node_of(tmp_path, "c", url)  # and a node made from the topic afterwards
        try:
            for db in (b, c):
                db.catch_up(a.kafka.head())
            assert tables(a) == tables(b) == tables(c)
            assert held(a) == held(b) == held(c) == []
            keyed = [key for key in keys_in(b) if key is not None]
            assert len(keyed) == 31 and "between" in keyed  # the import's 30 keys and the one written between
        finally:
            c.close()
    finally:
        a.close()
        b.close()


def test_an_import_whose_writer_stopped_blocks_nothing(tmp_path: Path, url: str) -> None:
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    try:
        a.submit(Intent(CHUNK, {"import": "dead", "n": 0, "lines": '{"external_key":"ghost"}\n'}))
        made = b.submit(Intent("node.put", {"plane": "startup", "key": "after"}))  # goes on at once
        a.catch_up(made.seqs[0])
        assert keys_in(a) == keys_in(b) == ["after"]
        assert tables(a) == tables(b) and len(held(a)) == 2  # held until HELD_FOR commits pass
    finally:
        a.close()
        b.close()


def test_drsg_import_on_a_kafka_log_says_and_exits_as_the_embedded_one(tmp_path: Path, url: str) -> None:
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str, str]:
        ran = runner.invoke(cli, list(args), catch_exceptions=False)
        return ran.exit_code, ran.stdout, ran.stderr

    source = graph_file(tmp_path / "in.jsonl", 40)
    node, plain = ["--log", url, "--db", str(tmp_path / "node.drsg")], ["--db", str(tmp_path / "plain.drsg")]
    code, out, _ = run(*node, "import", str(source), "--json")
    assert code == 0 and json.loads(out)["nodes_created"] == 44 and json.loads(out)["commits"] == 1
    assert run(*plain, "import", str(source))[0] == 0
    again_node, again_plain = run(*node, "import", str(source)), run(*plain, "import", str(source))
    assert again_node[0] == again_plain[0] != 0  # refused: a key collision, the same exit code
    assert again_node[2].splitlines()[-1] == again_plain[2].splitlines()[-1]  # and the same one line
    assert "nothing was written" in again_node[2]


def test_records_imported_on_a_kafka_node_land_as_the_embedded_import_of_them(tmp_path: Path, url: str) -> None:
    """``import_records`` on a Kafka node sends its records as lines (values JSON has no word for in
    the JSON dialect): both nodes end with what the embedded import of the same records makes, and
    a bad record is refused word for word as the embedded import refuses it."""
    a, b = node_of(tmp_path, "a", url, chunk_lines=7), node_of(tmp_path, "b", url, chunk_lines=7)
    records: list[dict[str, object]] = [
        {"external_key": f"n{i}", "labels": ["Doc"], "properties": {"i": i, "raw": bytes([i])}} for i in range(20)
    ]
    records += [{"src_key": f"n{i}", "dst_key": f"n{i + 1}", "type": "NEXT"} for i in range(19)]
    embedded = drsg.open(tmp_path / "embedded.drsg")
    try:
        expected = embedded.import_records("startup", records)
        sent: list[int] = []
        report = a.import_records("startup", iter(records), progress=sent.append)
        assert report.to_json() | {"first_seq": 0, "last_seq": 0, "commits": 0} == expected.to_json() | {
            "first_seq": 0,
            "last_seq": 0,
            "commits": 0,
        }
        assert sent == [7, 14, 21, 28, 35, 39]
        b.catch_up(report.last_seq)
        assert canonical(a) == canonical(b) == canonical(embedded)
        bad = [{"external_key": "x"}, {"external_key": "y", "colour": 1}]
        with pytest.raises(UsageError) as embedded_bad:
            embedded.import_records("startup", bad)
        with pytest.raises(UsageError) as kafka_bad:
            a.import_records("startup", bad)
        assert str(kafka_bad.value) == str(embedded_bad.value)
        assert "record 2: unknown field(s) ['colour']" in str(kafka_bad.value)
        # what JSON's encoder would change without a word (a tuple, a map key 1) is refused, as embedded
        for value in (datetime.now(), (1, 2), {1: "one"}, float("nan")):
            record = {"external_key": "t", "properties": {"v": value}}
            with pytest.raises(UsageError):
                embedded.import_records("startup", [record])
            with pytest.raises(UsageError, match=r"^record 1: .*; nothing was imported$"):
                a.import_records("startup", [record])
        assert canonical(a) == canonical(embedded)
    finally:
        embedded.close()
        a.close()
        b.close()
