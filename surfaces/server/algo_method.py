"""``plane.algo``: pagerank | components | shortest_path | louvain over one snapshot (drsg.workers.algo).

Upstream's params, defaults and answer (``{algo, results, count}``; shortest_path ``{algo, found,
path}``), plus ``as_of`` / ``as_of_ms`` to run on an earlier commit. A bad call (a shortest_path
without both ends, a damping outside [0, 1], a weight property that is not a number) is -32602 with
one line naming the fix; the method only reads.
"""

from __future__ import annotations

from typing import Any

from drsg.plan.algo import AlgoSpec
from drsg.surfaces.server.params import MAX_LIMIT, Params, as_of, bounded
from drsg.surfaces.server.registry import AS_OF, AS_OF_MS, rpc
from drsg.surfaces.server.state import ServerState
from drsg.workers.algo import run_algo


@rpc("plane.algo", add=[AS_OF, AS_OF_MS])
async def plane_algo(ctx: ServerState, p: Params) -> Any:
    bounded(p, "limit", 100, MAX_LIMIT)
    spec = AlgoSpec.from_params(p)  # checked before anything is read

    def run() -> dict[str, Any]:
        with ctx.db.snapshot(as_of(p)) as snap:
            return run_algo(snap, snap.plane(p["plane"]).id, spec)

    return await ctx.read(run)
