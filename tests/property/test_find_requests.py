"""`find`'s request is JSON a user or a model writes: any JSON value in any of its parameters
answers (ok, ambiguous, missing_predicate) or is one DrsgError naming the fix — never an internal
error. The oracle is the error tree itself, run against a real SQLite file and its indexed catalog;
the CLI and JSON-RPC say the same for the values the issue found (`"x"`, `null`, `[1]`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsg.kernel.errors import DrsgError, UsageError
from drsg.pipeline.catalog import service
from drsg.pipeline.catalog.backends import backend_for
from drsg.pipeline.catalog.connections import Connection, Connections
from drsg.pipeline.catalog.find import find
from drsg.pipeline.catalog.model import Catalog
from drsg.store.database import Database
from tests.support.catalog_schema import make_sqlite
from tests.support.cli import Ran

SCALAR = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text()
    | st.sampled_from(["\ud800", "1", "1.5", "paid", "张三", "", "1e400"])
)
JSON = st.recursive(SCALAR, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3))
WORDS = st.sampled_from(["user", "用户", "orders", "status", "password", "id", "name", "amount", "dept_id", ""])


def _either(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return valid | JSON


REQUEST = st.fixed_dictionaries(
    {},
    optional={
        "entity": _either(WORDS),
        "fields": _either(st.lists(WORDS | st.text(), max_size=3)),
        "where": _either(st.dictionaries(WORDS | st.text(), SCALAR, max_size=3)),
        "limit": _either(st.integers(-5, 2000)),
    },
)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Catalog, Any]]:
    workdir = tmp_path_factory.mktemp("find-requests")
    conn = Connection("app", str(make_sqlite(workdir / "app.db")), "sqlite")
    with Database(workdir / "graph.drsg") as db:
        service.index(db, conn, "full", 20, [])
        yield service.load(db, conn), backend_for(conn)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(REQUEST | JSON)
def test_any_json_request_answers_or_is_one_usage_error(indexed: tuple[Catalog, Any], request: Any) -> None:
    catalog, backend = indexed
    try:
        answer = find(catalog, backend, request, 100, sensitive=backend.conn.sensitive_extra)
    except DrsgError as exc:
        assert "\n" not in exc.message and exc.message
        return
    assert answer["status"] in {"ok", "ambiguous", "missing_predicate"}
    json.dumps(answer)  # what the CLI and the server print


@pytest.mark.parametrize("limit", ['"x"', "null", "[1]", "true", "2.5", "0", "1001"])
def test_a_bad_limit_is_a_usage_error(indexed: tuple[Catalog, Any], limit: str) -> None:
    catalog, backend = indexed
    with pytest.raises(UsageError, match='"limit" must be a whole number'):
        find(
            catalog,
            backend,
            json.loads(f'{{"entity": "user", "where": {{"id": 1}}, "limit": {limit}}}'),
            100,
            sensitive=backend.conn.sensitive_extra,
        )


def test_an_integer_no_column_holds_is_a_usage_error(indexed: tuple[Catalog, Any]) -> None:
    catalog, backend = indexed
    with pytest.raises(UsageError, match="not a 64-bit integer"):
        find(catalog, backend, {"entity": "user", "where": {"id": 2**64}}, 100, sensitive=backend.conn.sensitive_extra)
    assert (
        find(
            catalog,
            backend,
            {"entity": "user", "where": {"id": 2**63 - 1}},
            100,
            sensitive=backend.conn.sensitive_extra,
        )["rows"]
        == []
    )


def test_the_cli_says_exit_2_in_one_line(drsg: Callable[..., Ran], tmp_path: Path) -> None:
    assert drsg("catalog", "add", "app", str(make_sqlite(tmp_path / "app.db"))).code == 0
    assert drsg("catalog", "index", "app").code == 0
    for limit in ('"x"', "null", "[1]"):
        ran = drsg("find", f'{{"entity":"user","where":{{"id":1}},"limit":{limit}}}')
        assert ran.code == 2 and ran.out == "" and len(ran.err.splitlines()) == 1, ran.err
        assert '"limit" must be a whole number' in ran.err and "internal" not in ran.err
    deep = drsg("find", '{"entity":"user","where":' + "[" * 20_000 + "]" * 20_000 + "}")
    assert deep.code == 2 and len(deep.err.splitlines()) == 1 and "internal" not in deep.err, deep.err
    ok = drsg("find", '{"entity":"user","fields":["name"],"where":{"id":1},"limit":5}', "--json")
    assert ok.code == 0 and json.loads(ok.out)["rows"] == [["张三"]]


def test_json_rpc_answers_invalid_params(tmp_path: Path) -> None:
    from tests.support.server import start_server

    db = tmp_path / "graph.drsg"
    Connections(db).add(Connection("app", str(make_sqlite(tmp_path / "app.db")), "sqlite"))
    running = start_server(db, tmp_path)
    try:
        running.call("catalog.index", {"connection": "app"})
        for limit in ("x", [1], 0, True):
            error = running.error("catalog.find", {"entity": "user", "where": {"id": 1}, "limit": limit})
            assert error["code"] == -32602 and "limit" in error["message"], error
        error = running.error("catalog.find", {"entity": "user", "where": {"name": "\ud800"}})
        assert error["code"] == -32602 and "lone surrogate" in error["message"], error
        error = running.error("catalog.find", {"entity": "user", "where": {"id": 2**64}})
        assert error["code"] == -32602 and "64-bit" in error["message"], error
    finally:
        assert running.stop() == 0
