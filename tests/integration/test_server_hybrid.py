"""``plane.hybrid`` end to end: the real server in a subprocess, real text embedded by the local model.

The database is built before the server starts (nodes, IS_A edges, glosses vectorised with the
local embedder, a keyword index), then queried over HTTP: the fused ranking and its channels, the
graph channel lifting a neighbour, time travel, lean records, and the refusals (a request may not
pick the embedder, a keyword channel needs a label, bounds).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import instruments
from tests.support.server import RunningServer, start_server

CHANNELS = {"vector", "keyword", "graph"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, int]]:
    workdir = tmp_path_factory.mktemp("hybrid")
    head = instruments.build(workdir / "graph.drsg")
    server = start_server(workdir / "graph.drsg", workdir)
    yield server, head
    assert server.stop() == 0


def hybrid(server: RunningServer, **params: Any) -> dict[str, Any]:
    return server.call("plane.hybrid", {"plane": "music", "label": "Doc", **params})  # type: ignore[no-any-return]


def test_fused_ranking_with_channels(served: tuple[RunningServer, int]) -> None:
    server, _ = served
    out = hybrid(
        server,
        q="a bowed instrument with a deep tone",
        vector_prop="embedding",
        keyword_prop="body",
        graph_hops=1,
        k=8,
    )
    assert set(out) == {"results", "count"} and out["count"] == len(out["results"]) > 0
    top = out["results"][0]
    assert top["external_key"] == "cello"
    assert {"id", "labels", "properties", "score", "channels"} <= set(top)
    assert set(top["channels"]) == CHANNELS
    assert top["channels"]["graph"] == 1.0  # a seed
    assert 0.0 <= top["channels"]["vector"] < 1.0  # a cosine distance
    assert top["channels"]["keyword"] > 0.0  # BM25
    scores = [r["score"] for r in out["results"]]
    assert scores == sorted(scores, reverse=True)
    by_key = {r["external_key"]: r for r in out["results"]}
    assert by_key["strings"]["channels"]["graph"] in (0.5, 1.0)  # cello's neighbour, at least one hop
    assert len(top["properties"]["embedding"]["$vector"]) == 384  # not lean: the vector itself


def test_one_channel_at_a_time_and_weights(served: tuple[RunningServer, int]) -> None:
    server, _ = served
    vec = hybrid(server, q="evergreen with needles", vector_prop="embedding", k=3)
    assert vec["results"][0]["external_key"] == "pine"
    assert all(r["channels"]["keyword"] is None and r["channels"]["graph"] is None for r in vec["results"])
    kw = hybrid(server, q="brass valves", keyword_prop="body", k=3)
    assert kw["results"][0]["external_key"] == "trumpet"
    assert all(r["channels"]["vector"] is None for r in kw["results"])
    muted = hybrid(server, q="brass valves", keyword_prop="body", vector_prop="embedding", w_vector=0.0, k=3)
    assert [r["external_key"] for r in muted["results"]][:1] == ["trumpet"]
    lean = hybrid(server, q="oak acorns", vector_prop="embedding", k=1, lean=True)
    assert lean["results"][0]["properties"]["embedding"].startswith("$vector(384 dims")


def test_as_of_reads_an_earlier_commit(served: tuple[RunningServer, int]) -> None:
    server, head = served
    pine = server.call("node.get", {"plane": "music", "key": "pine"})
    server.call("node.delete", {"plane": "music", "id": pine["id"]})
    params = {"q": "coniferous evergreen needles", "vector_prop": "embedding", "keyword_prop": "body", "k": 3}
    now = {r["external_key"] for r in hybrid(server, **params)["results"]}
    then = [r["external_key"] for r in hybrid(server, **params, as_of=head)["results"]]
    assert "pine" not in now and then[0] == "pine"


def test_refusals(served: tuple[RunningServer, int]) -> None:
    server, _ = served
    base = {"plane": "music", "q": "a deep tone", "vector_prop": "embedding", "label": "Doc"}
    for name, value in (("provider", "openai"), ("embed_model", "text-embedding-3-large")):
        err = server.error("plane.hybrid", {**base, name: value})
        assert err["code"] == -32602 and "not accepted" in err["message"], err
    for name in ("embed_url", "embed_key_env", "api_key"):
        err = server.error("plane.hybrid", {**base, name: "x"})
        assert err["code"] == -32602 and name in err["message"], err
    err = server.error("plane.hybrid", {"plane": "music", "q": "deep", "keyword_prop": "body"})
    assert err["code"] == -32602 and "label" in err["message"]
    err = server.error("plane.hybrid", {"plane": "music", "q": "deep", "label": "Doc"})
    assert err["code"] == -32602 and "vector or a keyword channel" in err["message"]
    for bad in ({"k": 0}, {"candidates": 100_000}, {"graph_hops": 65}, {"graph_decay": 1.5, "graph_hops": 1}):
        err = server.error("plane.hybrid", {**base, **bad})
        assert err["code"] == -32602, (bad, err)
    err = server.error("plane.hybrid", {**base, "metric": "manhattan"})
    assert err["code"] == -32602
    err = server.error("plane.hybrid", {**base, "q": "   "})
    assert err["code"] == -32602 and "empty" in err["message"]
    err = server.error("plane.hybrid", {**base, "plane": "nowhere"})
    assert err["code"] in (-32602, -32000)


def test_discover_describes_plane_hybrid(served: tuple[RunningServer, int]) -> None:
    server, _ = served
    methods = {m["name"]: m for m in server.call("rpc.discover")["methods"]}
    params = {p["name"]: p for p in methods["plane.hybrid"]["params"]}
    assert {"q", "vector_prop", "keyword_prop", "graph_hops", "w_vector", "k", "candidates", "as_of"} <= set(params)
    assert params["provider"]["x-drsg"] is True and "Refused" in params["provider"]["schema"]["description"]
    assert params["q"]["required"] is True and not params["provider"]["required"]


def test_with_no_weight_the_planes_fusion_profile_decides(served: tuple[RunningServer, int]) -> None:
    """(Last in the module: it leaves a profile behind.) A profile written by another process is
    used by a request with no ``w_*``, exactly as its weights given as params would rank."""
    import drsg
    from drsg.plan.hybrid import FusionProfile

    server, _ = served
    query = {"q": "a bowed instrument with a deep tone", "vector_prop": "embedding", "keyword_prop": "body", "k": 8}
    before = hybrid(server, **query)
    profile = FusionProfile("minmax", 60, {"vector": 0.2, "keyword": 0.8, "graph": 0.0}, 3)
    with drsg.open(server.db) as db:
        db.write(lambda tx: tx.set_fusion_profile(tx.plane("music"), "Doc", "embedding", "body", profile.to_json()))
    after = hybrid(server, **query)
    explicit = hybrid(server, **query, w_vector=0.2, w_keyword=0.8, w_graph=0.0, candidates=3)
    assert after == explicit and after != before
    assert hybrid(server, **query, w_vector=1.0) != after  # a weight given: the profile is not used
