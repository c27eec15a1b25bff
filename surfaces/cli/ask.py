"""`ask`: a question in plain language → read-only plans (or a Cypher statement) → the subgraph they match."""

from __future__ import annotations

import json
from typing import Any

import click

from drsg.kernel.asof import AsOf
from drsg.models.providers import ChatChoice
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import as_of_option, chat_options, embed_options, json_option, plane_option
from drsg.surfaces.cli.search import embed_choice


@click.command("ask")
@click.argument("question")
@plane_option
@chat_options
@embed_options
@click.option("--dry-run", is_flag=True, help="Return the validated plans without running them.")
@click.option(
    "--max-attempts",
    default=None,
    type=click.IntRange(1, 100),
    help="Model turns (tool calls and repairs included) before giving up (default: [ask] max_attempts, 20).",
)
@click.option(
    "--limit",
    default=None,
    type=click.IntRange(0, 10_000),
    help="Limit added to each plan that has none; 0: none (default: [ask] limit, 100).",
)
@as_of_option
@json_option
@click.pass_obj
def ask(
    obj: Context,
    question: str,
    plane: str,
    dry_run: bool,
    max_attempts: int | None,
    limit: int | None,
    as_of: AsOf | None,
    as_json: bool,
    **flags: Any,
) -> None:
    """Ask a question of a plane in plain language: a chat model writes read-only plans, or one
    read-only Cypher statement, grounded on the plane's schema; drsg checks and runs them. --embed
    gives the model the find_edge and find_entity tools. Nothing is ever written.

    \b
    drsg ask "which machines did babbage design?" --plane startup --chat openai
    drsg ask "who worked at Bletchley Park, and what did they propose?" --embed local --dry-run
    """
    question = question.strip()
    if not question:
        raise click.UsageError('the question is empty; write it in quotes: drsg ask "who …?"')
    chat = ChatChoice(flags["chat"], flags["model"], flags["chat_url"], flags["chat_key_env"])
    embed = None  # the model gets the find_edge/find_entity tools only when an embedder is named
    if flags["embed"] is not None or flags["embed_url"] is not None:
        embed = embed_choice(flags["embed"], flags["embed_model"], flags["embed_url"], flags["embed_key_env"])
    with obj.open(write=False) as db:
        result = db.plane(plane).ask(
            question, chat=chat, as_of=as_of, dry_run=dry_run, embed=embed, max_attempts=max_attempts, limit=limit
        )
    if as_json:
        emit_json(result.to_json())
        return
    turns = result.attempts
    if result.cypher:
        click.echo(f"cypher ({turns} turn{'s' if turns != 1 else ''}):")
        click.echo("\n".join(result.cypher))
        if result.ran:
            click.echo(f"{len(result.rows)} row(s): {', '.join(result.columns)}")
            for row in result.rows:
                click.echo(json.dumps(list(row), ensure_ascii=False))
    else:
        click.echo(f"{len(result.plans)} plan(s) ({turns} turn{'s' if turns != 1 else ''}):")
        click.echo(json.dumps(result.plans, indent=2, ensure_ascii=False))
    if not result.ran:
        click.echo("(dry run — not executed)")
    else:
        click.echo(f"subgraph: {len(result.results)} nodes, {len(result.edges)} edges")
        names = {n["id"]: n["external_key"] or f"#{n['id']}" for n in result.results}
        for node in result.results:
            click.echo(json.dumps(node, ensure_ascii=False))
        for edge in result.edges:
            click.echo(
                f"  {names.get(edge['src'], edge['src'])} --{edge['type']}--> {names.get(edge['dst'], edge['dst'])}"
            )
    for bound in result.bounds:
        click.echo(f"bounded: {bound}")


COMMANDS = [ask]
