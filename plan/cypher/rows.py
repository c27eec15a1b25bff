"""The row plan as types (pure): what a Cypher statement compiles to when the logical plan cannot say it.

A statement is a chain of operators over rows (variable → value). It extends the logical plan
(:mod:`drsg.plan.logical`) rather than standing beside it: a :class:`NodeScan` binds a variable
to the nodes of one of its sources (``ScanAll``, ``ScanLabel``, ``SeekKeys``, ``SeekIds``,
``VectorTopK``, ``KeywordTopK``, ``Hybrid``, ``Algo``), and the row operators follow. Expressions
stay openCypher's syntax tree (:mod:`drsg.plan.cypher.ast`), evaluated by
:mod:`drsg.plan.cypher.evaluate`; each operator has ``to_json()`` for ``--explain``.

A pattern element without a variable gets a hidden one (a name starting with a space) so the
executor can hold it for the isomorphism check, a path and the answer's subgraph.
"""

from __future__ import annotations

import typing

from drsg.kernel.frozen import hashable
from drsg.kernel.values import Json
from drsg.plan.cypher import ast
from drsg.plan.logical import Source

#: a hidden variable's name starts with this (a user's names never do)
HIDDEN = " "


def expr_json(expr: ast.Expr | None) -> Json:
    """An expression for --explain: its Python-like repr, short (the tree is the truth)."""
    return None if expr is None else _text(expr)


def _text(expr: ast.Expr) -> str:
    match expr:
        case ast.Literal(value):
            return repr(value) if not isinstance(value, bool) and value is not None else str(value).lower()
        case ast.Parameter(name):
            return f"${name}"
        case ast.Variable(name):
            return name
        case ast.PropertyAccess(subject, key):
            return f"{_text(subject)}.{key}"
        case ast.FunctionCall(name, args, distinct):
            inner = ", ".join(_text(a) for a in args)
            return f"{name}({'DISTINCT ' if distinct else ''}{inner})"
        case ast.CountStar():
            return "count(*)"
        case ast.Binary(op, lhs, rhs):
            return f"({_text(lhs)} {op} {_text(rhs)})"
        case ast.Unary(op, operand):
            return f"{op} {_text(operand)}" if op == "NOT" else f"{op}{_text(operand)}"
        case ast.IsNull(operand, negated):
            return f"{_text(operand)} IS {'NOT ' if negated else ''}NULL"
        case ast.HasLabels(subject, labels):
            return _text(subject) + "".join(f":{label}" for label in labels)
        case ast.ListLiteral(items):
            return "[" + ", ".join(_text(i) for i in items) + "]"
        case ast.MapLiteral(entries):
            return "{" + ", ".join(f"{k}: {_text(v)}" for k, v in entries) + "}"
    return type(expr).__name__


# ---------------------------------------------------------------------------- pattern pieces


@hashable
class NodeCheck:
    """What a node bound to ``variable`` must have: every label, each property equal to its value."""

    variable: str
    labels: tuple[str, ...] = ()
    properties: ast.MapLiteral | ast.Parameter | None = None

    def to_json(self) -> Json:
        out: dict[str, Json] = {"var": self.variable}
        if self.labels:
            out["labels"] = list(self.labels)
        if self.properties is not None:
            out["properties"] = expr_json(self.properties)
        return out


@hashable
class NodeScan:
    """Bind ``node.variable`` to each node ``source`` gives (with its score under graph.SCORE for a
    search or an algorithm), checked against ``node``. A source whose values are parameters is
    built when the statement runs: ``deferred`` (a SEARCH/HYBRID/CALL clause), or ``seek`` (the
    keys or ids of a ``SeekKeys``/``SeekIds`` given as a parameter)."""

    node: NodeCheck
    source: Source
    deferred: ast.Search | ast.HybridSearch | ast.CallAlgo | None = None
    seek: ast.Expr | None = None

    def to_json(self) -> Json:
        source: Json = self.source.to_json() if self.deferred is None else type(self.deferred).__name__
        out: dict[str, Json] = {"NodeScan": self.node.to_json(), "source": source}
        if self.seek is not None:
            out["seek"] = expr_json(self.seek)
        return out


@hashable
class Argument:
    """Continue from ``node.variable``, bound by an earlier clause (no re-scan): check it, or drop the
    row when it is null (an OPTIONAL MATCH's miss)."""

    node: NodeCheck

    def to_json(self) -> Json:
        return {"Argument": self.node.to_json()}


@hashable
class Expand:
    """From the node in ``start`` along one relationship pattern to ``end`` (a new variable, or one
    bound already: then the far end must be it). ``min_hops``/``max_hops`` None: one hop exactly
    binding a relationship; else a var-length trail binding a list of relationships (``max_hops``
    None with ``var_length``: unbounded, limited by the statement's row and time limits).
    ``unique_with``: relationship variables bound earlier in the same MATCH, none of which this
    one may reuse (openCypher's relationship isomorphism). ``rel_bound``: ``rel`` was bound by an
    earlier clause; the hop must be that relationship. ``backwards``: the walk runs against the
    pattern's left-to-right order (it started at a node further right), so a var-length list is
    bound reversed: in the pattern's order, as openCypher reads ``r`` and ``p``."""

    start: str
    rel: str
    types: tuple[str, ...]
    direction: ast.Direction
    end: NodeCheck
    end_bound: bool = False
    var_length: bool = False
    min_hops: int = 1
    max_hops: int | None = 1
    properties: ast.MapLiteral | ast.Parameter | None = None
    unique_with: tuple[str, ...] = ()
    rel_bound: bool = False
    backwards: bool = False

    def to_json(self) -> Json:
        out: dict[str, Json] = {"from": self.start, "rel": self.rel, "types": list(self.types), "dir": self.direction}
        if self.var_length:
            out |= {"min": self.min_hops, "max": self.max_hops}
        if self.properties is not None:
            out["properties"] = expr_json(self.properties)
        out |= {"to": self.end.to_json(), "to_bound": self.end_bound}
        if self.unique_with:
            out["unique_with"] = list(self.unique_with)
        if self.rel_bound:
            out["rel_bound"] = True
        if self.backwards and self.var_length:
            out["backwards"] = True
        return {"Expand": out}


@hashable
class BindPath:
    """Bind ``variable`` to the path through ``nodes`` and ``rels`` (a var-length one's lists spliced in)."""

    variable: str
    nodes: tuple[str, ...]
    rels: tuple[str, ...]

    def to_json(self) -> Json:
        return {"BindPath": {"var": self.variable, "nodes": list(self.nodes), "rels": list(self.rels)}}


# ---------------------------------------------------------------------------- row operators


@hashable
class Filter:
    predicate: ast.Expr

    def to_json(self) -> Json:
        return {"Filter": expr_json(self.predicate)}


@hashable
class Project:
    """Rows of exactly ``items`` (name, expression); ``keep`` the row's other variables too
    (``WITH *, …``, and ORDER BY's view of the variables before a RETURN)."""

    items: tuple[tuple[str, ast.Expr], ...]
    keep: bool = False

    def to_json(self) -> Json:
        items: Json = [[name, expr_json(expr)] for name, expr in self.items]
        return {"Project": {"items": items, "keep": self.keep}}


@hashable
class Aggregate:
    """Group by ``keys`` (name, expression); each group one row with the keys and each aggregate
    (name, an aggregating call: ``count(*)``, ``count``, ``sum``, … with DISTINCT as written).
    Without keys, one row even over no rows (``count`` 0)."""

    keys: tuple[tuple[str, ast.Expr], ...]
    aggregates: tuple[tuple[str, ast.FunctionCall | ast.CountStar], ...]

    def to_json(self) -> Json:
        keys: Json = [[name, expr_json(expr)] for name, expr in self.keys]
        aggregates: Json = [[name, expr_json(call)] for name, call in self.aggregates]
        return {"Aggregate": {"keys": keys, "aggregates": aggregates}}


@hashable
class Unwind:
    expr: ast.Expr
    variable: str

    def to_json(self) -> Json:
        return {"Unwind": {"expr": expr_json(self.expr), "as": self.variable}}


@hashable
class Optional:
    """Run ``ops`` on each row; a row they give nothing for goes on with ``introduced`` null."""

    ops: tuple[Op, ...]
    introduced: tuple[str, ...]

    def to_json(self) -> Json:
        return {"Optional": {"ops": [op.to_json() for op in self.ops], "introduced": list(self.introduced)}}


@hashable
class Distinct:
    """Drop a row equal (by openCypher's equivalence) to an earlier one, over ``columns``."""

    columns: tuple[str, ...]

    def to_json(self) -> Json:
        return {"Distinct": list(self.columns)}


@hashable
class Sort:
    keys: tuple[tuple[ast.Expr, bool], ...]  # (expression, descending)

    def to_json(self) -> Json:
        return {"Sort": [{"expr": expr_json(expr), "descending": desc} for expr, desc in self.keys]}


@hashable
class Skip:
    count: ast.Expr  # an integer literal or a parameter

    def to_json(self) -> Json:
        return {"Skip": expr_json(self.count)}


@hashable
class Limit:
    count: ast.Expr

    def to_json(self) -> Json:
        return {"Limit": expr_json(self.count)}


@hashable
class Beam:
    """A vector-guided traversal step from ``variable`` (upstream's ExpandBeam): at each of
    ``depth`` hops along ``direction`` [:edge_type], keep the ``width`` nodes whose ``property``
    vector is nearest ``near`` by ``metric``; binds ``variable`` to the last hop's kept nodes,
    with graph.HOPS the hop and graph.SCORE the similarity."""

    variable: str
    direction: ast.Direction
    edge_type: str | None
    property: str
    near: ast.Expr
    metric: str
    width: ast.Expr
    depth: ast.Expr

    def to_json(self) -> Json:
        body: dict[str, Json] = {"var": self.variable, "dir": self.direction, "edge_type": self.edge_type}
        body |= {"property": self.property, "near": expr_json(self.near), "metric": self.metric}
        body |= {"width": expr_json(self.width), "depth": expr_json(self.depth)}
        return {"Beam": body}


WriteClause = ast.Create | ast.Merge | ast.SetClause | ast.Remove | ast.Delete


@hashable
class Write:
    """A write clause, run on each row by the write path (:mod:`drsg.workers.cypher.writes`)."""

    clause: WriteClause

    def to_json(self) -> Json:
        return {"Write": type(self.clause).__name__}


Op = (
    NodeScan | Argument | Expand | BindPath | Filter | Project | Aggregate | Unwind | Optional | Distinct | Sort
    | Skip | Limit | Beam | Write
)  # fmt: skip
OP_TYPES = typing.get_args(Op)


@hashable
class RowPlan:
    """One single query: its operators in order and the columns it answers."""

    ops: tuple[Op, ...]
    columns: tuple[str, ...]

    def to_json(self) -> Json:
        return {"ops": [op.to_json() for op in self.ops], "columns": list(self.columns)}


@hashable
class Union:
    """``parts[0] UNION [ALL] parts[1] …``; ``all_[i]`` says how ``parts[i + 1]`` joins (a plain
    UNION drops duplicate rows of the whole answer so far, as openCypher)."""

    parts: tuple[RowPlan, ...]
    all_: tuple[bool, ...]

    @property
    def columns(self) -> tuple[str, ...]:
        return self.parts[0].columns

    def to_json(self) -> Json:
        return {"Union": [part.to_json() for part in self.parts], "all": list(self.all_)}
