"""The catalog by meaning, with the real local embedder (MiniLM) on a real SQLite file: `catalog
index --embed local` embeds the table and column descriptions, `catalog search` fuses keyword and
vector channels, `find` resolves a word no name, alias or comment matches by meaning (also over
JSON-RPC on `drsg serve`), a re-index keeps unchanged vectors and re-embeds changed ones, and
without an embedder everything answers as before."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from drsg.kernel.values import Vector
from drsg.pipeline.catalog import service
from drsg.pipeline.catalog.connections import Connections
from drsg.pipeline.catalog.resolve import search
from drsg.store.database import Database
from tests.support.cli import Drsg, Ran

DDL = """
CREATE TABLE person ( -- people we know
  id INTEGER PRIMARY KEY,
  full_name VARCHAR(64), -- legal name
  dob DATE, -- date of birth
  ph VARCHAR(20), -- telephone number
  zip VARCHAR(10) -- postal code
);
CREATE TABLE shipment ( -- parcels sent to customers
  id INTEGER PRIMARY KEY,
  person_id INTEGER REFERENCES person(id),
  eta TIMESTAMP -- expected arrival
);
INSERT INTO person VALUES (1, 'Ada', '1815-12-10', '555-0100', '10115');
"""
#: asked about with none of the column's words, no alias of them, nothing of its comment
PARAPHRASES = {"birthday": "person.dob", "when were they born": "person.dob", "birthdate": "person.dob"}


@pytest.fixture
def people(tmp_path: Path) -> Path:
    path = tmp_path / "people.db"
    db = sqlite3.connect(path)
    db.executescript(DDL)
    db.commit()
    db.close()
    return path


@pytest.fixture
def both(drsg: Drsg, people: Path) -> Callable[..., Ran]:
    """Two connections to one file: `ppl` indexed with the local embedder, `bare` without one."""
    for name, extra in (("ppl", ("--embed", "local")), ("bare", ())):
        assert drsg("catalog", "add", name, str(people)).code == 0
        ran = drsg("catalog", "index", name, *extra)
        assert ran.code == 0, ran.err
    return drsg


def _where(hit: dict[str, object]) -> str:
    return f"{hit['table']}.{hit['column']}" if "column" in hit else str(hit["table"])


def test_a_paraphrase_is_found_through_the_vector_channel_and_not_by_keywords(both: Callable[..., Ran]) -> None:
    for query, column in PARAPHRASES.items():
        hits = both("catalog", "search", query, "--conn", "ppl", "--json").json_lines()
        assert hits and _where(hits[0]) == column, (query, hits)
        assert hits[0]["channels"]["keyword"] is None and hits[0]["channels"]["vector"] >= 0.3
        assert both("catalog", "search", query, "--conn", "bare", "--json").out == ""  # keywords alone: nothing
        assert both("catalog", "search", query, "--conn", "bare", "--keyword", "--json").out == ""  # nor BM25
    text = both("catalog", "search", "birthday", "--conn", "ppl").lines()[0]
    assert text.startswith("1.000\tperson.dob\t[k=- v=0.")


def test_keywords_and_meaning_fuse_and_each_channel_shows(both: Callable[..., Ran]) -> None:
    hits = both("catalog", "search", "person", "--conn", "ppl", "--json").json_lines()
    top = hits[0]
    assert _where(top) == "person" and top["kind"] == "table"
    assert top["channels"]["keyword"] == 4.0 and top["channels"]["vector"] > 0.3  # both channels saw it
    assert top["score"] > 1.0 and top["matched"] == "name:person"  # min-max shares summed, weights 1/1
    bm25 = both("catalog", "search", "telephone", "--conn", "ppl", "--keyword", "--json").json_lines()
    assert _where(bm25[0]) == "person.ph" and set(bm25[0]["channels"]) == {"keyword", "vector"}


def test_without_an_embedder_search_answers_as_before(both: Callable[..., Ran], db_path: Path) -> None:
    conn = Connections(db_path).get("bare")
    with Database(db_path, readonly=True) as db:
        expected = [m.to_json() for m in search(service.load(db, conn), "person name", 10)]
    assert both("catalog", "search", "person name", "--conn", "bare", "--json").json_lines() == expected
    with Database(db_path, readonly=True) as db, db.snapshot() as snap:
        bare = snap.plane("catalog_bare")
        assert not any(isinstance(n.props.get("embedding"), Vector) for n in snap.nodes(bare.id))
        assert not [d for d in snap.indexes(bare.id) if d.kind == "vector"]
    refused = both("catalog", "search", "birthday", "--conn", "bare", "--embed", "local")
    assert refused.code == 2 and len(refused.err.splitlines()) == 1
    assert "drsg catalog index bare --embed local" in refused.err


def test_find_resolves_by_meaning_only_what_keywords_do_not(both: Callable[..., Ran]) -> None:
    request = '{"entity":"people","fields":["birthday"],"where":{"legal name":"Ada"}}'
    answer = json.loads(both("find", request, "--conn", "ppl", "--json").out)
    assert answer["status"] == "ok" and answer["table"] == "person" and answer["rows"] == [["1815-12-10"]]
    assert list(answer["by_meaning"]) == ["birthday"]  # "people" and "legal name" matched by their words
    assert answer["statements"] == 1
    keywords_only = both("find", request, "--conn", "bare")
    assert keywords_only.code == 2 and "no column of person matches field 'birthday'" in keywords_only.err
    seed = '{"entity":"people","fields":["telephone"],"where":{"name":"Ada"}}'  # keywords: the same answer
    assert json.loads(both("find", seed, "--conn", "ppl", "--json").out) == json.loads(
        both("find", seed, "--conn", "bare", "--json").out
    )


def _vectors(db_path: Path, plane: str) -> dict[str, tuple[bytes, object]]:
    with Database(db_path, readonly=True) as db, db.snapshot() as snap:
        found = snap.plane(plane)
        return {
            str(n.key): (n.props["embedding"].data, n.props["_embedded_from"])  # type: ignore[union-attr]
            for n in snap.nodes(found.id)
            if isinstance(n.props.get("embedding"), Vector)
        }


def test_a_reindex_keeps_unchanged_vectors_and_reembeds_changed_ones(
    both: Callable[..., Ran], people: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _vectors(db_path, "catalog_ppl")
    assert len(before) == 10  # 2 tables, 8 columns
    live = sqlite3.connect(people)  # SQLite keeps comments in the DDL: rebuild the table with a new one
    live.executescript(
        "ALTER TABLE shipment RENAME TO old_shipment;"
        "CREATE TABLE shipment ( -- parcels sent to customers\n id INTEGER PRIMARY KEY,\n"
        " person_id INTEGER REFERENCES person(id),\n eta TIMESTAMP -- when the courier should knock\n);"
        "DROP TABLE old_shipment;"
    )
    live.close()
    ran = both("catalog", "index", "ppl", "--json")  # no --embed: the plane's recorded embedder keeps it embedded
    assert ran.code == 0, ran.err
    l2 = ran.json_lines()[1]
    assert l2["updated"] == 1 and l2["embedded"] == 1
    after = _vectors(db_path, "catalog_ppl")
    assert set(after) == set(before)
    changed = {key for key in before if before[key] != after[key]}
    assert changed == {"c:shipment.eta"}
    again = both("catalog", "index", "ppl")
    assert again.out.splitlines() == ["l1: no change (nothing written)", "l2: no change (nothing written)"]
    monkeypatch.setenv("FAKE_EMBED_KEY_FOR_TEST", "sk-never-sent")  # refused before any request is made
    other = both("catalog", "index", "ppl", "--embed", "openai", "--embed-key-env", "FAKE_EMBED_KEY_FOR_TEST")
    assert other.code == 2 and len(other.err.splitlines()) == 1 and "local:" in other.err, other.err
    assert _vectors(db_path, "catalog_ppl") == after


def test_find_by_meaning_over_json_rpc(both: Callable[..., Ran], db_path: Path, tmp_path: Path) -> None:
    from tests.support.server import start_server

    server = start_server(db_path, tmp_path)
    try:
        answer = server.call(
            "catalog.find",
            {"connection": "ppl", "entity": "people", "fields": ["birthday"], "where": {"legal name": "Ada"}},
        )
        assert answer["rows"] == [["1815-12-10"]] and list(answer["by_meaning"]) == ["birthday"]
        bare = server.error(
            "catalog.find",
            {"connection": "bare", "entity": "people", "fields": ["birthday"], "where": {"legal name": "Ada"}},
        )
        assert "no column of person matches field 'birthday'" in bare["message"]
    finally:
        assert server.stop() == 0
