"""`hybrid-eval --fit` and fusion profiles (workers/fitting.py, plan FusionProfile, the fusion.set
commit), on a small judged set of real prose (tests/support/judged_text.py): the fit is
deterministic and scores exactly what `hybrid` scores; a saved profile ranks as its weights given
as flags do, over the CLI, HYBRID statements and JSON-RPC; AS OF an earlier commit does not see
it; a fit that does not beat the best single channel is not saved without --force."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import drsg as drsg_api
from drsg.plan.hybrid import FusionProfile, GraphPart, HybridSpec, KeywordPart, VectorPart
from drsg.plan.statements import parse_query
from drsg.store.database import Database
from drsg.workers.evaluation import evaluate_hybrid, parse_qrels, parse_queries
from drsg.workers.fitting import Evaluator, Space, deal, fit
from drsg.workers.hybrid import hybrid
from drsg.workers.manager import IndexSet
from drsg.workers.search import Searcher
from tests.support import judged_text

Run = Callable[..., Any]
CHANNELS = ["--label", judged_text.LABEL, "--vector", "embedding", "--keyword", "text", "--graph-hops", "1"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("judged")
    judged_text.build(folder / "graph.drsg")
    return folder


@pytest.fixture
def judged(built: Path, db_path: Path) -> tuple[Path, Path]:
    """A fresh copy of the judged database at the test's db path; the qrels and queries files."""
    for item in built.iterdir():
        target = db_path.parent / item.name.replace("graph.drsg", db_path.name)
        (shutil.copytree if item.is_dir() else shutil.copy)(item, target)
    return db_path.parent / "qrels.txt", db_path.parent / "queries.jsonl"


def _eval(drsg: Run, files: tuple[Path, Path], *more: str) -> Any:
    qrels, queries = files
    return drsg("hybrid-eval", str(qrels), "--queries", str(queries), "-p", judged_text.PLANE, *CHANNELS, *more)


def _flags(profile: dict[str, Any]) -> list[str]:
    """The `hybrid` flags that say exactly what a profile says."""
    w = profile["weights"]
    out = ["--fusion", profile["fusion"], "--rrf-k", str(profile["rrf_k"]), "--candidates", str(profile["candidates"])]
    out += ["--w-vector", repr(w["vector"]), "--w-keyword", repr(w["keyword"]), "--w-graph", repr(w["graph"])]
    if profile["graph"] is not None:
        out += ["--graph-decay", repr(profile["graph"]["decay"])]
    return out


def _same(got: list[dict[str, Any]], want: list[dict[str, Any]]) -> bool:
    return [h["key"] for h in got] == [h["key"] for h in want] and all(
        g["score"] == pytest.approx(w["score"], rel=1e-6) for g, w in zip(got, want, strict=True)
    )


def _hybrid(drsg: Run, text: str, *flags: str, hops: int = 1) -> list[dict[str, Any]]:
    ran = drsg("hybrid", text, "-p", judged_text.PLANE, *CHANNELS[:-1], str(hops), "--k", "15", *flags, "--json")
    assert ran.code == 0, ran.err
    return [{"key": hit["key"], "score": hit["score"]} for hit in ran.json_lines()]


def test_the_fit_is_deterministic_and_held_out(drsg: Run, judged: tuple[Path, Path]) -> None:
    first = _eval(drsg, judged, "--fit", "--seed", "3", "--json")
    assert first.code == 0, first.err
    again = _eval(drsg, judged, "--fit", "--seed", "3", "--json")
    assert again.json_lines() == first.json_lines()
    report = first.json_lines()[0]
    assert report["queries"] == len(judged_text.passages()) and len(report["folds"]) == 5
    assert sum(f["queries"] for f in report["folds"]) == report["queries"]  # each query held out once
    assert set(report["overall"]) == {"vector", "keyword", "defaults", "fitted"}
    other = _eval(drsg, judged, "--fit", "--seed", "4", "--folds", "3", "--json").json_lines()[0]
    assert [f["queries"] for f in other["folds"]] == [20, 20, 20]
    text = _eval(drsg, judged, "--fit")
    assert text.code == 0 and text.lines()[0].startswith("fit: 60 queries, 5 folds, seed 0")
    assert any(line.startswith("chosen on every query: ") for line in text.lines())


def test_folds_deal_every_query_once_in_a_seeded_order() -> None:
    ids = [f"q{i}" for i in range(23)]
    folds = deal(ids, 5, seed=1)
    assert sorted(np.bincount(folds).tolist()) == [4, 4, 5, 5, 5]
    assert deal(ids, 5, seed=1).tolist() == folds.tolist()
    assert deal(list(reversed(ids)), 5, seed=1)[::-1].tolist() == folds.tolist()  # by id, not by file order
    assert deal(ids, 5, seed=2).tolist() != folds.tolist()


def test_a_point_scores_exactly_what_hybrid_scores(judged: tuple[Path, Path], db_path: Path) -> None:
    qrels_path, queries_path = judged
    qrels = parse_qrels(qrels_path.read_text().splitlines())
    queries = parse_queries(queries_path.read_text().splitlines())
    vectors = dict(zip([q.id for q in queries], _embedder().embed([q.text for q in queries]), strict=True))
    with drsg_api.open(db_path) as db:
        indexes = IndexSet(db)
        searcher = Searcher(db, indexes)
        for graph in (None, GraphPart(1, 0.5)):
            spec = HybridSpec(
                label=judged_text.LABEL,
                vector=VectorPart("embedding", "x"),
                keyword=KeywordPart("text", "x"),
                graph=graph,
            )
            evaluator = Evaluator(searcher, judged_text.PLANE, spec, queries, vectors, qrels, Space())
            found = fit(evaluator, folds=3, seed=0)
            for point in {found.point, *(f.point for f in found.folds)}:
                rows = evaluate_hybrid(searcher, judged_text.PLANE, point.spec(spec), queries, vectors, qrels)
                assert rows[-1].config.name == ("vector+keyword" if graph is None else "vector+keyword+graph")
                assert rows[-1].scores.ndcg == pytest.approx(float(evaluator.scores(point)[0].mean()), abs=1e-12)
                assert rows[-1].scores.recall == pytest.approx(float(evaluator.scores(point)[1].mean()), abs=1e-12)
            at_defaults = evaluate_hybrid(searcher, judged_text.PLANE, spec, queries, vectors, qrels)
            alone = {r.config.name: r.scores.ndcg for r in at_defaults}  # (100 candidates)
            assert alone["vector"] == pytest.approx(float(evaluator.alone("vector")[0].mean()), abs=1e-12)
            assert alone["keyword"] == pytest.approx(float(evaluator.alone("keyword")[0].mean()), abs=1e-12)
        indexes.close()


#: a profile far from the defaults (the fit on this small set stays at them: no move is significant)
DISTINCT = FusionProfile("rrf", 30, {"vector": 0.8, "keyword": 0.2, "graph": 0.1}, 50, 2, 0.75)


def _set_profile(db_path: Path, profile: FusionProfile) -> int:
    with drsg_api.open(db_path) as db:
        write = db.write(
            lambda tx: tx.set_fusion_profile(
                tx.plane(judged_text.PLANE), "Passage", "embedding", "text", profile.to_json()
            )
        )
        assert write.seq is not None
        return write.seq


def test_fit_save_records_the_point_chosen_on_every_query(drsg: Run, judged: tuple[Path, Path]) -> None:
    ran = _eval(drsg, judged, "--fit", "--save", "--force", "--json")
    assert ran.code == 0, ran.err
    report = ran.json_lines()[0]
    since = report["saved"]["since"]
    with drsg_api.open(judged[0].parent / "graph.drsg") as db, db.snapshot() as snap:
        decl = snap.fusion_profile(snap.plane(judged_text.PLANE).id, judged_text.LABEL, "embedding", "text")
    assert decl is not None and decl.since == since
    assert FusionProfile.from_json(decl.profile).to_json() | {"fit": {}} == report["chosen"] | {"fit": {}}
    fitted = decl.profile["fit"]
    assert (
        fitted["folds"] == 5
        and fitted["queries"] == 60
        and fitted["held_out_ndcg"] == report["overall"]["fitted"]["ndcg"]
    )
    shown = drsg("plane", "show", judged_text.PLANE, "--json").json_lines()[0]["fusion_profiles"]
    assert [(p["label"], p["vector"], p["keyword"], p["since"]) for p in shown] == [
        ("Passage", "embedding", "text", since)
    ]


def test_a_profile_ranks_as_its_weights_given_as_flags(drsg: Run, judged: tuple[Path, Path], db_path: Path) -> None:
    texts = ("how are time travel reads answered", "which tables hold a password", "hybrid retrieval weights")
    defaults = [_hybrid(drsg, text) for text in texts]
    since = _set_profile(db_path, DISTINCT)
    flags = _flags(DISTINCT.to_json())
    for text, before in zip(texts, defaults, strict=True):
        profiled = _hybrid(drsg, text)
        assert profiled == _hybrid(drsg, text, *flags, hops=2)  # hops and decay from the profile too
        assert profiled != before
    explained = drsg("hybrid", "hybrid retrieval weights", "-p", judged_text.PLANE, *CHANNELS, "--explain")
    assert f"fusion profile for Passage (embedding + text), set at commit {since}: rrf k=30" in explained.out
    assert f"(fusion profile set at commit {since})" in explained.out
    flagged = drsg(
        "hybrid", "hybrid retrieval weights", "-p", judged_text.PLANE, *CHANNELS, "--w-graph", "1", "--explain"
    )
    assert "fusion profile" not in flagged.out  # a weight given: the profile is not used
    assert _hybrid(drsg, texts[0], "--w-graph", "0.5") == defaults[0]


def test_as_of_before_the_profile_fuses_with_the_defaults(drsg: Run, judged: tuple[Path, Path], db_path: Path) -> None:
    text = "what does the change feed deliver"
    defaults = _hybrid(drsg, text)
    since = _set_profile(db_path, DISTINCT)
    profile = _hybrid(drsg, text)
    assert profile != defaults
    # AS OF a commit the vector channel is searched exactly (not through HNSW): the same order, the
    # same scores to float precision
    assert _same(_hybrid(drsg, text, "--as-of", str(since - 1)), defaults)
    assert _same(_hybrid(drsg, text, "--as-of", str(since)), profile)
    report = _eval(drsg, judged, "--json").json_lines()[0]  # without --fit: the profile beside the defaults
    assert report["profile"]["since"] == since
    names = [r["name"] for r in report["rows"]]
    assert names[-1] == "profile"
    scores = {r["name"]: r["ndcg"] for r in report["rows"]}
    assert scores["profile"] != scores["vector+keyword+graph"]


def test_the_hybrid_statement_uses_the_profile(judged: tuple[Path, Path], db_path: Path, drsg: Run) -> None:
    _set_profile(db_path, DISTINCT)
    with drsg_api.open(db_path) as db:
        indexes = IndexSet(db)
        searcher = Searcher(db, indexes)
        plain = parse_query('HYBRID (d:Passage) KEYWORD ON text MATCHING "change feed" TOPK 15')
        spec = HybridSpec.from_plan_json(plain.source["Hybrid"])
        assert spec.use_profile
        weighted = parse_query('HYBRID (d:Passage) KEYWORD ON text MATCHING "change feed" WEIGHT 1 TOPK 15')
        assert not HybridSpec.from_plan_json(weighted.source["Hybrid"]).use_profile
        both = replace(spec, vector=VectorPart("embedding", _embed("change feed")))
        with db.snapshot() as snap:
            decl = snap.fusion_profile(snap.plane(judged_text.PLANE).id, judged_text.LABEL, "embedding", "text")
        assert decl is not None
        explicit = FusionProfile.from_json(decl.profile).apply(replace(both, use_profile=False))
        got = [(h.node.key, h.score) for h in hybrid(searcher, judged_text.PLANE, both)]
        assert got == [(h.node.key, h.score) for h in hybrid(searcher, judged_text.PLANE, explicit)]
        assert all(
            h.profile is not None and h.profile.since == decl.since for h in hybrid(searcher, judged_text.PLANE, both)
        )
        defaults = [
            (h.node.key, h.score) for h in hybrid(searcher, judged_text.PLANE, replace(both, use_profile=False))
        ]
        assert got != defaults
        indexes.close()


def _embedder() -> Any:
    from drsg.models.embedders import get_embedder

    return get_embedder(None)


def _embed(text: str) -> Any:
    return _embedder().embed([text])[0]


def test_a_fit_that_does_not_beat_the_best_channel_is_not_saved(
    drsg: Run, judged: tuple[Path, Path], db_path: Path
) -> None:
    """With the keyword index dropped the keyword channel is empty: the best any fusion does is the
    vector channel alone, so the fit cannot beat it — a warning, and --save needs --force."""
    assert drsg("index", "drop", "Passage", "text", "-p", judged_text.PLANE, "--kind", "keyword").code == 0
    head = drsg("log", "--json").json_lines()[-1]["seq"]
    ran = _eval(drsg, judged, "--fit", "--save")
    assert ran.code == 0, ran.err
    assert "warning: the fitted fusion does not beat vector alone on held-out queries" in ran.err
    assert "not saved: add --force" in ran.err
    assert drsg("log", "--json").json_lines()[-1]["seq"] == head  # nothing written
    forced = _eval(drsg, judged, "--fit", "--save", "--force", "--json")
    assert forced.code == 0 and forced.json_lines()[0]["saved"]["since"] == head + 1


def test_bad_requests_are_refused_in_one_line(drsg: Run, judged: tuple[Path, Path], tmp_path: Path) -> None:
    qrels, queries = judged
    save_alone = _eval(drsg, judged, "--save")
    assert save_alone.code == 2 and "--save records a fitted fusion: add --fit" in save_alone.err
    one_channel = drsg("hybrid-eval", str(qrels), "--queries", str(queries), "-p", judged_text.PLANE,
                       "--label", "Passage", "--keyword", "text", "--fit")  # fmt: skip
    assert one_channel.code == 2 and "name both --vector PROP and --keyword PROP" in one_channel.err
    bad_queries = tmp_path / "bad.jsonl"
    bad_queries.write_text(queries.read_text().splitlines()[0] + "\n{oops\n")
    ran = drsg("hybrid-eval", str(qrels), "--queries", str(bad_queries), "-p", judged_text.PLANE, *CHANNELS, "--fit")
    assert ran.code == 2 and f"{bad_queries} line 2: not JSON" in ran.err and len(ran.err.splitlines()) == 1
    bad_qrels = tmp_path / "bad.txt"
    bad_qrels.write_text("q000 0 ai-000 2\nq001 ai-001\n")
    ran = drsg("hybrid-eval", str(bad_qrels), "--queries", str(queries), "-p", judged_text.PLANE, *CHANNELS, "--fit")
    assert ran.code == 2 and f"{bad_qrels} line 2: expected" in ran.err
    few = tmp_path / "few.txt"
    few.write_text("q000 0 ai-000 2\nq001 0 ai-001 2\n")
    ran = drsg("hybrid-eval", str(few), "--queries", str(queries), "-p", judged_text.PLANE, *CHANNELS, "--fit")
    assert ran.code == 2 and "2 judged queries cannot make 5 folds" in ran.err


def test_a_malformed_profile_is_refused_with_the_fix() -> None:
    with pytest.raises(drsg_api.UsageError, match="a malformed fusion profile: unknown fusion 'nope'"):
        FusionProfile.from_json({"fusion": "nope"})
    with pytest.raises(drsg_api.UsageError, match="a malformed fusion profile"):
        FusionProfile.from_json({"graph": {"hops": "x"}})
    assert FusionProfile.from_json(FusionProfile().to_json()) == FusionProfile()


def test_the_profile_commit_replays_and_drops(tmp_path: Path) -> None:
    with Database(tmp_path / "g.drsg", create=True) as db:
        db.write(lambda tx: tx.set_fusion_profile(tx.ensure_plane("p"), "L", "v", "k", {"fusion": "rrf"}))
        db.write(lambda tx: tx.set_fusion_profile(tx.plane("p"), "L", "v", "k2", {"fusion": "dbsf"}))
        with db.snapshot() as snap:
            pid = snap.plane("p").id
            assert [(d.keyword, d.profile["fusion"]) for d in snap.fusion_profiles(pid)] == [
                ("k", "rrf"),
                ("k2", "dbsf"),
            ]
            assert snap.indexes(pid) == []  # a profile is not an index
        db.write(lambda tx: tx.drop_fusion_profile(tx.plane("p"), "L", "v", "k"))
        with pytest.raises(drsg_api.NotFound, match="no fusion profile for L"):
            db.write(lambda tx: tx.drop_fusion_profile(tx.plane("p"), "L", "v", "k"))
        with db.snapshot(2) as snap:
            assert snap.fusion_profile(pid, "L", "v", "k") is not None
        with db.snapshot() as snap:
            assert snap.fusion_profile(pid, "L", "v", "k") is None
        ops = [m.op for c in db.commits() for m in c.mutations]
        assert ops[-3:] == ["fusion.set", "fusion.set", "fusion.drop"]
        before = {d.keyword: d for d in _profiles(db)}
        db.rebuild_projection()
        assert {d.keyword: d for d in _profiles(db)} == before


def _profiles(db: Database) -> list[Any]:
    with db.snapshot() as snap:
        return snap.fusion_profiles(snap.plane("p").id)


def test_json_mutation_shape(tmp_path: Path) -> None:
    with Database(tmp_path / "g.drsg", create=True) as db:
        db.write(lambda tx: tx.set_fusion_profile(tx.ensure_plane("p"), "L", "v", "k", {"fusion": "rrf", "rrf_k": 30}))
        commit = list(db.commits())[-1]
    shapes = [m.to_json() for m in commit.mutations]
    assert shapes[-1] == {"op": "fusion.set", "plane": 1, "label": "L", "vector": "v", "keyword": "k",
                          "profile": {"fusion": "rrf", "rrf_k": 30}}  # fmt: skip
    json.dumps(shapes)
