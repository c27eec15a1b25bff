"""bench_peers' generator and its answers: SplitMix64 as the reference algorithm draws it, and the
graph engines' per-query answer sizes equal to a plain-Python walk of the generated edge list."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench import bench_peers

MASK = (1 << 64) - 1


def reference_splitmix64(seed: int, count: int) -> list[int]:
    """Vigna's SplitMix64, one step at a time (the state advances by γ before each mix)."""
    out, state = [], seed
    for _ in range(count):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        out.append(z ^ (z >> 31))
    return out


def test_the_vectorised_generator_is_splitmix64() -> None:
    assert reference_splitmix64(0, 1) == [0xE220A8397B1DCDAF]  # the published first output for seed 0
    assert bench_peers.splitmix64(0, 1000, seed=0).tolist() == reference_splitmix64(0, 1000)
    assert bench_peers.splitmix64(500, 10, seed=42).tolist() == reference_splitmix64(42, 510)[500:]


def test_the_draw_order_edges_then_vectors_then_keys_then_queries() -> None:
    nodes, draws = 50, reference_splitmix64(bench_peers.SEED, 2 * 250 + 3 * 128 + 7)
    w = bench_peers.workload(nodes, vectors=3, lookups=7, vqueries=0)
    assert w["edges"].reshape(-1).tolist() == [d % nodes for d in draws[:500]]
    assert w["vectors"][2, 127] == pytest.approx((draws[500 + 383] >> 11) * 2.0**-53 * 2 - 1, abs=1e-6)
    assert w["keys"].tolist() == [d % nodes for d in draws[500 + 384 :]]


def expected(w: dict, nodes: int) -> tuple[list[int], list[int]]:  # type: ignore[type-arg]
    out: dict[int, list[int]] = {i: [] for i in range(nodes)}
    for a, b in w["edges"].tolist():
        out[a].append(b)
    keys = w["keys"].tolist()
    hop1 = [len(out[k]) for k in keys]
    hop2 = [len(set(out[k]) | {c for b in out[k] for c in out[b]}) for k in keys]
    return hop1, hop2


@pytest.mark.parametrize("engine", ["sqlite", "drsg-import", "drsg-write"])
def test_each_graph_engine_answers_the_sizes_a_plain_walk_gives(tmp_path: Path, engine: str) -> None:
    nodes = 120
    w = bench_peers.workload(nodes, vectors=0, lookups=60, vqueries=0)
    bench_peers.write_files(tmp_path, nodes, w)
    got = bench_peers.child(engine, tmp_path / engine, nodes)
    hop1, hop2 = expected(w, nodes)
    assert got["lookup_sizes"] == [1] * 60
    assert got["hop1_sizes"] == hop1
    assert got["hop2_sizes"] == hop2


def test_the_cross_check_fails_loudly_on_a_differing_answer() -> None:
    same = {"lookup_sizes": [1, 1], "hop1_sizes": [3, 4], "hop2_sizes": [9, 12]}
    bench_peers.cross_check([{"sqlite": same, "kuzu": dict(same)}])
    off = dict(same, hop2_sizes=[9, 11])
    with pytest.raises(SystemExit, match="hop2_sizes of query 1: kuzu 11, sqlite 12"):
        bench_peers.cross_check([{"sqlite": same, "kuzu": off}])
