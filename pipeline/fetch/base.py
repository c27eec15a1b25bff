"""The Fetcher port: one guarded GET, redirects followed by hand, bodies read under caps.

The policy lives here, once, for every backend: the URL check (:func:`checked_url`: http(s) with a
host; an address in any spelling judged before any lookup), redirects followed by hand (≤ 5, each
hop checked again, and each request — the first and every hop — passed through the caller's
:data:`Gate`, where a crawler applies robots.txt, host spacing and its request count), a status
other than 200 refused, bodies read under a byte cap and a shared :class:`Meter`, compressed
bodies inflated here in bounded steps (so a gzip bomb stops at the cap). A backend supplies only
the exchange — one request, its status, headers and body chunks — and the address check on what it
connects to:

- :class:`drsg.pipeline.fetch.client.Client`: aiohttp, the guard at the resolver and at the
  connector's socket factory (the address ``connect()`` is given);
- :class:`drsg.pipeline.fetch.memory.MemoryFetcher`: a shipped test double, pages in memory and
  names resolved from a table, each address judged as a socket's would be.

``tests/contract/test_fetcher_contract.py`` holds both to the same behaviour.
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import socket
import unicodedata
import zlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any
from urllib.parse import urljoin, urlsplit

from drsg.kernel.errors import FetchError
from drsg.pipeline.fetch.guard import MAX_REDIRECTS, REDIRECTS, Network, refusal, refused

PERMIT = "list its block in [fetch] allow_private to permit it"

#: wraps each request of one ``get`` (the first and every redirect hop), given its URL: it may wait
#: before the request, refuse it (FetchError, FetchRefused) before anything is sent, or count it
Gate = Callable[[str], contextlib.AbstractAsyncContextManager[object]]


def checked_url(url: str, allow: Sequence[Network] = ()) -> str:
    """``url`` if it is http(s) with a host; its host judged early when it is an address in any
    spelling (``2130706433``, ``0177.1``, ``0x7f.1``, fullwidth digits). Not the enforcement — the
    socket check is — but it names the problem before any lookup."""
    if "\\" in url:  # browsers read "\" as "/": what host that names is ambiguous, so refuse it
        raise refused("url", f"{url} holds a backslash; write the URL with '/' only")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - a bad port raises here
    except ValueError as exc:
        raise refused("url", f"{url} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise refused("url", f"{url} is not an http(s) URL with a host; only http and https are fetched")
    name = host.rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):  # RFC 6761: always loopback, whatever DNS says
        raise refused("loopback_name", f"{url} names {host}, a loopback name; {PERMIT}")
    literal = _address_literal(host)
    if literal is not None:
        why = refusal(literal, allow)
        if why is not None:
            raise refused("address", f"{url} names {literal}, {why}; {PERMIT}")
    elif not host.isascii() or unicodedata.normalize("NFKC", host) != host:
        try:  # a look-alike host: what IDNA makes of it is what would be looked up
            ascii_host = host.encode("idna").decode("ascii")
        except UnicodeError:
            raise refused("url", f"{url} has a host name that is not valid IDNA") from None
        literal = _address_literal(ascii_host)
        ascii_name = ascii_host.rstrip(".").lower()
        if literal is not None or ascii_name == "localhost" or ascii_name.endswith(".localhost"):
            raise refused("url", f"{url} spells {ascii_host} in look-alike characters")
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


@dataclass
class Exchange:
    """One response as a backend hands it over: status, headers, and its body as chunks."""

    status: int
    reason: str
    headers: Mapping[str, str]
    chunks: AsyncIterator[bytes]
    content_length: int | None = None


class Fetcher(ABC):
    """A guarded GET. ``async with fetcher: await fetcher.get(url, max_bytes=…)``."""

    def __init__(self, allow: Sequence[Network] = (), *, timeout: float = 20.0, max_redirects: int = MAX_REDIRECTS):
        self.allow = tuple(allow)
        self.timeout = timeout
        self.max_redirects = max_redirects

    async def __aenter__(self) -> Fetcher:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None

    @abstractmethod
    def exchange(self, url: str, timeout: float | None) -> contextlib.AbstractAsyncContextManager[Exchange]:
        """One request for ``url`` (already checked), refusing (FetchRefused) any address the guard
        refuses before connecting to it; other failures as FetchError."""

    async def get(
        self,
        url: str,
        *,
        max_bytes: int,
        timeout: float | None = None,
        meter: Meter | None = None,
        any_status: bool = False,
        gate: Gate | None = None,
    ) -> Page:
        """GET ``url``, following redirects by hand; FetchRefused when the guard says no, FetchError past
        ``max_bytes`` (after inflating), past what ``meter`` has left, on a status other than 200 (unless
        ``any_status``), or for anything else that went wrong. ``gate`` wraps every request, hops included."""
        seconds = self.timeout if timeout is None else timeout
        limit = seconds if math.isfinite(seconds) else None
        current = url
        for _hop in range(self.max_redirects + 1):
            checked_url(current, self.allow)
            async with gate(current) if gate else contextlib.nullcontext(), self.exchange(current, limit) as response:
                if response.status in REDIRECTS:
                    location = response.headers.get("Location")
                    if not location:
                        raise FetchError(f"{current} redirected ({response.status}) without a Location")
                    current = urljoin(current, location)
                    continue
                if response.status != 200 and not any_status:
                    raise FetchError(f"{current} answered HTTP {response.status} {response.reason}".rstrip())
                body, wire = await _read(response, current, max_bytes, meter)
                return Page(current, response.status, response.headers.get("Content-Type", ""), body, wire)
        raise FetchError(f"{url} redirected more than {self.max_redirects} times")


async def _read(response: Exchange, url: str, max_bytes: int, meter: Meter | None) -> tuple[bytes, int]:
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
    async for chunk in response.chunks:
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
