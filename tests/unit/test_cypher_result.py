"""A Cypher answer's wire form: strict JSON whatever a row holds, upstream's count names kept."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from drsg.kernel.values import pack, unpack
from drsg.store.records import Edge, Node
from drsg.workers.cypher.result import CypherResult, Path, WriteCounts, answer_json
from tests.support.values import values


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_every_float_is_strict_json_and_reads_back(value: float) -> None:
    wire = answer_json([value, {"x": value}])
    text = json.dumps(wire, allow_nan=False)  # raises on a bare NaN or Infinity
    item = json.loads(text)[0]
    if math.isfinite(value):
        assert item == value and isinstance(item, float)
    else:
        back = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[item["$float"]]
        assert math.isnan(back) if math.isnan(value) else back == value


def test_a_write_answers_upstreams_labels_set_beside_ours() -> None:
    answer = CypherResult((), (), counts=WriteCounts(nodes_created=1, labels_added=2, labels_removed=1)).to_json()
    assert answer["write"] is True
    assert (answer["labels_set"], answer["labels_added"], answer["labels_removed"]) == (2, 2, 1)
    assert answer["count"] == 0 and answer["nodes_created"] == 1


names = st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=5)
props = st.dictionaries(names, values, max_size=3)
nodes = st.builds(Node, st.integers(0, 9), st.integers(0, 99), st.none() | names, st.lists(names, max_size=2), props)
edges = st.builds(Edge, st.integers(0, 9), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99), names, props)
answers = st.recursive(
    values
    | st.floats()
    | nodes
    | edges
    | st.builds(Path, st.lists(nodes, max_size=2).map(tuple), st.lists(edges, max_size=2).map(tuple)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@given(
    rows=st.lists(st.lists(answers, min_size=2, max_size=2).map(tuple), max_size=3),
    subgraph=st.tuples(st.lists(nodes, max_size=2), st.lists(edges, max_size=2)),
    counts=st.none() | st.builds(WriteCounts, *(st.integers(0, 9) for _ in range(8))),
    seq=st.integers(0, 2**40),
)
def test_an_answer_is_kept_as_an_intents_outcome_losslessly(
    rows: list[tuple[object, ...]], subgraph: tuple[list[Node], list[Edge]], counts: WriteCounts | None, seq: int
) -> None:
    """What a Kafka node's caller reads back from its copy (packed in the file) is the answer its
    copy made: a row's node keeps its key and plane, a map with ``$`` keys stays a map, a NaN a NaN."""
    answer = CypherResult(("a", "b"), tuple(rows), tuple(subgraph[0]), tuple(subgraph[1]), counts, seq)  # type: ignore[arg-type]
    back = CypherResult.from_outcome(unpack(pack(answer.to_outcome())))
    assert repr(back) == repr(answer)  # (repr: NaN is not equal to itself)
