"""`drsg init [DIR]`: a repository made ready for drsg in one command, one line (or JSON object) per step.

1. ``drsg.toml``: the ``[digest]`` settings of the registry, each under its description — only when
   there is no such file (a user's file is kept, never rewritten); for the repository: commit it;
2. ``.gitignore``: the patterns for drsg's database and sidecars that it lacks, appended under
   ``# drsg`` and each named on the terminal — files every user of drsg makes, so the rule is shared;
3. ``.mcp.json``: the ``drsg`` server a coding agent starts (``drsg --db DB mcp``), every other key
   and server kept. The entry names this machine's paths, so inside git the file is kept out of
   commits in ``.git/info/exclude`` (this clone's own rules, not the shared ``.gitignore``), said so;
4. a first ``digest --apply`` of DIR into its plane — code only unless the chat model has its key,
   with the digest's warning when ignore rules withhold most of the tree.

What init writes is not drift: the walk's floor never reads ``drsg.toml`` or dotfiles, so a plane
read right after it does not say "2 untracked".

Every step is idempotent: run again, each line says "already …" or "unchanged", and the digest
writes no commit (the ledger restates nothing that is already stated). What can fail is checked
before anything is written: DIR, a ``.mcp.json`` that is not a JSON object, a ``drsg.toml`` that
does not load, the walk's flags and the chat provider's name. Files are written atomically.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from drsg.kernel import settings as settings_mod
from drsg.kernel.errors import ConfigError, UsageError
from drsg.kernel.files import user_file_mode, write_atomic
from drsg.surfaces.cli.context import Context, emit_json
from drsg.surfaces.cli.options import json_option, walk_options

CONFIG = "drsg.toml"
GITIGNORE = ".gitignore"
MCP = ".mcp.json"
DB_NAME = "graph.drsg"
SERVER = "drsg"
HEADER = "# drsg"
#: the store's sidecars that are folders (the others are files); see walk.STORE_SIDECARS
_FOLDERS = (".hnsw", ".bm25", ".digest")
#: settings written commented out: giving one at all changes behaviour, even at its default value
#: (an embed_provider that is set pins `serve`'s text-query embedder instead of each plane's recorded one)
_UNSET = {"digest.embed_provider": "unset: each plane keeps the embedder that wrote its vectors"}


def ignore_patterns() -> list[str]:
    """What `.gitignore` needs for drsg's files: the database and each sidecar (folders with a `/`) —
    names only drsg makes (a `logs/` or `.mcp.json` rule could hide a project's own files)."""
    from drsg.pipeline.code.walk import STORE_SIDECARS

    sidecars = [f"*.drsg{name}" + ("/" if name in _FOLDERS else "") for name in STORE_SIDECARS]
    return ["*.drsg", *sidecars]


def render_config() -> str:
    """``drsg.toml`` holding the registry's ``[digest]`` defaults, each under its description."""
    lines = [
        "# drsg's settings for this repository; `drsg config` shows each one's value and where it came from.",
        "# Precedence: a command-line flag, then DRSG_<SECTION>_<KEY> in the environment, then this file.",
        '# API keys go under [llm] (e.g. OPENAI_API_KEY = "…"), or in the environment; never commit them.',
        "",
        "[digest]",
    ]
    for setting in settings_mod.REGISTRY:
        if setting.section != "digest":
            continue
        lines.append(f"# {setting.help}" + (f" (env {setting.env})" if setting.env else ""))
        line = f"{setting.key} = {_toml(setting.default)}"
        if setting.name in _UNSET:
            line = f"# {line}  ({_UNSET[setting.name]})"
        lines.append(line)
    return "\n".join(lines) + "\n"


def _toml(value: object) -> str:
    """A registry default as TOML: JSON's strings, numbers and lists are TOML's too (not its null, maps)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    raise TypeError(f"no TOML for the default {value!r}")  # a new kind of setting: teach it here


@dataclass
class Step:
    """One step's account: printed as one line, or one JSON object."""

    action: str
    path: str
    status: str  # written / kept; created / added / unchanged; created / added / updated / unchanged; …
    line: str
    extra: dict[str, Any]

    def show(self, as_json: bool) -> None:
        if as_json:
            emit_json({"action": self.action, "path": self.path, "status": self.status, **self.extra})
        else:
            click.echo(self.line)


@click.command("init")
@click.argument("directory", required=False, default=".", metavar="[DIR]")
@click.option("--plane", "-p", default=None, metavar="NAME", help="The plane DIR is read into (default: its name).")
@walk_options
@json_option
@click.pass_context
def init_cmd(
    ctx: click.Context,
    directory: str,
    plane: str | None,
    ignore_files: str | None,
    tracked_only: bool | None,
    code_only: bool | None,
    as_json: bool,
) -> None:
    """Make DIR (default `.`) ready for drsg, saying what each step did: write drsg.toml with the
    [digest] settings and their defaults (an existing one is kept; commit it), add the patterns of
    drsg's database and sidecars to .gitignore (each one named), add the `drsg` server to .mcp.json
    for coding agents (`drsg --db DB mcp`; other servers kept) — in git, kept out of commits in
    .git/info/exclude, as it names this machine's paths — and digest DIR into its plane (code only
    unless the chat model's API key is set), warning when ignore rules withhold most of DIR. The
    walk never reads drsg.toml or dotfiles, so what init writes does not count as drift.

    The database is --db when given, else DIR/graph.drsg. Running it again changes nothing and says
    so. Nothing is written when a check fails (DIR, a .mcp.json that is not JSON, a broken drsg.toml)."""
    obj: Context = ctx.obj
    root = Path(directory).expanduser()
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise click.UsageError(f"{directory} {what}; name the repository's directory")
    root = root.resolve()
    db = Path(os.path.abspath(obj.db_path if _given(ctx, "db_path") else root / DB_NAME))
    # ---- every check, before anything is written
    config_path, mcp_path, ignore_path = root / CONFIG, root / MCP, root / GITIGNORE
    mcp = _read_mcp(mcp_path)
    named_config = obj.config or os.environ.get("DRSG_CONFIG")
    found = None
    if not named_config and config_path.is_file():
        found = settings_mod.load(str(config_path))  # a drsg.toml that does not load stops here
    if not db.parent.is_dir():
        raise UsageError(f"the database's folder {db.parent} does not exist; create it or choose another --db")
    given = {"ignore_files": ignore_files, "tracked_only": tracked_only, "code_only": code_only}
    _check_walk(found or obj.settings, root, given)
    ignore_text = _read_text(ignore_path)
    entry = {"command": _executable(), "args": ["--db", str(db), "mcp"]}
    # ---- the files
    steps = [_write_config(config_path), _write_ignore(ignore_path, ignore_text), _write_mcp(mcp_path, mcp, entry)]
    _exclude_locally(root, steps[2])
    for step in steps:
        step.show(as_json)
    # ---- the first digest, with the repository's own settings unless a config was named
    loaded = obj.settings if named_config else found or settings_mod.load(str(config_path))
    here = replace(obj, db_path=str(db), settings=loaded)
    step = _digest_step(ctx, here, root, plane, given)
    step.show(as_json)
    if step.extra["warning"] and not as_json:
        click.echo(f"warning: {step.extra['warning']}", err=True)
    if not as_json:
        click.echo(
            f"to keep plane {step.extra['plane']!r} current as the tree changes: drsg --db {db} serve watch {root}"
        )


def _given(ctx: click.Context, name: str) -> bool:
    """Whether the root command's parameter was given (on the command line or by its variable)."""
    source = ctx.find_root().get_parameter_source(name)
    return source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT)


def _executable() -> str:
    """The running `drsg` (the script this process started from, else the one beside this Python), else `drsg`."""
    started = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if started is not None and started.name == "drsg" and started.is_file():
        return os.path.abspath(started)
    beside = Path(sys.executable).parent / "drsg"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("drsg") or "drsg"


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="surrogateescape")  # written back byte for byte
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(
            f"cannot read {path}: {exc.strerror}; fix its permissions and run `drsg init` again"
        ) from None


def _read_mcp(path: Path) -> dict[str, Any] | None:
    """The existing ``.mcp.json`` (None: there is none); one that is not a JSON object is an error."""
    text = _read_text(path)
    if text is None:
        return None
    fix = "fix it (or move it aside) and run `drsg init` again"
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{path} is not valid JSON ({exc}); {fix}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path} is not a JSON object; {fix}")
    if not isinstance(data.get("mcpServers", {}), dict):
        raise ConfigError(f'{path}: "mcpServers" is not a JSON object; {fix}')
    return data


def _check_walk(settings: settings_mod.Settings, root: Path, given: dict[str, Any]) -> None:
    """What the digest would refuse, refused before any file is written: a bad walk flag or setting,
    --tracked-only outside git, an unknown chat provider."""
    from drsg.models.chat.providers import chat_identity
    from drsg.pipeline.code.walk import git_root

    walk = settings.with_flags(
        {
            "digest.ignore_files": given["ignore_files"],
            "digest.tracked_only": given["tracked_only"] or None,
            "digest.code_only": given["code_only"] or None,
        }
    )
    if walk.flag("digest.tracked_only") and git_root(root) is None:
        raise UsageError(f"--tracked-only reads what git tracks, and {root} is not in a git repository")
    chat_identity(settings.text("digest.chat"), settings.text("digest.model") or None)


def _write_config(path: Path) -> Step:
    if path.exists():
        return Step("config", str(path), "kept", f"kept {path}: already there, left as it is", {})
    write_atomic(path, render_config().encode("utf-8"), user_file_mode(path))
    line = f"wrote {path} with the [digest] defaults (the repository's settings: commit it, and .gitignore)"
    return Step("config", str(path), "written", line, {})


def _write_ignore(path: Path, text: str | None) -> Step:
    """Append the missing patterns under ``# drsg``; a last line without its newline gets one first."""
    present = {line.strip().rstrip("/") for line in (text or "").splitlines()}
    missing = [pattern for pattern in ignore_patterns() if pattern.rstrip("/") not in present]
    if not missing:
        return Step("gitignore", str(path), "unchanged", f"{path} already ignores drsg's files", {"added": []})
    body = text or ""
    if body and not body.endswith("\n"):
        body += "\n"
    block = "\n".join([HEADER, *missing]) + "\n"
    body += ("\n" if body.strip() else "") + block
    write_atomic(path, body.encode("utf-8", errors="surrogateescape"), user_file_mode(path))
    status = "created" if text is None else "added"
    line = f"{'created' if text is None else 'updated'} {path}: ignores {', '.join(missing)} (drsg's store)"
    return Step("gitignore", str(path), status, line, {"added": missing})


def _write_mcp(path: Path, data: dict[str, Any] | None, entry: dict[str, Any]) -> Step:
    servers = (data or {}).get("mcpServers", {})
    before = servers.get(SERVER)
    extra = {"server": SERVER, "entry": entry}
    if before == entry:
        return Step("mcp", str(path), "unchanged", f"{path} already has the {SERVER!r} MCP server", extra)
    updated = {**(data or {}), "mcpServers": {**servers, SERVER: entry}}
    text = json.dumps(updated, indent=2, ensure_ascii=False) + "\n"
    write_atomic(path, text.encode("utf-8"), user_file_mode(path))
    status = "created" if data is None else "added" if before is None else "updated"
    verb = {"created": "wrote", "added": "added to", "updated": "updated in"}[status]
    line = f"{verb} {path} the {SERVER!r} MCP server: {' '.join([entry['command'], *entry['args']])}"
    return Step("mcp", str(path), status, line, extra)


def _exclude_locally(root: Path, step: Step) -> None:
    """Keep ``.mcp.json`` (this machine's paths) out of commits in this clone's ``.git/info/exclude``
    — not the shared ``.gitignore`` — unless git already ignores it, or tracks it (the team shares
    the file: say so, change no rule). The MCP step's line and JSON say which."""
    from drsg.pipeline.code.walk import git_root, run_git

    step.extra["excluded"] = None
    if git_root(root) is None:
        return
    if run_git(root, "ls-files", "--error-unmatch", "--", MCP) is not None:
        step.line += f"; {MCP} is tracked by git, but this entry names this machine's paths: keep it out of commits"
        return
    if run_git(root, "check-ignore", "-q", "--", MCP) is not None:
        return  # already ignored (an older init's .gitignore, or the user's own rules)
    where = run_git(root, "rev-parse", "--git-path", "info/exclude")
    if where is None:
        return
    exclude = root / where.strip()
    text = _read_text(exclude) or ""
    body = text + ("" if not text or text.endswith("\n") else "\n") + f"{HEADER}: names this machine's paths\n/{MCP}\n"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(exclude, body.encode("utf-8", errors="surrogateescape"), user_file_mode(exclude))
    step.extra["excluded"] = str(exclude)
    step.line += f"; kept out of git in {exclude} (this clone's own rules: the entry names this machine's paths)"


def _digest_step(ctx: click.Context, obj: Context, root: Path, plane: str | None, given: dict[str, Any]) -> Step:
    """`drsg digest DIR --apply` (the walk flags as given), code only when no chat model can be asked."""
    from drsg.models.chat.providers import chat_key
    from drsg.surfaces.cli.digest import digest_flags, plane_for, run_digest

    settings = obj.settings
    var, ready = chat_key(settings.text("digest.chat"), settings)
    if given["code_only"]:
        why = "code only (--code-only)"
    elif settings.flag("digest.code_only"):
        why = f"code only (digest.code_only, {settings.sources['digest.code_only']})"
    elif not ready:
        why = f"code only: no chat key — {var} is not set; export it, or put it under [llm] in drsg.toml"
    else:
        why = f"code and prose (chat model {settings.text('digest.chat')})"
    flags = {**given, "code_only": given["code_only"] or not ready or None}
    name = plane_for(str(root), plane)
    warnings: list[str] = []

    def read(doc: Any) -> None:  # the digest's own >50 % withheld warning, naming the rule files
        said = doc.reading.walk.warning() if doc.reading is not None else None
        warnings.extend([said] if said else [])

    done = run_digest(obj, str(root), name, digest_flags(ctx, obj, do_apply=True, **flags), read)
    applied = done.applied
    assert applied is not None  # an apply: what its commit wrote
    extra = {
        "warning": warnings[0] if warnings else None,
        "plane": name,
        "code_only": bool(flags["code_only"] or settings.flag("digest.code_only")),
        "why": why,
        "seq": applied.seq or None,
        "nodes_created": applied.nodes_created,
        "edges_created": applied.edges_created,
        "nodes_withdrawn": applied.nodes_withdrawn,
        "edges_withdrawn": applied.edges_withdrawn,
        "db": obj.db_path,
    }
    if not applied.seq:
        line = f"digest of {root} unchanged: plane {name!r} already holds it as it is — {why}"
        return Step("digest", str(root), "unchanged", line, extra)
    line = (
        f"digested {root} into plane {name!r}{' (created)' if done.created else ''}: {applied.nodes_created} "
        f"nodes, {applied.edges_created} edges written in commit {applied.seq} to {obj.db_path} — {why}"
    )
    return Step("digest", str(root), "applied", line, extra)


COMMANDS = [init_cmd]
