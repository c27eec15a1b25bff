"""A Cypher read ``AS OF`` a commit equals the same read on an export of the plane at that commit.

A plane gets a history of a few hundred commits (nodes created, updated, relabelled and deleted;
relationships created and deleted; vectors on ``Doc`` nodes under a declared vector index), written
through the store's write transaction. For several commits, the plane's export as of that commit
(``export_jsonl(as_of=…)``) is imported into a fresh database, and each query's answer there must
equal the answer ``AS OF`` that commit on the plane — compared by external keys, since ids differ
across an import. ``AS OF "RFC3339"`` and ``AS OF TIME ms`` must select the commit the log says.
"""

from __future__ import annotations

import io
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

import drsg
from drsg.kernel.asof import format_ms
from drsg.kernel.values import Value, Vector
from drsg.store.transaction import WriteTx
from drsg.workers.cypher.result import CypherResult
from tests.support.cypher_oracle import by_keys

PLANE = "tt"
T = TypeVar("T")
NAMES = ("ada", "alan", "grace", "edsger", "barbara", "donald")
DIMS = 4
PROBE = [0.3, -0.2, 0.9, 0.1]
QUERIES = (
    # a hop with a WHERE, answering nodes, a property and the relationship
    "MATCH (a:Person)-[r:KNOWS]->(b) WHERE a.age > 30 AND b.name <> 'ada' RETURN a, b.name AS name, r",
    # an aggregation grouped by a property that is sometimes absent
    "MATCH (n:Person) RETURN n.team AS team, count(*) AS people, sum(n.age) AS ages, collect(n.name) AS names",
    # a variable-length path count, and the nodes such paths reach
    "MATCH (a)-[:KNOWS|CITES*1..3]->(b:Doc) RETURN count(*) AS paths, count(DISTINCT b) AS ends",
    # a label the history adds and removes
    "MATCH (d:Doc) WHERE d.age IS NOT NULL RETURN d",
    # a vector search over the indexed property (an earlier commit is searched exactly)
    f"SEARCH (d:Doc) ON embedding NEAR {PROBE} TOPK 3 RETURN d",
)


@dataclass
class History:
    db: drsg.Database
    seqs: list[int] = field(default_factory=list)  # the seq of every commit of the history


def _write(db: drsg.Database, fn: Callable[[WriteTx], object], history: History) -> None:
    seq = db.write(fn).seq
    assert seq is not None
    history.seqs.append(seq)


def build_history(db: drsg.Database, commits: int, seed: int) -> History:
    """``commits`` commits of one change each (the first few make the plane and its index), with
    every decision drawn before the commit from a seeded generator."""
    rng = random.Random(seed)
    history = History(db)
    _write(db, lambda tx: tx.create_plane(PLANE), history)
    _write(db, lambda tx: tx.declare_index(tx.plane(PLANE), "vector", "Doc", "embedding", {"dims": DIMS}), history)
    live: list[str] = []
    rels: list[tuple[int, str, str]] = []  # (id, src key, dst key)
    made = 0
    while len(history.seqs) < commits:
        roll = rng.random()
        if roll < 0.25 or len(live) < 4:
            key, made = f"p{made}", made + 1
            labels = rng.choice([["Person"], ["Doc"], ["Person", "Doc"]])
            props: dict[str, Value] = {"age": rng.randint(18, 60), "name": rng.choice(NAMES)}
            if rng.random() < 0.6:
                props["team"] = rng.choice(["red", "blue"])
            if "Doc" in labels:
                props["embedding"] = Vector.of([rng.uniform(-1, 1) for _ in range(DIMS)])
            _write(db, lambda tx, k=key, ls=labels, ps=props: tx.create_node(tx.plane(PLANE), k, ls, ps), history)
            live.append(key)
        elif roll < 0.4:
            key, age = rng.choice(live), rng.randint(18, 60)
            unset = ["team"] if rng.random() < 0.3 else []
            _write(db, lambda tx, k=key, a=age, u=unset: tx.update_node(tx.plane(PLANE), k, {"age": a}, u), history)
        elif roll < 0.5:
            key, labels = rng.choice(live), rng.choice([["Person"], ["Doc"], ["Person", "Doc"], []])
            _write(db, lambda tx, k=key, ls=labels: tx.update_node(tx.plane(PLANE), k, labels=ls), history)
        elif roll < 0.55:
            key = live.pop(rng.randrange(len(live)))
            _write(db, lambda tx, k=key: tx.delete_node(tx.plane(PLANE), k), history)
            rels = [r for r in rels if key not in r[1:]]
        elif roll < 0.93:
            src, dst, kind = rng.choice(live), rng.choice(live), rng.choice(["KNOWS", "KNOWS", "CITES"])

            def link(tx: WriteTx, s: str = src, d: str = dst, t: str = kind) -> int:
                plane = tx.plane(PLANE)
                return tx.link(plane, tx.node_id(plane, s), tx.node_id(plane, d), t).id

            result = db.write(link)
            assert result.seq is not None
            history.seqs.append(result.seq)
            rels.append((result.value, src, dst))
        elif rels:
            rel = rels.pop(rng.randrange(len(rels)))[0]
            _write(db, lambda tx, r=rel: tx.delete_edge(tx.plane(PLANE), r), history)
    return history


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[History]:
    with drsg.open(tmp_path_factory.mktemp("history") / "graph.drsg") as db:
        yield build_history(db, commits=300, seed=36)


def answer(result: CypherResult, keys: dict[int, str | None]) -> Counter[object]:
    return Counter(tuple(by_keys(value, keys) for value in row) for row in result.rows)


def keys_of(plane: drsg.Plane, as_of: int | None = None) -> dict[int, str | None]:
    return {node.id: node.key for node in plane.nodes(as_of=as_of)}


def exported_at(history: History, seq: int, into: Path) -> tuple[drsg.Database, drsg.Plane]:
    """The plane as of ``seq``, exported and imported into a fresh database with the same index."""
    text = io.StringIO()
    history.db.plane(PLANE).export_jsonl(text, as_of=seq)
    path = into / f"at-{seq}.jsonl"
    path.write_text(text.getvalue())
    fresh = drsg.open(into / f"at-{seq}.drsg")
    fresh.create_plane(PLANE)
    fresh.write(lambda tx: tx.declare_index(tx.plane(PLANE), "vector", "Doc", "embedding", {"dims": DIMS}))
    if path.stat().st_size:
        fresh.plane(PLANE).import_jsonl(path)
    return fresh, fresh.plane(PLANE)


def check_at(history: History, seq: int, into: Path, as_of_text: str | None = None) -> list[Counter[object]]:
    """Each query's answer as of ``seq``, checked equal to its answer on the export at ``seq``."""
    plane = history.db.plane(PLANE)
    fresh, copy = exported_at(history, seq, into)
    answers = []
    try:
        for query in QUERIES:
            then = plane.cypher(f"{query} AS OF {as_of_text or seq}")
            now = copy.cypher(query)
            assert then.columns == now.columns, query
            answers.append(answer(then, keys_of(plane, seq)))
            assert answers[-1] == answer(now, keys_of(copy)), f"{query} AS OF {seq}"
            if not query.startswith("SEARCH"):  # the API's as_of= pins the same commit
                assert answer(plane.cypher(query, as_of=seq), keys_of(plane, seq)) == answers[-1], query
    finally:
        fresh.close()
    return answers


def spread(items: list[T], count: int) -> list[T]:
    """``count`` items evenly spaced from the first to the last."""
    return [items[round(i * (len(items) - 1) / (count - 1))] for i in range(count)]


def test_as_of_a_seq_equals_the_export_at_it(history: History, tmp_path: Path) -> None:
    seen = [check_at(history, seq, tmp_path) for seq in spread(history.seqs[2:], 6)]
    for i, query in enumerate(QUERIES):  # every query's answer changes along the history
        assert len({frozenset(answers[i].items()) for answers in seen}) >= 4, query


def test_as_of_a_time_selects_the_commit_the_log_says(history: History, tmp_path: Path) -> None:
    commits = list(history.db.commits(history.seqs[0], history.seqs[-1]))
    for commit in spread(commits, 4)[1:]:
        # a time names the last commit made at or before it (several commits share a millisecond)
        expected = max(c.seq for c in commits if c.ts <= commit.ts)
        plane = history.db.plane(PLANE)
        for query in QUERIES[:3]:
            by_seq = plane.cypher(f"{query} AS OF {expected}")
            keys = keys_of(plane, expected)
            for spelling in (f"TIME {commit.ts}", f'"{format_ms(commit.ts)}"'):
                by_time = plane.cypher(f"{query} AS OF {spelling}")
                assert by_time.seq == by_seq.seq == expected, spelling
                assert answer(by_time, keys) == answer(by_seq, keys), f"{query} AS OF {spelling}"
            # the API's as_of= takes a datetime (built exactly: ts / 1000 as a float can lose the last ms)
            moment = datetime.fromtimestamp(commit.ts // 1000, UTC) + timedelta(milliseconds=commit.ts % 1000)
            assert answer(plane.cypher(query, as_of=moment), keys) == answer(by_seq, keys), query
    check_at(history, expected, tmp_path, f"TIME {commit.ts}")


@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_as_of_any_seq_equals_the_export_at_it(
    history: History, tmp_path_factory: pytest.TempPathFactory, data: st.DataObject
) -> None:
    seq = data.draw(st.sampled_from(history.seqs[2:]), label="seq")
    check_at(history, seq, tmp_path_factory.mktemp("any"))
