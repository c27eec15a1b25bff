"""Intents (store/intents.py, store/intent_ops.py): the record round-trips and refuses damage, a
refusal is a decision only for the errors the caller's input and the state decide, the judge hands
an intent on to be decided, and an intent decided on the embedded store and on a Kafka node's copy
(the materialiser's ``decide``, without a broker) gives the same outcome and the same file.
"""

from __future__ import annotations

from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import given

import drsg
from drsg.kernel.errors import BadValue, Conflict, CorruptRecord, NotFound, QueryLimit, StoreFull, UsageError
from drsg.kernel.values import Json
from drsg.store.intent_ops import INTENT_OPS
from drsg.store.intents import Intent, IntentOps, Refusal, batch, decode_intent, encode_intent, is_intent
from drsg.store.kafka.log import Record
from drsg.store.kafka.materialiser import Entry, Judge, write_entries
from drsg.store.kafka.outcomes import read_outcome
from drsg.store.log import encode
from drsg.store.mutations import NodePut
from drsg.store.transaction import WriteTx

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@given(op=st.text(min_size=1, max_size=12), args=st.dictionaries(st.text(max_size=6), json_values, max_size=4))
def test_an_intent_record_round_trips(op: str, args: dict[str, object]) -> None:
    record = encode_intent(1234, {"via": "test"}, Intent(op, args))  # type: ignore[arg-type]
    assert is_intent(record)
    assert decode_intent(7, record) == (1234, {"via": "test"}, Intent(op, args))  # type: ignore[arg-type]


def test_a_damaged_intent_is_a_corrupt_record_and_a_commit_is_not_an_intent() -> None:
    record = encode_intent(1, {}, Intent("node.put", {"plane": "p"}))
    for damaged in (record[:-1], record[:5], record[:13] + b"\x00" + record[14:]):
        with pytest.raises(CorruptRecord):
            decode_intent(3, damaged)
    assert not is_intent(encode(1, {}, [NodePut(0, 1, None, [], {})]))
    assert not is_intent(None) and not is_intent(b"")


def test_only_the_decisions_are_refusals() -> None:
    for error in (Conflict("taken"), NotFound("gone"), BadValue("bad"), UsageError("no"), QueryLimit("rows")):
        refusal = Refusal.of(error)
        assert refusal is not None
        again = refusal.exception()
        assert type(again) is type(error) and str(again) == str(error)
    # the record's fault or the file's: never a decision (a decision runs without its time limit)
    for error in (ValueError("x"), StoreFull("full")):
        assert Refusal.of(error) is None


def test_an_unknown_operation_is_refused_by_name() -> None:
    with pytest.raises(UsageError, match=r"unknown write 'node\.fly'"):
        INTENT_OPS.run(None, Intent("node.fly", {}))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"node\.put"):
        _ = INTENT_OPS | {"node.put": lambda tx, args: None}
    assert isinstance(INTENT_OPS | {"x.y": lambda tx, args: None}, IntentOps)


def test_the_judge_hands_an_intent_on_to_be_decided() -> None:
    judge = Judge()
    intent = Intent("node.put", {"plane": "startup", "key": "ada"})
    (entry,) = judge.feed(Record(1, encode_intent(99, {"via": "t"}, intent), {}))
    assert (entry.seq, entry.ts, entry.origin, entry.intent, entry.mutations) == (1, 99, {"via": "t"}, intent, [])


def test_decided_on_a_copy_as_on_the_embedded_store(tmp_path: Path) -> None:
    """The materialiser's decide, given the entries a judge makes, writes what the embedded writer
    writes, and keeps each outcome for its caller."""
    intents = [
        Intent("node.put", {"plane": "startup", "key": "ada", "labels": ["P"], "properties": {"born": 1815}}),
        Intent("node.put", {"plane": "startup", "key": "ada"}),  # refused: the key is taken
        Intent("node.put", {"plane": "startup", "key": "bob", "labels": ["P"]}),
        Intent("edge.create", {"plane": "startup", "src": "ada", "dst": "bob", "type": "KNOWS"}),
        Intent("node.update", {"plane": "nowhere", "node": "ada", "set": {}}),  # refused: no such plane
        Intent("node.delete", {"plane": "startup", "node": "bob"}),
        Intent("edge.create", {"plane": "startup", "src": "ada", "dst": "bob", "type": "KNOWS"}),  # refused
    ]
    embedded = drsg.open(tmp_path / "embedded.drsg")
    copy = drsg.open(tmp_path / "copy.drsg")  # a file the entries are written into, as a node's copy
    try:
        expected: list[object] = []
        for intent in intents:
            try:
                expected.append(("ok", embedded.submit(intent).value))
            except (Conflict, NotFound) as exc:
                expected.append(("refused", type(exc).__name__, str(exc)))
        head = copy.head()
        entries = [Entry(head + i + 1, 1000 + i, {"n": i}, [], 0, intent=it) for i, it in enumerate(intents)]
        assert write_entries(copy.env, entries, "kafka://test/topic", copy.ops)
        got: list[object] = []
        with copy.env.read() as txn:
            for entry in entries:
                outcome = read_outcome(txn, copy.env, entry.seq)
                assert outcome is not None
                if "refused" in outcome:
                    refused = Refusal.from_json(outcome["refused"])
                    got.append(("refused", refused.error, refused.message))
                else:
                    got.append(("ok", outcome["value"]))
        assert got == expected
        with embedded.snapshot() as a, copy.snapshot() as b:
            assert [n.to_json() for n in a.nodes(0)] == [n.to_json() for n in b.nodes(0)]
            assert [e.to_json() for e in a.edges(0)] == [e.to_json() for e in b.edges(0)]
        refusals = [c.origin for c in copy.commits() if "refused" in c.origin]
        assert [r["refused"]["error"] for r in refusals] == ["Conflict", "NotFound", "NotFound"]  # type: ignore[index]
        assert all(r["n"] in (1, 4, 6) for r in refusals)  # the caller's origin is kept beside the refusal
    finally:
        embedded.close()
        copy.close()


def test_a_database_decides_intents_by_the_table_it_was_given(tmp_path: Path) -> None:
    """The table belongs to the database (a layer above may extend it): its write path decides by
    it, so an operation the store does not know runs where the database was given it."""
    from drsg.store.database import Database

    def mark(tx: WriteTx, args: dict[str, Json]) -> Json:
        return {"node": tx.put_node(tx.plane("startup"), str(args["key"]), ["Mark"]).node.id}

    with Database(tmp_path / "plain.drsg") as plain, pytest.raises(UsageError, match=r"unknown write 'test\.mark'"):
        plain.submit(Intent("test.mark", {"key": "m"}))
    with Database(tmp_path / "given.drsg", ops=INTENT_OPS | {"test.mark": mark}) as db:
        done = db.submit(Intent("test.mark", {"key": "m"}))
        assert db.writes.queued and done.seq == db.head()
        with db.snapshot() as snap:
            found = snap.node_by_key(snap.plane("startup").id, "m")
            assert found is not None and {"node": found.id} == done.value


def test_a_batch_is_one_commit_all_or_nothing(tmp_path: Path) -> None:
    put = [Intent("node.put", {"plane": "startup", "key": k, "labels": ["X"]}) for k in ("a", "b")]
    with drsg.open(tmp_path / "g.drsg") as db:
        done = db.submit(batch(put))
        assert len(done.seqs) == 1 and [a["op"] for a in done.value["answers"]] == ["created", "created"]  # type: ignore[index]
        head = db.head()
        refused = batch([Intent("node.put", {"plane": "startup", "key": "c"}), put[0]])
        with pytest.raises(Conflict, match=r"^write 2 of 2 \(node\.put\): "):
            db.submit(refused)
        assert db.head() == head  # the first write went too
        with pytest.raises(NotFound):
            db.plane("startup").get("c")
        with pytest.raises(UsageError, match="does not nest"):
            db.submit(batch([batch(put)]))
        with pytest.raises(UsageError, match=r"unknown write 'node\.fly'"):
            db.submit(batch([*put, Intent("node.fly", {})]))
        assert db.head() == head and db.submit(batch([])).seqs == ()
    with pytest.raises(ValueError, match="every table's own"):
        IntentOps({"batch": lambda tx, args: None})


def test_the_apis_table_names_the_digests_operations() -> None:
    from drsg.api.operations import API_OPS, DIGEST_OP_NAMES
    from drsg.pipeline.digest.ledger import DIGEST_OPS

    assert set(DIGEST_OP_NAMES) == set(DIGEST_OPS) and all(name in API_OPS.ops for name in DIGEST_OPS)


def test_the_apis_table_names_the_catalogs_vectorizes_and_an_imports_operations() -> None:
    from drsg.api.operations import API_OPS, CATALOG_WRITE, VECTORIZE_WRITE
    from drsg.pipeline import vectorize
    from drsg.pipeline.catalog.plane import CATALOG_OPS, WRITE_OP
    from drsg.store.import_intents import CHUNK, CLOSE

    assert CATALOG_WRITE == WRITE_OP and set(CATALOG_OPS) == {WRITE_OP} and VECTORIZE_WRITE == vectorize.WRITE_OP
    assert {WRITE_OP, vectorize.WRITE_OP, CHUNK, CLOSE} <= set(API_OPS.ops)
