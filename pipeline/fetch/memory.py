"""The Fetcher port's in-memory backend: a test double that ships with drsg.

Pages live in a table keyed by URL; host names resolve from a table of addresses. Every answer is
judged with the guard's :func:`~drsg.pipeline.fetch.guard.refusal` as a socket's would be (refused
answers dropped; none left: FetchRefused), and the port's own URL check, redirects, caps and
inflating run unchanged — so the crawler's logic can be exercised with no socket at all. Each
request that would have been sent is recorded in :attr:`MemoryFetcher.sent`.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import urlsplit, urlunsplit

from drsg.kernel.errors import FetchError
from drsg.pipeline.fetch.base import PERMIT, Exchange, Fetcher
from drsg.pipeline.fetch.guard import MAX_REDIRECTS, Network, refusal, refused


@dataclass(frozen=True)
class Route:
    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=lambda: {"Content-Type": "text/html"})
    reason: str = ""  # empty: the status's standard phrase


class MemoryFetcher(Fetcher):
    def __init__(
        self,
        routes: Mapping[str, Route],
        allow: Sequence[Network] = (),
        *,
        names: Mapping[str, Sequence[str]] | None = None,
        timeout: float = 20.0,
        max_redirects: int = MAX_REDIRECTS,
    ) -> None:
        super().__init__(allow, timeout=timeout, max_redirects=max_redirects)
        self.routes = dict(routes)
        self.names = dict(names or {})
        self.sent: list[tuple[str, str]] = []  # (address connected to, URL)

    def _connect(self, host: str) -> str:
        try:
            answers = [str(ipaddress.ip_address(host.strip("[]").split("%", 1)[0]))]
        except ValueError:
            if host not in self.names:
                raise FetchError(f"cannot resolve {host}: no such name") from None
            answers = list(self.names[host])
        kept = [a for a in answers if refusal(a, self.allow) is None]
        if not kept:
            why = "; ".join(f"{a} is {refusal(a, self.allow)}" for a in answers)
            raise refused("resolved", f"{host} resolves only to refused addresses: {why}; {PERMIT}")
        return kept[0]

    @contextlib.asynccontextmanager
    async def exchange(self, url: str, timeout: float | None) -> AsyncIterator[Exchange]:
        parts = urlsplit(url)
        address = self._connect(parts.hostname or "")
        self.sent.append((address, url))
        key = urlunsplit((parts.scheme, parts.netloc.lower(), parts.path or "/", parts.query, ""))
        route = self.routes.get(key, Route(404, b"not here", {"Content-Type": "text/plain"}))

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(route.body), 1 << 16):
                yield route.body[start : start + (1 << 16)]

        reason = route.reason or _phrase(route.status)
        yield Exchange(route.status, reason, route.headers, chunks(), len(route.body))


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""
