"""The one registry of settings and the one loader: CLI flags, ``DRSG_*`` variables and ``drsg.toml``.

Precedence (highest first): a command-line flag, the environment, the config file (``--config``,
else ``$DRSG_CONFIG``, else ``./drsg.toml`` when present), the default. A setting's variable is
``DRSG_<SECTION>_<KEY>`` unless upstream named it (``DRSG_TOKEN``, ``DRSG_ALLOWED_ORIGINS``); a
renamed variable's older name is still read, below the current one (``DRSG_KAFKA_CLIENT``); an
empty variable counts as unset. The file is read once, here, and every section is checked here:

- ``[store]``, ``[index]``, ``[logging]``, ``[digest]``, ``[server]``, ``[fetch]``, ``[plugins]``:
  the keys declared in :data:`REGISTRY`; any other key is refused, naming the nearest valid one.
- ``[llm]``: free ``NAME = "secret"`` pairs (API keys; the environment wins), kept in
  :attr:`Settings.llm` and never printed.
- ``[plugins.<name>]``: a plugin's own table, passed through uninterpreted (:attr:`Settings.plugin_tables`).

A ``DRSG_<SECTION>_…`` variable that names no setting is refused the same way; other ``DRSG_*``
variables (``DRSG_DB``, ``DRSG_CONFIG``, the test suite's) are not settings and are left alone.
``drsg config`` prints :meth:`Settings.entries`; docs/reference/settings.md is generated from this registry.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import date, datetime, time
from pathlib import Path
from typing import Any, TypeAlias, cast

from drsg.kernel.errors import ConfigError
from drsg.kernel.setting_parsers import (
    _UNITS,
    KAFKA_CLIENTS,
    KINDS,
    Setting,
    Value,
    _at_least,
    _bool,
    _choice,
    _contact,
    _count_or_auto,
    _fraction,
    _ignore_files,
    _log_url,
    _networks,
    _origins,
    _positive,
    _seconds,
    _size,
    _some_seconds,
    _strings,
    _text,
    _tls,
    _token,
    kind_of,
)

# difflib, fractions (with decimal), ipaddress and tomllib load where a value needs them (a misspelt
# name, a size with a fraction, a network, a config file): ≈6 ms of every command's start otherwise

#: a value as tomllib reads it
Toml: TypeAlias = "str | int | float | bool | datetime | date | time | list[Toml] | dict[str, Toml]"
_CRAWLER = "; a ceiling for `digest URL` and POST /digest/fetch (a request may ask for less)"

REGISTRY: tuple[Setting, ...] = (
    Setting("store.map_size", 64 << 20, _size, "initial LMDB map size; it doubles whenever a write fills it"),
    Setting("store.max_map_size", 1 << 40, _size, "ceiling for map growth; a write past it fails cleanly"),
    Setting("store.group_max", 1000, _positive, "most commits batched into one LMDB transaction"),
    Setting(
        "store.import_commit_lines",
        10_000,
        _positive,
        "JSONL lines per commit during `drsg import` (one log record each)",
    ),
    Setting(
        "store.import_txn_bytes",
        8 << 20,
        _size,
        "bytes of the file per LMDB transaction during `drsg import`, several commits in one (bounds its memory)",
    ),
    Setting(
        "log.url",
        "",
        _log_url,
        "the log: empty for the --db file's own, or kafka://HOST:PORT/TOPIC (the --db file is then this node's copy)",
    ),
    Setting(
        "log.index_dir",
        "",
        _text,
        "the folder every `drsg workers` member of a Kafka log shares for its index sidecars (a common volume)",
    ),
    Setting(
        "log.kafka_client",
        "auto",
        _choice(*KAFKA_CLIENTS),
        "the client a Kafka log produces through: confluent-kafka (librdkafka, off the GIL), kafka-python, "
        "or auto (confluent-kafka when installed); env DRSG_KAFKA_CLIENT is its older name",
        old_env="DRSG_KAFKA_CLIENT",
    ),
    Setting("log.group", "", _text, "the index workers' consumer group (empty: drsg-index-TOPIC)"),
    Setting("log.shards", 12, _positive, "partitions of the index topic TOPIC.index when `drsg workers` creates it"),
    Setting(
        "log.retain_commits",
        0,
        _at_least(0),
        "history kept queryable: the last N commits (0: all); older versions and log records are compacted",
    ),
    Setting(
        "log.retain_days",
        0,
        _at_least(0),
        "history kept queryable: the last N days (0: all); with retain_commits too, both are kept",
    ),
    Setting(
        "log.compact_every_secs",
        60,
        _positive,
        "how often `drsg serve` compacts history at most, when retain_commits or retain_days is set",
    ),
    Setting(
        "log.reader_lease_secs",
        120,
        _positive,
        "how long a long reader's lease (`log --follow`, a feed subscription) holds history from other "
        "processes' compaction once its process stops renewing it",
    ),
    Setting(
        "index.ef_search",
        64,
        _at_least(64),
        "the least HNSW search breadth (≥ 64; each vector index widens it to reach index.recall_target)",
    ),
    Setting(
        "index.recall_target",
        0.95,
        _fraction,
        "recall@10 each vector index calibrates its search breadth to (measured against exact search; "
        "ef_search is the floor)",
    ),
    Setting("logging.level", "warning", _choice("debug", "info", "warning", "error"), "debug, info, warning, error"),
    Setting("logging.format", "auto", _choice("json", "console", "auto"), "json, console, or auto (console on a tty)"),
    Setting("digest.chat", "openai", _text, "chat provider for `digest`: openai, deepseek, qwen, ollama, url or a URL"),
    Setting("digest.model", "", _text, "chat model for `digest` (empty: the provider's default)"),
    Setting("digest.mode", "fine", _choice("coarse", "fine", "super"), "clean-up passes: coarse, fine or super"),
    Setting("digest.concurrency", 8, _positive, "chat calls a digest makes at once"),
    Setting("digest.chunk_chars", 4000, _positive, "characters per chunk a digest extracts from"),
    Setting("digest.embed_provider", "local", _text, "embedder for digested entities and the server's text queries"),
    Setting("digest.embed_model", "", _text, "embedding model for `digest` (empty: the provider's default)"),
    Setting(
        "digest.ignore_files",
        ("gitignore",),
        _ignore_files,
        "ignore files a directory digest honours: gitignore, dockerignore (empty: none)",
    ),
    Setting("digest.tracked_only", False, _bool, "a directory digest reads only what git tracks (`--tracked-only`)"),
    Setting("digest.code_only", False, _bool, "a directory digest reads only files a handler claims (`--code-only`)"),
    Setting("digest.embed_key_env", "", _text, "variable holding the digest embedder's key (empty: the provider's)"),
    Setting("ask.max_attempts", 20, _positive, "model turns an `ask` may take, tools and repairs included"),
    Setting("ask.limit", 100, _at_least(0), "Limit added to each `ask` plan that has none (0: none)"),
    Setting("ask.masked", (), _strings, "properties whose values `ask` never shows a model (beside secret-like names)"),
    Setting("query.max_rows", 1_000_000, _positive, "most rows a Cypher statement may hold at any step"),
    Setting("query.timeout_secs", 60, _seconds, "longest a Cypher statement may run (0 = no limit)"),
    Setting("catalog.enum_limit", 20, _positive, "most distinct values a low-cardinality text column's sample keeps"),
    Setting("catalog.row_limit", 100, _positive, "most rows `catalog find`/`catalog sql` return (at most 1000)"),
    Setting("catalog.sensitive", (), _strings, "column names masked beside the built-in secret-like ones"),
    Setting(
        "catalog.statement_seconds",
        30,
        _positive,
        "longest one `catalog sql`/`catalog find` statement may run, in seconds (then stopped, in the database too)",
    ),
    Setting("server.addr", "127.0.0.1:7700", _text, "HOST:PORT to listen on (loopback unless a token is set)"),
    Setting(
        "server.metrics_addr",
        "",
        _text,
        "HOST:PORT serving only GET /metrics, without the token (empty: /metrics on server.addr, with it)",
    ),
    Setting("server.max_concurrent", 1024, _positive, "RPC calls served at once; more wait their turn"),
    Setting(
        "server.mcp_max_concurrent", 8, _positive, "MCP tool calls run at once (stdio and /mcp); more wait their turn"
    ),
    Setting(
        "server.read_only",
        False,
        _bool,
        "refuse every write (JSON-RPC, Cypher, MCP write tools) with -32001 (`serve --read-only`, `mcp --read-only`)",
    ),
    Setting("server.write_timeout_secs", 30, _seconds, "how long a write waits for the writer (0 = forever; -32002)"),
    Setting("server.query_timeout_secs", 60, _seconds, "longest a read may run (0 = no limit; then -32000)"),
    Setting("server.max_queries", 0, _count_or_auto, "searches run at once; more wait their turn (0 = one per core)"),
    Setting("server.max_request_bytes", 8 << 20, _size, "largest request body accepted (bigger: HTTP 413)"),
    Setting("server.max_batch", 1000, _positive, "most calls in one JSON-RPC batch"),
    Setting("server.shutdown_timeout_secs", 30, _seconds, "on SIGTERM, how long in-flight requests may take"),
    Setting(
        "server.header_timeout_secs",
        10,
        _some_seconds,
        "longest a connection may take to send a request's head, from connecting or its last answer (then closed)",
    ),
    Setting(
        "server.max_connections",
        0,
        _at_least(0),
        "open connections at once; one past it is closed at once (0 = 3/4 of the open-file limit)",
    ),
    Setting("server.min_free_disk", 100 << 20, _size, "free space on the database's disk below which /health degrades"),
    Setting("server.token", "", _token, "bearer token every call must carry", env_name="DRSG_TOKEN", secret=True),
    Setting("server.allowed_origins", (), _origins, "browser origins allowed (CORS)", env_name="DRSG_ALLOWED_ORIGINS"),
    Setting("server.tls", {}, _tls, "{cert = …, key = …} PEM files: serve HTTPS", env_name=None),
    Setting("server.source_root", "", _text, "upstream's key, accepted so its files load; unused here", env_name=None),
    Setting(
        "server.code_roots",
        (),
        _strings,
        "directories under which `serve`'s grep and snippet (code.*, /mcp) may read a plane's tree, beside "
        "those `serve watch` follows (default: none)",
    ),
    Setting("fetch.enabled", True, _bool, "whether URLs may be fetched at all"),
    Setting("fetch.max_pages", 10, _positive, "most pages one crawl reads (the root included)" + _CRAWLER),
    Setting("fetch.max_depth", 3, _at_least(0), "deepest link level a crawl may follow (0 = the root)" + _CRAWLER),
    Setting("fetch.concurrency", 4, _positive, "pages fetched at once across all hosts" + _CRAWLER),
    Setting("fetch.allow_private", (), _networks, "private ranges that may be fetched (CIDRs)"),
    Setting("fetch.max_page_bytes", 4 << 20, _size, "largest response a crawl reads, after decompression"),
    Setting("fetch.max_total_bytes", 24 << 20, _size, "most bytes one crawl reads in all"),
    Setting("fetch.max_seconds", 120, _seconds, "wall-clock seconds one crawl may take (0 = no limit)"),
    Setting("fetch.request_timeout_secs", 20, _seconds, "longest one request may take (0 = only max_seconds)"),
    Setting("fetch.host_spacing_ms", 500, _at_least(0), "pause between two requests to one host (hops too), in ms"),
    Setting(
        "fetch.contact",
        "",
        _contact,
        "a URL or e-mail address the crawler's User-Agent names, so the sites it reads can reach you",
    ),
    Setting("fetch.max_crawl_delay_secs", 60, _at_least(0), "cap on a robots.txt Crawl-delay, in seconds"),
    Setting("plugins.fuel", 200_000_000_000, _at_least(0), "instructions per plugin call (0 = off)"),
    Setting("plugins.memory_mb", 3072, _positive, "memory per plugin instance, in MiB"),
    Setting("plugins.store_dir", "", _text, "installed plugins (empty: $XDG_DATA_HOME/drsg/plugins)"),
    Setting("plugins.timeout_s", 60, _seconds, "wall-clock seconds per plugin call, host calls included (0 = off)"),
    Setting(
        "plugins.wasi",
        "inert",
        _choice("inert", "strict"),
        "WASI imports: inert (empty environment, no directories; sockets refused) or strict (filesystem refused too)",
    ),
)
_BY_NAME = {setting.name: setting for setting in REGISTRY}
_KIND = {setting.name: kind_of(setting.parse) for setting in REGISTRY}  # checked once, on import
#: every section of drsg.toml; [llm] holds free NAME = "secret" pairs
SECTIONS: tuple[str, ...] = (*dict.fromkeys(setting.section for setting in REGISTRY), "llm")
_VARIABLES = frozenset(setting.env for setting in REGISTRY if setting.env)
#: a variable under one of these prefixes is meant as a setting (DRSG_DB, DRSG_CONFIG are not)
_VARIABLE_PREFIXES = tuple(f"DRSG_{section.upper()}_" for section in SECTIONS if section != "llm")


# ---------------------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class Entry:
    """One line of `drsg config`: a secret's value is masked."""

    name: str
    env: str | None
    value: Value | Toml
    source: str
    help: str

    @property
    def written(self) -> str:
        """The value as drsg.toml takes it (:func:`toml_text`)."""
        setting = _BY_NAME.get(self.name)
        return toml_text(self.value, size=setting is not None and setting.parse is _size)


MASK = "***"


def toml_text(value: object, size: bool = False) -> str:
    """``value`` as one writes it in drsg.toml, so `drsg config` shows what a user types: a list as
    a TOML array, None as the 0 that means it (no limit, one per core), and with ``size`` a byte
    count in the largest unit that holds it exactly (``"64MiB"``, which :func:`_size` reads)."""
    if value is None:
        return "0"  # only _seconds and _count_or_auto give None, each for 0
    if isinstance(value, bool):
        return "true" if value else "false"
    if size and isinstance(value, int):
        unit = next((unit for unit in "TGMK" if value % _UNITS[unit] == 0), None)
        return str(value) if unit is None else f'"{value // _UNITS[unit]}{unit}iB"'
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string escapes as JSON does
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_text(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{k if _BARE_KEY.fullmatch(k) else json.dumps(k)} = {toml_text(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    return repr(value)


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Settings:
    values: Mapping[str, Value]
    sources: Mapping[str, str]  # "flag", "env NAME", "config PATH" or "default"; [llm] names too
    config_path: Path | None
    llm: Mapping[str, str] = field(default_factory=dict)  # [llm] NAME = "secret"
    plugin_tables: Mapping[str, Mapping[str, Toml]] = field(default_factory=dict)  # [plugins.<name>], as written

    def __getitem__(self, name: str) -> Any:  # Any: the value's type depends on the name; prefer a typed read
        return self.values[name]

    # Typed reads: each returns what the setting's parser declares (mypy checks the parsers) and refuses
    # a setting of another type: a bug in the caller, so a TypeError naming the read that fits.
    def text(self, name: str) -> str:
        return cast(str, self._read(name, "str"))

    def integer(self, name: str) -> int:
        return cast(int, self._read(name, "int"))

    def optional_integer(self, name: str) -> int | None:  # None: 0, "one per core"
        return cast("int | None", self._read(name, "int | None"))

    def number(self, name: str) -> float:
        return cast(float, self._read(name, "float"))

    def optional_number(self, name: str) -> float | None:  # None: 0 seconds, "no limit"
        return cast("float | None", self._read(name, "float | None"))

    def flag(self, name: str) -> bool:
        return cast(bool, self._read(name, "bool"))

    def strings(self, name: str) -> tuple[str, ...]:
        return cast("tuple[str, ...]", self._read(name, "tuple[str, ...]"))

    def table(self, name: str) -> dict[str, str]:
        return cast("dict[str, str]", self._read(name, "dict[str, str]"))

    def _read(self, name: str, kind: str) -> Value:
        declared = _KIND[name]  # KeyError: no such setting, as settings[name]
        if declared != kind:
            raise TypeError(f"setting {name} holds {declared}: read it with Settings.{KINDS[declared]}()")
        return self.values[name]

    def with_flags(self, flags: Mapping[str, object]) -> Settings:
        """These settings with command-line flags (by setting name; None = not given) on top."""
        given = {name: raw for name, raw in flags.items() if raw is not None}
        if not given:
            return self
        values, sources = dict(self.values), dict(self.sources)
        for name, raw in given.items():
            values[name], sources[name] = _parsed(_BY_NAME[name], raw, "flag"), "flag"
        return replace(self, values=values, sources=sources)

    def entries(self) -> list[Entry]:
        """Every setting with its value and source, then each [llm] name and [plugins.<name>] key."""
        listed = []
        for setting in REGISTRY:
            value = self.values[setting.name]
            shown = MASK if setting.secret and value else value
            listed.append(Entry(setting.name, setting.env, shown, self.sources[setting.name], setting.help))
        listed += [
            Entry(f"llm.{var}", var, MASK, self.sources[f"llm.{var}"], "API key for a service that names it")
            for var in self.llm
        ]
        listed += [
            Entry(f"plugins.{plugin}.{key}", None, value, f"config {self.config_path}", f"for plugin {plugin}, as is")
            for plugin, table in self.plugin_tables.items()
            for key, value in table.items()
        ]
        return listed


def config_file(explicit: str | None, environ: Mapping[str, str] | None = None) -> Path | None:
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist; fix --config or DRSG_CONFIG")
        return path
    env = (os.environ if environ is None else environ).get("DRSG_CONFIG")
    if env:
        return config_file(env)
    local = Path("drsg.toml")
    return local if local.is_file() else None


def load(
    config: str | None = None,
    flags: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Read the config file once, check every section and variable, and resolve every setting."""
    env = os.environ if environ is None else environ
    path = config_file(config, env)
    table: dict[str, Toml] = {}
    if path is not None:
        import tomllib

        try:
            table = tomllib.loads(path.read_text())
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from None
    _check_file(table, str(path))
    _check_environment(env)
    values: dict[str, Value] = {}
    sources: dict[str, str] = {}
    for setting in REGISTRY:
        raw: object = setting.default
        source = "default"
        body = table.get(setting.section)
        if isinstance(body, dict) and setting.key in body:
            raw, source = body[setting.key], f"config {path}"
        for var in (setting.old_env, setting.env):  # the current name last: it wins
            if var and env.get(var):
                raw, source = env[var], f"env {var}"
        values[setting.name], sources[setting.name] = _parsed(setting, raw, source), source
    llm = _table(table, "llm")
    secrets = {var: secret for var, secret in llm.items() if isinstance(secret, str)}  # _check_file: all of them
    sources.update({f"llm.{var}": f"env {var}" if env.get(var) else f"config {path}" for var in secrets})
    plugins = {name: body for name, body in _table(table, "plugins").items() if isinstance(body, dict)}
    return Settings(values, sources, path, secrets, plugins).with_flags(flags or {})


def _table(table: Mapping[str, Toml], section: str) -> dict[str, Toml]:
    body = table.get(section, {})
    return body if isinstance(body, dict) else {}


def _parsed(setting: Setting, raw: object, source: str) -> Value:
    try:
        return setting.parse(raw)
    except ValueError as exc:
        raise ConfigError(f"setting {setting.name} ({source}) is invalid: {exc}") from None


def _check_file(table: Mapping[str, Toml], where: str) -> None:
    """Refuse, in one line naming the nearest valid name, any section or key drsg does not know."""
    for section, body in table.items():
        if not isinstance(body, dict) and section in SECTIONS:
            raise ConfigError(f"{where}: {section} must be a [{section}] table")
        if not isinstance(body, dict):
            guess = _nearest(section, {s.key: s.name for s in REGISTRY})
            raise ConfigError(f"{where}: {section} is outside any [section]{guess}")
        if section not in SECTIONS:
            guess = _nearest(section, {name: f"[{name}]" for name in SECTIONS})
            raise ConfigError(f"{where}: unknown section [{section}]{guess}")
        for key, value in body.items():
            name = f"{section}.{key}"
            if section == "llm" and not isinstance(value, str):
                raise ConfigError(f'{where}: [llm] {key} must be a string: {key} = "the secret"')
            if section == "llm" or name in _BY_NAME or (section == "plugins" and isinstance(value, dict)):
                continue  # [llm] keys are free; [plugins.<name>] is that plugin's own table
            known = {s.name: s.name for s in REGISTRY}
            raise ConfigError(f"{where}: unknown setting {name}{_nearest(name, known, section)}")


def _check_environment(environ: Mapping[str, str]) -> None:
    for var in sorted(environ):
        if var.startswith(_VARIABLE_PREFIXES) and var not in _VARIABLES:
            guess = _nearest(var, {known: known for known in _VARIABLES}) or "; it names no setting"
            raise ConfigError(f"environment: unknown setting variable {var}{guess} (see `drsg config`)")


def _nearest(word: str, choices: Mapping[str, str], section: str | None = None) -> str:
    """``"; did you mean X?"`` for the closest choice, else the section's keys (if one is given)."""
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1)
    if close:
        return f"; did you mean {choices[close[0]]}?"
    keys = [setting.key for setting in REGISTRY if setting.section == section]
    return f"; [{section}] takes {', '.join(keys)}" if keys else ""
