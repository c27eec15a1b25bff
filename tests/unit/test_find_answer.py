"""`find`'s three answers are three types, read by their fields, and each one's `to_json()` is the
wire answer key for key in today's order; run on a real SQLite file and its indexed catalog."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, assert_never

import pytest

from drsg.pipeline.catalog import service
from drsg.pipeline.catalog.answer import Ambiguous, FieldPick, FindAnswer, Found, MissingPredicate
from drsg.pipeline.catalog.backend import Backend
from drsg.pipeline.catalog.backends import backend_for
from drsg.pipeline.catalog.connections import Connection
from drsg.pipeline.catalog.find import find, find_answer
from drsg.pipeline.catalog.model import Catalog
from drsg.store.database import Database
from tests.support.catalog_schema import SECRET, make_sqlite

ROWS = ["columns", "rows", "row_count", "truncated", "redacted"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Catalog, Backend]]:
    workdir = tmp_path_factory.mktemp("find-answer")
    conn = Connection("app", str(make_sqlite(Path(workdir) / "app.db")), "sqlite")
    with Database(workdir / "graph.drsg") as db:
        service.index(db, conn, "full", 20, [])
        yield service.load(db, conn), backend_for(conn)


def ask(indexed: tuple[Catalog, Backend], request: dict[str, Any], similar: Any = None) -> FindAnswer:
    catalog, backend = indexed
    return find_answer(catalog, backend, request, 100, similar, sensitive=backend.conn.sensitive_extra)


def status(answer: FindAnswer) -> str:
    """Exhaustive over the union: mypy fails this function if a fourth answer is added unhandled."""
    match answer:
        case Found():
            return "ok"
        case Ambiguous():
            return "ambiguous"
        case MissingPredicate():
            return "missing_predicate"
        case _:
            assert_never(answer)


def test_found_is_read_by_its_fields(indexed: tuple[Catalog, Backend]) -> None:
    answer = ask(indexed, {"entity": "用户", "fields": ["密码"], "where": {"name": "张三"}})
    assert isinstance(answer, Found) and status(answer) == answer.status == "ok"
    assert answer.table == "sys_user" and answer.fields == (FieldPick("password", "密码"),)
    assert [(w.field, w.column, w.value) for w in answer.where] == [("name", "name", "张三")]
    assert answer.rows.rows == [["[REDACTED]"]] and SECRET not in repr(answer)
    assert answer.by_meaning is None and answer.notes == ()
    wire = answer.to_json()
    assert list(wire) == ["status", "table", "fields", "where", "sql", "statements", *ROWS, "notes"]
    assert wire["fields"] == [{"field": "密码", "column": "password"}] and wire["statements"] == 1
    assert wire["where"] == [{"field": "name", "column": "name", "value": "张三"}]


def test_found_without_fields_reads_every_column_and_notes_a_mismatch(indexed: tuple[Catalog, Backend]) -> None:
    answer = ask(indexed, {"entity": "订单", "where": {"status": 1}})
    assert isinstance(answer, Found)
    assert [f.column for f in answer.fields] == answer.rows.columns and all(f.field is None for f in answer.fields)
    assert answer.where[0].value == "1" and len(answer.notes) == 1 and "paid" in answer.notes[0]
    assert answer.to_json()["fields"] == [{"column": c} for c in answer.rows.columns]


def test_found_by_meaning_says_so(indexed: tuple[Catalog, Backend]) -> None:
    def similar(word: str, table: str | None) -> dict[str, float]:
        return {"orders": 0.9, "sys_user": 0.7} if table is None else {}

    answer = ask(indexed, {"entity": "purchases", "where": {"status": "paid"}}, similar)
    assert isinstance(answer, Found) and answer.table == "orders" and answer.by_meaning == {"purchases": 0.9}
    assert list(answer.to_json())[-2:] == ["notes", "by_meaning"]


def test_ambiguous_lists_the_candidates(indexed: tuple[Catalog, Backend]) -> None:
    answer = ask(indexed, {"entity": "sys", "where": {"id": 1}})
    assert isinstance(answer, Ambiguous) and status(answer) == answer.status == "ambiguous"
    assert answer.entity == "sys" and {c.table for c in answer.candidates} == {"sys_dept", "sys_user"}
    assert all(c.matched and c.kind == "table" for c in answer.candidates)
    wire = answer.to_json()
    assert list(wire) == ["status", "entity", "candidates", "hint"] and wire["hint"] == answer.hint
    assert list(wire["candidates"][0]) == ["table", "kind", "score", "matched", "comment"]


def test_missing_predicate_names_the_columns(indexed: tuple[Catalog, Backend]) -> None:
    catalog, _ = indexed
    answer = ask(indexed, {"entity": "用户", "fields": ["密码"]})
    assert isinstance(answer, MissingPredicate) and status(answer) == answer.status == "missing_predicate"
    table = catalog.table("sys_user")
    assert table is not None and answer.table == "sys_user" and answer.columns == tuple(c.name for c in table.columns)
    assert list(answer.to_json()) == ["status", "table", "hint", "columns"] and "where" in answer.hint


def test_find_is_the_answers_wire_form(indexed: tuple[Catalog, Backend]) -> None:
    catalog, backend = indexed
    for request in ({"entity": "sys", "where": {"id": 1}}, {"entity": "用户"}, {"entity": "订单", "where": {"id": 2}}):
        answer = ask(indexed, request)
        assert find(catalog, backend, request, 100, sensitive=backend.conn.sensitive_extra) == answer.to_json()
