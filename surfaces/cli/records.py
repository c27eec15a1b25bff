"""Nodes and edges: `node put|get|delete|history`, `edge put|delete`, `get`, `neighbors`."""

from __future__ import annotations

import json

import click

from drsg.kernel.asof import AsOf, format_ms
from drsg.store.records import Node
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import (
    as_of_option,
    json_option,
    node_ref,
    parse_props,
    plane_option,
    prop_options,
    record_id,
)


def _show_node(node: Node, as_json: bool) -> None:
    if as_json:
        emit_json(node.to_json())
    else:
        emit_json(node.to_json(), pretty=True)


def _describe_node(node: Node) -> str:
    return f"#{node.id}" + (f" @{node.key}" if node.key else "")


@click.command("get")
@click.argument("ref", metavar="ID|@KEY")
@plane_option
@as_of_option
@json_option
@click.pass_obj
def get(obj: Context, ref: str, plane: str, as_of: AsOf | None, as_json: bool) -> None:
    """Print one node by id or @external-key, now or --as-of an earlier commit."""
    with obj.open(write=False) as db:
        node = db.plane(plane, as_of=as_of).get(node_ref(ref), as_of=as_of)
        obj.say_synced(db, plane, as_json)
        _show_node(node, as_json)


@click.group("node")
def node() -> None:
    """Write and read single nodes."""


node.add_command(get, "get")


@node.command("put")
@click.argument("key", required=False)
@click.option("--label", "-l", "labels", multiple=True, metavar="LABEL", help="A label (repeatable).")
@prop_options
@click.option("--replace", is_flag=True, help="Replace labels and properties instead of merging into them.")
@plane_option
@json_option
@click.pass_obj
def node_put(
    obj: Context,
    key: str | None,
    labels: tuple[str, ...],
    props: tuple[str, ...],
    props_json: str | None,
    replace: bool,
    plane: str,
    as_json: bool,
) -> None:
    """Create a node, or update the node with this KEY (labels added, properties merged)."""
    values = parse_props(props, props_json)
    with obj.open(write=True) as db:
        result = db.plane(plane).put(key, labels, values, replace=replace)
    if as_json:
        emit_json({**result.node.to_json(), "seq": result.seq, "op": result.op})
    else:
        click.echo(f"{result.op} node {_describe_node(result.node)} (seq {result.seq})")


@node.command("delete")
@click.argument("ref", metavar="ID|@KEY")
@plane_option
@click.pass_obj
def node_delete(obj: Context, ref: str, plane: str) -> None:
    """Delete a node and every edge at it."""
    with obj.open(write=True) as db:
        result = db.plane(plane).delete(node_ref(ref))
    click.echo(f"deleted node {_describe_node(result.node)} and {result.edges} edge(s) (seq {result.seq})")


@node.command("history")
@click.argument("ref", metavar="ID|@KEY")
@plane_option
@json_option
@click.pass_obj
def node_history(obj: Context, ref: str, plane: str, as_json: bool) -> None:
    """Every version of one node, oldest first (a deletion shows as `deleted`)."""
    with obj.open(write=False) as db:
        p = db.plane(plane)
        obj.say_synced(db, plane, as_json)
        versions = p.history(node_ref(ref))
    for version in versions:
        record = version.record.to_json() if version.record is not None else None
        if as_json:
            emit_json({"seq": version.seq, "ts": version.ts, "deleted": record is None, "record": record})
        else:
            body = "deleted" if record is None else json.dumps(record, ensure_ascii=False)
            click.echo(f"seq {version.seq}\t{format_ms(version.ts)}\t{body}")


@click.group("edge")
def edge() -> None:
    """Write single edges."""


@edge.command("put")
@click.argument("src", metavar="SRC")
@click.argument("dst", metavar="DST")
@click.argument("edge_type", metavar="TYPE")
@prop_options
@plane_option
@json_option
@click.pass_obj
def edge_put(
    obj: Context,
    src: str,
    dst: str,
    edge_type: str,
    props: tuple[str, ...],
    props_json: str | None,
    plane: str,
    as_json: bool,
) -> None:
    """Create an edge SRC -[TYPE]-> DST (nodes by id or @key)."""
    values = parse_props(props, props_json)
    with obj.open(write=True) as db:
        result = db.plane(plane).link(node_ref(src), node_ref(dst), edge_type, values)
    made = result.edge
    if as_json:
        emit_json({**made.to_json(), "seq": result.seq})
    else:
        click.echo(f"created edge #{made.id} #{made.src} -[{made.type}]-> #{made.dst} (seq {result.seq})")


@edge.command("delete")
@click.argument("edge_id", type=int, metavar="ID")
@plane_option
@click.pass_obj
def edge_delete(obj: Context, edge_id: int, plane: str) -> None:
    """Delete one edge by id."""
    with obj.open(write=True) as db:
        edge_id = record_id(edge_id, "edge")
        result = db.plane(plane).unlink(edge_id)
    click.echo(f"deleted edge #{edge_id} (seq {result.seq})")


@click.command("neighbors")
@click.argument("ref", metavar="ID|@KEY")
@click.option("--dir", "direction", type=click.Choice(["out", "in", "both"]), default="both", show_default=True)
@click.option("--type", "edge_type", default=None, metavar="TYPE", help="Only edges of this type.")
@plane_option
@as_of_option
@json_option
@click.pass_obj
def neighbors(
    obj: Context,
    ref: str,
    direction: str,
    edge_type: str | None,
    plane: str,
    as_of: AsOf | None,
    as_json: bool,
) -> None:
    """A node's edges and the nodes at their other ends, now or --as-of an earlier commit."""
    with obj.open(write=False) as db:
        at = as_of or AsOf(seq=db.head())  # the node and its edges read at one commit
        p = db.plane(plane, as_of=at)
        center = p.get(node_ref(ref), as_of=at)
        obj.say_synced(db, plane, as_json)
        for hop in p.neighbours(center.id, direction=direction, type=edge_type, as_of=at):
            other = hop.node
            if as_json:
                emit_json(
                    {
                        "edge": hop.edge.to_json(),
                        "direction": hop.direction,
                        "node": other.to_json() if other else None,
                    }
                )
            else:
                arrow = f"-[{hop.edge.type}]->" if hop.direction == "out" else f"<-[{hop.edge.type}]-"
                label = (
                    _describe_node(other) if other else f"#{hop.edge.dst if hop.direction == 'out' else hop.edge.src}"
                )
                click.echo(f"{_describe_node(center)} {arrow} {label}\t(edge #{hop.edge.id})")


COMMANDS = [get, node, edge, neighbors]
