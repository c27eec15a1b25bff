"""workers/evaluation.py: nDCG@k with graded relevance, recall@k, the file formats; and the
`hybrid-eval` command end to end on a tiny real-text plane (local embedder, BM25, a graph)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path

import pytest

from drsg.kernel.errors import BadValue
from drsg.workers.evaluation import (
    configs,
    dcg,
    ndcg_at_k,
    parse_qrels,
    parse_queries,
    recall_at_k,
    score_run,
)
from tests.support import instruments

# --------------------------------------------------------------------------- metrics


def test_dcg_discounts_by_log2_of_rank_plus_one() -> None:
    assert dcg([3, 2, 0, 1]) == pytest.approx(3 + 2 / math.log2(3) + 1 / math.log2(5))
    assert dcg([]) == 0.0


def test_ndcg_perfect_worst_and_graded() -> None:
    judged = {"a": 2, "b": 1, "c": 1, "z": 0}
    assert ndcg_at_k(["a", "b", "c"], judged) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "y", "z"], judged) == 0.0
    # the grade-2 document at rank 2 instead of 1: DCG = 1 + 2/log2(3), ideal 2 + 1/log2(3) + 1/2
    got = ndcg_at_k(["b", "a", "c"], judged)
    assert got == pytest.approx((1 + 2 / math.log2(3) + 1 / 2) / (2 + 1 / math.log2(3) + 1 / 2))
    assert 0 < got < 1


def test_ndcg_cuts_at_k_and_counts_a_repeat_once() -> None:
    judged = {"a": 1, "b": 1}
    assert ndcg_at_k(["x", "a"], judged, k=1) == 0.0
    assert ndcg_at_k(["a", "a"], judged, k=2) == pytest.approx(1 / (1 + 1 / math.log2(3)))
    # the ideal is cut at k too: one relevant found at rank 1 of k=1 is perfect
    assert ndcg_at_k(["b"], judged, k=1) == pytest.approx(1.0)


def test_ndcg_without_relevant_documents_is_zero_and_k_must_be_positive() -> None:
    assert ndcg_at_k(["a"], {"a": 0}) == 0.0
    assert ndcg_at_k(["a"], {}) == 0.0
    with pytest.raises(ValueError):
        ndcg_at_k(["a"], {"a": 1}, k=0)


def test_recall_at_k() -> None:
    judged = {"a": 2, "b": 1, "c": 1, "d": 0}
    assert recall_at_k(["a", "x", "b"], judged, k=100) == pytest.approx(2 / 3)
    assert recall_at_k(["a", "x", "b"], judged, k=2) == pytest.approx(1 / 3)
    assert recall_at_k(["d"], judged) == 0.0  # grade 0 is not relevant
    assert recall_at_k(["a"], {"d": 0}) == 0.0
    with pytest.raises(ValueError):
        recall_at_k([], judged, k=0)


def test_score_run_means_over_judged_queries_only() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"b": 2}, "q3": {"c": 0}}
    run = {"q1": ["a"], "q2": ["x", "y"]}  # q3 has nothing relevant: left out of the means
    scores = score_run(run, qrels, ndcg_k=10, recall_k=100)
    assert scores.queries == 2
    assert scores.ndcg == pytest.approx(0.5) and scores.recall == pytest.approx(0.5)
    assert scores.per_query == {"q1": (1.0, 1.0), "q2": (0.0, 0.0)}
    assert score_run({"q1": ["a"]}, {"q1": {"a": 1}, "q9": {"z": 1}}).ndcg == pytest.approx(0.5)  # unrun → 0
    assert score_run({}, {}).queries == 0


# --------------------------------------------------------------------------- files


def test_parse_qrels() -> None:
    text = ["# comment", "q1 0 n1 2", "", "q1 0 n2 1", "q2\t0\tn3\t0", "q1 0 n2 0"]
    assert parse_qrels(text) == {"q1": {"n1": 2, "n2": 0}, "q2": {"n3": 0}}
    with pytest.raises(BadValue, match="line 1"):
        parse_qrels(["q1 n1 2"])
    with pytest.raises(BadValue, match="not an integer"):
        parse_qrels(["q1 0 n1 high"])


def test_parse_queries() -> None:
    got = parse_queries(['{"id": "q1", "text": "a dog"}', "", '{"id": 2, "text": "a cat"}'])
    assert [(q.id, q.text) for q in got] == [("q1", "a dog"), ("2", "a cat")]
    with pytest.raises(BadValue, match="not JSON"):
        parse_queries(["{oops"])
    with pytest.raises(BadValue, match="expected"):
        parse_queries(['{"id": "q1"}'])
    with pytest.raises(BadValue, match="twice"):
        parse_queries(['{"id": "q1", "text": "a"}', '{"id": "q1", "text": "b"}'])


def test_configs_cover_each_channel_and_the_fusion() -> None:
    assert [c.name for c in configs(True, True, True)] == [
        "vector",
        "keyword",
        "vector+graph",
        "keyword+graph",
        "vector+keyword",
        "vector+keyword+graph",
    ]
    assert [c.name for c in configs(True, False, False)] == ["vector"]
    assert [c.name for c in configs(False, True, True)] == ["keyword", "keyword+graph"]


# --------------------------------------------------------------------------- the command


@pytest.fixture
def evaluated(drsg: Callable[..., object], tmp_path: Path, db_path: Path) -> tuple[Callable[..., object], Path, Path]:
    instruments.build(db_path)
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        json.dumps({"id": "q1", "text": "bowed instrument with a deep tone"})
        + "\n"
        + json.dumps({"id": "q2", "text": "evergreen with needles"})
        + "\n"
        + json.dumps({"id": "unjudged", "text": "nothing"})
        + "\n"
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 cello 2\nq1 0 strings 1\nq2 0 pine 2\nq2 0 trees 1\n")
    return drsg, queries, qrels


def test_hybrid_eval_reports_every_channel_and_the_fusion(evaluated) -> None:  # type: ignore[no-untyped-def]
    drsg, queries, qrels = evaluated
    base = [str(qrels), "--queries", str(queries), "-p", "music", "--label", "Doc"]
    base += ["--vector", "embedding", "--keyword", "body", "--graph-hops", "1"]
    ran = drsg("hybrid-eval", *base, "--json")
    assert ran.code == 0, ran.err
    report = ran.json_lines()[0]
    assert report["queries"] == 2 and report["ndcg_k"] == 10 and report["recall_k"] == 100
    names = [r["name"] for r in report["rows"]]
    assert names == ["vector", "keyword", "vector+graph", "keyword+graph", "vector+keyword", "vector+keyword+graph"]
    for row in report["rows"]:
        assert 0.0 <= row["ndcg"] <= 1.0 and 0.0 <= row["recall"] <= 1.0 and row["queries"] == 2
    by = {r["name"]: r for r in report["rows"]}
    assert by["vector+graph"]["recall"] == 1.0  # the graph reaches each target's judged neighbour
    assert by["vector"]["ndcg"] > 0.5
    assert report["weights"] == {"vector": 1.0, "keyword": 1.0, "graph": 0.5}
    text = drsg("hybrid-eval", *base, "--w-graph", "0.2", "--fusion", "rrf")
    assert text.code == 0, text.err
    assert text.lines()[0].split() == ["channels", "nDCG@10", "recall@100", "queries"]
    assert [line.split()[0] for line in text.lines()[1:]] == names


def test_hybrid_eval_refuses_bad_input(evaluated, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    drsg, queries, qrels = evaluated
    common = ["--queries", str(queries), "-p", "music", "--label", "Doc"]
    nothing = drsg("hybrid-eval", str(qrels), *common)
    assert nothing.code == 2 and "needs a vector or a keyword channel" in nothing.err
    orphan = tmp_path / "orphan.txt"
    orphan.write_text("q9 0 cello 2\n")
    missing = drsg("hybrid-eval", str(orphan), *common, "--keyword", "body")
    assert missing.code == 2 and "no text" in missing.err
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 cello 2\n")
    malformed = drsg("hybrid-eval", str(bad), *common, "--keyword", "body")
    assert malformed.code != 0 and "line 1" in malformed.err
    keyword_only = drsg("hybrid-eval", str(qrels), *common, "--keyword", "body", "--json")
    assert keyword_only.code == 0 and [r["name"] for r in keyword_only.json_lines()[0]["rows"]] == ["keyword"]
