"""A Cypher answer of `ask`, checked before it runs and capped (pure: no I/O).

:func:`checked` holds a statement to what an ask may run, in the order a model can best repair it:
it parses (the syntax error's line and column), only reads, carries no AS OF of its own (the ask
reads at one seq: the head when it began, or its own as of), has no ``$parameters`` and no
EXPLAIN, names only labels, relationship types and properties the soft schema has (the nearest
named), and compiles. :func:`limited` gives a statement without a LIMIT the ask's limit;
:func:`hide_values` keeps a run's error from quoting a value to the model.
"""

from __future__ import annotations

import re
from dataclasses import replace

from drsg.kernel.errors import UsageError
from drsg.plan.cypher import ast
from drsg.plan.cypher.check import parameters
from drsg.plan.cypher.compile import compile_query
from drsg.plan.cypher.parser import parse
from drsg.plan.cypher.statement import Prepared, prepare
from drsg.plan.schema import SoftSchema, check_cypher

#: what a run's error may quote of a value: a quoted text or a number (a masked one included)
_VALUES = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b")


def checked(text: str, schema: SoftSchema) -> Prepared:
    """The statement prepared, or a UsageError (a QuerySyntaxError, a QueryError) saying what to fix."""
    query = parse(text)
    if query.writes:
        raise UsageError(
            "ask answers must only read; drop CREATE, MERGE, SET, REMOVE and DELETE and MATCH … RETURN the answer"
        )
    if query.as_of is not None:
        raise UsageError("the ask reads at one seq already (the head, or the ask's as of); drop the statement's AS OF")
    if query.explain:
        raise UsageError("drop EXPLAIN: an ask's statement runs")
    names = sorted(set(parameters(query)))
    if names:
        raise UsageError(f"write the values into the statement; an ask's statement takes no parameters (${names[0]})")
    check_cypher(query, schema)
    return prepare(text)


def limited(prepared: Prepared, limit: int) -> Prepared:
    """``prepared`` with ``LIMIT limit`` on each part's RETURN that has none (0: as it is); its text
    says so, so a capped statement is told from the model's."""
    if limit <= 0:
        return prepared
    parts = tuple(_capped(part, limit) for part in prepared.query.parts)
    if parts == prepared.query.parts:
        return prepared
    query = replace(prepared.query, parts=parts)
    return Prepared(f"{prepared.text} /* LIMIT {limit} */", query, compile_query(query))


def _capped(part: ast.SingleQuery, limit: int) -> ast.SingleQuery:
    last = part.clauses[-1] if part.clauses else None
    if not isinstance(last, ast.Return) or last.projection.limit is not None:
        return part
    projection = replace(last.projection, limit=ast.Literal(limit))
    return replace(part, clauses=(*part.clauses[:-1], replace(last, projection=projection)))


def hide_values(message: str) -> str:
    """``message`` with every quoted text and number replaced by ``…``: what the model is told when
    a statement fails as it runs, where a value it must not see (a masked one) may be quoted."""
    return _VALUES.sub("…", message)
