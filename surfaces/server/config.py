"""`drsg serve`'s configuration, built from the loaded settings (`[server]`, `[digest]`, `[index]`).

Every key is declared, read and checked once, in :mod:`drsg.kernel.settings` (flag > environment >
drsg.toml > default; the token from ``DRSG_TOKEN``, browser origins from ``DRSG_ALLOWED_ORIGINS``).
This module keeps what is the server's own: the address, the loopback rule, and the embedder the
operator configured — the `serve --embed…` flags, else `[digest]` ``embed_provider`` /
``embed_model`` / ``embed_key_env`` when set. Which embedder a query uses is
:mod:`drsg.pipeline.embedder_choice`'s rule: the plane's recorded one first, then the configured one.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path

from drsg.kernel.errors import ConfigError
from drsg.kernel.settings import Settings
from drsg.models.providers import EmbedderChoice
from drsg.pipeline.embedder_choice import configured_choice

#: which embedder turns query text into vectors, as the operator names it (never a request)
EmbedChoice = EmbedderChoice


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 7700
    token: str | None = None
    allowed_origins: tuple[str, ...] = ()
    max_concurrent: int = 1024
    write_timeout: float | None = 30.0
    read_only: bool = False  # every write refused (-32001): `--read-only`, `[server] read_only`
    query_timeout: float | None = 60.0
    max_queries: int | None = None  # None: one per CPU core
    max_request_bytes: int = 8 << 20
    max_batch: int = 1000
    shutdown_timeout: float | None = 30.0
    header_timeout: float = 10.0  # a request's head must arrive within it (slowloris, idle sockets)
    max_connections: int = 0  # 0: 3/4 of the open-file limit
    min_free_disk: int = 100 << 20  # bytes free on the database's disk below which /health is degraded
    #: (host, port) serving only GET /metrics, without the token ([server] metrics_addr); None: none
    metrics_addr: tuple[str, int] | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    embed: EmbedderChoice = field(default_factory=EmbedderChoice)
    ef_search: int = 64
    #: a Kafka log's shared index folder ([log] index_dir): the indexes the `drsg workers` group saves
    #: there are loaded from it and kept up in memory, never saved by the server
    group_index_dir: str = ""
    #: where grep and snippet may read a plane's tree ([server] code_roots; the trees `serve watch`
    #: follows are added per call); None: anywhere (`drsg mcp` over stdio, a local process)
    code_roots: tuple[Path, ...] | None = ()
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


def parse_addr(addr: str, given_as: str = "--addr") -> tuple[str, int]:
    """``HOST:PORT`` or ``[IPv6]:PORT`` → (host, port); a bad address is a one-line ConfigError
    naming where it was given (``given_as``)."""
    text = addr.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep or not host or not port_text.isdigit():
        raise ConfigError(f"{given_as} {addr!r} is not HOST:PORT; write e.g. 127.0.0.1:7700 or [::1]:7700")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ConfigError(f"{given_as} {addr!r}: put an IPv6 address in brackets, e.g. [::1]:7700")
    port = int(port_text)
    if port > 65535:
        raise ConfigError(f"{given_as} {addr!r}: port {port} is above 65535")
    return host, port


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # another host name: it could resolve anywhere, so it needs a token


def server_config(settings: Settings, addr: str | None = None, embed: EmbedderChoice | None = None) -> ServerConfig:
    """The server's configuration from the loaded settings; ``addr`` is `serve --addr` (it wins)."""
    settings = settings.with_flags({"server.addr": addr})
    source = settings.sources["server.addr"]
    host, port = parse_addr(settings.text("server.addr"), "--addr" if source == "flag" else f"server.addr ({source})")
    tls = settings.table("server.tls")
    metrics = settings.text("server.metrics_addr")
    metrics_addr = (
        parse_addr(metrics, f"server.metrics_addr ({settings.sources['server.metrics_addr']})") if metrics else None
    )
    if embed is None or not embed.explicit:
        embed = configured_choice(settings) or EmbedderChoice()
    return ServerConfig(
        host=host,
        port=port,
        token=settings.text("server.token") or None,
        allowed_origins=settings.strings("server.allowed_origins"),
        max_concurrent=settings.integer("server.max_concurrent"),
        write_timeout=settings.optional_number("server.write_timeout_secs"),
        read_only=settings.flag("server.read_only"),
        query_timeout=settings.optional_number("server.query_timeout_secs"),
        max_queries=settings.optional_integer("server.max_queries"),
        max_request_bytes=settings.integer("server.max_request_bytes"),
        max_batch=settings.integer("server.max_batch"),
        shutdown_timeout=settings.optional_number("server.shutdown_timeout_secs"),
        header_timeout=settings.number("server.header_timeout_secs"),
        max_connections=settings.integer("server.max_connections"),
        min_free_disk=settings.integer("server.min_free_disk"),
        metrics_addr=metrics_addr,
        tls_cert=tls.get("cert"),
        tls_key=tls.get("key"),
        embed=embed,
        ef_search=settings.integer("index.ef_search"),
        group_index_dir=settings.text("log.index_dir") if settings.text("log.url") else "",
        code_roots=tuple(Path(root) for root in settings.strings("server.code_roots")),
        settings=settings,
    )
