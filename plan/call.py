"""The CALL statement: a graph algorithm as a query's source (pure), upstream's syntax.

    CALL pagerank(damping: 0.85, iterations: 20, tolerance: 1e-6) [ON (n[:Label])]
    CALL components()                         (alias connected_components)
    CALL louvain(max_levels: 10, min_gain: 1e-9)
    CALL shortest_path(from: "key" | id, to: "key" | id, dir: "out" | "in" | "both", weight: "prop")
        … [RETURN n|*] [LIMIT n] [AS OF <seq | "RFC3339" | TIME ms>]

It compiles to the plan source ``{"Algo": …}`` (:meth:`drsg.plan.algo.AlgoSpec.to_plan_json`);
``score()`` is the rank, the dense 0-based group index, or the position on the path. An unknown
algorithm or argument is an error naming the ones there are.
"""

from __future__ import annotations

from typing import Any

from drsg.kernel.errors import QuerySyntaxError, UsageError
from drsg.plan.algo import AlgoSpec, check_algo
from drsg.plan.logical import Algo
from drsg.plan.query import Plan, _Parser

#: each algorithm's CALL arguments → AlgoSpec's fields (upstream's names: pagerank's `iterations`)
ARGS = {
    "pagerank": {"damping": "damping", "iterations": "max_iters", "tolerance": "tolerance"},
    "components": {},
    "louvain": {"max_levels": "max_levels", "min_gain": "min_gain"},
    "shortest_path": {"from": "src", "to": "dst", "dir": "direction", "weight": "weight"},
}


class _CallParser(_Parser):
    def call(self) -> Plan:
        self.take("CALL")
        name = self.take(kind="word", what="an algorithm's name").text.lower()
        try:
            algo = check_algo(name)
        except UsageError as exc:
            raise QuerySyntaxError(exc.message) from None
        fields = self._args(algo)
        var, label = "n", None
        if self.peek("ON"):
            var, label = self.node_pattern("ON")
        if isinstance(fields.get("direction"), str):
            fields["direction"] = fields["direction"].lower()  # upstream's plan JSON writes "Out"
        if algo == "shortest_path" and not {"src", "dst"} <= set(fields):
            raise QuerySyntaxError('CALL shortest_path needs from: and to: (a "key" or an id each)')
        try:
            spec = AlgoSpec(algo, label, **fields).check()
        except UsageError as exc:
            raise QuerySyntaxError(f"CALL {name}: {exc.message}") from None
        return self._tail(var, Algo(spec))

    def _args(self, algo: str) -> dict[str, Any]:
        known = ARGS[algo]
        self.take("(", what=f"'(' after CALL {algo}")
        fields: dict[str, Any] = {}
        while not self.peek(")"):
            if fields:
                self.take(",", what="',' or ')'")
            arg = self.take(kind="word", what="an argument name").text
            if arg not in known:
                names = ", ".join(known) or "none"
                raise QuerySyntaxError(f"CALL {algo} has no argument {arg!r}; its arguments: {names}")
            self.take(":", what=f"':' after {arg}")
            fields[known[arg]] = self._value(arg)
        self.take(")")
        return fields

    def _value(self, arg: str) -> Any:
        tok = self.take(what=f"a value for {arg}")
        if tok.kind == "string":
            return self.string(tok)
        if tok.kind == "number":
            return float(tok.text) if any(c in tok.text for c in ".eE") else int(tok.text)
        raise QuerySyntaxError(f"{arg} takes a number or a quoted string, not {tok.text!r}")


def parse_call(text: str) -> Plan:
    """Compile a CALL statement to a plan; errors are one line and point at the problem."""
    parser = _CallParser(text.strip().rstrip(";"), {})
    if parser.peek("CALL") is None:
        raise QuerySyntaxError("a graph algorithm query starts with CALL, e.g. CALL pagerank() ON (n:Person)")
    return parser.call()
