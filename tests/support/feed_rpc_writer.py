"""A writer process for feed load tests: ``python feed_rpc_writer.py URL TOKEN NAME COUNT SEED [LANES]``.

Makes COUNT commits over JSON-RPC (``/rpc``), LANES requests in flight at once (each lane owns its
keys, so its creates, label-changing updates, deletes and edges never race one another), about
8% of them in plane ``other`` and the rest in plane ``load``. Every call is one commit; a failed
call exits 1 with the answer on stderr. Prints ``{"commits": COUNT}`` at the end.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from typing import Any

import aiohttp


class Lane:
    def __init__(self, session: aiohttp.ClientSession, url: str, name: str, seed: int) -> None:
        self.session = session
        self.url = url
        self.name = name
        self.rng = random.Random(seed)
        self.mine: list[str] = []
        self.made = 0

    async def call(self, method: str, params: dict[str, Any]) -> None:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        async with self.session.post(self.url, json=body) as resp:
            answer = await resp.json()
        if "result" not in answer:
            sys.exit(f"{self.name}: {method} {params} -> {answer}")

    async def step(self) -> None:
        rng, roll = self.rng, self.rng.random()
        self.made += 1
        if roll < 0.08:
            await self.call("node.create", {"plane": "other", "labels": [rng.choice(["Person", "Robot"])]})
        elif roll < 0.25 and self.mine:
            labels = [rng.choice(["Person", "Robot"])] if rng.random() < 0.3 else None
            params: dict[str, Any] = {"plane": "load", "key": rng.choice(self.mine), "set": {"n": self.made}}
            await self.call("node.update", {**params, "labels": labels} if labels else params)
        elif roll < 0.35 and len(self.mine) > 2:
            await self.call("node.delete", {"plane": "load", "key": self.mine.pop(rng.randrange(len(self.mine)))})
        elif roll < 0.5 and len(self.mine) > 1:
            src, dst = rng.sample(self.mine, 2)
            await self.call("edge.create", {"plane": "load", "src": src, "dst": dst, "type": "NEXT"})
        else:
            key = f"{self.name}-{self.made}"
            labels = [rng.choice(["Person", "Robot"])]
            await self.call(
                "node.create", {"plane": "load", "key": key, "labels": labels, "properties": {"i": self.made}}
            )
            self.mine.append(key)


async def main(url: str, token: str, name: str, count: int, seed: int, lanes: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    left = count
    async with aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(limit=lanes)) as session:

        async def run(lane: Lane) -> None:
            nonlocal left
            while left > 0:
                left -= 1
                await lane.step()

        await asyncio.gather(*(run(Lane(session, url, f"{name}.{i}", seed * 1000 + i)) for i in range(lanes)))
    print(json.dumps({"commits": count}))


if __name__ == "__main__":
    url, token, name, count, seed = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    asyncio.run(main(url, token, name, count, seed, int(sys.argv[6]) if len(sys.argv) > 6 else 8))
