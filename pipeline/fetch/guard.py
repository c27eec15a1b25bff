"""The fetch guard: which addresses drsg may connect to, and one guarded HTTP(S) download.

The policy is checked on the address a socket *actually connected to*, at every hop of a redirect
chain, so DNS that answers differently the second time (rebinding) or a redirect to an internal
host gains nothing. ``ipaddress.is_global`` alone is not the policy: it passes IPv4-compatible
``::7f00:1`` (127.0.0.1), NAT64 ``64:ff9b::/96`` (any IPv4 address, private ones too), 6to4
``2002::/16``, Teredo ``2001::/32`` and multicast. Refused (unless ``[fetch] allow_private`` lists a
CIDR holding the address): loopback, private, link-local, CGNAT ``100.64.0.0/10``, multicast,
reserved, unspecified, documentation and benchmarking ranges, and every IPv6 form that embeds or
tunnels an IPv4 address (an IPv4-mapped address is judged as the IPv4 address it maps).

:func:`download` is the synchronous client (plugin installs); the URL crawler reuses
:func:`refusal` at its connector's socket factory.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from drsg.kernel import telemetry
from drsg.kernel.errors import FetchError, FetchRefused

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

MAX_REDIRECTS = 5
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK = 1 << 16

_V4_REFUSED = tuple(
    ipaddress.IPv4Network(net)
    for net in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",
        "100.64.0.0/10",  # CGNAT shared space
        "127.0.0.0/8",
        "169.254.0.0/16",
        "172.16.0.0/12",
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "192.88.99.0/24",  # 6to4 relay anycast
        "192.168.0.0/16",
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the broadcast address
    )
)
#: IPv6 prefixes refused with the reason (the forms that embed or tunnel IPv4 first)
_V6_REFUSED = tuple(
    (ipaddress.IPv6Network(net), why)
    for net, why in (
        ("::/96", "an IPv4-compatible address (it reaches the IPv4 address it embeds)"),
        ("64:ff9b::/96", "a NAT64 address (it reaches the IPv4 address it embeds)"),
        ("64:ff9b:1::/48", "a local-use NAT64 address"),
        ("2002::/16", "a 6to4 address (it tunnels to the IPv4 address it embeds)"),
        ("2001::/32", "a Teredo address (it tunnels to an IPv4 address)"),
        ("100::/64", "a discard-only address"),
        ("2001:db8::/32", "a documentation address"),
        ("2001:2::/48", "a benchmarking address"),
        ("fc00::/7", "a unique-local (private) address"),
        ("fe80::/10", "a link-local address"),
        ("fec0::/10", "a site-local address"),
        ("ff00::/8", "a multicast address"),
    )
)


def networks(cidrs: Iterable[str]) -> tuple[Network, ...]:
    """``[fetch] allow_private`` as networks (the settings loader has checked each)."""
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def refusal(address: str | Address, allow_private: Sequence[Network] = ()) -> str | None:
    """Why drsg may not connect to ``address``, or None when it may."""
    ip = ipaddress.ip_address(address.split("%", 1)[0] if isinstance(address, str) else address)
    if any(ip.version == net.version and ip in net for net in allow_private):
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d is the IPv4 host itself
            why = refusal(ip.ipv4_mapped, allow_private)
            return None if why is None else f"an IPv4-mapped form of {ip.ipv4_mapped}, {why}"
        if ip.is_loopback or ip.is_unspecified:
            return "a loopback or unspecified address"
        for net, why in _V6_REFUSED:
            if ip in net:
                return why
        if not ip.is_global:
            return "not a global address"
        return None
    if ip.is_multicast:
        return "a multicast address"
    if any(ip in v4 for v4 in _V4_REFUSED):
        return "a private, loopback, link-local, shared or reserved address"
    if not ip.is_global:
        return "not a global address"
    return None


def refused(reason: str, message: str) -> FetchRefused:
    """The guard's refusal, counted (``drsg_fetch_refused_total``, ``reason`` one of telemetry.FETCH_REASONS)."""
    telemetry.fetch_refused(reason)
    return FetchRefused(message)


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes


def download(
    url: str,
    *,
    max_bytes: int,
    allow_private: Sequence[Network] = (),
    timeout: float = 30.0,
    max_redirects: int = MAX_REDIRECTS,
    total_timeout: float = 600.0,
) -> Fetched:
    """GET ``url`` through the guard: http(s) only, redirects followed by hand (each hop checked),
    at most ``max_bytes`` of body, ``timeout`` per socket operation and ``total_timeout`` in all (a
    server trickling a byte at a time gains nothing). A FetchError says what was refused or failed."""
    deadline = time.monotonic() + total_timeout
    current = url
    for _hop in range(max_redirects + 1):
        parts = urlsplit(current)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            telemetry.fetch_refused("url")
            raise FetchError(f"{current} is not an http(s) URL with a host; only http and https are fetched")
        # the port always given: with none, http.client reads it off the host, and "::1" becomes "::" port 1
        port = parts.port or (443 if parts.scheme == "https" else 80)
        connection = _connection(parts.scheme, parts.hostname, port, timeout, allow_private)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            connection.request("GET", path, headers={"User-Agent": "drsg", "Accept-Encoding": "identity"})
            response = connection.getresponse()
            if response.status in REDIRECTS:
                location = response.getheader("Location")
                if not location:
                    raise FetchError(f"{current} redirected ({response.status}) without a Location")
                current = urljoin(current, location)
                continue
            if response.status != 200:
                raise FetchError(f"{current} answered HTTP {response.status} {response.reason}")
            length = response.getheader("Content-Length")
            if length is not None and length.isdigit() and int(length) > max_bytes:
                raise FetchError(f"{current} is {int(length)} bytes, over the {max_bytes}-byte limit")
            body = bytearray()
            while chunk := response.read1(CHUNK):
                body += chunk
                if len(body) > max_bytes:
                    raise FetchError(f"{current} sent more than the {max_bytes}-byte limit")
                if time.monotonic() > deadline:
                    raise FetchError(f"{current} took longer than {total_timeout:g} s to download")
            return Fetched(current, response.status, response.getheader("Content-Type") or "", bytes(body))
        except (OSError, http.client.HTTPException) as exc:
            raise FetchError(f"cannot fetch {current}: {exc}") from None
        finally:
            connection.close()
    raise FetchError(f"{url} redirected more than {max_redirects} times")


def _connection(
    scheme: str, host: str, port: int | None, timeout: float, allow_private: Sequence[Network]
) -> http.client.HTTPConnection:
    if scheme == "https":
        return _GuardedHTTPS(host, port, timeout=timeout, context=ssl.create_default_context(), allow=allow_private)
    return _GuardedHTTP(host, port, timeout=timeout, allow=allow_private)


def _connect(host: str, port: int, timeout: float, allow_private: Sequence[Network]) -> socket.socket:
    """A socket to ``host``: each resolved address is checked before connecting, and the address the
    socket did connect to is checked again (what counts is where the bytes go)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise FetchError(f"cannot resolve {host}: {exc}") from None
    refusals: list[str] = []
    last: OSError | None = None
    for family, kind, proto, _name, sockaddr in infos:
        why = refusal(str(sockaddr[0]), allow_private)
        if why is not None:
            refusals.append(f"{sockaddr[0]} is {why}")
            continue
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout)
            sock.connect(sockaddr)
            peer = str(sock.getpeername()[0])
            why = refusal(peer, allow_private)
            if why is not None:
                telemetry.fetch_refused("connect")
                raise FetchError(f"{host} connected to {peer}, which is {why}; list it in [fetch] allow_private")
            return sock
        except OSError as exc:
            sock.close()
            last = exc
        except BaseException:
            sock.close()
            raise
    if refusals:
        telemetry.fetch_refused("resolved")
        raise FetchError(f"{host} is refused: {'; '.join(refusals)} (allow it with [fetch] allow_private)")
    raise FetchError(f"cannot connect to {host}:{port}: {last}")


class _GuardedHTTP(http.client.HTTPConnection):
    def __init__(self, host: str, port: int | None, *, timeout: float, allow: Sequence[Network]) -> None:
        super().__init__(host, port, timeout=timeout)
        self._allow = allow

    def connect(self) -> None:
        self.sock = _connect(self.host, self.port, self.timeout or 30.0, self._allow)


class _GuardedHTTPS(http.client.HTTPSConnection):
    def __init__(
        self, host: str, port: int | None, *, timeout: float, context: ssl.SSLContext, allow: Sequence[Network]
    ) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self._allow = allow
        self._context = context

    def connect(self) -> None:
        raw = _connect(self.host, self.port, self.timeout or 30.0, self._allow)
        self.sock = self._context.wrap_socket(raw, server_hostname=self.host)
