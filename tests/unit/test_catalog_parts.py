"""The catalog's pure parts: naming, the masking policy, type classes, values bound as the column's
type, the one SELECT, DSN checks, and an l1 run keeping what l2 learned."""

from __future__ import annotations

from typing import Any

import keyring
import pytest
from keyring.backend import KeyringBackend

from drsg.kernel.errors import ConfigError, UsageError
from drsg.pipeline.catalog.connections import Connection, check_dsn, engine_of, sqlite_path
from drsg.pipeline.catalog.masking import is_sensitive
from drsg.pipeline.catalog.model import Catalog, Column, ForeignKey, Table, keep_l2, type_class
from drsg.pipeline.catalog.naming import name_terms, split_identifier, terms_text
from drsg.pipeline.catalog.resolve import search
from drsg.pipeline.catalog.sqlbuild import bind_value, build_select
from drsg.pipeline.catalog.views import digest


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("sysUser_2fa", ["sys", "user", "2", "fa"]),
        ("HTTPServerURL", ["http", "server", "url"]),
        ("clickedAt", ["clicked", "at"]),
        ("order_item_v2", ["order", "item", "v", "2"]),
        ("广告点击", ["广告点击"]),
        ("user广告", ["user", "广告"]),
        ("__x__", ["x"]),
    ],
)
def test_split_identifier(name: str, words: list[str]) -> None:
    assert split_identifier(name) == words


def test_terms_carry_aliases_and_chinese_segments() -> None:
    assert {"用户", "member", "账号"} <= name_terms("sys_user")
    assert {"广告", "点击"} <= set(terms_text("ad_click", "广告点击").split())
    assert {"密码", "pwd"} <= name_terms("password")


@pytest.mark.parametrize(
    "name", ["password", "user_pwd", "passwd", "apiKey", "API_KEY", "id_card", "refresh_token", "salt", "密码"]
)
def test_sensitive(name: str) -> None:
    assert is_sensitive(name)


@pytest.mark.parametrize(
    "name",
    ["PassWord", "userPassWord", "passwords", "user_tokens", "secrets", "credentials", "api_keys", "APIKeys",
     "userpassword", "USERPASSWORD", "pass_word", "登录密码", "用户密码", "身份证号码", "身份证号", "银行卡号",
     "支付密钥", "访问令牌", "token_count", "password_changed_at"],
)  # fmt: skip
def test_sensitive_in_compounds_plurals_and_chinese(name: str) -> None:
    assert is_sensitive(name)


@pytest.mark.parametrize(
    "name",
    ["passenger", "name", "status", "card_type", "key_name", "idx", "secretary", "tokenizer", "classname",
     "business", "footprint", "compass_word", "keys", "passes", "手机号", "用户名"],
)  # fmt: skip
def test_not_sensitive(name: str) -> None:
    assert not is_sensitive(name)


def test_configured_names_are_sensitive_too() -> None:
    assert not is_sensitive("phone") and is_sensitive("Phone", ["phone"])


@pytest.mark.parametrize(
    ("declared", "klass"),
    [("VARCHAR(16)", "text"), ("int(11)", "integer"), ("tinyint(1)", "boolean"), ("NUMERIC(10,2)", "decimal"),
     ("double precision", "float"), ("timestamp without time zone", "datetime"), ("bytea", "binary"),
     ("jsonb", "json"), ("character varying(64)", "text"), ("", "other")],
)  # fmt: skip
def test_type_class(declared: str, klass: str) -> None:
    assert type_class(declared) == klass


def test_values_are_bound_as_the_columns_type() -> None:
    status = Column("status", 1, "VARCHAR(16)", enum_sample=["paid", "unpaid"])
    assert bind_value(status, "paid") == ("paid", None)
    bound, note = bind_value(status, 1)
    assert bound == "1" and note is not None and "paid" in note
    assert bind_value(Column("id", 1, "INTEGER"), "42") == (42, None)
    with pytest.raises(UsageError, match="not an integer"):
        bind_value(Column("id", 1, "INTEGER"), "abc")


def test_the_select_quotes_names_and_binds_values_only() -> None:
    def quote(name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    sql = build_select('we"ird', ["a", "password"], ["name"], quote, "?", frozenset({"password"}))
    assert sql == 'SELECT "a" AS "a", NULL AS "password" FROM "we""ird" WHERE "name" = ? LIMIT ?'
    with pytest.raises(UsageError):
        build_select("t", ["a"], [], quote, "?")


def test_dsns() -> None:
    assert engine_of("./app.db") == "sqlite" and engine_of("mariadb://u@h/db") == "mysql"
    assert engine_of("postgres://u@h/db") == "postgresql" and sqlite_path("sqlite:///tmp/a.db").name == "a.db"
    with pytest.raises(UsageError, match="scheme"):
        engine_of("oracle://u@h/db")
    for dsn in (
        "postgresql://u:pw@h/db",
        "mysql://u@h/db?password=pw",
        "postgresql://u@h/db?sslmode=require&password=x",
    ):
        with pytest.raises(UsageError, match="--password-env"):
            check_dsn(dsn)
    assert check_dsn("postgresql://u@h:5432/db?sslmode=require")


class _Memory(KeyringBackend):
    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        self.store: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.store.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.store[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.store.pop((service, username), None)


def test_a_password_from_the_keyring() -> None:
    before: Any = keyring.get_keyring()
    memory = _Memory()
    keyring.set_keyring(memory)
    try:
        conn = Connection("pg", "postgresql://u@h/db", "postgresql", keyring="pg-prod")
        with pytest.raises(ConfigError, match="keyring set drsg pg-prod"):
            conn.password()
        memory.set_password("drsg", "pg-prod", "from-the-keyring")
        assert conn.password() == "from-the-keyring" and "from-the-keyring" not in str(conn.public())
    finally:
        keyring.set_keyring(before)


def _catalog(level: str, with_l2: bool) -> Catalog:
    user = Table("sys_user", columns=[Column("id", 1, "INTEGER"), Column("name", 2, "VARCHAR(64)")])
    orders = Table("orders", columns=[Column("id", 1, "INTEGER"), Column("user_id", 2, "INTEGER")])
    if with_l2:
        user.comment, user.columns[1].comment, user.columns[0].primary = "用户表", "姓名", True
        orders.foreign_keys = [ForeignKey(["user_id"], "sys_user", ["id"])]
    return Catalog("sqlite", "app", level, [orders, user])


def test_an_l1_run_keeps_what_l2_learned_for_what_is_still_there() -> None:
    fresh = _catalog("l1", False)
    fresh.tables[0].columns.pop()  # orders.user_id was dropped: its foreign key goes with it
    kept = keep_l2(fresh, _catalog("full", True))
    user = kept.table("sys_user")
    assert user is not None and user.comment == "用户表" and user.columns[1].comment == "姓名"
    assert kept.table("orders").foreign_keys == [] and kept.level == "full"  # type: ignore[union-attr]


def test_search_and_digest_offline() -> None:
    catalog = _catalog("full", True)
    assert search(catalog, "用户")[0].table == "sys_user"
    assert search(catalog, "姓名")[0].column == "name"
    text = digest(catalog)
    assert text.splitlines()[0].startswith("# sqlite app: 2 tables") and "user_id→sys_user" in text
