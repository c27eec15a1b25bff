"""The HYBRID query form and the ``Hybrid`` plan source it compiles to (pure).

    HYBRID (d[:Label]) [VECTOR [ON prop] NEAR <"text" | [1.0, 2.0] | $param> [METRIC m] [WEIGHT w]]
        [KEYWORD ON prop MATCHING "text" [WEIGHT w]] [GRAPH HOPS n [DECAY d] [SEEDS s] [WEIGHT w]]
        [CANDIDATES n] [TOPK k] [FUSION minmax|rrf|dbsf [K n]] [RETURN d|*] [LIMIT n] [AS OF …]

Parts come in any order, each at most once, with at least one of VECTOR or KEYWORD; KEYWORD needs
a label. Defaults (upstream's): CANDIDATES 100, TOPK 10, DECAY 0.5, SEEDS 10, weights vector 1.0,
keyword 1.0, graph 0.5. The source follows upstream's serde shape::

    {"Hybrid": {"label", "vector": {"property", "query"|"query_text", "metric"} | null,
                "keyword": {"property", "query"} | null, "graph": {"hops", "decay", "seeds"} | null,
                "weights": {"vector", "keyword", "graph"}, "candidates", "k"}}

plus ``"fusion"`` (and ``"rrf_k"``) when a FUSION other than minmax is asked for. ``drsg.plan.query``
does not import this module; a surface dispatches on the leading word (see :func:`parse_query`).
"""

from __future__ import annotations

import json
from typing import Any

from drsg.plan.query import METRIC_NAMES, Plan, QuerySyntaxError, _Parser, parse_search

DEFAULTS = {"candidates": 100, "k": 10, "decay": 0.5, "seeds": 10}
DEFAULT_WEIGHTS = {"vector": 1.0, "keyword": 1.0, "graph": 0.5}
FUSIONS = ("minmax", "rrf", "dbsf")


class _HybridParser(_Parser):
    def weight(self, part: str) -> float | None:
        if not self.peek("WEIGHT"):
            return None
        self.take("WEIGHT")
        return float(self.take(kind="number", what=f"a number after {part} WEIGHT").text)

    def hybrid(self) -> Plan:
        var, label = self.node_pattern("HYBRID")
        body: dict[str, Any] = {"label": label, "vector": None, "keyword": None, "graph": None}
        weights = dict(DEFAULT_WEIGHTS)
        seen: set[str] = set()
        candidates, k = DEFAULTS["candidates"], DEFAULTS["k"]
        fusion: str | None = None
        rrf_k: int | None = None
        while True:
            tok = self.peek()
            word = tok.text.upper() if tok is not None and tok.kind == "word" else None
            if word not in ("VECTOR", "KEYWORD", "GRAPH", "CANDIDATES", "TOPK", "FUSION"):
                break
            if word in seen:
                raise QuerySyntaxError(f"{word} appears twice; each part of HYBRID comes at most once")
            seen.add(word)
            self.take(word)
            if word == "VECTOR":
                prop = "embedding"
                if self.peek("ON"):
                    self.take("ON")
                    prop = self.take(kind="word", what="a property name").text
                self.take("NEAR", what="NEAR after VECTOR")
                vector: dict[str, Any] = {"property": prop, **self._near_value(), "metric": "Cosine"}
                if self.peek("METRIC"):
                    self.take("METRIC")
                    name = self.take(kind="word", what="a metric").text.lower()
                    if name not in METRIC_NAMES:
                        raise QuerySyntaxError(f"unknown metric {name!r}; use cosine, dot or l2")
                    vector["metric"] = METRIC_NAMES[name]
                w = self.weight("VECTOR")
                if w is not None:
                    weights["vector"] = w
                body["vector"] = vector
            elif word == "KEYWORD":
                self.take("ON", what="ON after KEYWORD")
                prop = self.take(kind="word", what="a property name").text
                self.take("MATCHING", what="MATCHING")
                text = json.loads(self.take(kind="string", what="a quoted string after MATCHING").text)
                w = self.weight("KEYWORD")
                if w is not None:
                    weights["keyword"] = w
                body["keyword"] = {"property": prop, "query": text}
            elif word == "GRAPH":
                self.take("HOPS", what="HOPS after GRAPH")
                graph: dict[str, Any] = {"hops": self.number("HOPS"), "decay": DEFAULTS["decay"]}
                graph["seeds"] = DEFAULTS["seeds"]
                if self.peek("DECAY"):
                    self.take("DECAY")
                    graph["decay"] = float(self.take(kind="number", what="a number after DECAY").text)
                    if not 0.0 <= graph["decay"] <= 1.0:
                        raise QuerySyntaxError(f"DECAY must be in [0, 1], not {graph['decay']}")
                if self.peek("SEEDS"):
                    self.take("SEEDS")
                    graph["seeds"] = self.number("SEEDS")
                w = self.weight("GRAPH")
                if w is not None:
                    weights["graph"] = w
                body["graph"] = graph
            elif word == "CANDIDATES":
                candidates = max(1, self.number("CANDIDATES"))  # upstream clamps to ≥ 1
            elif word == "TOPK":
                k = self.number("TOPK")
            else:
                name = self.take(kind="word", what="minmax, rrf or dbsf").text.lower()
                if name not in FUSIONS:
                    raise QuerySyntaxError(f"unknown FUSION {name!r}; use minmax, rrf or dbsf")
                fusion = name
                if self.peek("K"):
                    self.take("K")
                    rrf_k = self.number("FUSION … K")
        if body["vector"] is None and body["keyword"] is None:
            raise QuerySyntaxError("HYBRID needs VECTOR … NEAR … and/or KEYWORD ON … MATCHING …")
        if body["keyword"] is not None and label is None:
            raise QuerySyntaxError('HYBRID KEYWORD needs a label: HYBRID (d:Doc) KEYWORD ON body MATCHING "…"')
        body.update(weights=weights, candidates=candidates, k=k)
        if fusion is not None and fusion != "minmax":
            body["fusion"] = fusion
            if fusion == "rrf":
                body["rrf_k"] = 60 if rrf_k is None else rrf_k
        return self._tail(var, {"Hybrid": body})


def parse_hybrid(text: str, params: dict[str, Any] | None = None) -> Plan:
    """Compile a HYBRID statement to a plan; errors are one line and point at the problem."""
    parser = _HybridParser(text.strip().rstrip(";"), params or {})
    if parser.peek("HYBRID") is None:
        raise QuerySyntaxError('a hybrid query starts with HYBRID, e.g. HYBRID (d:Doc) KEYWORD ON body MATCHING "x"')
    return parser.hybrid()


def parse_query(text: str, params: dict[str, Any] | None = None) -> Plan:
    """SEARCH or HYBRID, by the leading word (what a surface calls instead of ``parse_search``)."""
    if text.lstrip().upper().startswith("HYBRID"):
        return parse_hybrid(text, params)
    return parse_search(text, params)
