"""The crawler's HTTP client: aiohttp with the fetch guard at the connector.

Two checks, both with :func:`drsg.pipeline.fetch.guard.refusal`: the resolver drops refused
answers (a name that resolves only to refused addresses is refused), and the connector's
``socket_factory`` refuses the very ``sockaddr`` the socket is about to ``connect()`` to — aiohttp
connects to the resolver's answer, never a second lookup, so DNS rebinding cannot switch the address
between check and connect, and an IP literal (which skips the resolver) meets the same check.
Redirects are followed by hand (≤ 5), each hop through the same session, so every hop is checked.
Bodies are read under a byte cap; compressed bodies are inflated here in bounded steps
(``auto_decompress`` is off), so a gzip bomb stops at the cap instead of filling memory.
"""

from __future__ import annotations

import importlib.metadata
import ipaddress
import math
import socket
import unicodedata
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from drsg.kernel.errors import FetchError, FetchRefused
from drsg.pipeline.fetch.guard import MAX_REDIRECTS, REDIRECTS, Network, refusal

PROJECT_URL = "https://github.com/wangyingsm/dr-strange"  # upstream's: drsg has no public home of its own yet
USER_AGENT = f"drsg-fetch/{importlib.metadata.version('drsg')} (+{PROJECT_URL})"  # the installed drsg
ROBOTS_TOKEN = "drsg-fetch"
_PERMIT = "list its block in [fetch] allow_private to permit it"


def checked_url(url: str, allow: Sequence[Network] = ()) -> str:
    """``url`` if it is http(s) with a host; its host judged early when it is an address in any
    spelling (``2130706433``, ``0177.1``, ``0x7f.1``, fullwidth digits). Not the enforcement — the
    socket check is — but it names the problem before any lookup."""
    if "\\" in url:  # browsers read "\" as "/": what host that names is ambiguous, so refuse it
        raise FetchRefused(f"{url} holds a backslash; write the URL with '/' only")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        raise FetchRefused(f"{url} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise FetchRefused(f"{url} is not an http(s) URL with a host; only http and https are fetched")
    name = host.rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):  # RFC 6761: always loopback, whatever DNS says
        raise FetchRefused(f"{url} names {host}, a loopback name; {_PERMIT}")
    literal = _address_literal(host)
    if literal is not None:
        why = refusal(literal, allow)
        if why is not None:
            raise FetchRefused(f"{url} names {literal}, {why}; {_PERMIT}")
    elif not host.isascii() or unicodedata.normalize("NFKC", host) != host:
        try:  # a look-alike host: what IDNA makes of it is what would be looked up
            ascii_host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise FetchRefused(f"{url} has a host name that is not valid IDNA") from None
        literal = _address_literal(ascii_host)
        if literal is not None or ascii_host in ("localhost", "localhost."):
            raise FetchRefused(f"{url} spells {ascii_host} in look-alike characters")
    return url


def _address_literal(host: str) -> str | None:
    """The address ``host`` spells, in any form ``inet_aton`` or IPv6 accepts, else None."""
    text = unicodedata.normalize("NFKC", host).strip("[]").rstrip(".")  # "127.0.0.1." is the same host
    try:
        return str(ipaddress.ip_address(text.split("%", 1)[0]))
    except ValueError:
        pass
    try:
        return socket.inet_ntoa(socket.inet_aton(text))  # decimal, octal, hex and short forms
    except OSError:
        return None


class GuardedResolver(AbstractResolver):
    """Resolves through ``inner`` and keeps only the answers the guard permits."""

    def __init__(self, allow: Sequence[Network], inner: AbstractResolver | None = None) -> None:
        self._allow = allow
        self._inner = inner or ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = await self._inner.resolve(host, port, family)
        kept = [a for a in answers if refusal(a["host"], self._allow) is None]
        if not kept:
            why = "; ".join(f"{a['host']} is {refusal(a['host'], self._allow)}" for a in answers)
            raise FetchRefused(f"{host} resolves only to refused addresses: {why}; {_PERMIT}")
        return kept

    async def close(self) -> None:
        await self._inner.close()


def guarded_socket_factory(allow: Sequence[Network]) -> Callable[[Any], socket.socket]:
    """The connector's socket factory: it sees the exact address ``connect()`` will be given."""

    def make(addr_info: Any) -> socket.socket:
        family, kind, proto, _name, sockaddr = addr_info
        why = refusal(str(sockaddr[0]), allow)
        if why is not None:
            raise FetchRefused(f"refused to connect to {sockaddr[0]}, {why}; {_PERMIT}")
        return socket.socket(family, kind, proto)

    return make


@dataclass(frozen=True)
class Page:
    """One fetched response: the URL after redirects, its type and its (inflated) body."""

    url: str
    status: int
    content_type: str
    body: bytes
    wire_bytes: int  # as received, before inflating


@dataclass
class Meter:
    """A byte budget shared by concurrent responses (a crawl's total): each chunk read takes from it."""

    limit: int
    used: int = 0

    @property
    def left(self) -> int:
        return max(0, self.limit - self.used)


class Client:
    """One guarded session; ``async with Client(allow) as c: await c.get(url, max_bytes=…)``."""

    def __init__(
        self,
        allow: Sequence[Network] = (),
        *,
        timeout: float = 20.0,
        resolver: AbstractResolver | None = None,
        max_redirects: int = MAX_REDIRECTS,
    ) -> None:
        self.allow = tuple(allow)
        self.timeout = timeout
        self.max_redirects = max_redirects
        self._resolver = resolver
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Client:
        connector = aiohttp.TCPConnector(
            resolver=GuardedResolver(self.allow, self._resolver),
            socket_factory=guarded_socket_factory(self.allow),
            use_dns_cache=False,  # each hop resolves afresh and is checked afresh
            limit=0,  # the crawler's semaphore is the concurrency budget
        )
        self._session = aiohttp.ClientSession(
            connector=connector,
            auto_decompress=False,
            trust_env=False,  # never a proxy from the environment: the guard must see the real peer
            headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate"},
        )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()

    async def get(
        self,
        url: str,
        *,
        max_bytes: int,
        timeout: float | None = None,
        meter: Meter | None = None,
        any_status: bool = False,
    ) -> Page:
        """GET ``url``, following redirects by hand; FetchRefused when the guard says no, FetchError past
        ``max_bytes`` (after inflating), past what ``meter`` has left, on a status other than 200 (unless
        ``any_status``), or for anything else that went wrong."""
        assert self._session is not None, "use Client in `async with`"
        seconds = self.timeout if timeout is None else timeout
        limit = aiohttp.ClientTimeout(total=seconds if math.isfinite(seconds) else None)
        current = url
        for _hop in range(self.max_redirects + 1):
            checked_url(current, self.allow)
            try:
                async with self._session.get(current, allow_redirects=False, timeout=limit) as response:
                    if response.status in REDIRECTS:
                        location = response.headers.get("Location")
                        if not location:
                            raise FetchError(f"{current} redirected ({response.status}) without a Location")
                        current = urljoin(current, location)
                        continue
                    if response.status != 200 and not any_status:
                        raise FetchError(f"{current} answered HTTP {response.status} {response.reason or ''}".rstrip())
                    body, wire = await _read(response, current, max_bytes, meter)
                    kind = response.headers.get("Content-Type", "")
                    return Page(current, response.status, kind, body, wire)
            except TimeoutError:  # before OSError, its base class
                raise FetchError(f"{current} took longer than {seconds:g} s") from None
            except (aiohttp.ClientError, OSError) as exc:
                raise FetchError(f"cannot fetch {current}: {exc or type(exc).__name__}") from None
        raise FetchError(f"{url} redirected more than {self.max_redirects} times")


async def _read(response: aiohttp.ClientResponse, url: str, max_bytes: int, meter: Meter | None) -> tuple[bytes, int]:
    declared = response.content_length
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    inflate: Any = None  # a zlib decompressor, or None for a body as sent
    if encoding in ("", "identity"):
        pass
    elif encoding in ("gzip", "x-gzip"):
        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    elif encoding == "deflate":
        pass  # zlib-wrapped or raw: decided on the first bytes
    else:
        raise FetchError(f"{url} is sent with Content-Encoding {encoding}, which drsg does not read")
    if declared is not None and declared > max_bytes:
        raise FetchError(f"{url} is {declared} bytes, over the {max_bytes}-byte limit")
    body = bytearray()
    wire = 0
    taken = 0  # of body, already counted on the meter
    async for chunk in response.content.iter_chunked(1 << 16):
        if encoding == "deflate" and inflate is None and chunk:
            zlib_header = len(chunk) > 1 and chunk[0] & 0x0F == 8 and (chunk[0] << 8 | chunk[1]) % 31 == 0
            inflate = zlib.decompressobj(zlib.MAX_WBITS if zlib_header else -zlib.MAX_WBITS)  # servers send both
        wire += len(chunk)
        if inflate is None:
            body += chunk
        else:
            try:  # bounded steps: never more than one byte past the cap is produced
                data = chunk
                while data and len(body) <= max_bytes:
                    body += inflate.decompress(data, max_bytes + 1 - len(body))
                    data = inflate.unconsumed_tail
            except zlib.error as exc:
                raise FetchError(f"{url} sent a damaged {encoding} body ({exc})") from None
        if len(body) > max_bytes or wire > max_bytes:
            raise FetchError(f"{url} sent more than the {max_bytes}-byte limit")
        if meter is not None:
            meter.used += len(body) - taken
            taken = len(body)
            if meter.used > meter.limit:
                raise FetchError(f"the crawl's {meter.limit}-byte total budget ran out while {url} was read")
    if inflate is not None:
        if not inflate.eof:
            raise FetchError(f"{url} sent a truncated {encoding} body")
        body += inflate.flush()
        if len(body) > max_bytes:
            raise FetchError(f"{url} sent more than the {max_bytes}-byte limit")
        if meter is not None:
            meter.used += len(body) - taken
    return bytes(body), wire
