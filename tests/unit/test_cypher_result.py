"""A Cypher answer's wire form: strict JSON whatever a row holds, upstream's count names kept."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from drsg.workers.cypher.result import CypherResult, WriteCounts, answer_json


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
