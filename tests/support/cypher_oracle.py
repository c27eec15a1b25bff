"""A brute-force openCypher evaluator for small graphs and a small query language, sharing no code
with drsg's Cypher engine (tests/integration/test_cypher_properties.py holds the engine to it).

The graph is a list of nodes (a key, labels, an integer ``x`` and a string ``s``, each possibly
absent) and a list of relationships. A query is one ``MATCH`` of a chain of node patterns joined by
relationship patterns, an optional ``WHERE``, and a ``RETURN`` of properties, nodes and aggregates
with ``DISTINCT``, ``ORDER BY``, ``SKIP`` and ``LIMIT``. :func:`render` writes it as Cypher text;
:func:`evaluate` answers it by openCypher 9's definitions, spelled out:

- a match is an assignment of every node variable to a node and every relationship pattern to a
  list of relationships (one for a fixed-length pattern) that chain from one end to the other in
  the pattern's direction; the relationships of one match are pairwise distinct (relationship
  isomorphism, which makes a variable-length part a trail). An undirected pattern meets a self-loop
  once: the assignment is the same whichever way round it is read.
- ``WHERE`` is three-valued: comparisons with null are null, ``=`` across types is false, ``<``
  across types is null, ``1 = 1.0``; a row is kept only when the predicate is true.
- non-aggregate return items group the rows by equivalence (null is equivalent to null);
  ``count(*)`` counts rows, other aggregates skip nulls; with no grouping key and no rows there is
  one row of empty aggregates (``count`` 0, ``sum`` 0, ``min``/``max`` null, ``collect`` []).
- ``ORDER BY`` puts nulls last ascending and first descending.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from itertools import product
from typing import Literal, TypeAlias, TypeVar

Scalar: TypeAlias = "int | float | str | None"


@dataclass(frozen=True)
class GNode:
    key: str
    labels: tuple[str, ...]
    x: int | None
    s: str | None

    def prop(self, name: str) -> Scalar:
        return self.x if name == "x" else self.s if name == "s" else None


@dataclass(frozen=True)
class GRel:
    src: int  # index into Graph.nodes
    dst: int
    type: str


@dataclass(frozen=True)
class Graph:
    nodes: tuple[GNode, ...]
    rels: tuple[GRel, ...]


# ---------------------------------------------------------------------- queries


@dataclass(frozen=True)
class NodePat:
    var: str
    label: str | None = None


@dataclass(frozen=True)
class RelPat:
    direction: Literal["->", "<-", "-"]
    type: str | None = None
    length: tuple[int, int] | None = None  # (min, max) for a variable-length pattern
    spelling: int = 0  # which of the equivalent ways to write it (render only)
    var: str | None = None  # bound to the relationship (fixed-length patterns only; named r…)


@dataclass(frozen=True)
class Prop:
    var: str
    name: str


@dataclass(frozen=True)
class Var:
    var: str


@dataclass(frozen=True)
class TypeOf:
    """``type(r)`` of a relationship variable."""

    var: str


@dataclass(frozen=True)
class PathLength:
    """``length(p)`` of the path variable ``p`` the whole pattern is bound to."""


@dataclass(frozen=True)
class Lit:
    value: Scalar


@dataclass(frozen=True)
class Cmp:
    op: Literal["=", "<>", "<", "<=", ">", ">="]
    left: Prop | Lit
    right: Prop | Lit


@dataclass(frozen=True)
class IsNull:
    arg: Prop
    negated: bool = False


@dataclass(frozen=True)
class HasLabel:
    var: str
    label: str


@dataclass(frozen=True)
class Not:
    arg: Pred


@dataclass(frozen=True)
class BoolOp:
    op: Literal["AND", "OR"]
    left: Pred
    right: Pred


Pred: TypeAlias = "Cmp | IsNull | HasLabel | Not | BoolOp"
#: a non-aggregate return item
Item: TypeAlias = "Prop | Var | TypeOf | PathLength"


@dataclass(frozen=True)
class Agg:
    func: Literal["count", "sum", "min", "max", "collect"]
    arg: Prop | Var | None  # None: count(*)
    distinct: bool = False


@dataclass(frozen=True)
class Chain:
    """A further pattern part: after a comma in the same MATCH (its relationships then distinct
    from the first part's), or in a MATCH of its own (``new_clause``: they may be the same)."""

    nodes: tuple[NodePat, ...]
    rels: tuple[RelPat, ...]
    new_clause: bool = False


@dataclass(frozen=True)
class Query:
    nodes: tuple[NodePat, ...]
    rels: tuple[RelPat, ...]  # rels[i] joins nodes[i] and nodes[i + 1]
    items: tuple[Item | Agg, ...]  # returned as c0, c1, …
    where: Pred | None = None
    distinct: bool = False
    order: tuple[tuple[int, bool], ...] = ()  # (item index, descending)
    skip: int | None = None
    limit: int | None = None
    path: bool = False  # bind the first part to ``p``
    more: tuple[Chain, ...] = ()
    optional: Chain | None = None  # an OPTIONAL MATCH after the WHERE (which filters the MATCH before it)

    @property
    def chains(self) -> tuple[Chain, ...]:
        return (Chain(self.nodes, self.rels), *self.more)

    @property
    def columns(self) -> tuple[str, ...]:
        return tuple(f"c{i}" for i in range(len(self.items)))

    @property
    def totally_ordered(self) -> bool:
        """Whether ORDER BY fixes the answer's order: every column is ordered and none is a list."""
        ordered = {i for i, _ in self.order}
        return ordered == set(range(len(self.items))) and not any(_is_list(item) for item in self.items)


def _is_list(item: Item | Agg) -> bool:
    return isinstance(item, Agg) and item.func == "collect"


# ---------------------------------------------------------------------- rendering


def render(query: Query) -> str:
    text = "MATCH " + ("p = " if query.path else "")
    for i, chain in enumerate(query.chains):
        if i:
            text += " MATCH " if chain.new_clause else ", "
        text += _render_chain(chain)
    if query.where is not None:
        text += " WHERE " + _render_pred(query.where)
    if query.optional is not None:
        text += " OPTIONAL MATCH " + _render_chain(query.optional)
    items = ", ".join(f"{_render_item(item)} AS c{i}" for i, item in enumerate(query.items))
    text += " RETURN " + ("DISTINCT " if query.distinct else "") + items
    if query.order:
        text += " ORDER BY " + ", ".join(f"c{i}{' DESC' if desc else ''}" for i, desc in query.order)
    if query.skip is not None:
        text += f" SKIP {query.skip}"
    if query.limit is not None:
        text += f" LIMIT {query.limit}"
    return text


def _render_chain(chain: Chain) -> str:
    text = _render_node(chain.nodes[0])
    for rel, node in zip(chain.rels, chain.nodes[1:], strict=True):
        text += _render_rel(rel) + _render_node(node)  # a repeated variable may add a label
    return text


def _render_node(node: NodePat) -> str:
    return f"({node.var}{':' + node.label if node.label else ''})"


def _render_rel(rel: RelPat) -> str:
    inner = (rel.var or "") + (f":{rel.type}" if rel.type else "")
    if rel.length is not None:
        lo, hi = rel.length
        if lo == hi and lo >= 1:
            inner += f"*{lo}"
        elif lo == 1 and rel.spelling % 2:
            inner += f"*..{hi}"
        else:
            inner += f"*{lo}..{hi}"
    body = f"[{inner}]" if inner or rel.spelling % 2 else ""
    left, right = {"->": ("-", "->"), "<-": ("<-", "-"), "-": ("-", "-")}[rel.direction]
    return f"{left}{body}{right}"


def _render_value(expr: Prop | Lit) -> str:
    if isinstance(expr, Prop):
        return f"{expr.var}.{expr.name}"
    value = expr.value
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"'{value}'"
    return repr(value)  # an int, or a float with its fraction ("1.0")


def _render_pred(pred: Pred) -> str:
    if isinstance(pred, Cmp):
        return f"{_render_value(pred.left)} {pred.op} {_render_value(pred.right)}"
    if isinstance(pred, IsNull):
        return f"{_render_value(pred.arg)} IS {'NOT ' if pred.negated else ''}NULL"
    if isinstance(pred, HasLabel):
        return f"{pred.var}:{pred.label}"
    if isinstance(pred, Not):
        return f"NOT ({_render_pred(pred.arg)})"
    return f"({_render_pred(pred.left)} {pred.op} {_render_pred(pred.right)})"


def _render_item(item: Item | Agg) -> str:
    if isinstance(item, Prop):
        return f"{item.var}.{item.name}"
    if isinstance(item, Var):
        return item.var
    if isinstance(item, TypeOf):
        return f"type({item.var})"
    if isinstance(item, PathLength):
        return "length(p)"
    arg = "*" if item.arg is None else _render_item(item.arg)
    return f"{item.func}({'DISTINCT ' if item.distinct else ''}{arg})"


# ---------------------------------------------------------------------- matching


#: node variable → node index, relationship variable → relationship index (None: an OPTIONAL MATCH
#: that found nothing), LENGTH → the path's length
Binding: TypeAlias = dict[str, int | None]
LENGTH = " length"


def trails(graph: Graph, rel: RelPat) -> Iterator[tuple[int, int, tuple[int, ...]]]:
    """Every (start, end, relationships) a relationship pattern can stand for: lists of distinct
    relationships of the pattern's type, each leaving the node the last one reached in the
    pattern's direction; a self-loop read undirected counts once."""
    lo, hi = rel.length or (1, 1)

    def walk(start: int, here: int, used: tuple[int, ...]) -> Iterator[tuple[int, int, tuple[int, ...]]]:
        if len(used) >= lo:
            yield start, here, used
        if len(used) == hi:
            return
        for index, r in enumerate(graph.rels):
            if index in used or (rel.type is not None and r.type != rel.type):
                continue
            if rel.direction in ("->", "-") and r.src == here:
                yield from walk(start, r.dst, (*used, index))
            elif rel.direction in ("<-", "-") and r.dst == here:
                yield from walk(start, r.src, (*used, index))

    for start in range(len(graph.nodes)):
        yield from walk(start, start, ())


def matches(graph: Graph, query: Query) -> list[Binding]:
    """One binding per match of the MATCH clauses (OPTIONAL MATCH aside): its node and relationship
    variables and its first part's length (a binding of the node variables repeats once per distinct
    assignment of relationships). The relationships of one MATCH clause are pairwise distinct; two
    clauses may share one."""
    return _match(graph, query.chains, {}, True)


def extend_optional(graph: Graph, binding: Binding, chain: Chain) -> list[Binding]:
    """OPTIONAL MATCH: every extension of ``binding`` by ``chain``, else the binding with the
    chain's new variables null."""
    found = _match(graph, (chain,), binding, False)
    return found or [binding | {node.var: None for node in chain.nodes if node.var not in binding}
                     | {rel.var: None for rel in chain.rels if rel.var}]  # fmt: skip


def _match(graph: Graph, chains: Sequence[Chain], given: Binding, first: bool) -> list[Binding]:
    nodes = [node for chain in chains for node in chain.nodes]
    variables = [var for var in dict.fromkeys(node.var for node in nodes) if var not in given]
    # each relationship pattern: its ends' variables, its clause, whether it is in the first part
    segments: list[tuple[str, str, RelPat, int, bool]] = []
    clause = 0
    for i, chain in enumerate(chains):
        clause += chain.new_clause and i > 0
        for rel, (a, b) in zip(chain.rels, zip(chain.nodes, chain.nodes[1:], strict=False), strict=True):
            segments.append((a.var, b.var, rel, clause, first and i == 0))
    by_ends: list[dict[tuple[int, int], list[tuple[int, ...]]]] = []
    for segment in segments:
        ends: dict[tuple[int, int], list[tuple[int, ...]]] = {}
        for start, end, used in trails(graph, segment[2]):
            ends.setdefault((start, end), []).append(used)
        by_ends.append(ends)
    out: list[Binding] = []
    for chosen in product(range(len(graph.nodes)), repeat=len(variables)):
        binding = given | dict(zip(variables, chosen, strict=True))
        if any(node.label and node.label not in _node(graph, binding, node.var).labels for node in nodes):
            continue
        options = [by_ends[i].get((binding[a], binding[b]), []) for i, (a, b, *_) in enumerate(segments)]
        for combo in product(*options):
            if all(_distinct_within(combo, segments, c) for c in range(clause + 1)):
                rels = {seg[2].var: part[0] for seg, part in zip(segments, combo, strict=True) if seg[2].var}
                length = sum(len(part) for seg, part in zip(segments, combo, strict=True) if seg[4])
                out.append(binding | rels | ({LENGTH: length} if first else {}))
    return out


def _distinct_within(combo: Sequence[tuple[int, ...]], segments: Sequence[tuple[object, ...]], clause: int) -> bool:
    used = [index for seg, part in zip(segments, combo, strict=True) if seg[3] == clause for index in part]
    return len(used) == len(set(used))


# ---------------------------------------------------------------------- expressions


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def compare(op: str, left: Scalar, right: Scalar) -> bool | None:
    if left is None or right is None:
        return None
    same = (_is_number(left) and _is_number(right)) or type(left) is type(right)
    if op in ("=", "<>"):
        equal = same and left == right
        return equal if op == "=" else not equal
    if not same:
        return None
    assert not isinstance(left, type(None)) and not isinstance(right, type(None))
    if op == "<":
        return left < right  # same type (or both numbers): comparable
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def _value(graph: Graph, binding: Binding, expr: Prop | Lit) -> Scalar:
    if isinstance(expr, Lit):
        return expr.value
    return _node(graph, binding, expr.var).prop(expr.name)


def truth(graph: Graph, binding: Binding, pred: Pred) -> bool | None:
    if isinstance(pred, Cmp):
        return compare(pred.op, _value(graph, binding, pred.left), _value(graph, binding, pred.right))
    if isinstance(pred, IsNull):
        return (_value(graph, binding, pred.arg) is None) != pred.negated
    if isinstance(pred, HasLabel):
        return pred.label in _node(graph, binding, pred.var).labels
    if isinstance(pred, Not):
        inner = truth(graph, binding, pred.arg)
        return None if inner is None else not inner
    left, right = truth(graph, binding, pred.left), truth(graph, binding, pred.right)
    if pred.op == "AND":
        if left is False or right is False:
            return False
        return None if left is None or right is None else True
    if left is True or right is True:
        return True
    return None if left is None or right is None else False


# ---------------------------------------------------------------------- the answer


@dataclass(frozen=True, order=True)
class NodeOut:
    """A node in an answer, named by its key (ids differ between the engine's file and here)."""

    key: str


@dataclass(frozen=True)
class RelOut:
    """A relationship in an answer: which one (for grouping), and what an answer shows of it."""

    index: int
    src: str
    type: str
    dst: str


#: a value in an answer: a scalar, a node, a relationship, or a list of them
Out: TypeAlias = "Scalar | NodeOut | RelOut | list[Out]"
V = TypeVar("V", bound="Out | tuple[Out, ...]")


def _node(graph: Graph, binding: Binding, var: str) -> GNode:
    index = binding[var]
    assert index is not None
    return graph.nodes[index]


def _project(graph: Graph, binding: Binding, item: Item) -> Out:
    if isinstance(item, PathLength):
        return binding[LENGTH]
    index = binding[item.var]
    if index is None:  # a variable an OPTIONAL MATCH left null, and anything read from it
        return None
    if isinstance(item, TypeOf):
        return graph.rels[index].type
    if isinstance(item, Var) and item.var.startswith("r"):
        rel = graph.rels[index]
        return RelOut(index, graph.nodes[rel.src].key, rel.type, graph.nodes[rel.dst].key)
    if isinstance(item, Var):
        return NodeOut(graph.nodes[index].key)
    return graph.nodes[index].prop(item.name)


def equivalence(value: Out | tuple[Out, ...]) -> object:
    """A hashable stand-in equal for equivalent values (null ≡ null, 1 ≡ 1.0); a row's is its
    values'."""
    if isinstance(value, tuple):
        return tuple(equivalence(v) for v in value)
    if isinstance(value, list):
        return ("list", tuple(equivalence(v) for v in value))
    if isinstance(value, RelOut):
        return ("rel", value.index)
    if isinstance(value, bool):
        return ("bool", value)
    if _is_number(value):
        return ("number", value)
    return (type(value).__name__, value)


def _distinct(values: Sequence[V]) -> list[V]:
    """The first of each class of equivalent values, in order."""
    firsts: dict[object, V] = {}
    for value in values:
        firsts.setdefault(equivalence(value), value)
    return list(firsts.values())


def _aggregate(agg: Agg, values: list[Out]) -> Out:
    if agg.arg is None:
        return len(values)
    present = [v for v in values if v is not None]
    if agg.distinct:
        present = _distinct(present)
    if agg.func == "count":
        return len(present)
    if agg.func == "collect":
        return present
    if agg.func == "sum":
        return sum(present, 0)  # sum is drawn only over the integer x
    if not present:
        return None
    ordered = sorted(present, key=cmp_to_key(order_cmp))
    return ordered[0] if agg.func == "min" else ordered[-1]


def order_cmp(a: Out, b: Out) -> int:
    """Ascending order within one column (its values share a type); nulls last."""
    if a is None or b is None:
        return (a is None) - (b is None)
    return -1 if a < b else 1 if a > b else 0  # one column, one type


def evaluate(graph: Graph, query: Query) -> list[tuple[Out, ...]]:
    """The query's rows: in ORDER BY's order, any order for the columns it leaves free."""
    bindings = [b for b in matches(graph, query) if query.where is None or truth(graph, b, query.where) is True]
    if query.optional is not None:
        bindings = [e for b in bindings for e in extend_optional(graph, b, query.optional)]
    keys = [i for i, item in enumerate(query.items) if not isinstance(item, Agg)]
    rows: list[tuple[Out, ...]]
    if len(keys) == len(query.items):
        rows = [tuple(_project(graph, b, item) for item in query.items) for b in bindings]
    else:
        groups: dict[object, list[Binding]] = {}
        firsts: dict[object, tuple[Out, ...]] = {}
        for b in bindings:
            values = tuple(_project(graph, b, query.items[i]) for i in keys)
            group = equivalence(values)
            groups.setdefault(group, []).append(b)
            firsts.setdefault(group, values)
        if not keys and not bindings:
            groups[()] = []
            firsts[()] = ()
        rows = []
        for group, members in groups.items():
            key_values = iter(firsts[group])
            row: list[Out] = []
            for item in query.items:
                if isinstance(item, Agg):
                    arg = item.arg
                    row.append(_aggregate(item, [None if arg is None else _project(graph, b, arg) for b in members]))
                else:
                    row.append(next(key_values))
            rows.append(tuple(row))
    if query.distinct:
        rows = _distinct(rows)
    rows = sort_rows(rows, query.order)
    start = query.skip or 0
    return rows[start : None if query.limit is None else start + query.limit]


def sort_rows(rows: Sequence[tuple[Out, ...]], order: Sequence[tuple[int, bool]]) -> list[tuple[Out, ...]]:
    out = list(rows)
    for index, descending in reversed(order):  # stable sorts, last key first
        out.sort(key=cmp_to_key(lambda a, b, i=index: order_cmp(a[i], b[i])), reverse=descending)
    return out


# ---------------------------------------------------------------------- comparing answers


def by_keys(value: object, keys: Mapping[int, str | None]) -> object:
    """A drsg answer's value in a hashable form that names nodes by key (ids differ from file to
    file), tells an int from a float, and compares a list as a multiset: a node is ("node", key), a
    relationship ("rel", src key, type, dst key, properties), a path its nodes' and relationships'."""
    from drsg.kernel.values import Vector
    from drsg.store.records import Edge, Node
    from drsg.workers.cypher.result import Path

    if isinstance(value, Node):
        return ("node", value.key)
    if isinstance(value, Edge):
        return ("rel", keys[value.src], value.type, keys[value.dst], by_keys(dict(value.props), keys))
    if isinstance(value, Path):
        return ("path", tuple(by_keys(n, keys) for n in value.nodes), tuple(by_keys(e, keys) for e in value.edges))
    if isinstance(value, NodeOut):
        return ("node", value.key)
    if isinstance(value, RelOut):  # as a drsg Edge without properties reads
        return ("rel", value.src, value.type, value.dst, ("map", ()))
    if isinstance(value, list):
        return ("list", tuple(sorted((by_keys(v, keys) for v in value), key=repr)))
    if isinstance(value, dict):
        return ("map", tuple(sorted((k, by_keys(v, keys)) for k, v in value.items())))
    if isinstance(value, Vector):
        return ("vector", value.data)
    return (type(value).__name__, value)
