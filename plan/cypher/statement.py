"""A Cypher statement ready to run: parsed and compiled once per text (pure).

:func:`prepare` is what every surface calls: the parse (:func:`drsg.plan.cypher.parser.parse`)
and the compile (:func:`drsg.plan.cypher.compile.compile_query`) of a text are kept, so a
statement run again with other parameters costs neither. Its ``AS OF`` (a literal or a
``$parameter``) becomes an :class:`~drsg.kernel.asof.AsOf` when it runs, with the parameters.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from drsg.kernel.asof import AsOf, parse_as_of
from drsg.kernel.errors import BadAsOf
from drsg.kernel.values import Json
from drsg.plan.cypher import ast
from drsg.plan.cypher.check import at, literal_value
from drsg.plan.cypher.parser import parse

if TYPE_CHECKING:  # the compiler (row plans, their checks and functions: ~0.01 s) loads with prepare():
    # a SEARCH, HYBRID or CALL statement with no tail reads its AS OF here and compiles nothing
    from drsg.plan.cypher.compile import Compiled
    from drsg.plan.cypher.graph import CypherValue

#: statements kept compiled, by their text
CACHE_SIZE = 512


@dataclass(frozen=True, slots=True)
class Prepared:
    """One statement's text, syntax tree and compiled form."""

    text: str
    query: ast.Query
    compiled: Compiled

    @property
    def writes(self) -> bool:
        return self.compiled.writes

    @property
    def columns(self) -> tuple[str, ...]:
        return self.compiled.columns

    @property
    def explain_only(self) -> bool:
        """The statement began with ``EXPLAIN``: show the plan, run nothing."""
        return self.query.explain

    def explain(self) -> Json:
        """The logical plan's JSON when there is one (upstream's shape), else the row plan's."""
        return self.compiled.to_json()

    def as_of(self, params: Mapping[str, CypherValue] | None = None) -> AsOf | None:
        """The statement's ``AS OF``, read with ``params``; None when it has none."""
        return read_as_of(self.query.as_of, params)


def read_as_of(clause: ast.AsOfClause | None, params: Mapping[str, CypherValue] | None = None) -> AsOf | None:
    """An ``AS OF`` clause as the point it names, a parameter read from ``params``; None for no clause."""
    if clause is None:
        return None
    if isinstance(clause.value, ast.Parameter):
        name = clause.value.name
        if params is None or name not in params:
            raise BadAsOf(f"AS OF ${name}{at(clause)} is not given; pass it with the statement's parameters")
        value = params[name]
    else:
        value = literal_value(clause.value)
    if clause.kind == "ms":
        if not isinstance(value, int) or isinstance(value, bool):
            raise BadAsOf(f"AS OF TIME{at(clause)} takes unix milliseconds (a whole number), not {value!r:.40}")
        return AsOf(ms=value)
    if clause.kind == "time" and not isinstance(value, str):
        raise BadAsOf(f"AS OF{at(clause)} takes an RFC 3339 time as a string, not {value!r:.40}")
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise BadAsOf(f"AS OF{at(clause)} takes a seq, an RFC 3339 time or TIME ms, not {value!r:.40}")
    return parse_as_of(value)


@functools.lru_cache(maxsize=CACHE_SIZE)
def prepare(text: str) -> Prepared:
    """Parse and compile ``text`` (kept by its text: a repeated statement costs neither)."""
    from drsg.plan.cypher.compile import compile_query

    query = parse(text)
    return Prepared(text, query, compile_query(query))
