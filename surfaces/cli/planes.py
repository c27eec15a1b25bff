"""`drsg plane …`: list, create, show, rename, drop, set-props."""

from __future__ import annotations

import click

from drsg.kernel.asof import AsOf
from drsg.kernel.values import props_to_json
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import as_of_option, json_option, parse_props, prop_options


@click.group("plane")
def plane() -> None:
    """Planes: independent graphs inside one database (`startup` always exists)."""


@plane.command("list")
@json_option
@as_of_option
@click.pass_obj
def plane_list(obj: Context, as_json: bool, as_of: AsOf | None) -> None:
    """List planes with their node and edge counts."""
    with obj.open(write=False) as db:
        at = as_of or AsOf(seq=db.head())  # every plane counted at one commit
        for p in db.planes(as_of=at):
            nodes, edges = p.counts(as_of=at)
            if as_json:
                emit_json(
                    {
                        "id": p.id,
                        "name": p.name,
                        "nodes": nodes,
                        "edges": edges,
                        "properties": props_to_json(p.props),
                    }
                )
            else:
                click.echo(f"{p.name}\t{nodes} nodes, {edges} edges")


@plane.command("create")
@click.argument("name")
@prop_options
@click.pass_obj
def plane_create(obj: Context, name: str, props: tuple[str, ...], props_json: str | None) -> None:
    """Create a plane."""
    values = parse_props(props, props_json)
    with obj.open(write=True) as db:
        made = db.create_plane(name, values)
    click.echo(f"created plane '{name}' (id {made.id}, seq {made.seq})")


@plane.command("show")
@click.argument("name")
@json_option
@as_of_option
@click.pass_obj
def plane_show(obj: Context, name: str, as_json: bool, as_of: AsOf | None) -> None:
    """Show a plane: counts, labels, edge types, properties."""
    with obj.open(write=False) as db:
        p = db.plane(name, as_of=as_of)
        obj.say_synced(db, name, as_json)
        card = p.summary(as_of=as_of)
    if as_json:
        emit_json(
            {
                "id": card.id,
                "name": card.name,
                "nodes": card.nodes,
                "edges": card.edges,
                "labels": card.labels,
                "edge_types": card.edge_types,
                "properties": props_to_json(card.props),
                "seq": card.seq,
                "fusion_profiles": [decl.to_json() for decl in card.fusion_profiles],
            }
        )
        return
    click.echo(f"plane '{card.name}' (id {card.id}) at seq {card.seq}: {card.nodes} nodes, {card.edges} edges")
    for label, count in sorted(card.labels.items()):
        click.echo(f"  :{label}\t{count}")
    for edge_type, count in sorted(card.edge_types.items()):
        click.echo(f"  -[{edge_type}]->\t{count}")
    for decl in card.fusion_profiles:
        from drsg.plan.hybrid import FusionProfile  # the plan language loads for a plane with fitted fusion only

        fused = FusionProfile.from_json(decl.profile).describe()
        click.echo(f"  fusion {decl.label} ({decl.vector} + {decl.keyword}), commit {decl.since}: {fused}")
    for key, value in props_to_json(card.props).items():
        click.echo(f"  {key} = {value}")


@plane.command("rename")
@click.argument("name")
@click.argument("to")
@click.pass_obj
def plane_rename(obj: Context, name: str, to: str) -> None:
    """Rename a plane (its id and contents stay)."""
    with obj.open(write=True) as db:
        db.plane(name).rename(to)
    click.echo(f"renamed plane '{name}' to '{to}'")


@plane.command("drop")
@click.argument("name")
@click.pass_obj
def plane_drop(obj: Context, name: str) -> None:
    """Drop a plane. Its history stays readable with --as-of before the drop."""
    with obj.open(write=True) as db:
        seq = db.plane(name).drop()
    before = (seq or 1) - 1
    click.echo(f"dropped plane '{name}' (seq {seq}; its contents stay readable with --as-of {before})")


@plane.command("set-props")
@click.argument("name")
@prop_options
@click.pass_obj
def plane_set_props(obj: Context, name: str, props: tuple[str, ...], props_json: str | None) -> None:
    """Set plane properties (merged into the existing ones)."""
    values = parse_props(props, props_json)
    with obj.open(write=True) as db:
        db.plane(name).set_props(values)
    click.echo(f"set {len(values)} propert{'y' if len(values) == 1 else 'ies'} on plane '{name}'")


COMMANDS = [plane]
