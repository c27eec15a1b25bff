"""What the store decides, seen through the surfaces: `drsg stats`, `node put`, `node history`, import."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import Drsg


def test_stats_json_counts_the_declared_indexes(drsg: Drsg) -> None:
    assert drsg("plane", "create", "docs").code == 0
    assert drsg("stats", "--json").json_lines()[0]["indexes"] == 0
    assert drsg("index", "keyword", "Doc", "body", "-p", "docs").code == 0
    assert drsg("index", "ensure", "Doc", "embedding", "-p", "docs").code == 0
    assert drsg("stats", "--json").json_lines()[0]["indexes"] == 2


def test_node_put_creates_updates_and_replaces_with_the_same_output(drsg: Drsg) -> None:
    assert drsg("plane", "create", "social").code == 0
    made = drsg("node", "put", "ada", "-p", "social", "-l", "Person", "-P", "born=1815")
    assert made.out == "created node #1 @ada (seq 3)\n"
    updated = drsg("node", "put", "ada", "-p", "social", "-l", "Writer", "-P", "died=1852", "--json")
    assert updated.out == (
        '{"id":1,"external_key":"ada","labels":["Person","Writer"],"properties":{"born":1815,"died":1852},'
        '"seq":4,"op":"updated"}\n'
    )
    replaced = drsg("node", "put", "ada", "-p", "social", "-l", "Poet", "--replace")
    assert replaced.out == "replaced node #1 @ada (seq 5)\n"
    keyless = drsg("node", "put", "-p", "social", "--json")
    assert keyless.out == '{"id":2,"external_key":null,"labels":[],"properties":{},"seq":6,"op":"created"}\n'
    bad = drsg("node", "put", "ada", "-p", "social", "-l", "a\x00b")
    assert bad.code == 2 and bad.out == "" and _head(drsg) == 6


def test_import_on_conflict_error_skip_and_update(drsg: Drsg, tmp_path: Path) -> None:
    assert drsg("plane", "create", "social").code == 0
    assert drsg("node", "put", "ada", "-p", "social", "-l", "Person", "-P", "born=1815").code == 0
    lines = tmp_path / "people.jsonl"
    lines.write_text(
        '{"labels": ["Poet"], "external_key": "ada", "properties": {"v": 1}}\n'
        '{"labels": ["Person"], "external_key": "bob", "properties": {}}\n'
    )
    refused = drsg("import", str(lines), "-p", "social")
    assert refused.code == 1 and _head(drsg) == 3
    assert refused.err == (
        "error: 1 key(s) already exist in plane 'social': ada; nothing was written — re-run with "
        "--on-conflict skip or --on-conflict update\n"
    )
    skipped = drsg("import", str(lines), "-p", "social", "--on-conflict", "skip")
    assert skipped.out == "imported 1 node(s) (1 created, 1 skipped), 0 edge(s) in 1 commit(s) (seq 4..4)\n"
    lines.write_text(lines.read_text().replace('"bob"', '"cy"'))
    updated = drsg("import", str(lines), "-p", "social", "--on-conflict", "update", "--json")
    assert updated.json_lines() == [
        {
            "lines": 2,
            "nodes_created": 1,
            "nodes_updated": 1,
            "nodes_skipped": 0,
            "edges_created": 0,
            "edges_updated": 0,  # an edge line matching an old edge is a conflict too (test_import_conflicts)
            "edges_skipped": 0,
            "commits": 1,
            "first_seq": 5,
            "last_seq": 5,
        }
    ]
    ada = drsg("get", "@ada", "-p", "social", "--json").json_lines()[0]
    assert (ada["labels"], ada["properties"]) == (["Poet"], {"v": 1})


def test_history_by_the_key_of_a_deleted_node_finds_its_last_holder(drsg: Drsg) -> None:
    assert drsg("plane", "create", "social").code == 0
    assert drsg("node", "put", "ada", "-p", "social", "-P", "v=1").code == 0
    assert drsg("node", "delete", "@ada", "-p", "social").code == 0
    assert drsg("node", "put", "ada", "-p", "social", "-P", "v=2").code == 0  # a new node takes the key
    assert drsg("node", "delete", "@ada", "-p", "social").code == 0
    history = drsg("node", "history", "@ada", "-p", "social", "--json").json_lines()
    assert [(h["seq"], h["deleted"]) for h in history] == [(5, False), (6, True)]
    assert history[0]["record"]["properties"] == {"v": 2}
    never = drsg("node", "history", "@nobody", "-p", "social")
    assert never.code == 1 and never.err == "error: node @nobody never existed in plane 'social'\n"


def _head(drsg: Drsg) -> int:
    return int(drsg("stats", "--json").json_lines()[0]["commit_seq"])
