"""A plane's soft schema — what a model is shown — and plans checked against it (pure).

The schema is observed, not declared: labels with their node counts, each label's property names
with the type most of its values have and a few example values, and each edge type with the
(source label → target label) pairs it connects. Two things never reach it: properties whose name
starts with ``_`` (provenance) and the values of sensitive properties (a name that reads like a
secret, or one the caller lists as masked): those show their name and type, never a value.

:func:`check_plan` holds a plan to the live schema before it runs, so a plan naming a label, edge
type or property the plane does not have comes back with an error naming the nearest real one;
:func:`check_cypher` does the same for a Cypher statement's syntax tree.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from drsg.kernel.errors import UsageError
from drsg.kernel.values import Json
from drsg.plan.cypher import ast
from drsg.plan.expr import expr_names
from drsg.plan.logical import Expand, ExpandVar, Filter, LogicalPlan, ScanLabel, Sort, parse_plan

#: property names whose values are never shown to a model
SENSITIVE = re.compile(r"(pass(word|wd)?|secret|token|api[_-]?key|credential|ssn|private[_-]?key|salt)", re.I)
EXAMPLES = 3
EXAMPLE_CHARS = 40


@dataclass
class PropertyInfo:
    type: str  # the dominant observed type: Int, Float, Str, Bool, List, Map, Vector, Bytes
    examples: list[str] = field(default_factory=list)
    masked: bool = False


@dataclass
class LabelInfo:
    count: int
    properties: dict[str, PropertyInfo] = field(default_factory=dict)


@dataclass
class SoftSchema:
    labels: dict[str, LabelInfo] = field(default_factory=dict)
    edges: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # type → [(src label, dst label)]
    edge_counts: dict[str, int] = field(default_factory=dict)
    #: every node was read for the property names (else a name missing from the sample may exist)
    complete: bool = True

    def properties(self) -> set[str]:
        return {name for info in self.labels.values() for name in info.properties}

    def edge_descriptor(self, edge_type: str) -> str:
        """``TYPE: Src→Dst, …`` (upstream's form, which find_edge embeds)."""
        pairs = ", ".join(f"{s}→{d}" for s, d in self.edges.get(edge_type, [])) or "?"
        return f"{edge_type}: {pairs}"

    def render(self) -> str:
        """The schema summary of the prompt: ``- Label (N nodes): prop:Type, …`` and ``- EDGE: Src→Dst``."""
        lines = ["Labels:"]
        for label, info in sorted(self.labels.items()):
            props = ", ".join(_prop_text(name, p) for name, p in sorted(info.properties.items()))
            lines.append(f"- {label} ({info.count} nodes): {props or '(no properties)'}")
        lines.append("Edge types:")
        for edge_type in sorted(self.edges):
            lines.append(f"- {self.edge_descriptor(edge_type)} ({self.edge_counts.get(edge_type, 0)} edges)")
        if not self.edges:
            lines.append("- (none)")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "labels": {
                label: {
                    "count": info.count,
                    "properties": {
                        name: {"type": p.type, "examples": p.examples, "masked": p.masked}
                        for name, p in info.properties.items()
                    },
                }
                for label, info in self.labels.items()
            },
            "edges": {t: [list(pair) for pair in pairs] for t, pairs in self.edges.items()},
        }


def _prop_text(name: str, info: PropertyInfo) -> str:
    if info.masked:
        return f"{name}:{info.type} (masked)"
    examples = f" e.g. {' | '.join(info.examples)}" if info.examples else ""
    return f"{name}:{info.type}{examples}"


def hidden(name: str) -> bool:
    """Provenance properties (``_source``, ``_label_as_written``, …) never reach a model."""
    return name.startswith("_")


def masked(name: str, extra: Iterable[str] = ()) -> bool:
    return bool(SENSITIVE.search(name)) or name in set(extra)


def example_text(value: Any) -> str | None:
    """A short, one-line rendering of an example value, or None for what is not worth showing."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str) and value.strip():
        text = " ".join(value.split())
        return repr(text if len(text) <= EXAMPLE_CHARS else text[: EXAMPLE_CHARS - 1] + "…")
    return None


def check_plan(plan: LogicalPlan | Json, schema: SoftSchema) -> None:
    """Raise a UsageError for the first label, edge type or property the plane does not have (a
    wire plan is read first: :func:`drsg.plan.logical.parse_plan`)."""
    plan = plan if isinstance(plan, LogicalPlan) else parse_plan(plan)
    labels, props = set(schema.labels), schema.properties()
    if isinstance(plan.source, ScanLabel):
        _known("label", plan.source.label, labels)
    for step in plan.steps:
        match step:
            case Expand(edge_type=str(edge_type)) | ExpandVar(edge_type=str(edge_type)):
                _known("edge type", edge_type, set(schema.edges))
                exprs = []
            case Filter(expr):
                exprs = [expr]
            case Sort(keys):
                exprs = [key.expr for key in keys]
            case _:
                exprs = []
        for expr in exprs:
            for kind, found in expr_names(expr):
                if kind == "property" and not schema.complete and not hidden(found):
                    continue  # the sample may have missed it: the plan runs and finds what it finds
                _known(kind, found, labels if kind == "label" else props)


def check_cypher(query: ast.Query, schema: SoftSchema) -> None:
    """Raise a UsageError for the first label, relationship type or property a statement names that
    the plane does not have (a property only where it is read off a pattern's variable, so a map's
    keys are not taken for properties)."""
    labels, props = set(schema.labels), schema.properties()
    for kind, name in cypher_names(query):
        if kind == "property" and not schema.complete and not hidden(name):
            continue  # as for a plan: the sample may have missed it
        _known(kind, name, labels if kind == "label" else set(schema.edges) if kind == "edge type" else props)


def cypher_names(query: ast.Query) -> Iterator[tuple[str, str]]:
    """("label" | "edge type" | "property", name) for every name a statement's patterns, label
    tests, sources and node property reads (of a variable a pattern or source binds to nodes)
    refer to; the schema knows no relationship's properties, so those are not named."""
    items = list(_tree(query))
    rels = {i.variable for i in items if isinstance(i, ast.RelPattern)}
    bound = {getattr(i, "variable", None) for i in items if isinstance(i, _BINDERS)} - {None} - rels
    for item in items:
        match item:
            case ast.NodePattern(labels=labels) | ast.HasLabels(labels=labels):
                yield from (("label", label) for label in labels)
            case ast.RelPattern(types=types):
                yield from (("edge type", t) for t in types)
            case ast.Search(label=label) | ast.HybridSearch(label=label) | ast.CallAlgo(label=label) if label:
                yield "label", label
            case ast.Beam(edge_type=str(edge_type)):
                yield "edge type", edge_type
            case ast.PropertyAccess(subject=ast.Variable(name), key=key) if name in bound:
                yield "property", key
        if isinstance(item, ast.NodePattern) and isinstance(item.properties, ast.MapLiteral):
            yield from (("property", key) for key, _ in item.properties.entries)


_BINDERS = (ast.NodePattern, ast.Search, ast.HybridSearch, ast.CallAlgo, ast.Beam)


def _tree(tree: object) -> Iterator[object]:
    """Every node of a syntax tree, ``tree`` first."""
    if isinstance(tree, tuple):
        for item in tree:
            yield from _tree(item)
    elif is_dataclass(tree) and not isinstance(tree, type):
        yield tree
        for f in fields(tree):
            yield from _tree(getattr(tree, f.name))


def _known(kind: str, name: str, names: set[str]) -> None:
    if name in names:
        return
    if kind == "property" and hidden(name):
        raise UsageError(f"property {name!r} is provenance, not something a question can ask about")
    near = difflib.get_close_matches(name, sorted(names), n=1, cutoff=0.5)
    hint = f"; did you mean {near[0]!r}?" if near else f"; the plane's {kind}s are: {', '.join(sorted(names))[:300]}"
    raise UsageError(f"{kind} {name!r} does not exist in this plane{hint}")
