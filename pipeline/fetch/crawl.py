"""The URL crawler: a root page and the links worth following, under budgets, as one document.

Level by level from the root: the links of the pages kept at depth d are scored before any
request (``scoring.link_score``); the best ones the page budget leaves room for are fetched,
``concurrency`` at once (a link that cannot be read gives its slot to the next one). Every request,
each redirect hop included, passes the crawler's gate: its host's robots.txt (read once per host),
its host's spacing (raised to the robots.txt ``Crawl-delay``, capped), a concurrency slot, and the
request count. Each page read is scored on its text and kept when it reaches the floor
(``scoring.floor``: absolute, and relative to the best at its depth); only kept pages' links are
followed. Every link considered and not kept is reported with why. Budgets: pages, depth, bytes per response, total
bytes, total time (the whole crawl's wall clock), concurrency and per-host spacing.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import math
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from protego import Protego

from drsg.kernel.errors import ConversionError, FetchError, FetchRefused, UsageError
from drsg.kernel.settings import Settings
from drsg.pipeline.fetch import page as pages
from drsg.pipeline.fetch import scoring
from drsg.pipeline.fetch.base import Fetcher, Meter, checked_url
from drsg.pipeline.fetch.client import ROBOTS_TOKEN, Client, user_agent
from drsg.pipeline.fetch.guard import networks

#: (done, total, url): after each request
Progress = Callable[[int, int, str], None]
ROBOTS_BYTES = 512 << 10


@dataclass(frozen=True)
class Budget:
    """What one crawl may spend (upstream's defaults; ``[fetch]`` holds the server's ceilings)."""

    pages: int = 10  # kept pages, the root included
    depth: int = 1  # link levels followed (0: the root only)
    page_bytes: int = 4 << 20
    total_bytes: int = 24 << 20
    seconds: float = 120.0  # the whole crawl (math.inf: no limit)
    concurrency: int = 4
    spacing: float = 0.5  # seconds between two requests to one host
    max_crawl_delay: float = 60.0
    request_timeout: float = 20.0


@dataclass
class CrawledPage:
    url: str
    title: str
    depth: int
    score: float
    chars: int
    size: int  # bytes received
    kept: bool
    block: str = ""


@dataclass(frozen=True)
class Dropped:
    url: str
    reason: str


@dataclass
class Crawl:
    root: str
    pages: list[CrawledPage] = field(default_factory=list)  # root first, then by score, then URL
    dropped: list[Dropped] = field(default_factory=list)
    candidates: int = 0  # links considered
    requests: int = 0
    bytes: int = 0
    seconds: float = 0.0

    @property
    def kept(self) -> list[CrawledPage]:
        return [p for p in self.pages if p.kept]

    def document(self) -> str:
        return pages.document([p.block for p in self.kept])

    def to_json(self, blocks: bool = True) -> dict[str, Any]:
        """Upstream's shape: each page with its score and ``kept``; ``blocks`` adds its Markdown."""
        keys = ("url", "title", *(("block",) if blocks else ()), "score", "depth", "chars", "size", "kept")
        return {
            "pages": [{k: getattr(p, k) for k in keys} for p in self.pages],
            "dropped": [{"url": d.url, "reason": d.reason} for d in self.dropped],
        }


@dataclass
class _Host:
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    robots: Protego | None = None
    robots_read: bool = False
    robots_block: str | None = None  # why the whole host is disallowed (robots.txt unreachable)
    delay: float = 0.0
    next_at: float = 0.0


class _Crawler:
    def __init__(self, client: Fetcher, budget: Budget, progress: Progress | None) -> None:
        self.client, self.budget, self.progress = client, budget, progress
        self.deadline = time.monotonic() + budget.seconds
        self.hosts: dict[str, _Host] = {}
        self.slots = asyncio.Semaphore(budget.concurrency)
        self.meter = Meter(budget.total_bytes)  # bodies as they stream in, concurrent ones together
        self.requests = 0  # HTTP requests, robots.txt included
        self.planned = 1  # pages chosen to fetch so far, the root included
        self.done = 0
        # one parsing thread: the loop keeps moving, and CPU-bound parsers do not fight over the GIL
        self.parser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="drsg-crawl-parse")

    def _out_of_time(self) -> str:
        return f"the crawl's {self.budget.seconds:g}-second time budget ran out"

    async def fetch(self, url: str) -> tuple[Any, int] | str:
        """(``Reading``, bytes) for ``url``, or why it was not read; progress counts either."""
        try:
            return await self._fetch(url)
        finally:
            self.done += 1
            if self.progress is not None:
                self.progress(self.done, self.planned, url)

    async def _fetch(self, url: str) -> tuple[Any, int] | str:
        if time.monotonic() >= self.deadline:
            return self._out_of_time()
        if not self.meter.left:
            return f"the crawl's {self.budget.total_bytes}-byte total budget is spent"
        left = self.deadline - time.monotonic()
        try:  # the crawl's deadline bounds the whole chain, its hops' waits included
            async with asyncio.timeout(left if math.isfinite(left) else None):
                got = await self.client.get(
                    url,
                    max_bytes=self.budget.page_bytes,
                    timeout=self.budget.request_timeout,  # each request's own limit
                    meter=self.meter,
                    gate=functools.partial(self._gate, url),
                )
        except TimeoutError:
            return self._out_of_time()
        except FetchError as exc:
            return self._out_of_time() if time.monotonic() >= self.deadline else str(exc)
        try:  # parsing is CPU work: a thread keeps the loop (and a server's other requests) moving
            reading = await asyncio.get_running_loop().run_in_executor(
                self.parser, _reading, got.url, got.content_type, got.body
            )
            return reading, len(got.body)
        except ConversionError as exc:
            return str(exc)

    @contextlib.asynccontextmanager
    async def _gate(self, first: str, url: str) -> AsyncIterator[None]:
        """Every request of one page's fetch, the first and each redirect hop: its host's robots.txt
        (read once, whichever host the hop names) must allow it, it starts no sooner than its host's
        spacing after the last request there, it takes a concurrency slot and counts as a request."""
        hop = "" if url == first else f"it redirects to {url}, and "
        host = self.hosts.setdefault(urlsplit(url).netloc, _Host(delay=self.budget.spacing))
        # One request to a host at a time passes this lock, so its spacing counts from the moment the
        # one before it really started (a start reserved ahead is missed when a slot or a busy loop
        # delays that one: the next then came sooner than the spacing).
        async with host.lock:
            if not host.robots_read:
                await self._robots(url, host)
            if host.robots_block is not None:
                raise FetchRefused(hop + host.robots_block)
            if host.robots is not None and not host.robots.can_fetch(url, ROBOTS_TOKEN):
                raise FetchRefused(f"{hop}robots.txt disallows {'that' if hop else 'it'}")
            if max(time.monotonic(), host.next_at) >= self.deadline:
                raise FetchError(self._out_of_time())
            await asyncio.sleep(max(0.0, host.next_at - time.monotonic()))
            await self.slots.acquire()
            host.next_at = time.monotonic() + host.delay
        try:
            if time.monotonic() >= self.deadline:
                raise FetchError(self._out_of_time())
            self.requests += 1
            yield
        finally:
            self.slots.release()

    async def _robots(self, url: str, host: _Host) -> None:
        """robots.txt, once per host (RFC 9309 §2.3.1): 4xx means no rules; 5xx or unreachable means
        the whole host is disallowed; a refused address is left for the page's own refusal to say."""
        host.robots_read = True
        parts = urlsplit(url)
        try:
            async with self.slots:
                got = await self.client.get(
                    f"{parts.scheme}://{parts.netloc}/robots.txt",
                    max_bytes=ROBOTS_BYTES,
                    timeout=max(0.1, min(self.budget.request_timeout, self.deadline - time.monotonic())),
                    any_status=True,
                )
        except FetchRefused:
            return
        except FetchError as exc:
            host.robots_block = f"robots.txt could not be read ({exc}), so the host counts as disallowed"
            return
        except asyncio.CancelledError:  # the crawl's deadline: the host stays disallowed, never unread and open
            host.robots_block = "robots.txt could not be read in time, so the host counts as disallowed"
            raise
        finally:
            host.next_at = time.monotonic() + host.delay
            self.requests += 1
        if got.status >= 500:
            host.robots_block = f"robots.txt answered HTTP {got.status}, so the host counts as disallowed"
            return
        if got.status != 200:
            return
        try:
            host.robots = Protego.parse(got.body.decode("utf-8", "replace"))
        except Exception:  # a parser failure means no rules, as the RFC says
            return
        delay = host.robots.crawl_delay(ROBOTS_TOKEN)
        if delay:
            host.delay = max(host.delay, min(float(delay), self.budget.max_crawl_delay))
            host.next_at = time.monotonic() + host.delay


def _reading(url: str, content_type: str, body: bytes) -> pages.Reading:
    kind = pages.media_type(content_type)
    if kind in pages.HTML_TYPES or (not kind and body.lstrip()[:1] == b"<"):
        return pages.read_html(body, url)
    if kind in pages.TEXT_TYPES:
        return pages.read_text(body.decode("utf-8", "replace"))
    if kind in pages.PDF_TYPES:
        from drsg.pipeline.convert import to_markdown_bytes

        return pages.read_text(to_markdown_bytes(body, "page.pdf").markdown)
    raise ConversionError(f"its type {kind or 'unknown'} is not read (HTML, Markdown, plain text or PDF only)")


async def crawl(
    root: str, client: Fetcher, budget: Budget = Budget(), topic: str = "", progress: Progress | None = None
) -> Crawl:
    """Crawl from ``root``; FetchError when the root itself cannot be read."""
    started = time.monotonic()
    checked_url(root, client.allow)
    crawler = _Crawler(client, budget, progress)
    try:
        return await _crawl(root, crawler, budget, topic, started)
    finally:
        crawler.parser.shutdown(wait=False, cancel_futures=True)


async def _crawl(root: str, crawler: _Crawler, budget: Budget, topic: str, started: float) -> Crawl:
    first = await crawler.fetch(root)
    if isinstance(first, str):
        raise FetchError(f"cannot read the root page: {first}" if root in first else f"cannot read {root}: {first}")
    reading, size = first
    goal = scoring.target(reading.markdown, topic)
    root_url = pages.normalise(root)
    result = Crawl(root_url)
    result.pages.append(
        CrawledPage(root_url, reading.title, 0, 1.0, len(reading.markdown), size, True, _block(root_url, reading))
    )
    seen = {root_url}
    frontier: list[tuple[pages.Link, str]] = [(link, root_url) for link in reading.links]
    for depth in range(1, budget.depth + 1):
        ranked = _rank(goal, frontier, seen, result)
        frontier = []
        if not ranked:
            break
        read = await _read_level(crawler, [url for _score, url in ranked], budget, result)
        scores = scoring.page_scores(goal, [r.markdown for _u, r, _n in read])
        line = scoring.floor(scores, goal)
        for (url, reading, size), score in zip(read, scores, strict=True):
            kept = score >= line
            result.pages.append(
                CrawledPage(
                    url,
                    reading.title,
                    depth,
                    round(score, 4),
                    len(reading.markdown),
                    size,
                    kept,
                    _block(url, reading) if kept else "",
                )
            )
            if kept:
                frontier.extend((link, url) for link in reading.links)
            else:
                result.dropped.append(
                    Dropped(url, f"relevance {score:.3f} is below the floor {line:.3f} for this crawl")
                )
    for url in dict.fromkeys(link.url for link, _parent in frontier if link.url not in seen):
        result.dropped.append(Dropped(url, f"deeper than the {budget.depth}-level depth budget"))
    result.pages[1:] = ordered(result.pages[1:])
    result.requests, result.bytes = crawler.requests, crawler.meter.used
    result.seconds = round(time.monotonic() - started, 3)
    return result


async def _read_level(
    crawler: _Crawler, ranked: list[str], budget: Budget, result: Crawl
) -> list[tuple[str, Any, int]]:
    """The best-ranked links read, as many as the page budget leaves room for: that many fetches at
    once, and a link that cannot be read gives its slot to the next one in rank order. Returns
    (url, reading, bytes) in rank order; each link not read is in ``result.dropped``, why."""
    room = max(0, budget.pages - len(result.kept))
    queue = collections.deque(ranked)
    read: dict[str, tuple[Any, int]] = {}
    failed: dict[str, str] = {}

    slots = min(room, len(queue))
    crawler.planned += slots

    async def slot() -> None:
        while queue:
            url = queue.popleft()
            if len(ranked) - len(queue) > slots:  # a refill: one more than planned
                crawler.planned += 1
            outcome = await crawler.fetch(url)
            if not isinstance(outcome, str):
                read[url] = outcome
                return
            failed[url] = outcome  # the slot goes to the next link

    await asyncio.gather(*(slot() for _ in range(slots)))
    left = set(queue)
    for url in ranked:
        if url in failed:
            result.dropped.append(Dropped(url, failed[url]))
        elif url in left:
            why = f"lower-ranked than the {room} link(s) the {budget.pages}-page budget left room for"
            result.dropped.append(Dropped(url, why))
    return [(url, *read[url]) for url in ranked if url in read]


def ordered(crawled: list[CrawledPage]) -> list[CrawledPage]:
    """Kept pages first, by score; depth only breaks a tie (toward the root), then the URL."""
    return sorted(crawled, key=lambda p: (not p.kept, -p.score, p.depth, p.url))


def _block(url: str, reading: pages.Reading) -> str:
    return pages.block(url, reading.title, reading.markdown)


def _rank(
    goal: scoring.Target, frontier: list[tuple[pages.Link, str]], seen: set[str], result: Crawl
) -> list[tuple[float, str]]:
    """The new links scored before any request, best first (ties: the URL); links that share no term
    with the target are dropped here, having cost nothing."""
    best: dict[str, float] = {}
    for link, parent in frontier:
        if link.url in seen:
            continue
        text = scoring.link_text(link.anchor, link.title, link.url)
        score = scoring.link_score(goal, text, in_prose=link.in_prose, same_host=pages.same_host(link.url, parent))
        best[link.url] = max(score, best.get(link.url, 0.0))
    seen.update(best)
    result.candidates += len(best)
    ranked = []
    for url, score in best.items():
        if not goal.empty and score <= 0.0:
            result.dropped.append(Dropped(url, "its link shares no term with what the crawl looks for"))
        else:
            ranked.append((round(score, 6), url))
    return sorted(ranked, key=lambda item: (-item[0], item[1]))


def client_for(settings: Settings, budget: Budget) -> Client:
    """The guarded client a crawl under ``settings`` fetches with (open it with ``async with``)."""
    return Client(
        networks(settings.strings("fetch.allow_private")),
        timeout=budget.request_timeout,
        agent=user_agent(settings.text("fetch.contact")),
    )


def budget_for(settings: Settings, pages: int | None = None, depth: int | None = None) -> Budget:
    """A crawl's budget: ``[fetch]``'s values, with ``pages`` and ``depth`` as asked — which may be
    less than ``[fetch]``'s ceilings, never more (UsageError naming the setting)."""
    if not settings.flag("fetch.enabled"):
        raise FetchRefused("fetching URLs is turned off ([fetch] enabled = false in drsg.toml)")
    ceiling_pages, ceiling_depth = settings.integer("fetch.max_pages"), settings.integer("fetch.max_depth")
    asked_pages = min(Budget.pages, ceiling_pages) if pages is None else pages
    asked_depth = min(Budget.depth, ceiling_depth) if depth is None else depth
    if asked_pages > ceiling_pages:
        raise UsageError(f"--pages {asked_pages} is over [fetch] max_pages = {ceiling_pages}; ask for less or raise it")
    if asked_depth > ceiling_depth:
        raise UsageError(f"--depth {asked_depth} is over [fetch] max_depth = {ceiling_depth}; ask for less or raise it")
    seconds = settings.optional_number("fetch.max_seconds")
    timeout = settings.optional_number("fetch.request_timeout_secs")
    return Budget(
        pages=asked_pages,
        depth=asked_depth,
        page_bytes=settings.integer("fetch.max_page_bytes"),
        total_bytes=settings.integer("fetch.max_total_bytes"),
        seconds=math.inf if seconds is None else float(seconds),
        concurrency=settings.integer("fetch.concurrency"),
        spacing=settings.integer("fetch.host_spacing_ms") / 1000,
        max_crawl_delay=float(settings.integer("fetch.max_crawl_delay_secs")),
        request_timeout=math.inf if timeout is None else float(timeout),
    )
