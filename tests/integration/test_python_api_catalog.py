"""``Plane.find`` on a real SQLite catalog: the same answer ``drsg find --json`` gives, as its type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import drsg as drsg_api
from tests.support.catalog_schema import SECRET, make_sqlite
from tests.support.cli import Drsg

REQUESTS = [
    {"entity": "用户", "fields": ["密码"], "where": {"name": "张三"}},  # found, masked
    {"entity": "sys_user"},  # one table, no where
    {"entity": "sys", "where": {"id": 1}},  # two tables about equally
]


@pytest.fixture
def catalog_db(drsg: Drsg, db_path: Path, tmp_path: Path) -> Path:
    app = make_sqlite(tmp_path / "app.db")
    assert drsg("catalog", "add", "app", str(app)).code == 0
    ran = drsg("catalog", "index", "app")
    assert ran.code == 0, ran.err
    return db_path


def test_find_answers_as_the_cli_does_with_a_type_per_answer(drsg: Drsg, catalog_db: Path) -> None:
    with drsg_api.open(catalog_db) as db:
        plane = db.plane("catalog_app")
        answers = [plane.find(request) for request in REQUESTS]
    for request, answer in zip(REQUESTS, answers, strict=True):
        ran = drsg("find", json.dumps(request, ensure_ascii=False), "--json")
        assert json.loads(ran.out) == answer.to_json()
    found, missing, ambiguous = answers
    assert isinstance(found, drsg_api.Found) and found.rows.rows == [["[REDACTED]"]]
    assert SECRET not in repr(found)
    assert isinstance(missing, drsg_api.MissingPredicate) and missing.table == "sys_user"
    assert isinstance(ambiguous, drsg_api.Ambiguous)
    assert {c.table for c in ambiguous.candidates} == {"sys_dept", "sys_user"}


def test_find_on_a_plane_that_is_no_catalog_is_one_usage_error(catalog_db: Path) -> None:
    with drsg_api.open(catalog_db) as db, pytest.raises(drsg_api.UsageError, match="no catalog's"):
        db.plane("startup").find({"entity": "x", "where": {"id": 1}})
