"""`drsg diff FROM TO`: what changed in one plane between two points in time (store/diff.py)."""

from __future__ import annotations

from typing import Any

import click

from drsg.kernel.asof import AsOf, parse_as_of
from drsg.kernel.errors import DrsgError
from drsg.store.diff import Change, PlaneDiff
from drsg.store.records import Edge, Node
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import json_option, plane_option

POINT_HELP = 'a commit seq (0: before the first commit), an RFC 3339 time, or "TIME <unix-ms>"'


class PointParam(click.ParamType):
    """A diff's end: a seq (0 allowed), an RFC 3339 time or ``TIME ms``."""

    name = "SEQ|RFC3339"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> AsOf | int:
        if isinstance(value, AsOf | int):
            return value
        if str(value).strip() == "0":
            return 0
        try:
            return parse_as_of(value)
        except DrsgError as exc:
            self.fail(exc.message, param, ctx)


def _node_line(sign: str, node: Node) -> str:
    key = f" @{node.key}" if node.key else ""
    labels = "".join(f":{label}" for label in node.labels)
    return f"{sign} node #{node.id}{key}{labels}"


def _edge_line(sign: str, edge: Edge) -> str:
    return f"{sign} edge #{edge.id} #{edge.src} -[{edge.type}]-> #{edge.dst}"


_ABSENT = object()


def _change_lines(change: Change, hidden: bool) -> list[str]:
    after = change.after
    head = _node_line("~", after) if isinstance(after, Node) else _edge_line("~", after)
    lines = [head]
    before = change.before
    if isinstance(before, Node) and isinstance(after, Node) and sorted(before.labels) != sorted(after.labels):
        lines.append(f"    labels: {sorted(before.labels)} -> {sorted(after.labels)}")
    for name in change.changed_props():
        if name.startswith("_") and not hidden:
            continue
        old = before.props.get(name, _ABSENT)
        new = after.props.get(name, _ABSENT)
        lines.append(f"    {name}: {_short(old)} -> {_short(new)}")
    return lines


def _short(value: object, limit: int = 80) -> str:
    text = "(absent)" if value is _ABSENT else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render(d: PlaneDiff, hidden: bool = False) -> list[str]:
    lines = [f"plane {d.plane.name!r}: seq {d.from_seq} -> seq {d.to_seq} ({d.commits} commits read)"]
    lines += [_node_line("+", n) for n in d.nodes_created]
    lines += [_node_line("-", n) for n in d.nodes_deleted]
    for c in d.nodes_changed:
        lines += _change_lines(c, hidden)
    lines += [_edge_line("+", e) for e in d.edges_created]
    lines += [_edge_line("-", e) for e in d.edges_deleted]
    for c in d.edges_changed:
        lines += _change_lines(c, hidden)
    counts = d.counts()
    lines.append(
        f"{counts['nodes_created']} nodes created, {counts['nodes_deleted']} deleted, {counts['nodes_changed']} "
        f"changed; {counts['edges_created']} edges created, {counts['edges_deleted']} deleted, "
        f"{counts['edges_changed']} changed"
    )
    return lines


@click.command("diff")
@click.argument("from_point", metavar="FROM", type=PointParam())
@click.argument("to_point", metavar="TO", type=PointParam())
@plane_option
@click.option("--hidden", is_flag=True, help="Show `_` provenance properties too.")
@json_option
@click.pass_obj
def diff(obj: Context, from_point: AsOf | int, to_point: AsOf | int, plane: str, hidden: bool, as_json: bool) -> None:
    """Nodes and edges created, deleted and changed in a plane between FROM and TO (each a commit
    seq, 0 for the empty start, an RFC 3339 time, or "TIME <unix-ms>"), read from the commits in
    between and the versioned records at both ends."""
    with obj.open(write=False) as db:
        result = db.diff(plane, from_point, to_point)
    if as_json:
        emit_json(result.to_json(vectors="lean", hidden=hidden))
        return
    for line in render(result, hidden):
        click.echo(line)


COMMANDS = [diff]
