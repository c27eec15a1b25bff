"""The functions and casts ``catalog sql`` allows, per engine. Pure.

An allow-list: each function here computes on the values it is given and reads nothing else — no
SQL of its own (``ts_rewrite``, ``query_to_xml``, ``dblink``), no files, locks or notifications
(``pg_advisory_lock``, ``GET_LOCK``, ``pg_notify``), no XML/JSON path evaluators that echo their
input in an error (``extractvalue``), no user-defined function (it may read a masked column inside).
A function not listed is refused, whatever it does. Spellings are given as each dialect writes
them and parsed once, so the check compares what sqlglot parses, not names in text."""

from __future__ import annotations

import functools

import sqlglot
from sqlglot import exp

_COMMON = (
    "count(x)", "count(*)", "sum(x)", "avg(x)", "min(x)", "max(x)", "lower(x)", "upper(x)", "length(x)",
    "trim(x)", "ltrim(x)", "rtrim(x)", "coalesce(x, 1)", "nullif(x, 1)", "abs(x)", "round(x)",
    "replace(x, 'a', 'b')", "substr(x, 1, 2)", "substring(x, 1, 2)", "cast(x as int)",
    "case when x then 1 end", "row_number() over ()", "rank() over ()", "dense_rank() over ()",
    "lag(x) over ()", "lead(x) over ()", "first_value(x) over ()", "last_value(x) over ()",
    "ntile(2) over ()", "exists (select 1)", "current_date", "current_timestamp", "floor(x)", "ceil(x)", "sign(x)",
)  # fmt: skip
_ENGINES = {
    "sqlite": (
        "ifnull(x, 1)", "iif(x, 1, 2)", "instr(x, 'a')", "group_concat(x)", "date(x)", "time(x)",
        "datetime(x)", "julianday(x)", "strftime('%Y', x)", "typeof(x)", "min(x, 1)", "max(x, 1)",
        "concat(x, 'a')", "unicode(x)", "hex(x)", "quote(x)",
    ),
    "postgresql": (
        "concat(x, 'a')", "greatest(x, 1)", "least(x, 1)", "strpos(x, 'a')", "position('a' in x)",
        "left(x, 1)", "right(x, 1)", "now()", "date_trunc('day', x)", "extract(year from x)",
        "to_char(x, 'YYYY')", "string_agg(x, ',')", "char_length(x)", "mod(x, 2)", "power(x, 2)",
        "sqrt(x)", "ceiling(x)", "initcap(x)", "age(x)", "date_part('year', x)", "bool_and(x)",
        "bool_or(x)", "count(distinct x)",
    ),
    "mysql": (
        "concat(x, 'a')", "concat_ws(',', x)", "ifnull(x, 1)", "if(x, 1, 2)", "greatest(x, 1)",
        "least(x, 1)", "instr(x, 'a')", "locate('a', x)", "left(x, 1)", "right(x, 1)", "now()",
        "date(x)", "year(x)", "month(x)", "day(x)", "date_format(x, '%Y')", "extract(year from x)",
        "group_concat(x)", "char_length(x)", "mod(x, 2)", "power(x, 2)", "sqrt(x)", "ceiling(x)",
        "datediff(x, x)", "count(distinct x)",
    ),
}  # fmt: skip
_DIALECTS = {"sqlite": "sqlite", "postgresql": "postgres", "mysql": "mysql"}
#: the plain types a value may be cast to (a cast to tsquery, xml or regclass runs code of its own)
_TYPES = frozenset(
    {
        *exp.DataType.INTEGER_TYPES,
        *exp.DataType.REAL_TYPES,
        *exp.DataType.TEXT_TYPES,
        exp.DataType.Type.BOOLEAN,
        exp.DataType.Type.DATE,
        exp.DataType.Type.DATETIME,
        exp.DataType.Type.TIME,
        exp.DataType.Type.TIMESTAMP,
        exp.DataType.Type.TIMESTAMPTZ,
        exp.DataType.Type.INTERVAL,
    }
)


def _key(node: exp.Func) -> str:
    return f"?{node.name.lower()}" if isinstance(node, exp.Anonymous) else type(node).__name__


@functools.cache
def _allowed(engine: str) -> frozenset[str]:
    keys = set()
    for spelling in (*_COMMON, *_ENGINES[engine]):
        tree = sqlglot.parse_one(f"select {spelling}", read=_DIALECTS[engine])
        assert isinstance(tree, exp.Select)
        node = tree.selects[0]
        node = node.this if isinstance(node, exp.Alias) else node
        node = node.this if isinstance(node, exp.Window) else node
        if isinstance(node, exp.Func):
            keys.add(_key(node))
    return frozenset(keys)


def allowed_function(engine: str, node: exp.Func) -> bool:
    return _key(node) in _allowed(engine)


def allowed_type(node: exp.DataType) -> bool:
    return node.this in _TYPES
