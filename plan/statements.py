"""``drsg query``'s statements — SEARCH, HYBRID and CALL — read by the Cypher front end (pure).

The one parser of the query language (``drsg.plan.cypher``) reads them; this module makes the
:class:`~drsg.plan.query.Plan` such a statement is (``drsg query``, ``plane.query``,
``db.plane(P).query``), and refuses the Cypher that is not a plain plan, naming ``drsg cypher``.
It sits above both the hybrid spec and the Cypher front end, which reads that spec.
"""

from __future__ import annotations

import re
from typing import Any

from drsg.kernel.errors import QuerySyntaxError
from drsg.plan.cypher.parser import parse
from drsg.plan.cypher.sources import reader
from drsg.plan.cypher.statement import prepare, read_as_of
from drsg.plan.cypher.upstream import source_plan
from drsg.plan.query import Plan


def parse_query(text: str, params: dict[str, Any] | None = None) -> Plan:
    """A SEARCH, HYBRID or CALL statement as its plan (``drsg query``'s, ``plane.query``'s), read by the
    Cypher front end: the parse is kept by its text, a statement with more than its source is checked
    as Cypher (:func:`drsg.plan.cypher.statement.prepare`) and must be a plain plan
    (:func:`drsg.plan.cypher.upstream.source_plan`, which names ``drsg cypher`` for any other);
    ``params`` give its ``$parameters``, its AS OF's too."""
    if _LEADING.match(text) is None:
        raise QuerySyntaxError(
            'a query here starts with SEARCH, HYBRID or CALL, e.g. SEARCH (d:Doc) ON body MATCHING "graph"; '
            "run other Cypher with drsg cypher"
        )
    given = dict(params or {})
    try:
        query = parse(text)
        if len(query.parts) != 1 or len(query.parts[0].clauses) != 1:
            query = prepare(text).query  # a tail: held to every check a Cypher read is
    except QuerySyntaxError as exc:
        raise QuerySyntaxError(_one_line(text, exc.message)) from None
    return Plan.of(source_plan(query, reader(given)), read_as_of(query.as_of, given))


def _one_line(text: str, message: str) -> str:
    """The parser's ``line L, column C: what`` (and a caret under the line) as one line, the place
    shown inline — a surface of ``drsg query`` prints one line."""
    first, _, _ = message.partition("\n")
    where = re.match(r"line (\d+), column (\d+):", first)
    if where is None:
        return first
    line, column = int(where.group(1)), int(where.group(2))
    lines = text.splitlines() or [""]
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    cut = max(0, column - 1)
    return f"{first} — …{source[max(0, cut - 20) : cut]}⟨here⟩{source[cut : cut + 20]}…"


#: the words a statement here may start with
_LEADING = re.compile(r"\s*(SEARCH|HYBRID|CALL)\b", re.IGNORECASE)
