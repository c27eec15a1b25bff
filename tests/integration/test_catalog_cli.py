"""`drsg catalog …` and `drsg find` end to end on a real SQLite file: connections by reference,
indexing into a plane (drift on the log, AS OF), search, the verbs, and one-line errors."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from drsg.pipeline.catalog.connections import catalog_folder
from drsg.store.database import Database
from tests.support.catalog_schema import SECRET, make_sqlite
from tests.support.cli import Drsg, Ran

SEED = '{"entity":"用户","fields":["密码"],"where":{"name":"张三"}}'


@pytest.fixture
def app(tmp_path: Path) -> Path:
    return make_sqlite(tmp_path / "app.db")


@pytest.fixture
def indexed(drsg: Drsg, app: Path) -> Callable[..., Ran]:
    assert drsg("catalog", "add", "app", str(app)).code == 0
    ran = drsg("catalog", "index", "app")
    assert ran.code == 0, ran.err
    return drsg


def test_connections_keep_references_never_secrets(drsg: Drsg, db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PGPASS_FOR_TEST", "hunter2-secret")
    added = drsg("catalog", "add", "pg", "postgresql://app@127.0.0.1:5432/app", "--password-env", "PGPASS_FOR_TEST")
    assert added.code == 0, added.err
    stored = (catalog_folder(db_path) / "connections.json").read_text()
    assert "PGPASS_FOR_TEST" in stored and "hunter2-secret" not in stored
    listed = drsg("catalog", "list", "--json").json_lines()
    assert listed[0]["password_env"] == "PGPASS_FOR_TEST" and "hunter2" not in json.dumps(listed)
    refused = drsg("catalog", "add", "bad", "postgresql://app:pw@127.0.0.1/app")
    assert refused.code == 2 and len(refused.err.splitlines()) == 1 and "--password-env" in refused.err
    assert "bad" not in stored and "pw@" not in (catalog_folder(db_path) / "connections.json").read_text()
    assert drsg("catalog", "remove", "pg").code == 0 and drsg("catalog", "list").out == ""
    missing = drsg("catalog", "remove", "pg")
    assert missing.code == 1 and missing.err.startswith("error: no catalog connection")


def test_index_never_overwrites_a_plane_it_did_not_write(drsg: Drsg, app: Path) -> None:
    drsg("catalog", "add", "app", str(app))
    drsg("plane", "create", "catalog_app")
    drsg("node", "put", "mine", "--plane", "catalog_app", "-l", "Note")
    ran = drsg("catalog", "index", "app")
    assert ran.code == 1 and len(ran.err.splitlines()) == 1 and "drsg plane rename catalog_app" in ran.err
    assert drsg("get", "@mine", "--plane", "catalog_app").code == 0


def test_test_and_an_unreachable_file(drsg: Drsg, app: Path, tmp_path: Path) -> None:
    drsg("catalog", "add", "app", str(app))
    assert drsg("catalog", "test", "app").out.startswith("ok: app answered (sqlite 3.")
    drsg("catalog", "add", "gone", str(tmp_path / "nope.db"))
    ran = drsg("catalog", "test", "gone")
    assert ran.code == 1 and len(ran.err.splitlines()) == 1 and "no SQLite file" in ran.err


def test_index_writes_the_plane_and_a_reindex_writes_only_drift(
    indexed: Callable[..., Ran], app: Path, db_path: Path
) -> None:
    again = indexed("catalog", "index", "app")
    assert again.out.splitlines() == ["l1: no change (nothing written)", "l2: no change (nothing written)"]
    with Database(db_path, readonly=True) as db, db.snapshot() as snap:
        plane = snap.plane("catalog_app")
        labels, types = snap.labels_and_types(plane.id)
        before = snap.at
    assert labels["Table"] == 4 and labels["View"] == 2 and labels["Index"] == 2 and labels["Column"] == 21
    assert types["FK"] == 2 and types["VIEW_REF"] == 3 and types["INDEX"] == 3
    live = sqlite3.connect(app)
    live.execute("ALTER TABLE orders ADD COLUMN paid_at TIMESTAMP")
    live.execute("DROP VIEW user_secrets")
    live.commit()
    live.close()
    drift = indexed("catalog", "index", "app", "--level", "l1")
    assert drift.code == 0 and "1 created" in drift.out and "4 deleted" in drift.out  # the view and its 3 columns
    with Database(db_path, readonly=True) as db, db.read() as r:
        changes = [c for c in r.commits(before + 1)]
    assert len(changes) == 1 and changes[0].origin["via"] == "catalog.index"
    feed = indexed("feed", "--plane", "catalog_app", "--from", str(before + 1), "--no-follow", "--json").json_lines()
    ops = {(c["op"], (c.get("record") or {}).get("external_key") or c.get("id")) for c in feed[0]["changes"]}
    assert ("created", "c:orders.paid_at") in ops and any(op == "deleted" for op, _ in ops)
    now = json.loads(indexed("catalog", "columns", "orders", "--json").out)
    old = json.loads(indexed("catalog", "columns", "orders", "--json", "--as-of", str(before)).out)
    assert [c["name"] for c in now["columns"]][-1] == "paid_at" and "paid_at" not in [c["name"] for c in old["columns"]]
    assert now["columns"][2]["comment"] == "订单状态"  # an l1 run keeps what l2 learned
    assert indexed("catalog", "columns", "user_secrets").code == 1
    assert indexed("catalog", "columns", "user_secrets", "--as-of", str(before)).code == 0


def test_search_splits_identifiers_reads_chinese_and_aliases(indexed: Callable[..., Ran]) -> None:
    def top(words: str) -> str:
        hit = indexed("catalog", "search", words, "--json").json_lines()[0]
        return f"{hit['table']}.{hit['column']}" if "column" in hit else hit["table"]

    assert top("广告") == "ad_click"
    assert top("用户") == "sys_user"
    assert top("clicked at") == "ad_click.clickedAt"
    assert top("member") == "sys_user"
    assert top("pwd") == "sys_user.password"
    assert top("部门名称") == "sys_dept.dept_name"


def test_search_takes_several_unquoted_words_as_one_query(indexed: Callable[..., Ran]) -> None:
    unquoted = indexed("catalog", "search", "用户", "密码", "--json")
    assert unquoted.code == 0, unquoted.err  # was a usage error: one WORDS argument only
    assert unquoted.json_lines() == indexed("catalog", "search", "用户 密码", "--json").json_lines()
    hits = [(hit["table"], hit.get("column")) for hit in unquoted.json_lines()]
    assert hits[0] == ("sys_user", None) and ("sys_user", "password") in hits
    keyword = indexed("catalog", "search", "clicked", "at", "--keyword", "--json")
    assert (
        keyword.code == 0
        and keyword.json_lines() == indexed("catalog", "search", "clicked at", "--keyword", "--json").json_lines()
    )
    none = indexed("catalog", "search")
    assert none.code == 2 and len(none.err.splitlines()) == 1 and "WORDS" in none.err


def test_find_answers_the_seed_question(indexed: Callable[..., Ran]) -> None:
    answer = json.loads(indexed("find", SEED, "--json").out)
    assert answer["table"] == "sys_user" and answer["rows"] == [["[REDACTED]"]] and answer["statements"] == 1
    assert SECRET not in indexed("find", SEED).out
    bad = indexed("find", "{not json")
    assert bad.code == 2 and len(bad.err.splitlines()) == 1 and bad.out == ""
    unknown = indexed("find", '{"entity":"spaceship","where":{"id":1}}')
    assert unknown.code == 1 and "catalog search" in unknown.err


def test_sql_and_the_other_verbs(indexed: Callable[..., Ran]) -> None:
    rows = json.loads(indexed("catalog", "sql", "SELECT name, password FROM sys_user ORDER BY id", "--json").out)
    assert rows["rows"] == [["张三", "[REDACTED]"], ["李四", "[REDACTED]"]]
    refused = indexed("catalog", "sql", "DELETE FROM orders")
    assert refused.code == 2 and "read-only" in refused.err
    impact = json.loads(indexed("catalog", "impact", "sys_user", "--json").out)
    assert impact["foreign_keys"][0]["table"] == "orders" and set(impact["views"]) == {"paid_orders", "user_secrets"}
    assert (
        json.loads(indexed("catalog", "impact", "orders.status", "--json").out)["indexes"][0]["name"]
        == "ix_orders_user"
    )
    refs = json.loads(indexed("catalog", "refs", "paid_orders", "--json").out)
    assert refs["reads"] == ["orders", "sys_user"]
    schema = json.loads(indexed("catalog", "schema", "sys_user", "--json").out)
    assert schema["tables"][0]["foreign_keys"][0]["references"] == "sys_dept"
    objects = indexed("catalog", "objects", "--json").json_lines()
    assert {o["name"] for o in objects} >= {"sys_user", "paid_orders"}
    digest = indexed("catalog", "digest").out
    assert "password VARCHAR(128) sensitive" in digest and "{paid,unpaid}" in digest and SECRET not in digest
    short = indexed("catalog", "digest", "--max-chars", "200").out
    assert len(short) < 320 and "more; `drsg catalog objects`" in short


def test_catalog_search_through_the_keyword_index(indexed: Callable[..., Ran]) -> None:
    def top(words: str, k: int = 3) -> list[str]:
        ran = indexed("catalog", "search", words, "--keyword", "--json", "--k", str(k))
        assert ran.code == 0, ran.err
        return [f"{h['table']}.{h['column']}" if "column" in h else h["table"] for h in ran.json_lines()]

    assert top("广告", 1)[0].startswith("ad_click")  # the table's comment, adId's alias
    assert "sys_user.password" in top("密码")  # its comment 登录密码 and password's aliases
    assert "sys_user" in top("member")
    assert top("spaceship") == []


def test_keyword_index_over_the_catalog(indexed: Callable[..., Ran]) -> None:
    ran = indexed("search", 'SEARCH (t:Table) ON terms MATCHING "用户" TOPK 1', "--plane", "catalog_app", "--json")
    assert ran.code == 0, ran.err
    assert "sys_user" in ran.out


def test_hybrid_over_column_descriptions_with_the_local_embedder(indexed: Callable[..., Ran]) -> None:
    vectorized = indexed("vectorize", "--plane", "catalog_app", "--label", "Column", "--from", "description")
    assert vectorized.code == 0, vectorized.err
    ran = indexed(
        "hybrid", "user login password", "--plane", "catalog_app", "--label", "Column",
        "--vector", "embedding", "--keyword", "terms", "--k", "3", "--json",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    assert json.loads(ran.out.splitlines()[0])["key"] == "c:sys_user.password"  # meaning + the alias terms


def test_find_masks_the_names_the_settings_call_sensitive(
    indexed: Callable[..., Ran], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[catalog] sensitive` (here DRSG_CATALOG_SENSITIVE) masks in `find` as in `catalog sql`, not only
    the names given to `catalog add --sensitive`."""
    request = '{"entity":"sys_user","fields":["name"],"where":{"id":1}}'
    assert json.loads(indexed("find", request, "--json").out)["rows"] == [["张三"]]
    monkeypatch.setenv("DRSG_CATALOG_SENSITIVE", "name")
    answer = json.loads(indexed("find", request, "--json").out)
    assert answer["rows"] == [["[REDACTED]"]] and "sys_user.name" in answer["redacted"]
    assert "张三" not in indexed("find", request).out
