"""`drsg algo pagerank|components|shortest_path|louvain`: a graph algorithm over one snapshot.

The same call as JSON-RPC ``plane.algo`` (drsg.plan.algo's spec, drsg.workers.algo's answer);
``--json`` prints that answer as it is, the text form names each node by its key (else ``#id``).
"""

from __future__ import annotations

from typing import Any

import click

from drsg.kernel.asof import AsOf
from drsg.plan.algo import ALGOS, DAMPING, DIRECTIONS, LIMIT, MAX_ITERS, MAX_LEVELS, MIN_GAIN, TOLERANCE, AlgoSpec
from drsg.store.snapshot import Snapshot
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import as_of_option, json_option, node_ref, plane_option
from drsg.workers.algo import run_algo


def _ref(text: str | None) -> int | str | None:
    if text is None:
        return None
    ref = node_ref(text)
    return ref.removeprefix("@") if isinstance(ref, str) else ref


def _names(snap: Snapshot, plane: int, ids: list[int]) -> dict[int, str]:
    nodes = snap.nodes_at(plane, ids)
    return {i: (n.key if n is not None and n.key is not None else f"#{i}") for i, n in zip(ids, nodes, strict=True)}


@click.command("algo")
@click.argument("name", metavar="ALGO", type=click.Choice(ALGOS))
@plane_option
@click.option("--label", "-l", default=None, metavar="LABEL", help="Only this label's nodes and the edges among them.")
@click.option("--limit", default=LIMIT, show_default=True, type=click.IntRange(1), help="Rows to print.")
@click.option("--damping", default=DAMPING, show_default=True, type=float, help="pagerank: follow-an-edge odds.")
@click.option("--max-iters", default=MAX_ITERS, show_default=True, type=int, help="pagerank: iterations at most.")
@click.option("--tolerance", default=TOLERANCE, show_default=True, type=float, help="pagerank: stop below this change.")
@click.option("--src", default=None, metavar="ID|@KEY", help="shortest_path: where the path starts.")
@click.option("--dst", default=None, metavar="ID|@KEY", help="shortest_path: where it ends.")
@click.option(
    "--dir",
    "direction",
    type=click.Choice(DIRECTIONS),
    default="out",
    show_default=True,
    help="shortest_path: edges followed.",
)
@click.option("--weight", default=None, metavar="PROPERTY", help="shortest_path: a numeric edge property as cost.")
@click.option("--max-levels", default=MAX_LEVELS, show_default=True, type=int, help="louvain: levels at most.")
@click.option("--min-gain", default=MIN_GAIN, show_default=True, type=float, help="louvain: least gain for a move.")
@as_of_option
@json_option
@click.pass_obj
def algo(
    obj: Context,
    name: str,
    plane: str,
    label: str | None,
    limit: int,
    damping: float,
    max_iters: int,
    tolerance: float,
    src: str | None,
    dst: str | None,
    direction: str,
    weight: str | None,
    max_levels: int,
    min_gain: float,
    as_of: AsOf | None,
    as_json: bool,
) -> None:
    """Run a graph algorithm over a plane (or one --label) as of now or --as-of: pagerank (rank,
    best first), components (weakly connected; each node's group is its smallest id), louvain
    (communities, likewise) or shortest_path --src --dst (Dijkstra; --weight names the cost)."""
    spec = AlgoSpec(
        name, label, limit, damping, max_iters, tolerance, _ref(src), _ref(dst), direction, weight, max_levels, min_gain
    ).check()  # before the database is opened: a bad call reads nothing
    with obj.open(write=False) as db, db.snapshot(as_of) as snap:
        plane_id = snap.plane(plane).id
        result = run_algo(snap, plane_id, spec)
        obj.say_synced(db, plane, as_json)
        if as_json:
            emit_json(result)
            return
        _print(snap, plane_id, result, src, dst)


def _print(snap: Snapshot, plane: int, result: dict[str, Any], src: str | None, dst: str | None) -> None:
    if result["algo"] == "shortest_path":
        path = result["path"]
        if path is None:
            click.echo(f"no path from {src} to {dst}")
            return
        names = _names(snap, plane, path["nodes"])
        click.echo(f"path: cost {path['cost']:g}, {len(path['edges'])} hop(s)")
        click.echo("  " + " -> ".join(names[i] for i in path["nodes"]))
        return
    rows = result["results"]
    names = _names(snap, plane, [row["id"] for row in rows])
    if result["algo"] == "pagerank":
        click.echo(f"pagerank: {result['count']} node(s)")
        for row in rows:
            click.echo(f"  {row['score']:.6f}\t{names[row['id']]}")
        return
    field = "component" if result["algo"] == "components" else "community"
    groups = _names(snap, plane, sorted({row[field] for row in rows}))
    click.echo(f"{result['algo']}: {result['count']} group(s)")
    for row in rows:
        click.echo(f"  {groups[row[field]]}\t{names[row['id']]}")


COMMANDS = [algo]
