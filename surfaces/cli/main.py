"""`drsg --db graph.drsg <command>` — the entry point and the command tree."""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Any

import click

from drsg import __version__
from drsg.kernel import logs, settings
from drsg.kernel.errors import DrsgError
from drsg.surfaces.cli.context import Context, fail
from drsg.surfaces.cli.supervise import run_supervised

#: Each command's module under drsg.surfaces.cli, imported when the command runs (or ``--help``
#: lists them all): together they pull in numpy, hnswlib, tantivy and wasmtime, 0.33 s of a 0.48 s
#: start, so ``drsg get`` or ``drsg import`` imported them all for nothing (``drsg stats`` now
#: starts and answers in about 0.2 s).
#: tests/integration/test_cli.py checks this against every module's COMMANDS.
COMMAND_MODULES: dict[str, str] = {
    "plane": "planes",
    **dict.fromkeys(("get", "node", "edge", "neighbors"), "records"),
    **dict.fromkeys(("import", "export"), "bulk"),
    **dict.fromkeys(("log", "stats", "check", "rebuild", "config"), "history"),
    "diff": "diff",
    **dict.fromkeys(("index", "search", "query", "vectorize"), "search"),
    "hybrid": "hybrid",
    "algo": "algo",
    "ask": "ask",
    "hybrid-eval": "evaluate",
    "digest": "digest",
    "init": "init",
    "feed": "feed",
    "serve": "serve",
    "mcp": "mcp",
    "plugin": "plugins",
    **dict.fromkeys(("catalog", "find"), "catalog"),
    "workers": "workers",
}


class DrsgGroup(click.Group):
    """Turns drsg errors into one line and the documented exit code (0 ok, 1 runtime, 2 usage);
    loads a command's module only when the command is asked for (:data:`COMMAND_MODULES`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMAND_MODULES, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            for command in importlib.import_module(f"drsg.surfaces.cli.{module}").COMMANDS:
                self.add_command(command)
        return self.commands.get(cmd_name)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """click's own usage errors (a missing argument, an unknown option, a bad choice) are one
        line too, naming the help to read, instead of click's usage block."""
        kwargs["standalone_mode"] = False
        try:
            return super().main(*args, **kwargs)
        except click.exceptions.NoArgsIsHelpError as exc:  # `drsg`, `drsg node`: the help is the answer
            click.echo(exc.ctx.get_help() if exc.ctx is not None else exc.format_message(), err=True)
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "drsg"
            click.echo(f"error: {exc.format_message().rstrip('.')}; see `{where} --help`", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            click.echo(f"error: {exc.format_message()}", err=True)
            sys.exit(exc.exit_code)
        except click.exceptions.Exit as exc:
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("aborted; nothing more was written", err=True)
            sys.exit(1)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DrsgError as exc:
            fail(exc)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            sys.stderr.close()  # `drsg export | head`: the reader left; not an error
            sys.exit(0)
        except KeyboardInterrupt:
            click.echo("interrupted; nothing more was written", err=True)
            sys.exit(130)
        except Exception as exc:
            verbose = ctx.obj.verbose if isinstance(ctx.obj, Context) else 0
            if verbose:
                traceback.print_exc()
            click.echo(f"internal error: {type(exc).__name__}: {exc} (run with -v for the traceback)", err=True)
            sys.exit(1)


@click.group(cls=DrsgGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    "-d",
    "db_path",
    default="graph.drsg",
    show_default=True,
    envvar="DRSG_DB",
    help="The database file (env DRSG_DB).",
)
@click.option("--config", default=None, metavar="PATH", help="drsg.toml to read (else $DRSG_CONFIG, else ./drsg.toml).")
@click.option(
    "--log",
    "log_url",
    default=None,
    metavar="URL",
    help="The log: kafka://HOST:PORT/TOPIC writes through Kafka, --db is then this node's copy ([log] url).",
)
@click.option("-v", "--verbose", count=True, help="More detail: -v info logs, -vv debug logs and tracebacks.")
@click.version_option(__version__, prog_name="drsg")
@click.pass_context
def cli(ctx: click.Context, db_path: str, config: str | None, log_url: str | None, verbose: int) -> None:
    """drsg — an AI-native graph store around one append-only log.

    Every write is a commit on the log; reads can go back to any commit (--as-of).
    """
    try:
        loaded = settings.load(config, flags={"log.url": log_url})
    except DrsgError as exc:
        fail(exc)
    level = {0: loaded["logging.level"], 1: "info"}.get(verbose, "debug")
    logs.configure(level, loaded["logging.format"])
    ctx.obj = Context(db_path=db_path, config=config, verbose=verbose, settings=loaded)


def main() -> None:
    run_supervised(lambda: cli(prog_name="drsg"))
