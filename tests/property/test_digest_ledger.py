"""The contribution ledger against its oracle: the sources' latest statements.

Hypothesis applies, re-applies (with changed content) and forgets proposals from three sources in
random order, compacting history between them (the applies' commits leave the log), with a user-made
node in the plane. After every step the plane must hold exactly what the sources currently state: a
digest-made node exists iff some source's latest proposal states its key, an edge iff some source
states its (src, type, dst); every record's ledger holds exactly the stating sources' latest
statements; a property is the user's if the user set it, else the first stating source's value, and
no property outlives every statement of it; the user's node is never deleted. Replaying the same
steps into a second database gives the same records (determinism).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

import drsg
from drsg.kernel.errors import NotFound
from drsg.pipeline.digest.ledger import LEDGER, apply, forget
from drsg.pipeline.digest.proposal import Proposal, ProposedEdge, ProposedNode
from drsg.store.retention import Retention

SOURCES = ["a.md", "b.md", "c.md"]
KEYS = ["Ada", "Alan", "Bletchley", "Engine", "Mine"]  # "Mine" is also the user's own node
TYPES = ["KNOWS", "BUILT"]

statements = st.fixed_dictionaries(
    {
        "nodes": st.dictionaries(
            st.sampled_from(KEYS),
            st.dictionaries(st.sampled_from(["born", "role", "note"]), st.integers(0, 3), max_size=2),
            max_size=4,
        ),
        "edges": st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(TYPES), st.sampled_from(KEYS)), max_size=4),
    }
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("apply"), st.sampled_from(SOURCES), statements),
        st.tuples(st.just("forget"), st.sampled_from(SOURCES), st.none()),
        st.tuples(st.just("compact"), st.sampled_from(SOURCES), st.none()),  # [log] retain_commits = 1
    ),
    min_size=1,
    max_size=8,
)


def _proposal(source: str, said: dict[str, Any]) -> Proposal:
    nodes = said["nodes"]
    proposal = Proposal(source, "p", f"{source}-run", "test:model", "")
    proposal.nodes = [ProposedNode(key, "Thing", dict(props)) for key, props in nodes.items()]
    proposal.edges = [ProposedEdge(s, t, d, {}) for s, t, d in said["edges"] if s in nodes and d in nodes and s != d]
    return proposal


def _state(db: Any) -> tuple[dict[str, dict[str, Any]], set[tuple[str, str, str]], dict[tuple[str, str, str], Any]]:
    with db.snapshot() as snap:
        plane = snap.plane("p")
        nodes = {n.key: n.props for n in snap.nodes(plane.id)}
        keys = {n.id: n.key for n in snap.nodes(plane.id)}
        edges = list(snap.edges(plane.id))
    triples = {(keys[e.src], e.type, keys[e.dst]) for e in edges}
    ledgers = {(keys[e.src], e.type, keys[e.dst]): e.props.get(LEDGER) for e in edges}
    assert len(triples) == len(edges), "an edge (src, type, dst) is written once"
    return nodes, triples, ledgers


def _run(path: Path, plan: list[tuple[str, str, Any]]) -> tuple[Any, dict[str, Proposal]]:
    db = drsg.open(path)
    db.write(lambda tx: tx.create_plane("p"))
    db.write(lambda tx: tx.create_node(tx.plane("p"), "Mine", ["Thing"], {"own": 1}))
    latest: dict[str, Proposal] = {}
    for op, source, said in plan:
        if op == "apply":
            proposal = _proposal(source, said)
            apply(db, proposal)
            latest[source] = proposal
        elif op == "compact":  # the applies' commits leave the log: the ledger must still find their records
            for _ in range(2):  # the horizon lands after the last apply
                db.write(lambda tx: tx.create_node(tx.plane("startup"), None, ["Filler"], {}))
            db.compact_history(Retention(commits=1))
        else:
            try:
                forget(db, "p", source)
            except NotFound:
                assert source not in latest or not (latest[source].nodes or latest[source].edges)
            latest.pop(source, None)
        _check(db, latest)
    return db, latest


def _check(db: Any, latest: dict[str, Proposal]) -> None:
    nodes, triples, edge_ledgers = _state(db)
    stating = {key: {s for s, p in latest.items() if any(n.key == key for n in p.nodes)} for key in KEYS}
    assert set(nodes) == {k for k, who in stating.items() if who} | {"Mine"}
    assert nodes["Mine"]["own"] == 1  # the user's node and property survive everything
    for key, props in nodes.items():
        ledger = props.get(LEDGER, {})
        assert set(ledger) == stating[key], key
        for source in stating[key]:  # the ledger holds each source's latest statement
            assert ledger[source] == next(n for n in latest[source].nodes if n.key == key).props
        visible = {k: v for k, v in props.items() if not k.startswith("_")}
        expected = {"own": 1} if key == "Mine" else {}
        for said in ledger.values():  # in the order the sources first stated the node
            for name, value in said.items():
                expected.setdefault(name, value)
        assert visible == expected, (key, visible, expected)
    stated_edges = {(e.src, e.type, e.dst): set() for p in latest.values() for e in p.edges}
    for source, proposal in latest.items():
        for e in proposal.edges:
            stated_edges[(e.src, e.type, e.dst)].add(source)
    assert triples == set(stated_edges)
    for triple, who in stated_edges.items():
        assert set(edge_ledgers[triple]) == who


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_the_plane_holds_exactly_what_the_sources_currently_state(plan: list[tuple[str, str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        first, _ = _run(Path(tmp) / "one.drsg", plan)
        second, _ = _run(Path(tmp) / "two.drsg", plan)
        assert _state(first) == _state(second)
        first.close()
        second.close()
