"""Nodes and edges: `node put|get|delete|history`, `edge put|delete`, `get`, `neighbors`."""

from __future__ import annotations

import json

import click

from drsg.kernel.asof import AsOf, format_ms
from drsg.kernel.errors import NotFound
from drsg.store.records import Edge, Node
from drsg.store.snapshot import Snapshot
from drsg.store.transaction import WriteTx
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


def _find(snap: Snapshot, plane: str, ref: str) -> Node:
    p = snap.plane(plane)
    target = node_ref(ref)
    node = snap.node(p.id, target) if isinstance(target, int) else snap.node_by_key(p.id, target.removeprefix("@"))
    if node is None:
        raise NotFound(f"no node {ref} in plane {plane!r} at seq {snap.at}; check the id or @key")
    return node


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
    with obj.open(write=False) as db, db.snapshot(as_of) as snap:
        node = _find(snap, plane, ref)
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
    mode = "replace" if replace else "update"
    with obj.open(write=True) as db:
        result = db.write(lambda tx: tx.put_node(tx.plane(plane), key, labels, values, mode=mode), {"via": "cli"})
    verb, written = result.value
    if as_json:
        emit_json({**written.to_json(), "seq": result.seq, "op": verb})
    else:
        click.echo(f"{verb} node {_describe_node(written)} (seq {result.seq})")


@node.command("delete")
@click.argument("ref", metavar="ID|@KEY")
@plane_option
@click.pass_obj
def node_delete(obj: Context, ref: str, plane: str) -> None:
    """Delete a node and every edge at it."""

    def delete(tx: WriteTx) -> tuple[Node, int]:
        p = tx.plane(plane)
        gone = tx.delete_node(p, node_ref(ref))
        return gone, sum(1 for m in tx.mutations if m.op == "edge.delete")

    with obj.open(write=True) as db:
        result = db.write(delete, {"via": "cli"})
    gone, edges = result.value
    click.echo(f"deleted node {_describe_node(gone)} and {edges} edge(s) (seq {result.seq})")


@node.command("history")
@click.argument("ref", metavar="ID|@KEY")
@plane_option
@json_option
@click.pass_obj
def node_history(obj: Context, ref: str, plane: str, as_json: bool) -> None:
    """Every version of one node, oldest first (a deletion shows as `deleted`)."""
    with obj.open(write=False) as db, db.snapshot() as snap:
        p = snap.plane(plane)
        obj.say_synced(db, plane, as_json)
        target = node_ref(ref)
        node_id = target if isinstance(target, int) else snap.key_holder(p.id, target.removeprefix("@"))
        versions = snap.node_history(p.id, node_id) if node_id is not None else []
        if not versions:
            raise NotFound(f"node {ref} never existed in plane {plane!r}")
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
        result = db.write(
            lambda tx: tx.create_edge(tx.plane(plane), node_ref(src), node_ref(dst), edge_type, values),
            {"via": "cli"},
        )
    made: Edge = result.value
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
        result = db.write(lambda tx: tx.delete_edge(tx.plane(plane), edge_id), {"via": "cli"})
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
    with obj.open(write=False) as db, db.snapshot(as_of) as snap:
        center = _find(snap, plane, ref)
        obj.say_synced(db, plane, as_json)
        for hop in snap.neighbors(center.plane, center.id, direction, edge_type):
            other = snap.node(center.plane, hop.node)
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
                label = _describe_node(other) if other else f"#{hop.node}"
                click.echo(f"{_describe_node(center)} {arrow} {label}\t(edge #{hop.edge.id})")


COMMANDS = [get, node, edge, neighbors]
