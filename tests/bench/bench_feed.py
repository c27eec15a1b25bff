"""Commit-to-delivery latency of the change feed at a steady 1k and 10k commits/s.

Writers are asyncio tasks committing one node each on an open-loop schedule (commit i is due at
t0 + i/rate, so group commit absorbs the fsyncs); one subscriber (``drsg.feed.Subscription``, async)
reads the plane's feed in the same process. Latency = the moment the subscriber holds the change
minus the moment ``awrite`` returned to its writer (the commit was durable by then), so a change that
reaches the subscriber before the writer's own task resumes counts as 0. Target (issue #4): p99 < 10 ms
at 10k commits/s. Real text payloads (tests/data). Run: ``python -m tests.bench.bench_feed [--quick]``.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import drsg
from drsg.feed import Subscription
from tests.bench import common


async def _run(rate: int, seconds: float, writers: int) -> dict[str, float]:
    db = drsg.open(common.fresh_dir(f"feed_{rate}") / "g.drsg", map_size=1 << 30)
    plane = db.write(lambda tx: tx.create_plane("feed")).value
    lines = common.text_lines()
    total = int(rate * seconds)
    acked: dict[str, float] = {}
    delivered: dict[str, float] = {}
    sub = Subscription(db, "feed", None, resolved_every=None)
    t0 = time.perf_counter() + 0.2
    next_index = 0

    async def writer() -> None:
        nonlocal next_index
        while next_index < total:
            i = next_index
            next_index += 1
            delay = t0 + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            key = f"n{i}"
            await db.awrite(
                lambda tx, key=key, i=i: tx.create_node(plane, key, ["Line"], {"text": lines[i % len(lines)]})
            )
            acked[key] = time.perf_counter()

    async def subscriber() -> None:
        async for message in sub:
            now = time.perf_counter()
            for change in message.get("changes", []):
                key = (change.get("record") or {}).get("external_key")
                if key is not None:
                    delivered[key] = now
            if len(delivered) >= total:
                return

    reader = asyncio.create_task(subscriber())
    await asyncio.gather(*(writer() for _ in range(writers)))
    await asyncio.wait_for(reader, timeout=60)
    elapsed = max(acked.values()) - t0
    latencies = [max(0.0, delivered[k] - acked[k]) for k in acked]
    db.close()
    return {
        "rate": total / elapsed,
        "p50": common.pct(latencies, 50) * 1000,
        "p99": common.pct(latencies, 99) * 1000,
        "max": max(latencies) * 1000,
        "groups": db.writer.groups_committed,
        "total": total,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="2 s per rate instead of 8")
    ap.add_argument("--writers", type=int, default=256, help="concurrent writer tasks")
    args = ap.parse_args()
    seconds = 2.0 if args.quick else 8.0
    rows = []
    notes = []
    for rate in (1_000, 10_000):
        r = asyncio.run(_run(rate, seconds, args.writers))
        verdict = "" if rate != 10_000 else (" — PASS" if r["p99"] < 10 else " — FAIL (target p99 < 10 ms)")
        rows.append(
            (
                f"{rate:,} commits/s target, {r['total']:,} commits",
                f"achieved {r['rate']:,.0f}/s; delivery p50 {r['p50']:.2f} ms, p99 {r['p99']:.2f} ms, "
                f"max {r['max']:.1f} ms{verdict}",
                "—",
                "—",
            )
        )
        notes.append(f"{rate:,}/s: {r['groups']:,} group commits for {r['total']:,} commits")
    notes.append(
        "One in-process async subscriber on the plane; writers are asyncio tasks on an open-loop schedule "
        "(`db.awrite`); same-process commits wake the subscriber through the database's commit signal."
    )
    common.record("Change feed: commit-to-delivery latency", rows, notes)


if __name__ == "__main__":
    main()
