"""Crawl throughput against a local site, and what the fetch guard costs per connection.

The site (a separate process, aiohttp on 127.0.0.1) serves a root page linking to N pages of real
prose (tests/bench/common.py), each about attention in Transformers plus 30 lines of the corpus.
Engine: ``drsg.pipeline.fetch.crawl`` at concurrency 4 (guarded connections, robots.txt, link
scoring, main-content Markdown, page scoring, document assembly), per-host spacing 0. Raw: a bare
``aiohttp.ClientSession`` fetching the same N+1 URLs at concurrency 4, bodies read and dropped.
Guard per connection: one new connection per request (``force_close``) through drsg's guarded
client vs a plain aiohttp connector, sequentially; and ``refusal()`` alone.

    .venv/bin/python -m tests.bench.bench_crawl                 # appends to RESULTS.md
    .venv/bin/python -m tests.bench.bench_crawl --pages 50 --no-record
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import time
from typing import Any

from tests.bench import common

CONCURRENCY = 4


def _site(pages: int, ready: Any) -> None:
    from aiohttp import web

    lines = common.text_lines(pages * 30 + 100)
    body = {
        f"/papers/transformer-attention-{i}": "<html><head><title>Transformer attention {i}</title></head><body><main>"
        f"<h1>Transformer attention, part {i}</h1><p>Self-attention in the Transformer, part {i}.</p>"
        + "".join(f"<p>{line}</p>" for line in lines[i * 30 : (i + 1) * 30])
        + "</main></body></html>"
        for i in range(pages)
    }
    links = "".join(f'<li><a href="{path}">Transformer attention, part {i}</a></li>' for i, path in enumerate(body))
    body["/"] = (
        "<html><head><title>Attention</title></head><body><main><h1>Attention in Transformers</h1>"
        "<p>The Transformer relies on attention.</p><ol>" + links + "</ol></main></body></html>"
    )

    async def page(request: web.Request) -> web.Response:
        text = body.get(request.path)
        if text is None:
            raise web.HTTPNotFound()
        return web.Response(text=text, content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", page)

    async def run() -> None:
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        ready.send(server.sockets[0].getsockname()[1])
        await asyncio.Event().wait()

    asyncio.run(run())


async def _crawl(url: str, pages: int) -> tuple[float, int, int]:
    from drsg.pipeline.fetch.client import Client
    from drsg.pipeline.fetch.crawl import Budget, crawl
    from drsg.pipeline.fetch.guard import networks

    budget = Budget(pages=pages + 1, depth=1, spacing=0.0, concurrency=CONCURRENCY, total_bytes=1 << 30)
    async with Client(networks(["127.0.0.1/32"])) as client:
        started = time.perf_counter()
        result = await crawl(url + "/", client, budget, "transformer attention")
        elapsed = time.perf_counter() - started
    return elapsed, len(result.kept), len(result.document())


async def _raw(url: str, pages: int) -> float:
    import aiohttp

    urls = [url + "/"] + [f"{url}/papers/transformer-attention-{i}" for i in range(pages)]
    slots = asyncio.Semaphore(CONCURRENCY)
    async with aiohttp.ClientSession() as session:

        async def one(u: str) -> None:
            async with slots, session.get(u) as response:
                await response.read()

        started = time.perf_counter()
        await asyncio.gather(*(one(u) for u in urls))
        return time.perf_counter() - started


async def _guarded_fetch(url: str, pages: int) -> float:
    """The same URLs through drsg's guarded client, fetch only (no parsing or scoring)."""
    from drsg.pipeline.fetch.client import Client
    from drsg.pipeline.fetch.guard import networks

    urls = [url + "/"] + [f"{url}/papers/transformer-attention-{i}" for i in range(pages)]
    slots = asyncio.Semaphore(CONCURRENCY)
    async with Client(networks(["127.0.0.1/32"])) as client:

        async def one(u: str) -> None:
            async with slots:
                await client.get(u, max_bytes=1 << 20)

        started = time.perf_counter()
        await asyncio.gather(*(one(u) for u in urls))
        return time.perf_counter() - started


async def _per_connection(url: str, n: int) -> tuple[float, float]:
    """Seconds per request with a new connection each: drsg's guarded client, a plain aiohttp one."""
    import aiohttp

    from drsg.pipeline.fetch.client import Client
    from drsg.pipeline.fetch.guard import networks

    target = url + "/papers/transformer-attention-0"
    async with Client(networks(["127.0.0.1/32"])) as guarded:
        assert guarded._session is not None
        guarded._session.connector._force_close = True  # type: ignore[union-attr]
        await guarded.get(target, max_bytes=1 << 20)
        started = time.perf_counter()
        for _ in range(n):
            await guarded.get(target, max_bytes=1 << 20)
        drsg = (time.perf_counter() - started) / n
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as plain:
        started = time.perf_counter()
        for _ in range(n):
            async with plain.get(target) as response:
                await response.read()
        raw = (time.perf_counter() - started) / n
    return drsg, raw


def _refusal_cost(n: int) -> float:
    from drsg.pipeline.fetch.guard import networks, refusal

    allow = networks(["127.0.0.1/32"])
    addresses = ["93.184.216.34", "127.0.0.1", "2606:4700:4700::1111", "::ffff:10.0.0.1"] * (n // 4)
    started = time.perf_counter()
    for address in addresses:
        refusal(address, allow)
    return (time.perf_counter() - started) / len(addresses)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-record", action="store_true")
    args = parser.parse_args()
    if args.no_record:
        os.environ["DRSG_BENCH_NO_RECORD"] = "1"
    receive, send = multiprocessing.Pipe(duplex=False)
    server = multiprocessing.Process(target=_site, args=(args.pages, send), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{receive.recv()}"
    try:
        crawls = [asyncio.run(_crawl(url, args.pages)) for _ in range(args.rounds)]
        raws = [asyncio.run(_raw(url, args.pages)) for _ in range(args.rounds)]
        fetches = [asyncio.run(_guarded_fetch(url, args.pages)) for _ in range(args.rounds)]
        per = [asyncio.run(_per_connection(url, args.connections)) for _ in range(args.rounds)]
        check = _refusal_cost(200_000)
    finally:
        server.terminate()
        server.join(5)
    crawl_s = min(c[0] for c in crawls)
    kept, chars = crawls[0][1], crawls[0][2]
    raw_s = min(raws)
    fetched = args.pages + 1
    drsg_pps, raw_pps = fetched / crawl_s, fetched / raw_s
    guarded, plain = min(p[0] for p in per), min(p[1] for p in per)
    fetch_pps = fetched / min(fetches)
    rows = [
        (
            f"pages/s, {fetched} pages at concurrency {CONCURRENCY} (best of {args.rounds})",
            f"{drsg_pps:,.0f} ({crawl_s:.2f} s; {kept} kept, {chars:,} chars assembled)",
            f"{raw_pps:,.0f} ({raw_s:.2f} s; fetch only)",
            f"{common.ratio(drsg_pps, raw_pps):.3f}×",
        ),
        (
            "pages/s, the same URLs through drsg's guarded client, fetch only",
            f"{fetch_pps:,.0f} ({min(fetches):.2f} s)",
            f"{raw_pps:,.0f}",
            f"{common.ratio(fetch_pps, raw_pps):.3f}×",
        ),
        (
            f"one request on a new connection, sequential ({args.connections}×)",
            f"{guarded * 1e6:,.0f} µs (guarded)",
            f"{plain * 1e6:,.0f} µs (plain connector)",
            f"{common.ratio(guarded, plain):.3f}× (+{(guarded - plain) * 1e6:,.0f} µs)",
        ),
        ("`refusal()` per address checked", f"{check * 1e6:.2f} µs", "", ""),
    ]
    notes = [
        "The crawl does per page what the raw loop does not: robots.txt (once), the guard at the resolver and "
        "the socket factory, bounded reading, BeautifulSoup parsing, main-content Markdown (trafilatura: most of "
        "the time), link and page scoring with the BM25 analyser, document assembly. Site and client are separate "
        "processes on 2 cores.",
        "Guarded connection = checked_url + GuardedResolver (the answers filtered) + the socket factory's check, "
        "and the redirect loop; the plain connector resolves 127.0.0.1 the same way (literal) with none of it.",
    ]
    common.record("URL crawl against a local site (aiohttp on loopback)", rows, notes, raw="raw aiohttp")


if __name__ == "__main__":
    main()
