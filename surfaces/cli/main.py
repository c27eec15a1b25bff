"""`drsg --db graph.drsg <command>` — the entry point and the command tree."""

from __future__ import annotations

import importlib
import os
import sys
import time
import traceback
from typing import Any

import click

from drsg import __version__
from drsg.kernel import gcpause, logs, settings
from drsg.kernel.errors import DrsgError
from drsg.surfaces.cli import context
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
    "cypher": "cypher",
    "code": "code",
    "hybrid-eval": "evaluate",
    "digest": "digest",
    "init": "init",
    "feed": "feed",
    "serve": "serve",
    "mcp": "mcp",
    "plugin": "plugins",
    **dict.fromkeys(("catalog", "find"), "catalog"),
    "workers": "workers",
    **dict.fromkeys(("snapshot", "restore", "compact"), "backup"),
}


#: the group's own options, which a user may also type after the command (`drsg mcp --db X`): name →
#: whether it takes a value. A command's own option of the same name (digest's -v) keeps its meaning.
GLOBAL_OPTIONS = {"--db": True, "-d": True, "--config": True, "--log": True, "-v": False, "--verbose": False}


class DrsgGroup(click.Group):
    """Turns drsg errors into one line and the documented exit code (0 ok, 1 runtime, 2 usage);
    loads a command's module only when the command is asked for (:data:`COMMAND_MODULES`)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMAND_MODULES, *self.commands})

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:  # click suggests among loaded commands: offer them all
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=exc.ctx
            ) from None

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, self._hoisted(ctx, args))

    def _hoisted(self, ctx: click.Context, args: list[str]) -> list[str]:
        """``args`` with the global options typed after the command moved before it, where click
        reads them: ``stats --db X`` is ``--db X stats``. Nothing after ``--`` moves."""
        at = 0
        while at < len(args) and args[at].startswith("-") and args[at] != "--":
            at += 2 if GLOBAL_OPTIONS.get(args[at], False) else 1  # a leading option (and its value)
        if at >= len(args) or args[at] == "--":
            return args
        command = self.get_command(ctx, args[at])
        taken = _option_names(command) if command is not None else set()
        before, rest, after = list(args[:at]), [args[at]], iter(args[at + 1 :])
        for token in after:
            if token == "--":
                rest += [token, *after]
                break
            name = token.split("=", 1)[0] if token.startswith("--") else token
            short_vs = len(token) > 1 and token.strip("v") == "-"  # -v, -vv
            if (name in GLOBAL_OPTIONS or short_vs) and (name if not short_vs else "-v") not in taken:
                before.append(token)
                if GLOBAL_OPTIONS.get(name) and "=" not in token:
                    value = next(after, None)
                    if value is None:
                        raise click.BadOptionUsage(name, f"Option '{name}' requires an argument.", ctx=ctx)
                    before.append(value)
            else:
                rest.append(token)
        return before + rest

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
            message = exc.format_message().rstrip(".")
            see = f" See `{where} --help`." if message.endswith("?") else f"; see `{where} --help`"  # "Did you mean …?"
            click.echo(f"error: {message}{see}", err=True)
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


def _option_names(command: click.Command) -> set[str]:
    """Every option name a command (and, for a group, every command under it) declares."""
    names = {name for p in command.params if isinstance(p, click.Option) for name in (*p.opts, *p.secondary_opts)}
    for sub in getattr(command, "commands", {}).values():
        names |= _option_names(sub)
    return names


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

    Every write is a commit on the log; reads can go back to any commit (--as-of). The options
    below may come before the command or after it (`drsg stats --db graph.drsg`).
    """
    try:
        loaded = settings.load(config, flags={"log.url": log_url})
    except DrsgError as exc:
        fail(exc)
    level = {0: loaded.text("logging.level"), 1: "info"}.get(verbose, "debug")
    if not _whole_process:  # run inside another program: its logging is as it was once the command returns
        ctx.call_on_close(logs.saved())
    logs.configure(level, loaded.text("logging.format"))
    ctx.obj = Context(db_path=db_path, config=config, verbose=verbose, settings=loaded)


#: whether the command is the process (`drsg`, main()): its logging then stays set up to the very end
_whole_process = False
#: seconds a `drsg` process starts with the garbage collector paused (kernel/gcpause.py): what it
#: allocates then is imports and tables kept to its end, not garbage; a longer command has it back
START_PAUSE = 1.0


def main() -> None:
    global _whole_process
    _whole_process = True
    context.began = process_began()  # a broker's refusal counts from here (context.began)
    run_supervised(_command)


def _command() -> None:
    gcpause.pause_for(START_PAUSE)  # in the child: its timer's thread does not survive the fork
    cli(prog_name="drsg")


def process_began() -> float:
    """The ``time.monotonic()`` this process started at (Linux's /proc; elsewhere: now), so the
    interpreter's start and the imports before main() count against a stated bound too."""
    try:
        with open("/proc/self/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])  # field 22, starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return time.monotonic()
    return time.monotonic() - min(max(age, 0.0), 60.0)
