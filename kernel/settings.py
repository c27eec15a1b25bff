"""One declarative registry of settings, feeding CLI flags, ``drsg.toml`` and ``DRSG_*`` variables.

Precedence (highest first): a command-line flag, the environment (``DRSG_<SECTION>_<NAME>``), the
config file (``--config``, else ``$DRSG_CONFIG``, else ``./drsg.toml`` when present), the default.
``drsg config`` prints every setting with its source, and docs/settings in the README come from here.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drsg.kernel.errors import ConfigError


def _size(value: Any) -> int:
    """Bytes, or a number with a K/M/G/T suffix (powers of 1024)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip().upper().removesuffix("B").removesuffix("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{value!r} is not true or false")


def _positive(value: Any) -> int:
    number = int(value)
    if number < 1:
        raise ValueError(f"{value!r} is not a positive number")
    return number


def _digest_mode(value: Any) -> str:
    if value not in ("coarse", "fine", "super"):
        raise ValueError(f"{value!r} is not coarse, fine or super")
    return str(value)


@dataclass(frozen=True)
class Setting:
    name: str  # "section.key"
    default: Any
    parse: Callable[[Any], Any]
    help: str

    @property
    def env(self) -> str:
        return "DRSG_" + self.name.replace(".", "_").upper()


REGISTRY: tuple[Setting, ...] = (
    Setting("store.map_size", 64 << 20, _size, "initial LMDB map size; it doubles whenever a write fills it"),
    Setting("store.max_map_size", 1 << 40, _size, "ceiling for map growth; a write past it fails cleanly"),
    Setting("store.group_max", 1000, int, "most commits batched into one LMDB transaction"),
    Setting("store.import_commit_lines", 10_000, int, "JSONL lines per commit during `drsg import`"),
    Setting("index.ef_search", 64, int, "HNSW search breadth (≥ 64; higher = better recall, slower queries)"),
    Setting("logging.level", "warning", str, "log level: debug, info, warning or error"),
    Setting("logging.format", "auto", str, "log format: json, console, or auto (console on a terminal)"),
    Setting("digest.chat", "openai", str, "chat provider for `digest`: openai, deepseek, qwen, ollama, url or a URL"),
    Setting("digest.model", "", str, "chat model for `digest` (empty: the provider's default)"),
    Setting("digest.mode", "fine", _digest_mode, "clean-up passes: coarse, fine or super"),
    Setting("digest.concurrency", 8, _positive, "chat calls a digest makes at once"),
    Setting("digest.chunk_chars", 4000, _positive, "characters per chunk a digest extracts from"),
    Setting("digest.embed_provider", "local", str, "embedder for digested entities: local, openai, qwen, ollama, url"),
    Setting("digest.embed_model", "", str, "embedding model for `digest` (empty: the provider's default)"),
    Setting("digest.embed_key_env", "", str, "variable holding the digest embedder's key (empty: the provider's)"),
)
_BY_NAME = {s.name: s for s in REGISTRY}


@dataclass(frozen=True)
class Settings:
    values: Mapping[str, Any]
    sources: Mapping[str, str]
    config_path: Path | None

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def config_file(explicit: str | None) -> Path | None:
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist; fix --config or DRSG_CONFIG")
        return path
    env = os.environ.get("DRSG_CONFIG")
    if env:
        return config_file(env)
    local = Path("drsg.toml")
    return local if local.is_file() else None


def load(config: str | None = None, overrides: Mapping[str, Any] | None = None) -> Settings:
    path = config_file(config)
    table: dict[str, Any] = {}
    if path is not None:
        try:
            table = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read config {path}: {exc}") from None
    values, sources = resolve(REGISTRY, table, path, os.environ, overrides)
    _reject_unknown(table, path)
    return Settings(values, sources, path)


def resolve(
    registry: Sequence[Setting],
    table: Mapping[str, Any],
    path: Path | None,
    environ: Mapping[str, str],
    overrides: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, str]]:
    """Each setting's value and where it came from: a flag (``overrides`` by setting name) beats the
    environment, which beats drsg.toml (``table``, read from ``path``), which beats the default."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for setting in registry:
        section, key = setting.name.split(".", 1)
        raw, source = setting.default, "default"
        if isinstance(table.get(section), dict) and key in table[section]:
            raw, source = table[section][key], f"config {path}"
        if setting.env in environ:
            raw, source = environ[setting.env], f"env {setting.env}"
        if overrides and overrides.get(setting.name) is not None:
            raw, source = overrides[setting.name], "flag"
        try:
            values[setting.name] = setting.parse(raw)
        except (TypeError, ValueError, KeyError) as exc:
            raise ConfigError(f"setting {setting.name} ({source}) is invalid: {exc}") from None
        sources[setting.name] = source
    return values, sources


# Sections owned by later features; their keys are checked by those features.
_OPEN_SECTIONS = {"server", "llm", "fetch", "plugins"}


def _reject_unknown(table: Mapping[str, Any], path: Path | None) -> None:
    for section, body in table.items():
        if section in _OPEN_SECTIONS:
            continue
        if not isinstance(body, dict):
            raise ConfigError(f"{path}: top-level key {section!r} is not a [section]")
        for key in body:
            if f"{section}.{key}" not in _BY_NAME:
                known = ", ".join(sorted(_BY_NAME))
                raise ConfigError(f"{path}: unknown setting {section}.{key}; known settings: {known}")
