"""JSON-RPC `plane.find` on a running `drsg serve` over the sample graph (pioneers of computing).

Text mode: which fields match and how hits rank, analysed terms, `_` properties never matched,
edges by type and property, `limit`/`truncated`, AS OF an earlier commit. Semantic mode: the
plane embedded with the local model (`drsg vectorize`), ranked by meaning; AS OF an earlier commit
the snapshot is brute-forced, so a node embedded later is not there; a request naming a provider
is refused and writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import drsg as drsg_api
from drsg.workers import find as find_module
from tests.support.sample import SAMPLE
from tests.support.server import RunningServer, cli, start_server


def _head(db: Path) -> int:
    return int(json.loads(cli(db, "log", "--json").stdout.splitlines()[-1])["seq"])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, dict[str, int]]]:
    workdir = tmp_path_factory.mktemp("find")
    db = workdir / "graph.drsg"
    seqs: dict[str, int] = {}
    steps = [
        ("import", str(SAMPLE), "--plane", "pioneers", "--create-plane"),
        ("node", "put", "algol", "--plane", "pioneers", "-l", "Language", "-P", '_source="algorithm notes"'),
        ("vectorize", "--plane", "pioneers", "--label", "Person", "--from", "note", "--embed", "local"),
    ]
    for args in steps:
        ran = cli(db, *args)
        assert ran.returncode == 0, ran.stderr
        seqs[args[0]] = _head(db)
    more = (
        "node",
        "put",
        "liskov",
        "--plane",
        "pioneers",
        "-l",
        "Person",
        "-P",
        'note="Gave the substitution principle for types."',
    )
    assert cli(db, *more).returncode == 0
    assert (
        cli(
            db, "vectorize", "--plane", "pioneers", "--label", "Person", "--from", "note", "--embed", "local"
        ).returncode
        == 0
    )
    server = start_server(db, workdir)
    yield server, seqs
    assert server.stop() == 0


def find(server: RunningServer, **params: Any) -> dict[str, Any]:
    return server.call("plane.find", {"plane": "pioneers", "lean": True, **params})  # type: ignore[no-any-return]


def test_text_matches_rank_by_field_then_id(world: tuple[RunningServer, dict[str, int]]) -> None:
    server, _ = world
    found = find(server, q="Turing")
    assert found["mode"] == "text" and found["note"] is None
    assert (
        [(n["external_key"], n["match"]) for n in found["nodes"]]
        == [
            ("turing", "key"),  # the key is the text
            ("turing_machine", "key"),  # the key contains it
        ]
        + [(n["external_key"], "properties.name") for n in found["nodes"][2:]]
    )
    assert found["scanned"] == found["total"] and found["truncated"] is False
    labels = find(server, q="machine")
    assert {n["match"] for n in labels["nodes"]} >= {"key", "label"}
    ranks = [("key", "label", "properties.name", "properties.note").index(n["match"]) for n in labels["nodes"]]
    assert ranks == sorted(ranks)


def test_terms_edges_hidden_properties_and_limit(world: tuple[RunningServer, dict[str, int]]) -> None:
    server, _ = world
    terms = find(server, q="Algorithms")  # no field contains "algorithms"; "algorithm" is a term of three
    assert {n["external_key"]: n["match"] for n in terms["nodes"]} == {
        "ada": "properties.note",
        "dijkstra": "properties.note",
        "shortest_path": "properties.name",
    }
    assert "algol" not in {n["external_key"] for n in find(server, q="algorithm notes")["nodes"]}  # `_source`
    edges = find(server, q="designed")
    assert (
        edges["edges"] and {e["type"] for e in edges["edges"]} == {"DESIGNED"} and edges["edges"][0]["match"] == "type"
    )
    one = find(server, q="a", limit=1)
    assert len(one["nodes"]) == 1 and len(one["edges"]) == 1 and one["truncated"] is True
    assert find(server, q="   ")["nodes"] == []


def test_text_as_of_an_earlier_commit(world: tuple[RunningServer, dict[str, int]]) -> None:
    server, seqs = world
    assert [n["external_key"] for n in find(server, q="liskov")["nodes"]] == ["liskov"]
    assert find(server, q="liskov", as_of=seqs["vectorize"])["nodes"] == []
    assert find(server, q="algol", as_of=seqs["import"])["nodes"] == []


def test_semantic_ranks_by_meaning_and_as_of_brute_forces_the_snapshot(
    world: tuple[RunningServer, dict[str, int]],
) -> None:
    server, seqs = world
    found = find(server, q="breaking enemy codes in wartime", semantic=True, limit=3)
    assert found["mode"] == "semantic" and found["nodes"][0]["external_key"] == "turing"
    assert all(n["match"] == "embedding" and isinstance(n["score"], float) for n in found["nodes"])
    scores = [n["score"] for n in found["nodes"]]
    assert scores == sorted(scores, reverse=True)
    principle = find(server, q="the substitution principle for types", semantic=True, limit=1)
    assert principle["nodes"][0]["external_key"] == "liskov"
    before = find(server, q="the substitution principle for types", semantic=True, limit=30, as_of=seqs["vectorize"])
    assert before["mode"] == "semantic" and "liskov" not in {n["external_key"] for n in before["nodes"]}
    unembedded = find(server, q="algorithm", semantic=True, as_of=seqs["import"])  # nothing embedded yet
    assert unembedded["mode"] == "text" and "no embedded nodes" in unembedded["note"]
    assert {n["external_key"] for n in unembedded["nodes"]} == {"ada", "dijkstra", "shortest_path"}


def test_a_provider_from_the_request_is_refused(world: tuple[RunningServer, dict[str, int]]) -> None:
    server, _ = world
    head = server.head()
    for name in ("provider", "embed_model"):
        error = server.error("plane.find", {"plane": "pioneers", "q": "x", "semantic": True, name: "openai"})
        assert error["code"] == -32602 and f"`{name}` is not accepted" in error["message"]
    assert server.error("plane.find", {"plane": "pioneers", "q": "x", "limit": 0})["code"] == -32602
    assert server.error("plane.find", {"plane": "nope", "q": "x"})["code"] == -32602
    assert server.head() == head


def test_the_scan_cap_says_truncated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = drsg_api.open(str(tmp_path / "g.drsg"))
    try:

        def write(tx: Any) -> None:
            plane = tx.plane("startup")
            made = [tx.create_node(plane, f"k{i}", ["N"], {"text": "needle" if i == 4 else "hay"}) for i in range(5)]
            tx.link(plane, made[0].id, made[1].id, "NEEDLE_EDGE", {})

        db.write(write)
        monkeypatch.setattr(find_module, "SCAN_CAP", 3)
        with db.snapshot() as snap:
            plane = snap.plane("startup").id
            capped = find_module.find_text(snap, plane, "needle", 10)
            monkeypatch.setattr(find_module, "SCAN_CAP", 100)
            whole = find_module.find_text(snap, plane, "needle", 10)
    finally:
        db.close()
    assert (capped["scanned"], capped["total"], capped["truncated"], capped["nodes"]) == (3, 5, True, [])
    assert [e["match"] for e in capped["edges"]] == ["type"]  # the edge pass has its own cap
    assert (whole["scanned"], whole["truncated"], [n["external_key"] for n in whole["nodes"]]) == (5, False, ["k4"])
