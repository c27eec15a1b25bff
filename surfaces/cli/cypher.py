"""`drsg cypher`: one Cypher statement on a plane, its rows as a table (or one JSON object).

The command parses its flags, calls the Python API (``Plane.cypher``; ``drsg.api.cypher.explain``
for ``--explain``, which opens nothing) and renders the answer. A read opens the database read
only; a write statement is one commit whose origin says ``via: cli``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Mapping

import click

from drsg.api import cypher as api_cypher
from drsg.kernel.asof import AsOf
from drsg.kernel.values import Described, Vector, to_json
from drsg.models.providers import EmbedderChoice
from drsg.store.records import Edge, Node
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import as_of_option, embed_options, json_option, json_pairs, plane_option
from drsg.workers.cypher.result import Answer, CypherResult, Path, WriteCounts

_BARE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


# --------------------------------------------------------------------------- one value as text


def cell(value: Answer) -> str:
    """A row value as Cypher writes it: ``null``, ``"text"``, ``1.0``, ``[1, 2]``, ``{k: v}``, a node
    ``(#id:Label {k: v})``, a relationship ``[#id:TYPE {k: v}]``, a path of both. A vector shows its
    size only (``--json`` gives every component)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Node):
        return _node(value)
    if isinstance(value, Edge):
        return _edge(value)
    if isinstance(value, Path):
        return _path(value)
    if isinstance(value, list):
        return "[" + ", ".join(cell(item) for item in value) + "]"
    if isinstance(value, dict):
        return _map(value)
    if isinstance(value, Vector):
        return f"vector({value.dims} dims)"
    if isinstance(value, Described):
        return cell(value.value)
    return json.dumps(to_json(value), ensure_ascii=False)  # bytes: the JSON dialect's form


def _float(value: float) -> str:
    """Always with a fraction or an exponent, as openCypher prints a float (``1.0``, not ``1``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _map(entries: Mapping[str, Answer]) -> str:
    return "{" + ", ".join(f"{_key(k)}: {cell(v)}" for k, v in entries.items()) + "}"


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else "`" + name.replace("`", "``") + "`"


def _props(props: Mapping[str, Answer]) -> str:
    return f" {_map(props)}" if props else ""


def _node(node: Node) -> str:
    labels = "".join(f":{_key(label)}" for label in node.labels)
    return f"(#{node.id}{labels}{_props(node.props)})"


def _edge(edge: Edge) -> str:
    return f"[#{edge.id}:{_key(edge.type)}{_props(edge.props)}]"


def _path(path: Path) -> str:
    if not path.nodes:
        return "<>"
    parts = [_node(path.nodes[0])]
    for before, edge, after in zip(path.nodes, path.edges, path.nodes[1:], strict=False):
        forward = edge.src == before.id
        parts.append(f"-{_edge(edge)}->" if forward else f"<-{_edge(edge)}-")
        parts.append(_node(after))
    return "".join(parts)


# --------------------------------------------------------------------------- the answer as text


def table(result: CypherResult) -> list[str]:
    """The rows under their column names, boxed as cypher-shell draws them; none when there are no columns."""
    if not result.columns:
        return []
    grid = [list(result.columns), *([cell(value) for value in row] for row in result.rows)]
    widths = [max(len(line[i]) for line in grid) for i in range(len(result.columns))]
    rule = "+" + "+".join("-" * (width + 2) for width in widths) + "+"

    def line(cells: list[str]) -> str:
        return "|" + "|".join(f" {text.ljust(width)} " for text, width in zip(cells, widths, strict=True)) + "|"

    return [rule, line(grid[0]), rule, *(line(cells) for cells in grid[1:]), rule]


def rows_line(count: int) -> str:
    return f"{count} row{'' if count == 1 else 's'}"


def _many(count: int, what: str, plural: str | None = None) -> str:
    return f"{count} {what if count == 1 else plural or what + 's'}"


def counts_line(counts: WriteCounts) -> str:
    """What a write changed, the parts that are not zero: ``created 2 nodes, 1 edge; set 3 properties``."""
    parts = []
    for verb, changed in (
        ("created", [(counts.nodes_created, "node"), (counts.edges_created, "edge")]),
        ("deleted", [(counts.nodes_deleted, "node"), (counts.edges_deleted, "edge")]),
        ("added", [(counts.labels_added, "label")]),
        ("removed", [(counts.labels_removed, "label"), (counts.props_removed, "property")]),
        ("set", [(counts.props_set, "property")]),
    ):
        done = [_many(n, what, "properties" if what == "property" else None) for n, what in changed if n]
        if done:
            parts.append(f"{verb} {', '.join(done)}")
    return "; ".join(parts) if parts else "no changes"


def render(result: CypherResult) -> list[str]:
    """The table, ``N rows`` (for a read, or a write that returns rows), and a write's counts with its seq."""
    lines = table(result)
    if result.columns or not result.write:
        lines.append(rows_line(len(result.rows)))
    if result.counts is not None:
        lines.append(f"{counts_line(result.counts)} (seq {result.seq})")
    return lines


# --------------------------------------------------------------------------- the command


def _text(statement: str) -> str:
    """The statement as given, or standard input's for ``-``."""
    return sys.stdin.read() if statement == "-" else statement


@click.command("cypher")
@click.argument("statement", metavar="STATEMENT|-")
@plane_option
@click.option(
    "--param",
    "params",
    multiple=True,
    metavar="NAME=JSON",
    help="A $parameter's value, as JSON: --param min=18 --param name='\"Ada\"' (a bare word is a string).",
)
@as_of_option
@embed_options
@click.option("--explain", is_flag=True, help="Print the compiled plan (JSON) and run nothing.")
@click.option("--lean", is_flag=True, help="With --json: vectors as a `$vector(N dims, omitted)` marker.")
@json_option
@click.pass_obj
def cypher(
    obj: Context,
    statement: str,
    plane: str,
    params: tuple[str, ...],
    as_of: AsOf | None,
    embed: str | None,
    embed_model: str | None,
    embed_url: str | None,
    embed_key_env: str | None,
    explain: bool,
    lean: bool,
    as_json: bool,
) -> None:
    """Run a Cypher statement on a plane: openCypher's MATCH … RETURN, WITH, UNWIND, aggregation,
    OPTIONAL MATCH, UNION, writes (CREATE, MERGE, SET, REMOVE, DELETE: one commit), and upstream's
    SEARCH, HYBRID and CALL algo(…) sources, AS OF a commit. `-` reads the statement from standard
    input. A read prints a table of its rows; --json prints one object (docs/cypher.md).

    \b
    drsg cypher 'MATCH (p:Person)-[:KNOWS]->(f) WHERE p.born < $year RETURN p.name, count(f)' --param year=1900
    drsg cypher 'CREATE (a:Person {key: "ada", name: "Ada"})-[:KNOWS]->(:Person {name: "Charles"})'
    drsg cypher 'SEARCH (d:Doc) ON body MATCHING "graph" TOPK 5 RETURN d ORDER BY score() DESC'
    drsg cypher 'MATCH (p:Person) RETURN p' --as-of 42
    echo 'MATCH (n) RETURN count(*)' | drsg cypher - --explain
    """
    text = _text(statement)
    if explain or api_cypher.explains(text):  # `--explain`, or `EXPLAIN …`
        emit_json(api_cypher.explain(text), pretty=not as_json)
        return
    values = json_pairs(params, "--param", "name='\"Ada\"'")
    choice = EmbedderChoice(embed, embed_model, embed_url, embed_key_env)
    with obj.open(write=api_cypher.writes(text)) as db:
        result = db.plane(plane).cypher(text, values, as_of=as_of, embed=choice)
        obj.say_synced(db, plane, as_json)
    if as_json:
        emit_json(result.to_json(lean=lean))
        return
    for line in render(result):
        click.echo(line)


COMMANDS = [cypher]
