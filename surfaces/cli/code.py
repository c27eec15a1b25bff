"""`drsg code context|describe|grep|trace|impact|snippet`: the code verbs on a code plane (``Plane.code()``).

Text by default — each place as ``file:line`` — and ``--json`` for the answer as one JSON object; the
plane's drift line first (on stderr beside ``--json``), as every read of a code plane says it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from drsg.api.code import Code, Description, Grep, Impact, Site, Snippet, Symbol, Trace
from drsg.api.code import Context as CodeContext
from drsg.kernel.asof import AsOf
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import as_of_option, json_option, plane_option


def _where(symbol: Symbol) -> str:
    return f"{symbol.key}  ({symbol.receipt})" if symbol.receipt else f"{symbol.key}  (outside the tree)"


def _site(site: Site) -> str:
    return f"  {site.at or '-':<28} {site.symbol.key}"


def render_context(answer: CodeContext) -> list[str]:
    lines = [f"{'/'.join(answer.symbol.labels)} {_where(answer.symbol)}"]
    if answer.signature:
        lines.append(f"  {answer.signature}")
    if answer.doc:
        lines += [f"  | {line}" for line in answer.doc.splitlines()]
    lines.append(f"callers ({len(answer.callers)}):")
    lines += [_site(site) for site in answer.callers]
    lines.append(f"callees ({len(answer.callees)}):")
    lines += [_site(site) for site in answer.callees]
    if answer.other:
        lines.append(f"other edges ({len(answer.other)}):")
        arrow = {"in": "<-", "out": "->"}
        lines += [f"  {s.at or '-':<28} {arrow[s.direction]}[{s.type}] {s.symbol.key}" for s in answer.other]
    if answer.omitted:
        lines.append(f"… {answer.omitted} more edges left out to stay under 24,000 characters (--json is capped alike)")
    return lines


def render_describe(answer: Description) -> list[str]:
    lines = [f"{'/'.join(answer.symbol.labels)} {_where(answer.symbol)}"]
    return lines + [f"  {name}: {value}" for name, value in answer.props]


def render_grep(answer: Grep) -> list[str]:
    lines = [f"{hit.at}: {hit.text}" + (f"    [{hit.symbol}]" if hit.symbol else "") for hit in answer.hits]
    more = " (stopped at --max-results)" if answer.truncated else ""
    return [*lines, f"{len(answer.hits)} line(s) in {answer.files} file(s){more}"]


def render_trace(answer: Trace) -> list[str]:
    if not answer.found:
        return [f"no recorded call path between {answer.src.key} and {answer.dst.key}, either way"]
    head = f"{answer.dst.key} → {answer.src.key} (no path the way asked; this is the reverse)"
    lines = [head if answer.reversed else f"{answer.src.key} → {answer.dst.key}: {len(answer.hops)} hop(s)"]
    return lines + [f"  {hop.at or '-':<28} {hop.caller.key} → {hop.callee.key}" for hop in answer.hops]


def render_impact(answer: Impact) -> list[str]:
    lines = [f"impact of {_where(answer.symbol)}: {answer.total} symbol(s) within {answer.depth} hop(s)"]
    for distance, level in enumerate(answer.levels, 1):
        lines.append(f"distance {distance} ({len(level)}):")
        lines += [f"  {r.at or '-':<28} {r.symbol.key}  -[{r.type}]-> {r.through}" for r in level]
    return lines


def render_snippet(answer: Snippet) -> list[str]:
    start = answer.start or 1
    lines = [f"{_where(answer.symbol)}  [{answer.source}]"]
    return lines + [f"{start + i:>5}  {line}" for i, line in enumerate(answer.text.splitlines())]


def _run(obj: Context, plane: str, as_of: AsOf | None, as_json: bool, verb: Callable[[Code], Any]) -> None:
    renderers: dict[type, Callable[[Any], list[str]]] = {
        CodeContext: render_context,
        Description: render_describe,
        Grep: render_grep,
        Trace: render_trace,
        Impact: render_impact,
        Snippet: render_snippet,
    }
    with obj.open(write=False) as db:
        answer = verb(db.plane(plane, as_of=as_of).code(as_of=as_of))
    if answer.synced:
        click.echo(answer.synced, err=as_json)
    if as_json:
        emit_json(answer.to_json())
        return
    for line in renderers[type(answer)](answer):
        click.echo(line)


def _verb_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    return plane_option(as_of_option(json_option(click.pass_obj(fn))))


@click.group("code")
def code() -> None:
    """Code questions on a code plane (`drsg digest DIR --plane P --apply`'s), each place as file:line."""


@code.command("context")
@click.argument("symbol")
@_verb_options
def context(obj: Context, symbol: str, plane: str, as_of: AsOf | None, as_json: bool) -> None:
    """SYMBOL's definition, signature, doc, callers with their call sites, callees and other edges.
    SYMBOL is a key (pkg.mod.func), else the end of one (func, Class.method), else part of one."""
    _run(obj, plane, as_of, as_json, lambda c: c.context(symbol))


@code.command("describe")
@click.argument("symbol")
@_verb_options
def describe(obj: Context, symbol: str, plane: str, as_of: AsOf | None, as_json: bool) -> None:
    """SYMBOL's properties as `prop: value` lines (vectors elided, `_` provenance left out)."""
    _run(obj, plane, as_of, as_json, lambda c: c.describe(symbol))


@code.command("grep")
@click.argument("pattern")
@click.option("--ignore-case", "-i", is_flag=True, help="Match regardless of case.")
@click.option("--max-results", default=50, show_default=True, type=click.IntRange(1, 200), help="Lines to show.")
@_verb_options
def grep(
    obj: Context, pattern: str, ignore_case: bool, max_results: int, plane: str, as_of: AsOf | None, as_json: bool
) -> None:
    """Lines holding PATTERN (literally) in the files of the tree the plane was read from, each with
    the definition it falls under."""
    _run(obj, plane, as_of, as_json, lambda c: c.grep(pattern, ignore_case=ignore_case, max_results=max_results))


@code.command("trace")
@click.argument("src", metavar="FROM")
@click.argument("dst", metavar="TO")
@_verb_options
def trace(obj: Context, src: str, dst: str, plane: str, as_of: AsOf | None, as_json: bool) -> None:
    """The shortest recorded call path from FROM to TO, each hop with its call site (else TO to FROM,
    said so)."""
    _run(obj, plane, as_of, as_json, lambda c: c.trace(src, dst))


@code.command("impact")
@click.argument("symbol")
@click.option("--depth", default=3, show_default=True, type=click.IntRange(1, 6), help="Hops to follow back.")
@_verb_options
def impact(obj: Context, symbol: str, depth: int, plane: str, as_of: AsOf | None, as_json: bool) -> None:
    """What reaches SYMBOL through CALLS, REFERENCES, INSTANTIATES, IMPORTS, EXTENDS or IMPLEMENTS
    edges, by distance."""
    _run(obj, plane, as_of, as_json, lambda c: c.impact(symbol, depth=depth))


@code.command("snippet")
@click.argument("symbol")
@click.option("--lines", "-n", default=40, show_default=True, type=click.IntRange(1, 400), help="Lines to show.")
@_verb_options
def snippet(obj: Context, symbol: str, lines: int, plane: str, as_of: AsOf | None, as_json: bool) -> None:
    """SYMBOL's source: what the parser stored, else LINES lines of its file from its definition."""
    _run(obj, plane, as_of, as_json, lambda c: c.snippet(symbol, lines=lines))


COMMANDS = [code]
