"""The openCypher syntax tree (pure): what the parser gives and the compiler reads.

One statement is a :class:`Query` — one or more :class:`SingleQuery` parts joined by ``UNION
[ALL]`` — each a sequence of clauses, with an optional ``AS OF`` that pins every source.

Besides openCypher 9's clauses (``MATCH``, ``OPTIONAL MATCH``, ``UNWIND``, ``WITH``, ``RETURN``,
``CREATE``, ``MERGE``, ``SET``, ``REMOVE``, ``DELETE``), upstream's language adds sources a
statement may start from (:class:`Search`, :class:`HybridSearch`, :class:`CallAlgo`), each binding
one node variable and followed by an optional relationship tail (a :class:`Match` the parser
appends), and the :class:`Beam` step.

Every node carries ``at``, the 1-based (line, column) where it starts in the text, so an error
found after parsing (an unknown function, an unsupported construct) points where the user wrote
it. ``at`` is left out of equality, so two trees of the same statement compare equal.
"""

from __future__ import annotations

import typing
from dataclasses import field

from drsg.kernel.frozen import hashable

#: (line, column), 1-based; (0, 0) for a node a compiler made
Position = tuple[int, int]
NOWHERE: Position = (0, 0)


# ---------------------------------------------------------------------------- expressions


@hashable
class Literal:
    """``null``, ``true``/``false``, an integer (64-bit, checked by the parser), a float, a string."""

    value: bool | int | float | str | None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Parameter:
    """``$name`` (or ``$0``): a value given beside the statement, never spliced into its text."""

    name: str
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Variable:
    name: str
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class PropertyAccess:
    """``subject.key`` (a node's, a relationship's or a map's)."""

    subject: Expr
    key: str
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class ListLiteral:
    items: tuple[Expr, ...]
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class MapLiteral:
    """``{k: v, …}``; keys in the order written (a key given twice: the parser refuses it)."""

    entries: tuple[tuple[str, Expr], ...]
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Index:
    """``subject[index]``: a list's item (negative from the end) or a map's value by a string."""

    subject: Expr
    index: Expr
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Slice:
    """``subject[start..end]``, either bound left out."""

    subject: Expr
    start: Expr | None
    end: Expr | None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


UnaryOp = typing.Literal["NOT", "-", "+"]
BinaryOp = typing.Literal[
    "OR", "XOR", "AND",
    "=", "<>", "<", "<=", ">", ">=",
    "+", "-", "*", "/", "%", "^",
    "IN", "CONTAINS", "STARTS WITH", "ENDS WITH", "=~",
]  # fmt: skip


@hashable
class Unary:
    op: UnaryOp
    operand: Expr
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Binary:
    """A binary operator. ``!=`` is parsed as ``<>``; ``a < b < c`` as ``a < b AND b < c`` (the
    parser writes the chain out, as openCypher defines it)."""

    op: BinaryOp
    lhs: Expr
    rhs: Expr
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class IsNull:
    """``operand IS NULL`` (``negated``: ``IS NOT NULL``)."""

    operand: Expr
    negated: bool = False
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class HasLabels:
    """``subject:A:B`` as a predicate: true when the node has every label."""

    subject: Expr
    labels: tuple[str, ...]
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class FunctionCall:
    """``name(args)``; ``name`` lower-cased (functions are case-insensitive), namespaces joined
    with dots. Aggregates (``count``, ``sum``, ``avg``, ``min``, ``max``, ``collect``) are calls too;
    ``distinct`` is ``count(DISTINCT x)``. Upstream's ``score()``, ``hops()``, ``key(v)``,
    ``similarity(…)`` and ``distance(…)`` are calls."""

    name: str
    args: tuple[Expr, ...] = ()
    distinct: bool = False
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class CountStar:
    """``count(*)``."""

    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Case:
    """``CASE [subject] WHEN … THEN … [ELSE …] END``: with a subject, each ``when`` is compared to
    it by equality; without, each is a predicate."""

    subject: Expr | None
    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class ListComprehension:
    """``[variable IN source WHERE predicate | projection]`` (``predicate``, ``projection`` optional)."""

    variable: str
    source: Expr
    predicate: Expr | None = None
    projection: Expr | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


Quantifier = typing.Literal["all", "any", "none", "single"]


@hashable
class Quantified:
    """``all|any|none|single(variable IN source WHERE predicate)``."""

    quantifier: Quantifier
    variable: str
    source: Expr
    predicate: Expr
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class PatternPredicate:
    """A relationship pattern used as a boolean (``WHERE (a)-[:KNOWS]->(b)``, ``exists((a)-->())``)."""

    pattern: PatternPart
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


Expr = (
    Literal | Parameter | Variable | PropertyAccess | ListLiteral | MapLiteral | Index | Slice | Unary | Binary
    | IsNull | HasLabels | FunctionCall | CountStar | Case | ListComprehension | Quantified | PatternPredicate
)  # fmt: skip
EXPR_TYPES = typing.get_args(Expr)

# ---------------------------------------------------------------------------- patterns

Direction = typing.Literal["out", "in", "both"]


@hashable
class NodePattern:
    """``(variable:Label:Other {k: v})``; ``properties`` a map literal or a parameter."""

    variable: str | None = None
    labels: tuple[str, ...] = ()
    properties: MapLiteral | Parameter | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class VarLength:
    """``*``, ``*2``, ``*1..3``, ``*..4``, ``*2..``: a bound left out is None (``*2`` is 2..2)."""

    min_hops: int | None = None
    max_hops: int | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class RelPattern:
    """``-[variable:T|U *1..3 {k: v}]->``; ``direction`` as read left to right (``both``: no arrow)."""

    variable: str | None = None
    types: tuple[str, ...] = ()
    direction: Direction = "both"
    length: VarLength | None = None
    properties: MapLiteral | Parameter | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class PatternPart:
    """``[path =] (a)-[r]->(b)<-[s]-(c)``: ``nodes`` has one more item than ``rels``; ``rels[i]``
    joins ``nodes[i]`` and ``nodes[i + 1]``. ``shortest``: ``shortestPath(…)`` /
    ``allShortestPaths(…)`` around it (openCypher 9 leaves them out; the compiler says so)."""

    nodes: tuple[NodePattern, ...]
    rels: tuple[RelPattern, ...] = ()
    path_variable: str | None = None
    shortest: typing.Literal["shortestPath", "allShortestPaths"] | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


Pattern = tuple[PatternPart, ...]

# ---------------------------------------------------------------------------- clauses


@hashable
class ProjectionItem:
    """``expr [AS alias]``; ``text`` is the expression as written (a column's name without an alias)."""

    expr: Expr
    alias: str | None = None
    text: str = ""
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)

    @property
    def column(self) -> str:
        return self.alias if self.alias is not None else self.text


@hashable
class SortItem:
    expr: Expr
    descending: bool = False
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Projection:
    """What ``WITH`` and ``RETURN`` share: ``[DISTINCT] * | items [ORDER BY …] [SKIP n] [LIMIT n]``."""

    items: tuple[ProjectionItem, ...] = ()
    star: bool = False
    distinct: bool = False
    order: tuple[SortItem, ...] = ()
    skip: Expr | None = None
    limit: Expr | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Match:
    pattern: Pattern
    where: Expr | None = None
    optional: bool = False
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Unwind:
    expr: Expr
    variable: str
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class With:
    projection: Projection
    where: Expr | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Return:
    projection: Projection
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Create:
    pattern: Pattern
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class SetProperty:
    """``target.key = value`` (``target`` a variable or any expression giving a node or relationship)."""

    target: PropertyAccess
    value: Expr
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class SetProperties:
    """``v = {map}`` (replaces every property) or ``v += {map}`` (``merge``: adds and overwrites)."""

    variable: str
    value: Expr
    merge: bool = False
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class SetLabels:
    variable: str
    labels: tuple[str, ...]
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


SetItem = SetProperty | SetProperties | SetLabels


@hashable
class SetClause:
    items: tuple[SetItem, ...]
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class RemoveProperty:
    target: PropertyAccess
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class RemoveLabels:
    variable: str
    labels: tuple[str, ...]
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


RemoveItem = RemoveProperty | RemoveLabels


@hashable
class Remove:
    items: tuple[RemoveItem, ...]
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Delete:
    exprs: tuple[Expr, ...]
    detach: bool = False
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Merge:
    part: PatternPart
    on_create: tuple[SetItem, ...] = ()
    on_match: tuple[SetItem, ...] = ()
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


# Upstream's sources. Each binds ``variable`` to the nodes it finds, with a score (``score()``).


@hashable
class Search:
    """``SEARCH (v[:L]) [ON p] NEAR vec-or-text [METRIC m] [TOPK k]`` (``near`` set) or
    ``SEARCH (v:L) ON p MATCHING "text" [TOPK k]`` (``matching`` set). ``property`` None: the
    default (``embedding`` for NEAR). ``metric`` as written (None: cosine), ``topk`` None: 10."""

    variable: str
    label: str | None = None
    property: str | None = None
    near: Expr | None = None
    matching: Expr | None = None
    metric: str | None = None
    topk: Expr | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class HybridVector:
    property: str | None
    near: Expr
    metric: str | None = None
    weight: Expr | None = None


@hashable
class HybridKeyword:
    property: str
    matching: Expr
    weight: Expr | None = None


@hashable
class HybridGraph:
    hops: Expr
    decay: Expr | None = None
    seeds: Expr | None = None
    weight: Expr | None = None


@hashable
class HybridSearch:
    """``HYBRID (v[:L]) {VECTOR … | KEYWORD … | GRAPH HOPS n … | CANDIDATES n | TOPK k | FUSION f [K n]}``
    (parts in any order, each at most once; at least VECTOR or KEYWORD — the parser checks)."""

    variable: str
    label: str | None = None
    vector: HybridVector | None = None
    keyword: HybridKeyword | None = None
    graph: HybridGraph | None = None
    candidates: Expr | None = None
    topk: Expr | None = None
    fusion: str | None = None
    fusion_k: Expr | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class CallAlgo:
    """``CALL algo(name: value, …) [ON (v[:L])]`` (upstream's algorithms; ``args`` as written)."""

    algorithm: str
    args: tuple[tuple[str, Expr], ...] = ()
    variable: str | None = None
    label: str | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Beam:
    """``BEAM (v) OUT|IN|BOTH [:TYPE] [ON p] NEAR vec [METRIC m] WIDTH w DEPTH d``: from ``variable``,
    keep the ``width`` nodes nearest ``near`` at each of ``depth`` hops; binds the same variable."""

    variable: str
    direction: Direction
    edge_type: str | None
    near: Expr
    width: Expr
    depth: Expr
    property: str | None = None
    metric: str | None = None
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


Clause = (
    Match | Unwind | With | Return | Create | Merge | SetClause | Remove | Delete | Search | HybridSearch | CallAlgo
    | Beam
)  # fmt: skip
CLAUSE_TYPES = typing.get_args(Clause)
#: the clauses that only read — an allow-list: a statement is a read only when every clause is one
#: of these, so a clause added later counts as a write (and is refused where only reads may run)
#: until it is put here on purpose
READ_CLAUSES = (Match, Unwind, With, Return, Search, HybridSearch, CallAlgo, Beam)
#: clauses that change the graph (the compiler's write steps)
WRITE_CLAUSES = (Create, Merge, SetClause, Remove, Delete)

# ---------------------------------------------------------------------------- statements

AsOfKind = typing.Literal["seq", "time", "ms"]


@hashable
class AsOfClause:
    """``AS OF 42`` (seq), ``AS OF "2026-01-02T03:04:05Z"`` (time), ``AS OF TIME 1767323045000``
    (ms); ``value`` a literal or a parameter."""

    kind: AsOfKind
    value: Expr
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class SingleQuery:
    clauses: tuple[Clause, ...]
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)


@hashable
class Query:
    """``parts[0] UNION [ALL] parts[1] …``; ``union_all[i]`` says how ``parts[i + 1]`` joins."""

    parts: tuple[SingleQuery, ...]
    union_all: tuple[bool, ...] = ()
    as_of: AsOfClause | None = None
    #: ``EXPLAIN`` before the statement: show the plan, run nothing
    explain: bool = False
    at: Position = field(default=NOWHERE, compare=False, repr=False, kw_only=True)

    @property
    def writes(self) -> bool:
        return any(not isinstance(c, READ_CLAUSES) for part in self.parts for c in part.clauses)
