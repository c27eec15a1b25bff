"""The Fetcher port's aiohttp backend: the fetch guard at the connector.

Two checks, both with :func:`drsg.pipeline.fetch.guard.refusal`: the resolver drops refused
answers (a name that resolves only to refused addresses is refused), and the connector's
``socket_factory`` refuses the very ``sockaddr`` the socket is about to ``connect()`` to — aiohttp
connects to the resolver's answer, never a second lookup, so DNS rebinding cannot switch the address
between check and connect, and an IP literal (which skips the resolver) meets the same check. The
URL check, redirects, caps and inflating are the port's (``base.py``); ``auto_decompress`` is off
so the port inflates in bounded steps.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import socket
from collections.abc import AsyncIterator, Callable, Sequence
from types import TracebackType
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from drsg.kernel.errors import FetchError
from drsg.pipeline.fetch.base import PERMIT, Exchange, Fetcher, Meter, Page, checked_url
from drsg.pipeline.fetch.guard import MAX_REDIRECTS, Network, refusal, refused

USER_AGENT = f"drsg-fetch/{importlib.metadata.version('drsg')}"  # the installed drsg
ROBOTS_TOKEN = "drsg-fetch"


def user_agent(contact: str = "") -> str:
    """The crawler's User-Agent, naming who runs it when ``[fetch] contact`` says (the convention
    ``name/version (+contact)``); drsg has no public home to name instead."""
    return f"{USER_AGENT} (+{contact})" if contact else USER_AGENT


__all__ = ["ROBOTS_TOKEN", "USER_AGENT", "Client", "GuardedResolver", "Meter", "Page", "checked_url", "user_agent"]


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
            raise refused("resolved", f"{host} resolves only to refused addresses: {why}; {PERMIT}")
        return kept

    async def close(self) -> None:
        await self._inner.close()


def guarded_socket_factory(allow: Sequence[Network]) -> Callable[[Any], socket.socket]:
    """The connector's socket factory: it sees the exact address ``connect()`` will be given."""

    def make(addr_info: Any) -> socket.socket:
        family, kind, proto, _name, sockaddr = addr_info
        why = refusal(str(sockaddr[0]), allow)
        if why is not None:
            raise refused("connect", f"refused to connect to {sockaddr[0]}, {why}; {PERMIT}")
        return socket.socket(family, kind, proto)

    return make


class Client(Fetcher):
    """One guarded aiohttp session; ``async with Client(allow) as c: await c.get(url, max_bytes=…)``."""

    def __init__(
        self,
        allow: Sequence[Network] = (),
        *,
        timeout: float = 20.0,
        resolver: AbstractResolver | None = None,
        max_redirects: int = MAX_REDIRECTS,
        agent: str = USER_AGENT,
    ) -> None:
        super().__init__(allow, timeout=timeout, max_redirects=max_redirects)
        self._resolver = resolver
        self.agent = agent
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
            headers={"User-Agent": self.agent, "Accept-Encoding": "gzip, deflate"},
        )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._session is not None:
            await self._session.close()

    @contextlib.asynccontextmanager
    async def exchange(self, url: str, timeout: float | None) -> AsyncIterator[Exchange]:
        assert self._session is not None, "use Client in `async with`"
        try:  # the body is read inside: its errors land here too
            async with self._session.get(
                url, allow_redirects=False, timeout=aiohttp.ClientTimeout(total=timeout)
            ) as response:
                yield Exchange(
                    response.status,
                    response.reason or "",
                    response.headers,
                    response.content.iter_chunked(1 << 16),
                    response.content_length,
                )
        except TimeoutError:  # before OSError, its base class
            raise FetchError(f"{url} took longer than {timeout or 0:g} s") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise FetchError(f"cannot fetch {url}: {exc or type(exc).__name__}") from None
