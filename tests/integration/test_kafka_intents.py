"""Intents on a Kafka log (store/intents.py, store/kafka/materialiser.py ``decide``) against a real
tansu broker: writers on several nodes naming the same keys at once — creates racing creates,
updates racing deletes, edges to nodes being deleted — are each decided where they land in the
log, alike on every node, never stale and never retried; each caller's outcome is what applying the
intents in log order to an embedded store gives.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import drsg
from drsg.kernel.errors import Conflict, DrsgError, NotFound, QueryLimit, StoreError, UsageError
from drsg.kernel.values import Json
from drsg.store.database import Database
from drsg.store.intent_ops import INTENT_OPS
from drsg.store.intents import Intent, batch, decode_intent, is_intent
from drsg.store.jsonl import export_lines
from drsg.store.kafka.database import KafkaDatabase
from drsg.store.transaction import WriteTx
from drsg.surfaces.cli.main import cli
from tests.support.kafka_broker import Broker
from tests.support.kafka_nodes import tables
from tests.support.waiting import wait_until

KEYS = [f"k{i}" for i in range(6)]
PAIRS = list(itertools.pairwise(KEYS))
Outcome = tuple[str, Any]  # ("ok", the answer) or ("refused", (error class, message))


def node_of(folder: Path, name: str, url: str) -> KafkaDatabase:
    db = drsg.open(folder / f"{name}.drsg", log=url)
    assert isinstance(db, KafkaDatabase)
    return db


def call(db: Database, intent: Intent, tag: str) -> Outcome:
    try:
        return "ok", db.submit(intent, {"call": tag}).value
    except (Conflict, NotFound, UsageError) as exc:
        return "refused", (type(exc).__name__, str(exc))


def canonical(db: Database) -> list[str]:
    return list(export_lines(db, "startup", canonical=True))


def replay_in_log_order(db: KafkaDatabase, folder: Path) -> dict[str, Outcome]:
    """Every intent the topic holds, applied in its order to a fresh embedded store: the outcome of
    each call (by its tag) — what every node must have decided."""
    embedded = drsg.open(folder / "embedded.drsg")
    try:
        outcomes: dict[str, Outcome] = {}
        for record in db.kafka.records(1):
            if is_intent(record.value):
                _, origin, intent = decode_intent(record.seq, record.value or b"")
                outcomes[str(origin["call"])] = call(embedded, intent, str(origin["call"]))
        export = canonical(embedded)
    finally:
        embedded.close()
    outcomes["<export>"] = ("ok", export)
    return outcomes


intent_strategy = st.one_of(
    st.builds(
        lambda k, v: Intent("node.put", {"plane": "startup", "key": k, "labels": ["X"], "properties": {"v": v}}),
        st.sampled_from(KEYS),
        st.integers(0, 9),
    ),
    st.builds(
        lambda k, v: Intent("node.update", {"plane": "startup", "node": k, "set": {"v": v}}),
        st.sampled_from(KEYS),
        st.integers(0, 9),
    ),
    st.builds(lambda k: Intent("node.delete", {"plane": "startup", "node": k}), st.sampled_from(KEYS)),
    st.builds(
        lambda a, b: Intent("edge.create", {"plane": "startup", "src": a, "dst": b, "type": "R"}),
        st.sampled_from(KEYS),
        st.sampled_from(KEYS),
    ),
)


def race(nodes: list[KafkaDatabase], scripts: list[list[Intent]]) -> dict[str, Outcome]:
    """Each node runs its scripts, one writer thread per script, all at once; each call's outcome."""
    got: dict[str, Outcome] = {}
    failures: list[str] = []
    start = threading.Barrier(len(scripts))

    def run(db: KafkaDatabase, writer: int, script: list[Intent]) -> None:
        start.wait()
        for i, intent in enumerate(script):
            tag = f"w{writer}-{i}"
            try:
                got[tag] = call(db, intent, tag)
            except DrsgError as exc:  # anything else is a failure the assertion shows
                failures.append(f"{tag} {intent}: {type(exc).__name__}: {exc}")

    threads = [
        threading.Thread(target=run, args=(nodes[w % len(nodes)], w, script)) for w, script in enumerate(scripts)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not failures, failures
    return got


def check_decided_alike(nodes: list[KafkaDatabase], got: dict[str, Outcome], folder: Path) -> None:
    head = max(db.kafka.head() for db in nodes)
    for db in nodes:
        db.catch_up(head)
    assert tables(nodes[0]) == tables(nodes[1])  # every copy the same file
    for db in nodes:  # nothing stale, nothing retried, nothing poison
        assert [c.origin for c in db.commits() if "skipped" in c.origin] == []
    expected = replay_in_log_order(nodes[0], folder)
    assert got == {tag: outcome for tag, outcome in expected.items() if tag != "<export>"}
    assert canonical(nodes[0]) == canonical(nodes[1]) == expected["<export>"][1]


@pytest.fixture
def url(kafka_broker: Broker) -> str:
    return kafka_broker.url(f"intents-{uuid.uuid4().hex[:12]}")


def test_racing_writers_on_two_nodes_are_decided_in_log_order(tmp_path: Path, url: str) -> None:
    nodes = [node_of(tmp_path, name, url) for name in ("a", "b")]
    script = [Intent("node.put", {"plane": "startup", "key": k, "labels": ["X"], "properties": {}}) for k in KEYS]
    script += [Intent("edge.create", {"plane": "startup", "src": a, "dst": b, "type": "R"}) for a, b in PAIRS]
    script += [Intent("node.update", {"plane": "startup", "node": k, "set": {"seen": True}}) for k in KEYS]
    script += [Intent("node.delete", {"plane": "startup", "node": k}) for k in KEYS[::2]]
    try:
        got = race(nodes, [script, list(reversed(script)), script, list(reversed(script))])
        made = [tag for tag, (how, value) in got.items() if how == "ok" and value.get("op") == "created"]
        assert len(made) >= len(KEYS)  # each key made at least once, and each create after the first refused
        refused = [value[0] for how, value in got.values() if how == "refused"]
        assert "Conflict" in refused
        check_decided_alike(nodes, got, tmp_path)
    finally:
        for db in nodes:
            db.close()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(scripts=st.lists(st.lists(intent_strategy, min_size=1, max_size=12), min_size=2, max_size=4))
def test_any_interleaving_is_decided_as_log_order_says(
    tmp_path_factory: pytest.TempPathFactory, kafka_broker: Broker, scripts: list[list[Intent]]
) -> None:
    folder = tmp_path_factory.mktemp("intents")
    url = kafka_broker.url(f"intents-{uuid.uuid4().hex[:12]}")
    nodes = [node_of(folder, name, url) for name in ("a", "b")]
    try:
        check_decided_alike(nodes, race(nodes, scripts), folder)
    finally:
        for db in nodes:
            db.close()


def test_a_refusal_is_the_embedded_stores_error_and_is_in_the_log(tmp_path: Path, url: str) -> None:
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    embedded = drsg.open(tmp_path / "embedded.drsg")
    try:
        ada = Intent("node.put", {"plane": "startup", "key": "ada", "labels": ["P"], "properties": {"born": 1815}})
        assert a.submit(ada).value == embedded.submit(ada).value == {"op": "created", "node": 1}
        for intent in (
            ada,  # a key taken
            Intent("node.update", {"plane": "startup", "node": "bob", "set": {"x": 1}}),  # a node that is not there
            Intent("edge.create", {"plane": "startup", "src": "ada", "dst": 99, "type": "R"}),
            Intent("node.fly", {"plane": "startup"}),  # an operation nobody knows
            Intent("node.put", {"plane": "nowhere", "key": "x"}),
        ):
            with pytest.raises(DrsgError) as on_embedded:
                embedded.submit(intent)
            with pytest.raises(type(on_embedded.value)) as on_kafka:
                b.submit(intent)
            assert str(on_kafka.value) == str(on_embedded.value)
        refusals = [c.origin["refused"] for c in b.commits() if "refused" in c.origin]
        # an operation nobody knows is refused before it is produced: it is not in the log
        assert [r["error"] for r in refusals] == ["Conflict", "NotFound", "NotFound", "NotFound"]
        assert all(not c.mutations for c in b.commits() if "refused" in c.origin)
        gone = Intent("node.delete", {"plane": "startup", "node": "nobody"})
        done = b.submit(gone)
        assert done.value == {"deleted": False, "node": None} and done.seqs == ()  # as the embedded store's
        assert tables(a) == tables(b)
    finally:
        embedded.close()
        a.close()
        b.close()


def crash(tx: WriteTx, args: dict[str, Json]) -> Json:
    raise RuntimeError("a bug in an operation, not a rule the caller broke")


def test_an_intent_no_node_can_apply_is_a_poison_record_and_its_caller_is_told(tmp_path: Path, url: str) -> None:
    ops = INTENT_OPS | {"test.crash": crash}  # every node given the same table
    a, b = (KafkaDatabase(tmp_path / f"{name}.drsg", url, ops=ops) for name in "ab")
    try:
        # no decision (nothing the caller asked for is refused by a rule): the record's fault — kept
        # as an empty commit on every node, counted, and the nodes go on
        with pytest.raises(StoreError, match=r"could not be applied \(unappliable: RuntimeError: a bug"):
            a.submit(Intent("test.crash", {}))
        after = a.submit(Intent("node.put", {"plane": "startup", "key": "next"}))
        assert after.value == {"op": "created", "node": 1}
        b.catch_up(after.seq)
        for db in (a, b):
            assert db.poison_records == 1
            (skipped,) = [c.origin["skipped"] for c in db.commits() if "skipped" in c.origin]
            assert str(skipped).startswith("unappliable: RuntimeError")
        assert tables(a) == tables(b)
    finally:
        a.close()
        b.close()


def newer(tx: WriteTx, args: dict[str, Json]) -> Json:
    return {"node": tx.create_node(tx.plane("startup"), str(args["key"])).id}


def test_a_write_this_node_does_not_know_stops_it_until_it_is_upgraded(tmp_path: Path, url: str) -> None:
    upgraded = INTENT_OPS | {"test.newer": newer}  # a newer drsg's table
    a = KafkaDatabase(tmp_path / "a.drsg", url, ops=upgraded)
    b = KafkaDatabase(tmp_path / "b.drsg", url)
    try:
        done = a.submit(Intent("test.newer", {"key": "n"}))
        with pytest.raises(UsageError, match=r"unknown write 'test\.newer'"):
            b.submit(Intent("test.newer", {"key": "m"}))  # never produced by a node that does not know it
        with pytest.raises(DrsgError):
            b.catch_up(done.seq, timeout=3)
        assert b.head() == done.seq - 1  # nothing decided past the last commit it knows
        assert "a write this drsg does not know ('test.newer')" in str(b.stats().error)
        b.close()
        b = KafkaDatabase(tmp_path / "b.drsg", url, ops=upgraded)  # upgraded: it goes on where it stopped
        b.catch_up(done.seq)
        assert tables(a) == tables(b)
    finally:
        a.close()
        b.close()


def test_cypher_writes_on_two_nodes_are_intents_and_never_conflict(tmp_path: Path, url: str) -> None:
    """A Cypher write statement is an intent: two nodes' MERGEs of the same keys race, each is
    decided where it lands (the later MERGE finds the earlier's node), none is stale or retried,
    and each caller's answer is what its node's copy decided."""
    nodes = [node_of(tmp_path, name, url) for name in ("a", "b")]
    merge = "MERGE (n:P {k: $k}) ON CREATE SET n.by = $by ON MATCH SET n.seen = coalesce(n.seen, 0) + 1 RETURN n"
    answers: dict[tuple[str, str], Any] = {}

    def writer(db: KafkaDatabase, by: str) -> None:
        for k in KEYS:
            answers[by, k] = db.plane("startup").cypher(merge, {"k": k, "by": by})

    try:
        threads = [threading.Thread(target=writer, args=(db, name)) for db, name in zip(nodes, "ab", strict=True)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
        head = max(db.kafka.head() for db in nodes)
        for db in nodes:
            db.catch_up(head)
        assert tables(nodes[0]) == tables(nodes[1])
        assert [c.origin for db in nodes for c in db.commits() if {"skipped", "refused"} & c.origin.keys()] == []
        intents = [decode_intent(r.seq, r.value or b"")[2].op for r in nodes[0].kafka.records(1) if is_intent(r.value)]
        assert intents.count("cypher.write") == 2 * len(KEYS)  # produced as they were asked, never retried
        for k in KEYS:  # one node made it, the other's MERGE found it: each answer names the same node
            (made,) = (answers[by, k] for by in "ab" if answers[by, k].counts.nodes_created == 1)
            (found,) = (answers[by, k] for by in "ab" if answers[by, k].counts.nodes_created == 0)
            assert made.rows[0][0].id == found.rows[0][0].id and found.rows[0][0].props["seen"] == 1
            assert found.rows[0][0].key is None and made.seq < found.seq
    finally:
        for db in nodes:
            db.close()


def test_a_cypher_write_past_its_time_limit_is_refused_before_it_is_produced(tmp_path: Path, url: str) -> None:
    """Every node decides an intent without a clock; the time limit bounds the producing node's
    rehearsal on its copy instead, so a statement that runs too long is never produced."""
    db = drsg.open(tmp_path / "a.drsg", log=url, settings={"query.timeout_secs": 0.2})
    try:
        head = db.kafka.head()
        with pytest.raises(QueryLimit):
            db.plane("startup").cypher(
                "UNWIND range(1, 5000) AS i UNWIND range(1, 5000) AS j WITH i WHERE i < 0 CREATE (:X {i: i})"
            )
        assert db.kafka.head() == head  # nothing produced
        done = db.plane("startup").cypher("CREATE (n:X {i: 1}) RETURN n.i")
        assert done.rows == ((1,),) and db.kafka.head() == head + 1
        (record,) = db.kafka.records(head + 1)
        assert "time_limit" not in decode_intent(record.seq, record.value or b"")[2].args
    finally:
        db.close()


def test_index_ensure_finds_its_labels_where_it_lands(tmp_path: Path, url: str) -> None:
    """`drsg index ensure PROPERTY` declares on every label carrying it: an intent, so the labels are
    those of the state it lands on (a label another node gave a vector just before it is included),
    not of the copy the command ran on."""
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    try:
        vector = {"$vector": [1.0, 0.0]}
        a.submit(Intent("node.put", {"plane": "startup", "key": "p", "labels": ["P"], "properties": {"e": vector}}))
        b_head = b.head()  # b has not read a's node yet: the intent is decided after it in the log
        ran = CliRunner().invoke(
            cli, ["--log", url, "--db", str(tmp_path / "b.drsg"), "index", "ensure", "e"], catch_exceptions=False
        )
        assert ran.exit_code == 0, ran.stderr
        assert "ensured vector index on P.e" in ran.stdout

        def last_op() -> str:  # b's watcher hears the command's intent within its fetch wait, not at once
            (last,) = list(b.kafka.records(b.kafka.head()))
            return decode_intent(last.seq, last.value or b"")[2].op if is_intent(last.value) else ""

        wait_until(lambda: last_op() == "index.ensure", "node b to read the command's intent", timeout=10)
        assert b_head < b.kafka.head()
    finally:
        a.close()
        b.close()


def test_a_batch_is_decided_whole_where_it_lands(tmp_path: Path, url: str) -> None:
    """A batch (store/intents.py) is one intent: every node applies all of it or refuses all of it,
    as the embedded store does, by the state where it lands."""
    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    try:
        put = [Intent("node.put", {"plane": "startup", "key": k, "labels": ["X"]}) for k in ("x", "y", "z")]
        a.submit(put[1])  # b's batch lands after it: its second write is refused, and the whole with it
        with pytest.raises(Conflict, match=r"^write 2 of 3 \(node\.put\)"):
            b.submit(batch(put))
        done = b.submit(batch([put[0], put[2]]))
        assert [answer["op"] for answer in done.value["answers"]] == ["created", "created"]  # type: ignore[index]
        a.catch_up(b.head())
        assert tables(a) == tables(b)
        with b.snapshot() as snap:
            assert sorted(n.key or "" for n in snap.nodes(0)) == ["x", "y", "z"]
    finally:
        a.close()
        b.close()


def test_a_digests_apply_and_forget_are_intents(tmp_path: Path, url: str) -> None:
    """A digest's writes are decided where they land: its apply on one node and its forget on the
    other are intents, each node runs the ledger's rules on the state the intent meets."""
    from drsg.pipeline.digest.ledger import apply, forget
    from drsg.pipeline.digest.proposal import Proposal, ProposedEdge, ProposedNode

    a, b = node_of(tmp_path, "a", url), node_of(tmp_path, "b", url)
    try:
        proposal = Proposal("doc.md", "notes", "run1", "m", "f")
        proposal.nodes = [ProposedNode("ada", "Person", {"born": 1815}), ProposedNode("bab", "Person", {})]
        proposal.edges = [ProposedEdge("ada", "KNEW", "bab", {})]
        applied, created = apply(a, proposal)
        assert (applied.nodes_created, applied.edges_created, created) == (2, 1, True) and applied.seq == a.head()
        b.catch_up(a.head())
        gone = forget(b, "notes", "doc.md")
        assert (gone.nodes_deleted, gone.edges_deleted) == (2, 1)
        ops = [decode_intent(r.seq, r.value or b"")[2].op for r in b.kafka.records(1) if is_intent(r.value)]
        assert ops[-2:] == ["digest.apply", "digest.forget"]
        a.catch_up(b.head())
        assert tables(a) == tables(b)
    finally:
        a.close()
        b.close()


def test_many_writes_in_flight_on_one_node_each_wait_for_their_own_seq(tmp_path: Path, url: str) -> None:
    """A node keeps many intents in flight (#38, pipelining): each caller is woken by the round that
    materialises its own seq, gets its own outcome, and the copies agree with log order."""
    nodes = [node_of(tmp_path, name, url) for name in ("a", "b")]
    puts = [Intent("node.put", {"plane": "startup", "key": k, "labels": ["X"], "properties": {}}) for k in KEYS]
    try:
        materialiser = nodes[0].materialiser
        assert materialiser is not None
        far = materialiser.written + 10_000
        began = time.monotonic()
        assert not materialiser.wait_written(far, 0.2)  # not reached: the wait runs out
        assert time.monotonic() - began >= 0.19
        woken: list[bool] = []
        waiter = threading.Thread(target=lambda: woken.append(materialiser.wait_written(materialiser.written + 1, 30)))
        waiter.start()
        time.sleep(0.2)
        assert woken == []  # nothing materialised yet: still waiting
        lone = call(nodes[1], puts[0], "lone")  # another node's write: this node's copy reaches it, waking the waiter
        waiter.join(30)
        assert woken == [True]
        got = race(nodes, [puts[i % 2 :] + puts[: i % 2] for i in range(16)] + [list(reversed(puts))])
        got["lone"] = lone
        check_decided_alike(nodes, got, tmp_path)
        stuck: list[bool] = []
        waiting = threading.Thread(target=lambda: stuck.append(materialiser.wait_written(far, 60)))
        waiting.start()
        time.sleep(0.1)
        nodes[0].close()  # closing wakes whoever still waits
        waiting.join(10)
        assert stuck == [False]
    finally:
        for db in nodes:
            db.close()


def test_a_writer_takes_its_outcome_from_memory_as_the_copy_holds_it(tmp_path: Path, url: str) -> None:
    """A writer's outcome, handed over in memory by the round that decided it in this process, is
    what a read of the copy gives (store/kafka/outcomes.py): seq, time, value, refusal; none kept."""
    a = node_of(tmp_path, "a", url)
    try:
        materialiser = a.materialiser
        assert materialiser is not None
        told: list[Any] = []
        decided = materialiser.decided
        materialiser.decided = lambda seq: told.append(out := decided(seq)) or out  # type: ignore[method-assign]
        done = a.submit(Intent("node.put", {"plane": "startup", "key": "m", "properties": {"n": 1}}))
        with pytest.raises(Conflict) as refused:
            a.submit(Intent("node.put", {"plane": "startup", "key": "m", "mode": "create"}))
        assert len(told) == 2 and all(t is not None for t in told)  # both from memory
        assert done.seqs and done.ts == next(c.ts for c in a.commits() if c.seq == done.seqs[0])
        assert told[0].outcome == {"value": done.value} and told[0].applied
        assert told[1].outcome["refused"]["message"] == str(refused.value) and not told[1].applied
        assert materialiser._expected == {}  # nothing left behind
    finally:
        a.close()


def test_a_lone_writers_watcher_reads_nothing_and_hears_another_writer_again(tmp_path: Path, url: str) -> None:
    """While a node writes alone (each ack the seq after the one before), its log's watcher reads
    nothing: its materialiser has every record from its acks. Another writer shows as an ack that
    skips a seq, or once the node stops writing: its commits are read and materialised as before."""
    a = node_of(tmp_path, "a", url)
    try:
        handed: list[int] = []
        heard = a.kafka.listener
        assert heard is not None
        a.kafka.listener = lambda record: (handed.append(record.seq), heard(record))  # type: ignore[assignment]
        first = a.head() + 1
        for i in range(300):
            a.submit(Intent("node.put", {"plane": "startup", "key": f"w{i % 20}", "mode": "update"}))
        assert len([seq for seq in handed if seq >= first]) < 30  # (every one of the 300, read again, before)
        b = node_of(tmp_path, "b", url)
        try:
            for i in range(20):  # a's acks skip b's seqs: both are decided on a alike
                b.submit(Intent("node.put", {"plane": "startup", "key": f"b{i}"}))
                a.submit(Intent("node.put", {"plane": "startup", "key": f"a{i}"}))
            last = b.submit(Intent("node.put", {"plane": "startup", "key": "b-last"}))  # after a stopped
            assert last.seqs and a.log.wait(last.seqs[0] - 1, 5.0) >= last.seqs[0]  # heard, within the wait
            a.catch_up(last.seqs[0])
            assert canonical(a) == canonical(b)
        finally:
            b.close()
    finally:
        a.close()
