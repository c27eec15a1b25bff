"""The log and the database as a whole: `log`, `stats`, `check`, `rebuild`, `config`."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import click

from drsg.kernel.asof import format_ms
from drsg.store.log import Commit
from drsg.store.verify import verify_file
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import json_option


def _commit_line(commit: Commit) -> str:
    ops = Counter(m.op for m in commit.mutations)
    summary = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in ops.items())
    via = commit.origin.get("via", "-")
    return f"seq {commit.seq}\t{format_ms(commit.ts)}\t{via}\t{summary}"


@click.command("log")
@click.option(
    "--from",
    "from_seq",
    type=click.IntRange(min=1),
    default=None,
    help="First commit seq to show (default: the oldest retained, see [log] retain_commits).",
)
@click.option("--to", "to_seq", type=click.IntRange(min=1), default=None, help="Last commit seq to show.")
@click.option("--follow", "-f", is_flag=True, help="Keep waiting for new commits (Ctrl-C to stop).")
@json_option
@click.pass_obj
def log_cmd(obj: Context, from_seq: int | None, to_seq: int | None, follow: bool, as_json: bool) -> None:
    """Show commits: seq, time, origin and mutations (--json: one commit per line)."""
    with obj.open(write=False) as db:
        if from_seq is None:
            from_seq = db.retained().oldest
        commits = db.follow(from_seq) if follow and to_seq is None else db.commits(from_seq, to_seq)
        try:
            for commit in commits:
                if as_json:
                    emit_json(commit.to_json())
                else:
                    click.echo(_commit_line(commit))
        except KeyboardInterrupt:
            return


@click.command("stats")
@json_option
@click.pass_obj
def stats(obj: Context, as_json: bool) -> None:
    """Counts of planes, nodes, edges and commits."""
    with obj.open(write=False) as db:
        figures = db.stats()
        readers = db.pins.holders(prune=False)  # long readers elsewhere (`log --follow`, feeds): store/readers.py
    if as_json:
        emit_json(figures.to_json())
    else:
        click.echo(f"{figures.planes} planes, {figures.nodes} nodes, {figures.edges} edges")
        click.echo(f"{figures.commit_seq} commits, {figures.file_size} bytes on disk")
        click.echo(f"history: commits {figures.oldest}..{figures.commit_seq} may be read")
        if readers:
            oldest = min(reader.seq for reader in readers)
            click.echo(
                f"long readers: {len(readers)} (they read from commit {oldest:,} on; history compaction "
                f"leaves it): {'; '.join(reader.who for reader in readers)}"
            )
        log_state = figures.to_json().get("log")  # a node on a Kafka log: its copy against the topic
        if isinstance(log_state, dict):
            click.echo(
                f"log {log_state['url']}: {log_state['materialised']} of {log_state['head']} commits materialised; "
                f"poison records skipped: {log_state['poison_records']} (each logged as kafka_record_skipped)"
            )
            if log_state["error"]:
                click.echo(f"materialiser's last error: {log_state['error']}")
            rebuilt = log_state.get("rebuilt")  # store/kafka/copymark.py: after a power loss
            if isinstance(rebuilt, dict):
                click.echo(f"copy rebuilt from the topic at {rebuilt['at']}: {rebuilt['reason']}")


@click.command("check")
@json_option
@click.pass_obj
def check(obj: Context, as_json: bool) -> None:
    """Verify the whole file: every table's order, every log record's checksum with no gap, and the
    projection against a replay of the log (run in a child process, so damage is a report, not a crash).

    --json prints one object: {"ok", "commits", "nodes", "records": {table: count}, "problems", "notes"};
    the exit code is 1 when the file is damaged, either way."""
    report = verify_file(Path(obj.db_path))
    figures = {"ok": report.ok, "commits": report.commits, "records": report.records}
    if not report.ok:
        if as_json:
            emit_json({**figures, "nodes": None, "problems": report.problems, "notes": report.notes})
        for problem in report.problems:
            click.echo(f"damaged: {problem}", err=True)
        raise SystemExit(1)
    with obj.open(write=False) as db, db.snapshot() as snap:  # verified: safe to read in this process
        nodes = sum(sum(1 for _ in snap.nodes(p.id)) for p in snap.planes())
    if as_json:
        emit_json({**figures, "nodes": nodes, "problems": [], "notes": report.notes})
        return
    for note in report.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(
        f"ok: {report.commits} commits verified, {nodes} nodes readable across all planes; "
        f"{sum(report.records.values())} records in {len(report.records)} tables, and the projection "
        "matches a replay of the log"
    )


@click.command("rebuild")
@click.pass_obj
def rebuild(obj: Context) -> None:
    """Rebuild the graph projection from the log alone (after a suspected inconsistency)."""
    with obj.open(write=True) as db:
        head = db.rebuild_projection()
    click.echo(f"rebuilt the projection from {head} commits")


@click.command("config")
@json_option
@click.pass_obj
def config(obj: Context, as_json: bool) -> None:
    """Show every setting of every drsg.toml section, its value as drsg.toml takes it and where it came
    from (flag, env, drsg.toml, default); secrets masked."""
    for entry in obj.settings.entries():
        if as_json:
            record = {"name": entry.name, "env": entry.env, "value": entry.value, "source": entry.source}
            emit_json({**record, "help": entry.help}, default=str)  # str: a TOML date in a plugin's table
        else:
            env = f"env {entry.env}" if entry.env else "drsg.toml only"
            click.echo(f"{entry.name} = {entry.written}\t({entry.source}; {env}) — {entry.help}")


COMMANDS = [log_cmd, stats, check, rebuild, config]
