"""The public Python API (drsg.api) on real LMDB files: each call's typed result checked by its
fields, as_of in every form, the embedder rule and its refusal, hybrid channels, the feed in a
thread and in asyncio, and ask through the real ``openai`` client against the scripted server."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

import drsg
from drsg.kernel.values import Vector
from drsg.models.chat.providers import get_chat
from drsg.store.database import Database as StoreDatabase
from drsg.store.records import Plane as PlaneRecord
from tests.support.fake_openai import FakeOpenAI, Reply, chat_completion

KEY = "sk-python-api-test"


@pytest.fixture
def db(tmp_path: Path) -> Iterator[drsg.Database]:
    with drsg.open(tmp_path / "g.drsg") as opened:
        yield opened


@pytest.fixture
def people(db: drsg.Database) -> drsg.Plane:
    plane = db.create_plane("people")
    plane.put("ada", ["Person"], {"bio": "wrote the first program for the analytical engine"})
    plane.put("babbage", ["Person"], {"bio": "designed the analytical engine"})
    plane.put("turing", ["Person"], {"bio": "defined computability"})
    plane.link("ada", "babbage", "KNEW")
    return plane


def test_open_returns_the_stores_database_and_planes_that_are_its_records(db: drsg.Database) -> None:
    assert isinstance(db, drsg.Database) and isinstance(db, StoreDatabase)
    plane = db.plane("startup")
    assert isinstance(plane, drsg.Plane) and isinstance(plane, PlaneRecord)
    made = db.write(lambda tx: tx.create_node(plane, "x", ["L"], {"n": 1}))  # a plane goes where a record does
    assert plane.get("x").id == made.value.id
    assert [p.name for p in db.planes()] == ["startup"]
    with pytest.raises(drsg.NotFound, match="nowhere"):
        db.plane("nowhere")


def test_writes_say_what_they_wrote_and_at_which_commit(db: drsg.Database) -> None:
    plane = db.create_plane("p")
    first = plane.put("a", ["A"], {"n": 1})
    assert (first.op, first.node.key, first.node.labels, first.seq) == ("created", "a", ["A"], db.head())
    again = plane.put("a", ["B"], {"m": 2})
    assert again.op == "updated" and again.node.labels == ["A", "B"] and again.node.props == {"n": 1, "m": 2}
    replaced = plane.put("a", ["C"], {"k": 3}, replace=True)
    assert replaced.node.labels == ["C"] and replaced.node.props == {"k": 3}
    plane.put("b")
    linked = plane.link("@a", "b", "R", {"w": 0.5})
    assert (linked.edge.src, linked.edge.dst, linked.edge.type, linked.edge.props) == (
        first.node.id,
        plane.get("b").id,
        "R",
        {"w": 0.5},
    )
    [hop] = plane.neighbours("b")
    assert (hop.direction, hop.edge.id, hop.node.key if hop.node else None) == ("in", linked.edge.id, "a")
    assert plane.neighbours("a", direction="in") == [] and plane.neighbours("a", type="OTHER") == []
    gone = plane.delete("a")
    assert (gone.node.key, gone.edges, gone.seq) == ("a", 1, db.head())
    assert plane.unlink(plane.link("b", "b", "SELF").edge.id).edge.type == "SELF"
    with pytest.raises(drsg.Conflict, match="already exists"):
        db.create_plane("p")


def test_as_of_takes_a_seq_a_time_or_a_datetime(people: drsg.Plane, db: drsg.Database) -> None:
    created = people.history("ada")[0]
    people.put("ada", props={"title": "Countess"})
    moment = datetime.fromtimestamp(created.ts / 1000, UTC)
    for as_of in (created.seq, str(created.seq), moment, moment.isoformat(), drsg.AsOf(seq=created.seq)):
        assert "title" not in people.get("ada", as_of=as_of).props, as_of
    assert people.get("ada").props["title"] == "Countess"
    with pytest.raises(drsg.BadAsOf, match="no UTC offset"):
        people.get("ada", as_of=datetime(2026, 1, 1))
    with pytest.raises(drsg.BadAsOf, match="beyond the head"):
        people.get("ada", as_of=db.head() + 1)
    assert [n.key for n in people.neighbours("ada", as_of=created.seq)] == []  # the edge came later


def test_history_and_diff(people: drsg.Plane, db: drsg.Database) -> None:
    before = db.head()
    people.put("ada", props={"title": "Countess"})
    people.delete("turing")
    versions = people.history("turing")
    assert [v.record is None for v in versions] == [False, True]
    change = people.diff(before)
    assert [c.changed_props() for c in change.nodes_changed] == [["title"]]
    assert [n.key for n in change.nodes_deleted] == ["turing"] and change.commits == 2
    assert people.diff(0, before).nodes_created[0].key == "ada"
    with pytest.raises(drsg.NotFound, match="never existed"):
        people.history("nobody")


def test_export_then_import_is_the_same_plane(people: drsg.Plane, db: drsg.Database, tmp_path: Path) -> None:
    path = tmp_path / "people.jsonl"
    assert people.export_jsonl(path) == 4
    copy = db.create_plane("copy")
    report = copy.import_jsonl(path)
    assert (report.nodes_created, report.edges_created) == (3, 1)
    ours, theirs = io.StringIO(), io.StringIO()
    people.export_jsonl(ours, canonical=True)
    copy.export_jsonl(theirs, canonical=True)
    assert ours.getvalue() == theirs.getvalue()
    with pytest.raises(drsg.Conflict):
        copy.import_jsonl(path)  # keys taken: all or nothing
    assert len(copy.nodes()) == 3


def test_search_embeds_text_with_the_embedder_that_wrote_the_vectors(people: drsg.Plane) -> None:
    done = people.vectorize("bio")
    assert (done.embedded, done.no_text, done.labels, done.embedder) == (3, 0, {"Person"}, "local:all-MiniLM-L6-v2")
    assert people.vectorize("bio").unchanged == 3  # nothing new to embed
    [top, *_] = people.search("who wrote a program?", k=3)
    assert top.key == "ada" and top.score is not None and top.channels == {}
    vector = people.get("babbage").props["embedding"]
    assert isinstance(vector, Vector)
    assert people.search(vector, k=1)[0].key == "babbage" and people.search(vector.tolist(), k=1)[0].key == "babbage"
    old = people.search("who wrote a program?", k=3, as_of=done.seqs[0])
    assert [h.key for h in old] == [h.key for h in people.search("who wrote a program?", k=3)]


def test_another_embedder_than_the_recorded_one_is_refused(people: drsg.Plane, monkeypatch: pytest.MonkeyPatch) -> None:
    people.vectorize("bio")
    monkeypatch.setenv("FAKE_EMBED_KEY", KEY)
    with FakeOpenAI(dims=8, api_key=KEY) as fake:
        other = drsg.EmbedderChoice(fake.base_url, "fake-embed", None, "FAKE_EMBED_KEY")
        with pytest.raises(drsg.UsageError, match="holds vectors from local:all-MiniLM-L6-v2"):
            people.search("engine", embed=other)
        with pytest.raises(drsg.UsageError, match="mix two vector spaces"):
            people.vectorize("bio", embed=other)
        assert fake.requests == []  # refused before anything was embedded


def test_keyword_search_and_its_usage_errors(people: drsg.Plane, db: drsg.Database) -> None:
    with pytest.raises(drsg.NotFound, match="drsg index keyword Person bio"):
        people.search("engine", "bio", keyword=True, label="Person")
    db.write(lambda tx: tx.declare_index(tx.plane("people"), "keyword", "Person", "bio", {"language": "english"}))
    assert {h.key for h in people.search("engine", "bio", keyword=True, label="Person")} == {"ada", "babbage"}
    with pytest.raises(drsg.UsageError, match="label="):
        people.search("engine", "bio", keyword=True)
    with pytest.raises(drsg.UsageError, match="takes text"):
        people.search([0.1, 0.2], "bio", keyword=True, label="Person")
    assert [h.key for h in people.query('SEARCH (p:Person) ON bio MATCHING "computability" TOPK 2')] == ["turing"]


def test_a_hybrid_hit_carries_each_channels_score(people: drsg.Plane, db: drsg.Database) -> None:
    people.vectorize("bio")
    db.write(lambda tx: tx.declare_index(tx.plane("people"), "keyword", "Person", "bio", {"language": "english"}))
    hits = people.hybrid("analytical engine", label="Person", vector="embedding", keyword="bio", graph_hops=1, k=3)
    assert {h.key for h in hits[:2]} == {"ada", "babbage"}
    for hit in hits:
        assert set(hit.channels) == set(hit.normalised) == {"vector", "keyword", "graph"}
        assert hit.explanation.startswith(f"{hit.score:.4f} = ")
    assert hits[0].hops == 0 and hits[0].channels["keyword"] is not None
    weighted = people.hybrid("analytical engine", label="Person", keyword="bio", weights={"keyword": 2.0})
    assert weighted[0].score == pytest.approx(2.0)
    with pytest.raises(drsg.UsageError):
        people.hybrid("engine", label="Person")  # no channel named


def test_the_feed_in_a_thread_and_in_asyncio(people: drsg.Plane, db: drsg.Database) -> None:
    head = db.head()
    messages = list(people.feed(from_seq=1, follow=False, resolved_every=None))
    assert [m.seq for m in messages] == list(range(3, head + 1))
    assert all(isinstance(m, drsg.FeedMessage) and m.plane == "people" for m in messages)
    assert messages[-1].changes[0]["kind"] == "edge"
    feed = db.feed(resolved_every=None)
    assert feed.position == head + 1

    async def next_two() -> list[drsg.FeedMessage]:
        got = []
        async for message in db.feed(from_seq=head, resolved_every=None):
            got.append(message)
            if len(got) == 1:
                await asyncio.to_thread(people.put, "hopper")  # a commit after the feed caught up
            else:
                return got
        return got

    first, second = asyncio.run(next_two())
    assert (first.seq, second.seq) == (head, head + 1)
    assert second.changes[0]["record"]["external_key"] == "hopper"


def test_ask_through_the_real_client_on_loopback(people: drsg.Plane, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_CHAT_KEY", KEY)
    plan = {"source": {"SeekKeys": ["ada"]}, "steps": [{"Expand": {"dir": "Out", "edge_type": "KNEW"}}]}
    with FakeOpenAI(dims=8, api_key=KEY) as fake:
        chat = get_chat(fake.base_url, "fake-chat", key_env="MY_CHAT_KEY")
        fake.script("/chat/completions", Reply(json=chat_completion(json.dumps({"plan": plan}))))
        answer = people.ask("whom did ada know?", chat=chat)
        assert answer.ran and answer.attempts == 1 and answer.at == people.db.head()
        assert [n["external_key"] for n in answer.results if n["id"] in answer.answers] == ["babbage"]
        assert answer.plans[0]["steps"][-1] == {"Limit": 100} and answer.trace[-1].startswith("ran plan 1")
        assert [e["type"] for e in answer.edges] == ["KNEW"] and answer.bounds == ()
        fake.script("/chat/completions", Reply(json=chat_completion(json.dumps({"plan": plan}))))
        dry = people.ask("whom did ada know?", chat=chat, dry_run=True)
        assert not dry.ran and dry.results == () and len(dry.plans) == 1
    with pytest.raises(drsg.UsageError, match="empty"):
        people.ask("  ", chat=chat)


def test_settings_are_the_registrys_by_name(tmp_path: Path) -> None:
    with drsg.open(tmp_path / "a.drsg", settings={"index.ef_search": 128}) as db:
        assert db.settings["index.ef_search"] == 128 and db.settings.sources["index.ef_search"] == "flag"
    with pytest.raises(drsg.ConfigError, match=r"unknown setting 'index\.ef'"):
        drsg.open(tmp_path / "b.drsg", settings={"index.ef": 1})
    with pytest.raises(drsg.ConfigError, match="Kafka"):
        drsg.open(tmp_path / "c.drsg", timeout=1.0)


def test_hits_keep_the_searchs_wire_form_and_a_plan_or_spec_runs_as_given(
    people: drsg.Plane, db: drsg.Database
) -> None:
    from drsg.api.retrieval import hybrid_spec
    from drsg.plan.query import parse_plan_json

    db.write(lambda tx: tx.declare_index(tx.plane("people"), "keyword", "Person", "bio", {"language": "english"}))
    [hit] = people.query(parse_plan_json('{"source": {"SeekKeys": ["ada"]}}'))
    assert hit.to_json()["key"] == "ada" and "channels" not in hit.to_json()
    spec = hybrid_spec("engine", label="Person", keyword="bio", k=1)
    [fused] = people.hybrid("ignored: the spec holds the text", spec=spec)
    wire = fused.to_json()
    assert wire["channels"] == dict(fused.channels) and wire["score"] == fused.score and fused.profile is None
    with pytest.raises(ValueError, match="wire form"):
        drsg.Hit(hit.node, 1.0).to_json()


def test_threads_share_one_searcher_and_one_embedder_cache(db: drsg.Database) -> None:
    import threading

    start, got = threading.Barrier(8), []

    def take() -> None:
        start.wait()
        got.append((db.searcher, db.embedders))

    threads = [threading.Thread(target=take) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(searcher) for searcher, _ in got}) == 1 and len({id(cache) for _, cache in got}) == 1
