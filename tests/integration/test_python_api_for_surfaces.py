"""What the CLI needed from the public API to stand on it (issue #34), on real LMDB files: a plane
read as of a commit before it was dropped, a diff of a dropped plane, the origin a surface's commits
carry, references in messages as the caller wrote them, vectorize's progress and report, upstream's
whole-plane vectorize with its stats and its commits' origin, and ask's
turn and row bounds, its usage and its wire form."""

from __future__ import annotations

import json
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path

import pytest

import drsg
from drsg.api.retrieval import model_calls
from drsg.models.testing import ScriptedChatModel
from tests.support.catalog_schema import make_sqlite
from tests.support.cli import Drsg


@pytest.fixture
def db(tmp_path: Path) -> Iterator[drsg.Database]:
    with drsg.open(tmp_path / "g.drsg") as opened:
        yield opened


def test_a_dropped_planes_past_is_read_and_diffed_through_the_api(db: drsg.Database) -> None:
    gone = db.create_plane("gone")
    made = gone.put("a", ["A"], {"n": 1})
    dropped = db.write(lambda tx: tx.drop_plane("gone")).seq
    assert dropped is not None
    with pytest.raises(drsg.NotFound, match="gone"):
        db.plane("gone")
    then = db.plane("gone", as_of=made.seq)
    assert then.id == gone.id and then.get("a", as_of=made.seq).props == {"n": 1}
    change = db.diff("gone", 0, made.seq)
    assert [node.key for node in change.nodes_created] == ["a"] and change.to_seq == made.seq


def test_commits_carry_the_databases_origin(db: drsg.Database) -> None:
    plane = db.plane("startup")
    plane.put("a")
    db.origin = {"via": "cli"}
    plane.put("b")
    assert [commit.origin.get("via") for commit in db.commits()][-2:] == ["api", "cli"]


def test_a_reference_is_named_as_the_caller_wrote_it(db: drsg.Database) -> None:
    plane = db.plane("startup")
    plane.put("ada")
    with pytest.raises(drsg.NotFound, match=r"^no node @ghost in plane 'startup' at seq \d+; check the id or @key$"):
        plane.get("@ghost")
    with pytest.raises(drsg.NotFound, match=r"^no node ghost in plane 'startup' at seq \d+; check the id or @key$"):
        plane.get("ghost")
    with pytest.raises(drsg.NotFound, match=r"^no node 99 in plane"):
        plane.get(99)
    with pytest.raises(drsg.NotFound, match=r"^node @ghost never existed in plane 'startup'$"):
        plane.history("@ghost")
    with pytest.raises(drsg.NotFound, match=r"^no node '@ghost' in plane 'startup'$"):
        plane.link("@ada", "@ghost", "KNEW")  # the store's message, the reference as given
    assert plane.link("@ada", "ada", "SELF").edge.type == "SELF"
    assert plane.delete("@ada").edges == 1


def test_vectorize_reports_progress_and_renders_its_report(db: drsg.Database) -> None:
    plane = db.plane("startup")
    for key in ("a", "b", "c"):
        plane.put(key, ["Doc"], {"text": f"text of {key}"})
    plane.put("d", ["Doc"])
    calls: list[tuple[int, int]] = []
    done = plane.vectorize("text", batch=2, progress=lambda n, total: calls.append((n, total)))
    assert calls == [(2, 3), (3, 3)]
    assert done.to_json() == {"embedded": 3, "current": 0, "no_text": 1, "labels": ["Doc"], "commits": len(done.seqs)}


def test_vectorize_nodes_is_upstreams_whole_plane_rule_with_its_stats_and_origin(db: drsg.Database) -> None:
    plane = db.plane("startup")
    plane.put("a", ["Note"], {"title": "Logs", "_src": "x"})
    plane.put("b", ["Note"], {"title": "Logs"})  # the same text as a's: one unique text of two
    plane.put("pkg.f", ["Function"], {"signature": "def f()", "_generated_by": "py@1"})
    plane.put("bare", ["Note"], {"n": 1})
    head = db.head()
    done = plane.vectorize_nodes(metric="dot", origin={"via": "rpc", "method": "plane.vectorize"})
    assert (done.embedded, done.unique, done.unchanged, done.no_text, done.tokens) == (3, 2, 0, 1, 0)
    assert done.labels == {"Note", "Function"} and done.embedder.startswith("local:")
    assert done.stats_json() == {
        "embedded": 3,
        "unique": 2,
        "tokens": 0,
        "current": 0,
        "empty": 1,
        "labels": ["Function", "Note"],
    }
    origins = {c.seq: c.origin for c in db.commits(head + 1)}
    wanted = {"via": "rpc", "method": "plane.vectorize", "embedder": done.embedder}
    assert done.seqs and all(origins[seq] == wanted for seq in done.seqs)
    assert (
        plane.get("pkg.f").props["_embedded_from"] == sha256(b"pkg.f (Function)\nsignature: def f()").hexdigest()[:16]
    )
    with db.snapshot() as snap:
        assert {(i.label, i.options["metric"]) for i in snap.indexes(plane.id) if i.kind == "vector"} == {
            ("Note", "dot"),
            ("Function", "dot"),
        }
    again = plane.vectorize_nodes()
    assert (again.embedded, again.unchanged, again.no_text, again.seqs) == (0, 3, 1, ())
    plane.put("c", ["Note"], {"title": "New"})
    third = plane.vectorize_nodes()  # the database's own origin, with the embedder
    assert [db.commits(seq, seq).__next__().origin for seq in third.seqs] == [{"via": "api", "embedder": done.embedder}]


def test_ask_takes_its_bounds_and_gives_its_usage_and_wire_form(db: drsg.Database) -> None:
    plane = db.plane("startup")
    for key in ("a", "b", "c"):
        plane.put(key, ["P"])
    plan = {"source": {"ScanLabel": "P"}, "steps": []}
    chat = ScriptedChatModel([json.dumps({"plan": plan})])
    answer = plane.ask("who?", chat=chat, limit=2, max_attempts=3)
    assert len(answer.results) == 2 and answer.bounds == ("plan 1 stopped at its limit of 2 rows",)
    assert answer.usage["calls"] == 1 and answer.to_json()["usage"] == answer.usage
    assert answer.to_json()["answers"] == list(answer.answers)
    with pytest.raises(drsg.ChatError):
        plane.ask("who?", chat=ScriptedChatModel([]), max_attempts=1)


def test_a_named_chat_model_is_called_by_its_choice(db: drsg.Database) -> None:
    named = model_calls(drsg.ChatChoice("ollama", "llama3"), db.settings)
    assert named.model == "ollama:llama3" and named.chat is None  # connected on the first call
    assert model_calls(None, db.settings).model == model_calls(drsg.ChatChoice("openai"), db.settings).model


def test_jsonl_into_a_new_plane_with_progress_and_out_to_a_whole_file(db: drsg.Database, tmp_path: Path) -> None:
    source = db.create_plane("src")
    source.put("a", ["A"], {"n": 1})
    source.put("b", ["A"])
    source.link("a", "b", "NEXT")
    out = tmp_path / "src.jsonl"
    assert source.export_jsonl(out) == 3 and not (tmp_path / "src.jsonl.partial").exists()
    seen: list[int] = []
    with pytest.raises(drsg.NotFound, match="copy"):
        db.import_jsonl("copy", out)
    report = db.import_jsonl("copy", out, create_plane=True, progress=seen.append)
    assert (report.nodes_created, report.edges_created) == (2, 1) and seen[-1] == out.stat().st_size
    assert [node.key for node in db.plane("copy").nodes()] == ["a", "b"]


def test_a_planes_feed_by_name_after_its_drop_and_each_messages_wire_form(db: drsg.Database) -> None:
    gone = db.create_plane("gone")
    gone.put("a")
    dropped = gone.drop()
    assert dropped is not None
    feed = db.feed(1, plane="gone", follow=False, resolved_every=None)
    assert feed.position == 1
    messages = list(feed)
    assert messages[-1].dropped and messages[-1].to_json()["dropped"] is True
    assert messages[0].to_json()["changes"] == list(messages[0].changes) and "truncated" in messages[0].to_json()


def test_a_plane_is_summed_up_renamed_given_properties_and_dropped(db: drsg.Database) -> None:
    made = db.create_plane("p", {"team": "x"})
    assert made.seq == db.head()
    made.put("a", ["A"])
    made.put("b", ["A", "B"])
    made.link("a", "b", "T")
    at = db.head()
    card = made.summary()
    assert (card.name, card.nodes, card.edges, card.seq) == ("p", 2, 1, at)
    assert card.labels == {"A": 2, "B": 1} and card.edge_types == {"T": 1} and card.props == {"team": "x"}
    renamed = made.rename("q")
    assert (renamed.name, renamed.seq, renamed.id) == ("q", db.head(), made.id)
    assert renamed.set_props({"n": 1}).props == {"team": "x", "n": 1}
    seq = renamed.drop()
    assert seq == db.head() and [p.name for p in db.planes()] == ["startup"]
    assert [p.name for p in db.planes(as_of=at)] == ["startup", "p"]
    assert db.plane("p", as_of=at).counts(as_of=at) == (2, 1)
    assert db.plane("p", as_of=at).summary(as_of=at).name == "p"


def test_find_refuses_a_request_that_is_no_object_as_the_cli_always_did(drsg: Drsg, tmp_path: Path) -> None:
    app = make_sqlite(tmp_path / "app.db")
    assert drsg("catalog", "add", "app", str(app)).code == 0
    assert drsg("catalog", "index", "app").code == 0
    refused = drsg("find", "[1]")
    assert refused.code == 2 and refused.out == ""
    assert refused.err == (
        'error: find: the request is a JSON object like {"entity": "user", "fields": [...], "where": {...}}\n'
    )


def test_the_cli_names_a_missing_node_as_typed(drsg: Drsg) -> None:
    assert drsg("node", "put", "ada").code == 0
    for typed in ("nobody", "@nobody", "77"):
        missing = drsg("get", typed)
        assert (missing.code, missing.out) == (1, "")
        assert missing.err == f"error: no node {typed} in plane 'startup' at seq 2; check the id or @key\n"
        never = drsg("node", "history", typed)
        assert never.err == f"error: node {typed} never existed in plane 'startup'\n"
