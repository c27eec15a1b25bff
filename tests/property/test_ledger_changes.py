"""Writing only what changed leaves what writing everything leaves.

``ledger.apply_changes(db, new, since=old)`` is how ``serve watch`` folds: it states only the facts
that differ from the last proposal. The oracle is ``ledger.apply`` of the last proposal into a fresh
database. Over random sequences of parsed-fact proposals — keys appearing and vanishing, labels
changing, ``_`` properties changing, edges whose end is missing (they cannot be written until the
end appears) — the two planes export the same canonical bytes, and forgetting the source leaves
the folded plane empty (the ledger still lists every commit that wrote it).
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from drsg.pipeline.digest.ledger import apply, apply_changes, forget
from drsg.pipeline.digest.proposal import Proposal, ProposedEdge, ProposedNode
from drsg.store.database import Database
from drsg.store.jsonl import export_lines

SOURCE, PLANE = "/src/tree", "code"
NODE_KEYS = [f"k{i}" for i in range(6)]
ENDS = [*NODE_KEYS, "gone1", "gone2"]  # edges may name keys no proposal ever states

nodes = st.dictionaries(
    st.sampled_from(NODE_KEYS),
    st.tuples(
        st.sampled_from(["Function", "Class", "Method"]),
        st.sampled_from([(), ("External",)]),
        st.integers(1, 3),
        st.sampled_from([None, "name", "chain"]),
    ),
)
edges = st.dictionaries(
    st.tuples(st.sampled_from(ENDS), st.sampled_from(["CALLS", "CONTAINS"]), st.sampled_from(ENDS)),
    st.integers(1, 3),
    max_size=10,
)
proposals = st.lists(st.tuples(nodes, edges), min_size=1, max_size=6)
_dbs = itertools.count()


def _proposal(spec: tuple[dict, dict]) -> Proposal:  # type: ignore[type-arg]
    node_spec, edge_spec = spec
    proposal = Proposal(SOURCE, PLANE, "", "", "")
    for key, (label, extra, line, resolved) in node_spec.items():
        props = {"line": line, "_generated_by": "t@1"}
        if resolved is not None:
            props["_resolved_by"] = resolved
        proposal.nodes.append(ProposedNode(key, label, props, extra_labels=extra))
    for (src, kind, dst), line in edge_spec.items():
        proposal.edges.append(ProposedEdge(src, kind, dst, {"line": line, "_generated_by": "t@1"}))
    return proposal


LINE_1 = ("Function", (), 1, None)


@settings(max_examples=150, deadline=None)
@given(proposals)
# a change that only withdraws, then one that adds: the ledger must still list the first commit
@example([({"k0": LINE_1, "k1": LINE_1}, {}), ({"k0": LINE_1}, {}), ({"k0": LINE_1, "k2": LINE_1}, {})])
def test_changes_written_one_by_one_equal_the_last_written_whole(specs: list) -> None:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as scratch:
        folded, fresh = Path(scratch) / "folded.drsg", Path(scratch) / "fresh.drsg"
        chain = [_proposal(spec) for spec in specs]
        with Database(folded) as db:
            apply(db, chain[0])
            for before, after in itertools.pairwise(chain):
                apply_changes(db, after, before)
            got = list(export_lines(db, PLANE, canonical=True))
            if got:  # the ledger still knows every commit that wrote the source: forgetting it leaves nothing
                forget(db, PLANE, SOURCE)
                assert list(export_lines(db, PLANE, canonical=True)) == []
        with Database(fresh) as db:
            apply(db, chain[-1])
            expected = list(export_lines(db, PLANE, canonical=True))
        assert got == expected
