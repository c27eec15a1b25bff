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

import asyncio
import itertools
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

import drsg
from drsg.kernel.errors import DrsgError
from drsg.kernel.values import Vector
from drsg.plan.query import plan_from_json
from drsg.plan.statements import parse_query
from drsg.store.jsonl import ON_CONFLICT, import_jsonl
from drsg.workers.plans import run_plan
from drsg.workers.search import Searcher
from tests.support.server import RunningServer, start_server

FUZZ_EXAMPLES = int(os.environ.get("DRSG_FUZZ_EXAMPLES", "500"))
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


# --------------------------------------------------------------------------- SEARCH / HYBRID and plans


@pytest.fixture(scope="module")
def searcher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Searcher]:
    """A plane of 30 documents with vectors, edges, a keyword and a vector index."""
    db = drsg.open(tmp_path_factory.mktemp("fuzz-search") / "g.drsg")
    words = ["graph", "store", "log", "vector", "keyword", "time", "travel", "commit", "plane", "index"]

    def seed(tx) -> None:  # type: ignore[no-untyped-def]
        plane = tx.create_plane("p")
        for i in range(30):
            body = " ".join(words[(i * j) % len(words)] for j in range(1, 6))
            vector = Vector.of([float((i * j) % 7) + 0.5 for j in range(1, 5)])
            tx.create_node(plane, f"d{i}", ["Doc"], {"body": body, "embedding": vector})
        for i in range(29):
            tx.create_edge(plane, f"@d{i}", f"@d{(i * 3 + 1) % 30}", "CITES")
        tx.declare_index(plane, "keyword", "Doc", "body", {"language": "english"})
        tx.declare_index(plane, "vector", "Doc", "embedding", {"metric": "cosine"})

    db.write(seed)
    yield Searcher(db)
    db.close()


def _embed(text: str) -> Vector:
    return Vector.of([float(len(text) % 5) + 1.0, 1.0, 0.5, float(len(text) % 3)])


_WORDS = [
    "SEARCH",
    "HYBRID",
    "(",
    "d",
    ":",
    "Doc",
    "Nope",
    ")",
    "ON",
    "body",
    "embedding",
    "nope",
    "NEAR",
    "MATCHING",
    "METRIC",
    "cosine",
    "dot",
    "l2",
    "bogus",
    "TOPK",
    "LIMIT",
    "RETURN",
    "*",
    "AS",
    "OF",
    "TIME",
    "VECTOR",
    "KEYWORD",
    "GRAPH",
    "HOPS",
    "DECAY",
    "SEEDS",
    "WEIGHT",
    "CANDIDATES",
    "FUSION",
    "rrf",
    "dbsf",
    "minmax",
    "K",
    "[",
    "]",
    ",",
    "$q",
    "$v",
    "$missing",
    "0",
    "1",
    "2",
    "-3",
    "10",
    "0.5",
    "-0.0",
    "1e309",
    "99999999999999999999",
    "18446744073709551616",
]
_STRINGS = ['"graph store"', '"a\\qb"', '"a\tb"', '"\\u00e9"', '"2026-01-01T00:00:00Z"', '""', '"\\ud800"', '"x']


def _rarely_bad(good: list[str], bad: list[str]) -> st.SearchStrategy[str]:
    """A valid fill nine times in ten: a statement has many holes, and one bad fill refuses it all."""
    return st.sampled_from(good * 9 * len(bad) + bad * len(good))


_n = _rarely_bad(["0", "1", "3", "10"], ["-3", "0.5", "1e309", "99999999999999999999"])
_vec = _rarely_bad(["[1, 2, 3, 4]", "[0.5, 1, 1, 2]", '"graph store"', "$v"], ["[1, 2]", "[]", "$q", "$missing"])
_str = _rarely_bad(['"graph store"', '"time travel"', '"2026-01-01T00:00:00Z"'], _STRINGS)
_VALID = [
    "SEARCH (d:Doc) ON body MATCHING {s} TOPK {n} LIMIT {n}",
    "SEARCH (d:Doc) ON embedding NEAR {v} METRIC {m} TOPK {n} RETURN d LIMIT {n}",
    "SEARCH (d) NEAR {v} TOPK {n} AS OF {n}",
    "SEARCH (d:Doc) ON body MATCHING {s} AS OF {s}",
    "HYBRID (d:Doc) VECTOR ON embedding NEAR {v} METRIC {m} WEIGHT {n} KEYWORD ON body MATCHING {s} "
    "GRAPH HOPS {n} DECAY {n} SEEDS {n} CANDIDATES {n} TOPK {n} FUSION {f} K {n} LIMIT {n}",
]
_fills = {
    "s": _str,
    "n": _n,
    "v": _vec,
    "m": _rarely_bad(["cosine", "dot", "l2"], ["bogus"]),
    "f": _rarely_bad(["minmax", "rrf", "dbsf"], ["bogus"]),
}


@st.composite
def _statements(draw: st.DrawFn) -> str:
    """A valid statement with its holes filled, then 0 to 3 tokens replaced, dropped or inserted."""
    template = draw(st.sampled_from(_VALID))
    tokens = [draw(_fills[tok[1]]) if tok.startswith("{") else tok for tok in template.split()]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        at = draw(st.integers(0, max(0, len(tokens) - 1)))
        noise = draw(st.one_of(st.sampled_from(_WORDS), _str, st.text(max_size=4)))
        action = draw(st.sampled_from(["replace", "drop", "insert"]))
        if action == "replace" and tokens:
            tokens[at] = noise
        elif action == "drop" and tokens:
            del tokens[at]
        else:
            tokens.insert(at, noise)
    return " ".join(tokens)


_search_params = st.fixed_dictionaries(
    {}, optional={"q": values, "v": st.one_of(st.lists(st.floats(-2, 2), min_size=4, max_size=4), values)}
)


@FUZZ
@given(text=_statements(), params=_search_params)
def test_fuzz_search_and_hybrid_statements(searcher: Searcher, text: str, params: dict[str, Any]) -> None:
    """A statement parses to a plan that runs, or either step is one DrsgError."""
    try:
        plan = parse_query(text, params)
        event("parsed")
        run_plan(searcher, "p", plan, _embed)
        event("ran")
    except DrsgError as exc:
        event(f"refused: {type(exc).__name__}")


def _mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A valid value nine times in ten, else anything at all."""
    return st.integers(0, 9).flatmap(lambda roll: values if roll == 0 else valid)


_k = _mostly(st.integers(0, 20))
_vector_body = st.fixed_dictionaries(
    {"label": _mostly(st.just("Doc")), "property": _mostly(st.just("embedding")), "k": _k},
    optional={
        "metric": _mostly(st.sampled_from(["Cosine", "Dot", "L2", "cosine"])),
        "query": _mostly(st.lists(st.floats(-2, 2), min_size=4, max_size=4)),
        "query_text": _mostly(st.just("time travel")),
    },
)
_keyword_body = st.fixed_dictionaries(
    {"label": _mostly(st.just("Doc")), "property": _mostly(st.just("body")), "query": _mostly(_texts), "k": _k},
    optional={"extra": values},
)
_hybrid_body = st.fixed_dictionaries(
    {},
    optional={
        "label": st.one_of(st.just("Doc"), values),
        "vector": _mostly(st.one_of(st.none(), _vector_body)),
        "keyword": st.one_of(st.none(), st.fixed_dictionaries({"property": st.just("body"), "query": _texts}), values),
        "graph": st.one_of(st.none(), st.fixed_dictionaries({}, optional={"hops": values, "decay": values})),
        "weights": values,
        "candidates": st.one_of(st.integers(-2, 500), values),
        "k": values,
        "fusion": st.one_of(st.sampled_from(["minmax", "rrf", "dbsf"]), values),
    },
)
_sources = st.integers(0, 9).flatmap(
    lambda roll: [
        values,
        st.just("ScanAll"),
        st.builds(lambda kind, body: {kind: body}, st.sampled_from(["ScanLabel", "SeekIds", "SeekKeys", "X"]), values),
        st.just({"ScanLabel": "Doc"}),
        st.lists(st.integers(0, 40), max_size=4).map(lambda ids: {"SeekIds": ids}),
        _vector_body.map(lambda body: {"VectorTopK": body}),
        _vector_body.map(lambda body: {"VectorTopK": body}),
        _keyword_body.map(lambda body: {"KeywordTopK": body}),
        _keyword_body.map(lambda body: {"KeywordTopK": body}),
        _hybrid_body.map(lambda body: {"Hybrid": body}),
    ][roll]
)
_step_names = st.sampled_from(["Limit", "Skip", "X", "Expand", "ExpandVar", "Filter", "Sort", "Distinct"])
_exprs = st.one_of(
    values,
    st.builds(
        lambda kind, body: {kind: body},
        st.sampled_from(["Property", "HasLabel", "Not", "IsNull", "Literal", "Compare", "In"]),
        values,
    ),
)
_steps = st.one_of(
    st.just("Distinct"),
    st.builds(
        lambda d, t: {"Expand": {"dir": d, "edge_type": t}},
        st.one_of(st.sampled_from(["Out", "In", "Both"]), values),
        values,
    ),
    st.builds(
        lambda d, t, lo, hi: {"ExpandVar": {"dir": d, "edge_type": t, "min": lo, "max": hi}},
        st.sampled_from(["Out", "In", "Both"]),
        st.one_of(st.just("CITES"), values),
        st.integers(-1, 7),
        st.integers(-1, 7),
    ),
    _exprs.map(lambda e: {"Filter": e}),
    st.builds(lambda e, d: {"Filter": {"Compare": {"op": "Eq", "lhs": e, "rhs": d}}}, _exprs, _exprs),
    st.builds(lambda e, d: {"Sort": [{"expr": e, "descending": d}]}, _exprs, values),
)
_plans = st.one_of(
    st.fixed_dictionaries(
        {"source": _sources},
        optional={"steps": st.one_of(st.lists(st.one_of(st.dictionaries(_step_names, values), _steps)), values)},
    ),
)


@FUZZ
@given(plan=_plans)
@example(plan={"source": {"ScanLabel": "\ud800"}})  # found by this test: a lone surrogate crashed the label scan
def test_fuzz_logical_plans(searcher: Searcher, plan: Any) -> None:
    """Upstream's plan JSON, well and badly shaped: a checked plan that runs, or one DrsgError."""
    try:
        checked = plan_from_json(plan)
        event("checked")
        run_plan(searcher, "p", checked, _embed)
        event("ran")
    except DrsgError as exc:
        event(f"refused: {type(exc).__name__}")


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
        st.binary(max_size=64), values.map(lambda v: _dumps(v, ascii=True)), st.just("[" * 3000 + "]" * 3000)
    )
)
def test_fuzz_json_rpc_raw_bodies(fuzzed_server: RunningServer, body: bytes | str) -> None:
    _check_answer(fuzzed_server, body)
    assert fuzzed_server.get("/health").status == 200


# --------------------------------------------------------------------------- the WebSocket feed

_watch_params = st.fixed_dictionaries(
    {"plane": _mostly(st.just("p"))},
    optional={
        name: values
        for name in ("label", "labels", "ops", "from_seq", "include_before", "include_vectors", "resolved_every")
    },
)
_frames = st.one_of(
    _requests.map(lambda r: _dumps(r, ascii=True)),
    _watch_params.map(lambda p: _dumps({"jsonrpc": "2.0", "id": 1, "method": "plane.watch", "params": p}, ascii=True)),
    st.just(_dumps({"jsonrpc": "2.0", "id": 1, "method": "plane.unwatch"})),
    st.text(max_size=40),
    st.binary(max_size=40),
    st.just("[" * 3000 + "]" * 3000),
)


async def _ws_round(running: RunningServer, frame: str | bytes) -> list[dict[str, Any]]:
    """Send one frame, then a sentinel call; every frame the server sent until the sentinel's answer."""
    url = f"{running.url}/ws?token={running.token}"
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        await (ws.send_bytes(frame) if isinstance(frame, bytes) else ws.send_str(frame))
        await ws.send_str(json.dumps({"jsonrpc": "2.0", "id": "sentinel", "method": "plane.list"}))
        seen: list[dict[str, Any]] = []
        async with asyncio.timeout(20):
            while True:
                msg = await ws.receive()
                assert msg.type == aiohttp.WSMsgType.TEXT, (
                    f"the socket did not stay usable: {msg.type} {msg.data!r:.200}"
                )
                answer = json.loads(msg.data)
                if isinstance(answer, dict) and answer.get("id") == "sentinel":
                    assert "result" in answer, answer
                    return seen
                seen.append(answer)


@FUZZ
@given(frame=_frames)
def test_fuzz_websocket_frames(fuzzed_server: RunningServer, frame: str | bytes) -> None:
    for answer in asyncio.run(_ws_round(fuzzed_server, frame)):
        for item in answer if isinstance(answer, list) else [answer]:
            error = item.get("error") if isinstance(item, dict) else None
            assert not (error and error.get("code") == -32603), f"{frame!r:.300} -> {error}"
