"""`drsg index …`, `drsg search` and `drsg query` end to end, with real text and real vectors."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import Drsg
from tests.support.glove import rows

SEED = Path(__file__).resolve().parents[1] / "data" / "ai_native_en.txt"


def _docs(tmp_path: Path) -> Path:
    """Paragraphs of the seed chapter as Doc nodes, each with a real GloVe vector."""
    paragraphs = [p.strip() for p in SEED.read_text().split("\n\n") if len(p.strip()) > 40][:60]
    vectors = rows(1000, len(paragraphs))
    f = tmp_path / "docs.jsonl"
    with f.open("w") as fh:
        for i, (text, vec) in enumerate(zip(paragraphs, vectors, strict=True)):
            props = {"body": text, "embedding": {"$vector": [float(x) for x in vec]}}
            fh.write(json.dumps({"labels": ["Doc"], "external_key": f"p{i}", "properties": props}) + "\n")
    return f


def test_keyword_index_and_search(drsg: Drsg, tmp_path: Path) -> None:
    assert drsg("import", str(_docs(tmp_path)), "--plane", "docs", "--create-plane").code == 0
    ran = drsg("index", "keyword", "Doc", "body", "--plane", "docs", "--lang", "en")
    assert ran.code == 0 and ran.out.strip() == "ensured keyword index on Doc.body (English)"
    hits = drsg("search", 'SEARCH (d:Doc) ON body MATCHING "hybrid retrieval" TOPK 3', "-p", "docs", "--json")
    assert hits.code == 0, hits.err
    found = hits.json_lines()
    assert 1 <= len(found) <= 3 and all("score" in h for h in found)
    assert any("hybrid" in h["properties"]["body"].lower() for h in found)
    assert [h["score"] for h in found] == sorted((h["score"] for h in found), reverse=True)
    assert found[0]["properties"]["embedding"].startswith("$vector(50 dims")  # lean: vectors are elided
    text = drsg("search", 'SEARCH (d:Doc) ON body MATCHING "hybrid retrieval" TOPK 3', "-p", "docs")
    assert text.lines()[0] == f"{len(found)} result(s)"
    again = drsg("index", "keyword", "body", "--plane", "docs", "--lang", "english")  # one name: every label
    assert again.code == 0 and "Doc.body" in again.out
    conflict = drsg("index", "keyword", "Doc", "body", "--plane", "docs", "--lang", "french")
    assert conflict.code == 1 and "already has a keyword index" in conflict.err


def test_keyword_search_as_of_and_after_redeclaration(drsg: Drsg, tmp_path: Path) -> None:
    assert drsg("import", str(_docs(tmp_path)), "--plane", "docs", "--create-plane").code == 0
    assert drsg("index", "keyword", "Doc", "body", "--plane", "docs").code == 0
    q = 'SEARCH (d:Doc) ON body MATCHING "hybrid" TOPK 50'
    before = {h["external_key"] for h in drsg("search", q, "-p", "docs", "--json").json_lines()}
    head = drsg("stats", "--json").json_lines()[0]["commit_seq"]
    victim = sorted(before)[0]
    assert drsg("node", "delete", f"@{victim}", "-p", "docs").code == 0
    now = {h["external_key"] for h in drsg("search", q, "-p", "docs", "--json").json_lines()}
    then = {h["external_key"] for h in drsg("search", f"{q} AS OF {head}", "-p", "docs", "--json").json_lines()}
    assert now == before - {victim} and then == before
    assert drsg("index", "drop", "Doc", "body", "--kind", "keyword", "-p", "docs").code == 0
    gone = drsg("search", q, "-p", "docs")
    assert gone.code == 1 and "no keyword index on Doc.body" in gone.err and "drsg index keyword" in gone.err
    assert drsg("index", "keyword", "Doc", "body", "--plane", "docs").code == 0
    redeclared = {h["external_key"] for h in drsg("search", q, "-p", "docs", "--json").json_lines()}
    assert redeclared == now  # a re-declared index is built afresh, not left empty by the drop


def test_vector_index_search_and_plan(drsg: Drsg, tmp_path: Path) -> None:
    assert drsg("import", str(_docs(tmp_path)), "--plane", "docs", "--create-plane").code == 0
    ran = drsg("index", "ensure", "--plane", "docs")
    assert ran.code == 0 and ran.lines() == ["ensured vector index on Doc.embedding", "1 label(s) indexed"]
    listed = drsg("index", "list", "-p", "docs", "--json").json_lines()[0]
    assert listed["vector"] == [
        {"label": "Doc", "property": "embedding", "metric": "cosine", "dims": 50, "ef": 64, "recall": 1.0}
    ]
    q = [round(float(x), 6) for x in rows(1007, 1)[0]]  # p7's own vector
    stmt = f"SEARCH (v:Doc) ON embedding NEAR {json.dumps(q)} TOPK 3"
    hits = drsg("search", stmt, "-p", "docs", "--json").json_lines()
    assert hits[0]["external_key"] == "p7" and abs(hits[0]["score"] - 1.0) < 1e-4
    plan = {
        "source": {"VectorTopK": {"label": "Doc", "property": "embedding", "query": q, "metric": "Cosine", "k": 5}},
        "steps": [{"Limit": 2}],
    }
    via_plan = drsg("query", json.dumps(plan), "-p", "docs", "--json").json_lines()
    assert [h["id"] for h in via_plan] == [h["id"] for h in hits[:2]]
    via_stdin = drsg("query", "-", "-p", "docs", "--json", input=json.dumps(plan)).json_lines()
    assert via_stdin == via_plan
    param = drsg("search", "SEARCH (v:Doc) NEAR $q TOPK 1", "-p", "docs", "--param", f"q={json.dumps(q)}", "--json")
    assert param.json_lines()[0]["external_key"] == "p7"
    scan = drsg("query", '{"source":{"SeekKeys":["p3","p1","nope"]}}', "-p", "docs", "--json").json_lines()
    assert [h["external_key"] for h in scan] == ["p3", "p1"]
    none = drsg("index", "ensure", "Doc", "nothing_here", "--plane", "docs")
    assert none.code == 0 and none.lines() == ["ensured vector index on Doc.nothing_here", "1 label(s) indexed"]
    missing = drsg("index", "ensure", "nothing_here", "--plane", "docs")
    assert missing.out.strip() == "no label in plane 'docs' carries `nothing_here` — nothing to index"


def test_search_errors_are_one_line(drsg: Drsg, tmp_path: Path) -> None:
    assert drsg("import", str(_docs(tmp_path)), "--plane", "docs", "--create-plane").code == 0
    assert drsg("index", "ensure", "Doc", "embedding", "--plane", "docs").code == 0
    head = drsg("stats", "--json").json_lines()[0]["commit_seq"]
    for args, code, text in [
        (("search", "SEARCH (v:Doc NEAR [1]"), 2, "expected ')'"),
        (("search", "FIND everything"), 2, "starts with SEARCH"),
        (("search", "SEARCH (v:Doc) ON embedding NEAR [1, 2] TOPK 3"), 2, "has 2 dims"),
        (("search", "SEARCH (v:Doc) NEAR $missing"), 2, "parameter $missing has no value"),
        (("search", 'SEARCH (d:Doc) ON body MATCHING "x" AS OF 99999'), 2, "beyond the head"),
        (("query", "{not json"), 2, "not valid JSON"),
        (("query", '{"source":{"Teleport":{}}}'), 2, "not supported"),
        (("index", "keyword", "Doc", "body", "--lang", "klingon"), 2, "unknown language 'klingon'"),
        (("index", "ensure", "Doc", "embedding", "--metric", "dot", "-p", "docs"), 1, "already has a vector index"),
        (("index", "drop", "Doc", "nothing", "-p", "docs"), 1, "no vector index on Doc.nothing"),
    ]:
        ran = drsg(*args, "-p", "docs") if "-p" not in args else drsg(*args)
        assert ran.code == code, (args, ran.code, ran.err)
        assert text in ran.err, (args, ran.err)
        assert len(ran.err.strip().splitlines()) == 1, ran.err
    assert drsg("stats", "--json").json_lines()[0]["commit_seq"] == head


def test_hybrid_statement_and_plan_match_the_hybrid_command(drsg: Drsg, tmp_path: Path) -> None:
    assert drsg("import", str(_docs(tmp_path)), "--plane", "docs", "--create-plane").code == 0
    assert drsg("index", "keyword", "Doc", "body", "--plane", "docs").code == 0
    q = [round(float(x), 6) for x in rows(1007, 1)[0]]
    stmt = f'HYBRID (d:Doc) VECTOR ON embedding NEAR {json.dumps(q)} KEYWORD ON body MATCHING "hybrid retrieval" TOPK 5'
    via_search = drsg("search", stmt, "-p", "docs", "--json").json_lines()
    top = [h["external_key"] for h in via_search]
    # The vector channel's exact match and the keyword channel's best each score a normalised 1.0.
    keyword_best = drsg("search", 'SEARCH (d:Doc) ON body MATCHING "hybrid retrieval" TOPK 1', "-p", "docs", "--json")
    assert {"p7", keyword_best.json_lines()[0]["external_key"]} <= set(top[:3])
    plan = {
        "source": {
            "Hybrid": {
                "label": "Doc",
                "vector": {"property": "embedding", "query": q, "metric": "Cosine"},
                "keyword": {"property": "body", "query": "hybrid retrieval"},
                "graph": None,
                "weights": {"vector": 1.0, "keyword": 1.0, "graph": 0.5},
                "candidates": 100,
                "k": 5,
            }
        }
    }
    via_plan = drsg("query", json.dumps(plan), "-p", "docs", "--json").json_lines()
    assert [h["id"] for h in via_plan] == [h["id"] for h in via_search]
    assert [round(h["score"], 6) for h in via_plan] == [round(h["score"], 6) for h in via_search]
