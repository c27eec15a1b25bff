"""What the CLI needed from the public API to stand on it (issue #34), on real LMDB files: a plane
read as of a commit before it was dropped, a diff of a dropped plane, the origin a surface's commits
carry, references in messages as the caller wrote them, vectorize's progress and report, and ask's
turn and row bounds, its usage and its wire form."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import drsg
from drsg.api.retrieval import model_calls
from drsg.models.testing import ScriptedChatModel


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
    with pytest.raises(drsg.NotFound, match=r"^no node 'ghost' in plane"):
        plane.get("ghost")
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
