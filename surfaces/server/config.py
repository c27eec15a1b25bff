"""`drsg serve` settings: `[server]` in drsg.toml, `DRSG_*` variables, and the command's flags.

Precedence, as upstream: a flag beats the environment, which beats drsg.toml, which beats the
default. The token comes from ``DRSG_TOKEN`` (else ``[server].token``), allowed browser origins from
``DRSG_ALLOWED_ORIGINS`` (else ``[server].allowed_origins``); other keys from
``DRSG_SERVER_<KEY>`` (else ``[server].<key>``). The server-side embedder for text queries comes from
the `serve --embed…` flags, else upstream's ``[digest]`` ``embed_provider`` / ``embed_model`` /
``embed_key_env``, else the plane's recorded embedder, else the local model. Unknown ``[server]``
keys are refused, as upstream does.
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drsg.kernel.errors import ConfigError
from drsg.kernel.settings import Setting, Settings, resolve

DEFAULT_ADDR = "127.0.0.1:7700"


def _seconds(value: Any) -> float | None:
    """Seconds; 0 means no limit (None)."""
    seconds = float(value)
    if seconds < 0:
        raise ValueError("must be 0 (no limit) or more")
    return None if seconds == 0 else seconds


def _count_or_auto(value: Any) -> int | None:
    """A count; 0 means "decide" (None)."""
    number = int(value)
    if number < 0:
        raise ValueError("must be 0 (one per CPU core) or more")
    return number or None


def _positive(value: Any) -> int:
    number = int(value)
    if number < 1:
        raise ValueError("must be 1 or more")
    return number


def _size(value: Any) -> int:
    text = str(value).strip().upper().removesuffix("B").removesuffix("I")
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    number = int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(text)
    return _positive(number)


SETTINGS: tuple[Setting, ...] = (
    Setting("server.addr", DEFAULT_ADDR, str, "HOST:PORT to listen on (loopback unless a token is set)"),
    Setting("server.max_concurrent", 1024, _positive, "RPC calls served at once; more wait their turn"),
    Setting("server.write_timeout_secs", 30, _seconds, "how long a write waits for the writer (0 = forever; -32002)"),
    Setting("server.query_timeout_secs", 60, _seconds, "longest a read may run (0 = no limit; then -32000)"),
    Setting("server.max_queries", 0, _count_or_auto, "searches run at once; more wait their turn (0 = one per core)"),
    Setting("server.max_request_bytes", 8 << 20, _size, "largest request body accepted (bigger: HTTP 413)"),
    Setting("server.max_batch", 1000, _positive, "most calls in one JSON-RPC batch"),
    Setting("server.shutdown_timeout_secs", 30, _seconds, "on SIGTERM, how long in-flight requests may take"),
)
#: keys with their own rules (token and origins have upstream's variable names; tls is a table)
_SPECIAL = {"token", "allowed_origins", "tls", "source_root"}


@dataclass(frozen=True)
class EmbedChoice:
    """Which embedder turns query text into vectors; chosen by the operator, never by a request."""

    name: str | None = None
    model: str | None = None
    url: str | None = None
    key_env: str | None = None

    @property
    def explicit(self) -> bool:
        return any((self.name, self.model, self.url, self.key_env))


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 7700
    token: str | None = None
    allowed_origins: tuple[str, ...] = ()
    max_concurrent: int = 1024
    write_timeout: float | None = 30.0
    query_timeout: float | None = 60.0
    max_queries: int | None = None  # None: one per CPU core
    max_request_bytes: int = 8 << 20
    max_batch: int = 1000
    shutdown_timeout: float | None = 30.0
    tls_cert: str | None = None
    tls_key: str | None = None
    embed: EmbedChoice = field(default_factory=EmbedChoice)
    ef_search: int = 64
    settings: Settings | None = None

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert else "http"

    def url(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port if port is None else port}"


def parse_addr(addr: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[IPv6]:PORT`` → (host, port); a bad address is a one-line ConfigError."""
    text = addr.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ConfigError(f"--addr {addr!r} is not HOST:PORT; write e.g. 127.0.0.1:7700 or [::1]:7700")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ConfigError(f"--addr {addr!r}: put an IPv6 address in brackets, e.g. [::1]:7700")
    port = int(port_text)
    if port > 65535:
        raise ConfigError(f"--addr {addr!r}: port {port} is above 65535")
    return host, port


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # another host name: it could resolve anywhere, so it needs a token


def server_table(settings: Settings | None) -> tuple[dict[str, Any], dict[str, Any], Path | None]:
    """``[server]`` and ``[digest]`` from drsg.toml (empty without a config file)."""
    path = settings.config_path if settings is not None else None
    if path is None:
        return {}, {}, None
    try:
        table = tomllib.loads(Path(path).read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from None
    server, digest = table.get("server", {}), table.get("digest", {})
    if not isinstance(server, dict) or not isinstance(digest, dict):
        raise ConfigError(f"{path}: [server] and [digest] must be tables")
    known = {s.name.split(".", 1)[1] for s in SETTINGS} | _SPECIAL
    for key in server:
        if key not in known:
            raise ConfigError(f"{path}: unknown setting server.{key}; known: {', '.join(sorted(known))}")
    return server, digest, path


def describe(settings: Settings | None) -> list[tuple[Setting, Any, str]]:
    """Each plain ``[server]`` setting with its value and source, for `drsg config`."""
    server, _, path = server_table(settings)
    values, sources = resolve(SETTINGS, {"server": server}, path, os.environ)
    return [(s, values[s.name], sources[s.name]) for s in SETTINGS]


def load(
    settings: Settings | None,
    addr: str | None = None,
    embed: EmbedChoice | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> ServerConfig:
    env = os.environ if environ is None else environ
    server, digest, path = server_table(settings)
    named = {f"server.{key}": value for key, value in (overrides or {}).items()}
    resolved = resolve(SETTINGS, {"server": server}, path, env, named)[0]
    values = {name.split(".", 1)[1]: value for name, value in resolved.items()}  # by key: values["addr"]
    host, port = parse_addr(addr if addr is not None else values["addr"])
    token = env.get("DRSG_TOKEN") or _text(server.get("token"), "server.token") or None
    origins_raw = env.get("DRSG_ALLOWED_ORIGINS", server.get("allowed_origins", ()))
    origins = _origins(origins_raw)
    tls = server.get("tls", {})
    if not isinstance(tls, dict) or set(tls) - {"cert", "key"} or bool(tls.get("cert")) != bool(tls.get("key")):
        raise ConfigError(f"{path}: [server.tls] takes both `cert` and `key` (PEM file paths)")
    if embed is None or not embed.explicit:
        embed = EmbedChoice(
            _text(digest.get("embed_provider"), "digest.embed_provider"),
            _text(digest.get("embed_model"), "digest.embed_model"),
            None,
            _text(digest.get("embed_key_env"), "digest.embed_key_env"),
        )
    ef_search = int(settings["index.ef_search"]) if settings is not None else 64
    return ServerConfig(
        host=host,
        port=port,
        token=token,
        allowed_origins=origins,
        max_concurrent=values["max_concurrent"],
        write_timeout=values["write_timeout_secs"],
        query_timeout=values["query_timeout_secs"],
        max_queries=values["max_queries"],
        max_request_bytes=values["max_request_bytes"],
        max_batch=values["max_batch"],
        shutdown_timeout=values["shutdown_timeout_secs"],
        tls_cert=tls.get("cert"),
        tls_key=tls.get("key"),
        embed=embed,
        ef_search=max(64, ef_search),
        settings=settings,
    )


def _text(value: Any, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ConfigError(f"setting {name} must be a string")
    return value


def _origins(raw: Any) -> tuple[str, ...]:
    items = raw.split(",") if isinstance(raw, str) else raw
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise ConfigError("allowed_origins must be a list of origins like http://localhost:5173")
    return tuple(i.strip().rstrip("/") for i in items if i.strip())
